"""A saved game as pictures and as one self-contained HTML page (``mt-play --replay``).

``python -m mt_env.agents.evaluation.play --replay game.json --pictures DIR``
writes ``DIR/frame-000.png``, ``frame-001.png``, … (one picture per position, in order);

``python -m mt_env.agents.evaluation.play --replay game.json --html replay.html``
writes ONE HTML file that needs nothing else (no network, no other file): the pictures
are embedded in it (WebP, base64), with previous/next/play buttons, a slider, the
keyboard (← →, Home/End, space plays and pauses), the list of moves (click one to see
it), each round's result and the standings. In Python: :func:`write_replay` (either or
both), :func:`html_page` (the page as a string), :func:`replay_frames` (the pictures as
arrays).

**Sizes.** The PNGs have the table's full size (:func:`mt_env.picture.frame_size` plus a
56-pixel caption strip: 1354×462 for 2 seats). The page's pictures are scaled to 50% and
stored as lossy WebP (PNG where Pillow lacks WebP), about 12 kB each, so a 130-move game
makes a page of about 2.3 MB. There is no animated GIF: the page's play button is the
animation.

**The frames.** Each round gives one frame *before* each of its moves — the table the
move is made on, captioned with the move about to be made — and one closing frame:
the finished round (its scores in the caption; the last round's shows the match result),
or, in a game a person quit, the position where the record stops. So a record with
``M`` moves in ``R`` rounds gives ``M + R`` frames. Pictures are
:func:`mt_env.picture.render_rgb`'s table with a caption strip below it.

**An open replay.** A record holds every deal, and a replay of a finished game shows
what a spectator behind each player would see: every frame shows the trains, markers,
open doubles, hand sizes and totals that everyone sees, plus the hand of the seat to act
(its playable tiles outlined green) — so the hands of scripted seats are shown too. A
round's closing frame shows the hand left with the most pips (what that round scored).
The boneyard's order is never shown.

**Checking.** The record is replayed with :class:`~mt_env.agents.evaluation.play.Replay`,
exactly like the terminal replay: :class:`~mt_env.agents.evaluation.play.RecordError`
names the first move that does not replay, and nothing is written then.

**Writing.** Files are written in full to temporary files and renamed into place
(:func:`~mt_env.agents.evaluation.tournament.write_files_atomically`): a failure — an
unwritable folder, a full disk — raises ``OSError`` naming the path and leaves no
half-written file. Pillow is needed (as for ``render_mode="rgb_array"``) and is imported
only here, when pictures are made.
"""

from __future__ import annotations

import base64
import html
import io
import json
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from mt_env.agents.evaluation.play import (
    RULE,
    Replay,
    ReplayStep,
    check_file_path,
    check_record,
    ordinal,
    round_summary,
    seat_label,
    standings,
)
from mt_env.agents.evaluation.tournament import check_output_dir, write_files_atomically
from mt_env.config import RulesConfig
from mt_env.match import Match, places
from mt_env.rules import RoundState

CAPTION_H = 56  # the caption strip under each picture
PAGE_SCALE = 0.5  # the HTML page's pictures, relative to the full size (~12 kB each)
WEBP_QUALITY = 65
PLAY_MS = 900  # the page's play speed: milliseconds per frame


@dataclass(frozen=True)
class Frame:
    """One picture of a replay. ``title`` (where in the match) and ``text`` (what
    happens) are also drawn in its caption strip; ``note`` is the record's text of the
    move about to be made, or a finished round's full summary."""

    image: np.ndarray  # H×W×3 uint8
    kind: str  # "move" (before a move), "round over", or "stopped" (the record ends there)
    round: int  # 0-based
    move: int  # the move about to be made (1-based in its round); 0 for a closing frame
    title: str
    text: str
    note: str = ""


class _FinishedRound:
    """What :func:`mt_env.picture.render_rgb` reads of a :class:`Match`, frozen at the end
    of a round that was not the last (the match itself has already dealt the next one)."""

    is_over = True

    def __init__(self, config: RulesConfig, state: RoundState, match: Match, r: int) -> None:
        self.config, self.state, self.round_index = config, state, r
        self.totals = match.totals
        self._places = places(config, match.results)

    def places(self) -> list[int]:
        return self._places


def replay_frames(record: dict) -> Iterator[Frame]:
    """The frames of a record (module docstring), checking every move as it goes;
    RecordError at the first move that does not replay (or at the end, for the totals)."""
    return _frames(Replay(record))


def _frames(game: Replay) -> Iterator[Frame]:
    from mt_env.picture import render_rgb  # Pillow: imported only for pictures

    config, lineup, match = game.config, game.lineup, game.match
    n_rounds = config.num_rounds
    last: ReplayStep | None = None
    for step in game:
        last = step
        r = step.round
        if step.kind == "move":
            title = f"Round {r + 1} of {n_rounds}  ·  move {step.index} of {step.count}"
            picture = _captioned(render_rgb(config, match), title, step.line)
            yield Frame(picture, "move", r, step.index, title, step.line, step.text)
        elif step.kind == "made" and step.result is not None:
            result = step.result
            shown = max(range(config.num_seats), key=lambda k: (result.hand_values[k], -k))
            how = (
                " and ".join(seat_label(lineup, k) for k in result.out_seats) + " went out"
                if result.end_reason == "out"
                else "blocked: nobody can play and the boneyard is empty"
            )
            title = f"Round {r + 1} of {n_rounds} is over: {how}"
            text = "Round scores: " + ", ".join(
                f"seat {k}: {s}" for k, s in enumerate(result.scores)
            )
            if match.is_over:
                table = render_rgb(config, match, seat=shown)
                text += "  ·  " + _places_line(match)
            else:
                table = render_rgb(config, _FinishedRound(config, step.state, match, r), shown)
                _restatus(table, f"Round {r + 1} of {n_rounds} is over")
            summary = round_summary(result, config, lineup, match.totals)
            yield Frame(_captioned(table, title, text), "round over", r, 0, title, text, summary)
    if last is not None and (last.kind == "round" or last.result is None):
        # the record stops inside a round (a person quit): its position is the last frame
        r = last.round
        title = f"Round {r + 1} of {n_rounds}  ·  the record stops here"
        text = f"The game was stopped after {last.index} move(s) of this round"
        picture = _captioned(render_rgb(config, match), title, text)
        yield Frame(picture, "stopped", r, 0, title, text)


def _places_line(match: Match) -> str:
    places_ = match.places()
    order = sorted(range(match.config.num_seats), key=lambda k: (places_[k], k))
    return "Final places: " + ", ".join(f"{ordinal(places_[k])} seat {k}" for k in order)


# ---------------------------------------------------------------------- drawing
def _strip(height: int, width: int, lines: Sequence[tuple[str, int, bool, bool]], fill):
    """A band of text drawn like the table's (``mt_env.picture``'s fonts and colours):
    ``lines`` are ``(text, size, bold, dim)`` from the top."""
    from mt_env import picture

    canvas = picture.Canvas(height, width)
    canvas.rect(0, 0, width, height, fill=fill)
    y = 6
    room = width - 2 * picture.MARGIN
    for text, size, bold, dim in lines:
        while canvas.width_of(text, size, bold) > room and len(text) > 1:
            text = text[:-2] + "…"  # too long for the picture: cut, visibly
        color = picture.INK_DIM if dim else picture.INK
        canvas.text(picture.MARGIN, y, text, size, color, bold)
        y += size + 8
    return canvas.result(height, width)


def _captioned(table: np.ndarray, title: str, text: str) -> np.ndarray:
    """The table with a caption strip under it: ``title`` (dim) over ``text``."""
    from mt_env import picture

    width = table.shape[1]
    lines = [(title, 13, False, True), (text, 16, True, False)]
    strip = _strip(CAPTION_H, width, lines, picture.FELT_HAND)
    return np.concatenate([table, strip], axis=0)


def _restatus(table: np.ndarray, status: str) -> None:
    """Write ``status`` over the picture's header status line (in place)."""
    from mt_env import picture

    top, bottom = picture.MARGIN + 34, picture.MARGIN + picture.HEADER_H - 2
    strip = _strip(bottom - top, table.shape[1], [(status, 16, False, False)], picture.FELT)
    table[top:bottom] = strip


def _encode(image: np.ndarray, fmt: str, scale: float = 1.0) -> bytes:
    from PIL import Image

    picture = Image.fromarray(image)
    if scale != 1.0:
        size = (round(image.shape[1] * scale), round(image.shape[0] * scale))
        picture = picture.resize(size, Image.Resampling.LANCZOS)
    out = io.BytesIO()
    if fmt == "WEBP":
        picture.save(out, "WEBP", quality=WEBP_QUALITY)
    else:
        picture.save(out, "PNG")  # optimize=True: 1% smaller, 3 times slower
    return out.getvalue()


def _page_format() -> tuple[str, str]:
    """WebP where this Pillow can write it (smaller), else PNG: ``(Pillow name, MIME)``."""
    from PIL import features

    return ("WEBP", "image/webp") if features.check("webp") else ("PNG", "image/png")


# ---------------------------------------------------------------------- writing
def write_replay(
    record: dict,
    pictures: str | os.PathLike | None = None,
    page: str | os.PathLike | None = None,
) -> list[Path]:
    """Write the record's pictures into the folder ``pictures`` (``frame-000.png``, …;
    created if needed) and/or its HTML page to ``page``; returns the paths written.

    The paths are checked first, then the whole record (quickly, without pictures), then
    it is drawn (once for both), and only then is anything written: RecordError or
    OSError leave nothing behind.
    """
    folder = None if pictures is None else check_output_dir(pictures)
    path = None if page is None else check_file_path(page)
    check_record(record)
    game = Replay(record)
    frames = list(_frames(game))
    written: list[Path] = []
    if folder is not None:
        digits = max(3, len(str(len(frames) - 1)))
        writers = [
            (f"frame-{i:0{digits}d}.png", _writer(_encode(f.image, "PNG")))
            for i, f in enumerate(frames)
        ]
        written += write_files_atomically(folder, writers)
    if path is not None:
        data = _page(game, frames).encode()
        written += write_files_atomically(path.parent, [(path.name, _writer(data))])
    return written


def _writer(data: bytes):
    return lambda fh: fh.write(data)


def html_page(record: dict) -> str:
    """The replay page (module docstring) as a string; RecordError if the record does
    not replay."""
    check_record(record)
    game = Replay(record)
    return _page(game, list(_frames(game)))


def _page(game: Replay, frames: Sequence[Frame]) -> str:
    """The page of a replayed game (``game`` walked to its end) and its frames."""
    fmt, mime = _page_format()
    sources = [
        f"data:{mime};base64," + base64.b64encode(_encode(x.image, fmt, PAGE_SCALE)).decode("ascii")
        for x in frames
    ]
    record = game.record
    config, lineup, match = game.config, game.lineup, game.match
    body: list[str] = []
    for f, frame in enumerate(frames):
        if not f or frames[f - 1].round != frame.round:  # a round starts: its heading
            deal = game.rounds[frame.round]["deal"]
            engine, start = deal["engine"], deal["start_seat"]
            body.append(
                ("</ol>\n" if f else "")
                + f"<h3>Round {frame.round + 1} of {config.num_rounds}: engine {engine}|{engine}; "
                f"{_esc(seat_label(lineup, start))} starts</h3>\n<ol>"
            )
        link = f'<a href="#" data-f="{f}"'
        if frame.kind == "move":
            body.append(f'<li>{link} title="{_esc(frame.note)}">{_esc(frame.text)}</a></li>')
        elif frame.kind == "round over":
            body.append(
                f'<li class="end">{link}>Round {frame.round + 1} is over</a>'
                f"<pre>{_esc(_unruled(frame.note))}</pre></li>"
            )
        else:
            body.append(f'<li class="end">{link}>{_esc(frame.title)}</a></li>')
    body.append("</ol>")
    seats = ", ".join(_esc(seat_label(lineup, k)) for k in range(config.num_seats))
    meta = (
        f"{config.num_seats} seats: {seats}; double-{config.max_pip} set, "
        f"{config.num_rounds} round(s), seed {_esc(str(record.get('seed')))}"
        + ("" if match.is_over else " — an unfinished game (a person quit)")
    )
    data = {"src": sources, "title": [x.title for x in frames], "text": [x.text for x in frames]}
    return PAGE.format(
        title=_esc(f"Mexican Train replay: {', '.join(lineup)}, seed {record.get('seed')}"),
        meta=meta,
        last=len(frames) - 1,
        count=len(frames),
        width=round(frames[0].image.shape[1] * PAGE_SCALE),
        moves="\n".join(body),
        standings=_esc(_unruled(standings(match, lineup, final=match.is_over))),
        data=json.dumps(data).replace("</", "<\\/"),  # nothing in it may close the script
        play_ms=PLAY_MS,
    )


def _unruled(text: str) -> str:
    """A terminal text without its ``====`` rule lines."""
    return "\n".join(line for line in text.splitlines() if line != RULE)


def _esc(text: str) -> str:
    return html.escape(text, quote=True)


PAGE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title}</title>
<style>
body {{ font: 15px/1.4 system-ui, sans-serif; margin: 1em; background: #f4f2ea; color: #222; }}
h1 {{ font-size: 1.3em; margin: 0 0 .2em; }}
.meta {{ color: #555; margin: 0 0 .8em; }}
.wrap {{ display: flex; flex-wrap: wrap; gap: 1.2em; align-items: flex-start; }}
.viewer {{ flex: 0 1 {width}px; min-width: 0; }}
.viewer img {{ width: 100%; height: auto; display: block; border-radius: 6px; }}
.controls {{ display: flex; gap: .4em; align-items: center; margin: .5em 0; }}
.controls input {{ flex: 1; }}
button {{ font: inherit; padding: .2em .7em; }}
#caption {{ font-weight: 600; min-height: 2.8em; margin: 0; }}
#caption small {{ display: block; font-weight: normal; color: #555; }}
.moves {{ flex: 1 1 320px; max-height: 80vh; overflow: auto; background: #fff;
  border-radius: 6px; padding: 0 .8em .8em; }}
.moves h3 {{ font-size: 1em; margin: .8em 0 .2em; }}
.moves ol {{ margin: 0; padding-left: 2.4em; }}
.moves a {{ color: inherit; text-decoration: none; }}
.moves a.on {{ background: #ffe08a; }}
.moves pre {{ font-size: .85em; background: #f0f0f0; padding: .4em; white-space: pre-wrap; }}
.end > a {{ font-weight: 600; }}
</style>
</head>
<body>
<h1>Mexican Train replay</h1>
<p class="meta">{meta}. An open replay: each picture shows the hand of the seat to act.</p>
<div class="wrap">
<div class="viewer">
<img id="frame" alt="the table">
<div class="controls">
<button id="first" title="first (Home)">&#x23EE;</button>
<button id="prev" title="previous (&#x2190;)">&#x25C0; Previous</button>
<button id="play" title="play / pause (space)">&#x25B6; Play</button>
<button id="next" title="next (&#x2192;)">Next &#x25B6;</button>
<button id="lastf" title="last (End)">&#x23ED;</button>
<input id="slider" type="range" min="0" max="{last}" value="0" aria-label="frame">
<span id="counter">1 / {count}</span>
</div>
<p id="caption"></p>
<noscript><p>This page needs JavaScript to show the pictures; the moves are listed
here.</p></noscript>
</div>
<div class="moves">
{moves}
<h3>Standings</h3>
<pre>{standings}</pre>
</div>
</div>
<script>
const D = {data};
const img = document.getElementById("frame"), slider = document.getElementById("slider");
const caption = document.getElementById("caption"), counter = document.getElementById("counter");
const playBtn = document.getElementById("play");
const links = Array.from(document.querySelectorAll(".moves a[data-f]"));
let at = 0, timer = null;
function esc(s) {{ const d = document.createElement("div"); d.textContent = s; return d.innerHTML; }}
function show(i) {{
  at = Math.max(0, Math.min(D.src.length - 1, i));
  img.src = D.src[at];
  slider.value = at;
  counter.textContent = (at + 1) + " / " + D.src.length;
  caption.innerHTML = "<small>" + esc(D.title[at]) + "</small>" + esc(D.text[at]);
  for (const a of links) a.classList.toggle("on", +a.dataset.f === at);
  const on = links.find(a => +a.dataset.f === at);
  if (on) on.scrollIntoView({{block: "nearest"}});
}}
function stop() {{ clearInterval(timer); timer = null; playBtn.innerHTML = "&#x25B6; Play"; }}
function play() {{
  if (timer) return stop();
  if (at === D.src.length - 1) show(0);
  playBtn.innerHTML = "&#x23F8; Pause";
  timer = setInterval(() => at < D.src.length - 1 ? show(at + 1) : stop(), {play_ms});
}}
document.getElementById("first").onclick = () => {{ stop(); show(0); }};
document.getElementById("prev").onclick = () => {{ stop(); show(at - 1); }};
document.getElementById("next").onclick = () => {{ stop(); show(at + 1); }};
document.getElementById("lastf").onclick = () => {{ stop(); show(D.src.length - 1); }};
playBtn.onclick = play;
slider.oninput = () => {{ stop(); show(+slider.value); }};
for (const a of links) a.onclick = e => {{ e.preventDefault(); stop(); show(+a.dataset.f); }};
document.addEventListener("keydown", e => {{
  if (e.target === slider && e.key.startsWith("Arrow")) return;
  const keys = {{ArrowLeft: at - 1, ArrowRight: at + 1, Home: 0, End: D.src.length - 1}};
  if (e.key in keys) {{ e.preventDefault(); stop(); show(keys[e.key]); }}
  else if (e.key === " ") {{ e.preventDefault(); play(); }}
}});
show(0);
</script>
</body>
</html>
"""
