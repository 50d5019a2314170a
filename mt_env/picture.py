"""A picture of the table, for people: ``render_rgb(config, match, seat=None)`` returns an
H×W×3 ``uint8`` array (``render_mode="rgb_array"``).

What lives here: drawing only, with Pillow (imported when this module is, and this
module is imported only when a picture is asked for). Like :mod:`mt_env.render` it reads
the rules core's public, read-only view and decides nothing. The picture shows:

- a header: round, engine, set, and who is to act under which constraint (the text
  renderer's :func:`~mt_env.render.turn_line`), or the final places;
- one row per train, the seats' trains then the Mexican train: a label with the seat,
  its hand size and match total, a red disc for a marker (R10), the engine's end, then
  the tiles from the engine outward (pips, one colour per number; numbers instead of
  pips for sets above double-12). The longest trains show their last tiles after a
  ``+k`` stub. An open double (R19) is outlined orange, red when it restricts the seat to
  act (R20), grey when dead (R22). The row of the seat to act is lit;
- one seat's hand — the seat to act unless ``seat`` is given — with the tiles it may play
  now outlined green, and what else it may do (draw, pass);
- the boneyard count and a legend.

The size depends only on the configuration (the number of seats), so the frames of a
match have one size and can be written as a video.
"""

from __future__ import annotations

import functools
import importlib.util
import os

import numpy as np
from PIL import Image, ImageDraw, ImageFont

from .config import RulesConfig
from .match import Match
from .render import turn_line
from .tiles import format_tile

SS = 2  # drawn at twice the size, then scaled down: smooth pips and text
HALF = 30  # side of a tile's half
TILE_W, TILE_H = 2 * HALF, HALF
GAP = 6
STEP = TILE_W + GAP
TRAIN_SLOTS = 15  # tiles shown per train row
HAND_SLOTS = 15  # tiles per hand row
HAND_ROWS = 2
MARGIN = 16
LABEL_W = 200
ROW_H = 42
HEADER_H = 64
HAND_TITLE_H = 30
FOOTER_H = 44
PIP_LIMIT = 12  # sets up to double-12 show pips, larger sets show numbers

FELT = (21, 88, 58)
FELT_STRIPE = (24, 97, 64)
FELT_LIT = (44, 130, 86)
FELT_HAND = (16, 70, 46)
INK = (244, 242, 232)
INK_DIM = (178, 210, 190)
TILE_FACE = (250, 246, 234)
TILE_EDGE = (52, 48, 40)
TILE_BACK = (34, 52, 112)
ENGINE_EDGE = (196, 150, 40)
MARKER = (222, 38, 38)
OPEN = (255, 166, 0)
RESTRICT = (255, 54, 54)
DEAD = (150, 150, 150)
PLAYABLE = (84, 236, 120)
# One colour per number, as on many double-12 sets (index = pips).
PIP_COLORS = (
    (0, 0, 0),
    (0, 132, 200),
    (0, 128, 64),
    (200, 30, 30),
    (125, 55, 35),
    (28, 50, 150),
    (240, 110, 0),
    (140, 36, 150),
    (24, 24, 24),
    (0, 112, 112),
    (196, 0, 100),
    (96, 96, 96),
    (185, 140, 0),
)


def _pip_layout(value: int) -> list[tuple[float, float]]:
    """Pip centres of one half, in units of its side (standard faces; 10–12 on 4 rows)."""
    lo, mid, hi = 0.24, 0.5, 0.76
    corners = [(lo, lo), (hi, lo), (lo, hi), (hi, hi)]
    sides = [(lo, lo), (lo, mid), (lo, hi), (hi, lo), (hi, mid), (hi, hi)]
    rows4 = (0.17, 0.39, 0.61, 0.83)
    table = {
        0: [],
        1: [(mid, mid)],
        2: [(lo, lo), (hi, hi)],
        3: [(lo, lo), (mid, mid), (hi, hi)],
        4: corners,
        5: corners + [(mid, mid)],
        6: sides,
        7: sides + [(mid, mid)],
        8: sides + [(mid, lo), (mid, hi)],
        9: [(x, y) for x in (lo, mid, hi) for y in (lo, mid, hi)],
        10: [(x, y) for x in (lo, hi) for y in rows4] + [(mid, rows4[1]), (mid, rows4[2])],
        11: [(x, y) for x in (lo, hi) for y in rows4] + [(mid, y) for y in (0.28, 0.5, 0.72)],
        12: [(x, y) for x in (lo, mid, hi) for y in rows4],
    }
    return table[value]


def _font_file(bold: bool) -> str | None:
    """DejaVu Sans from the system, else matplotlib's copy (found, not imported)."""
    name = "DejaVuSans-Bold.ttf" if bold else "DejaVuSans.ttf"
    try:
        ImageFont.truetype(name, 10)
        return name
    except OSError:
        pass
    spec = importlib.util.find_spec("matplotlib")
    if spec is not None and spec.origin:
        path = os.path.join(os.path.dirname(spec.origin), "mpl-data", "fonts", "ttf", name)
        if os.path.exists(path):
            return path
    return None


@functools.cache
def _font(size: int, bold: bool = False) -> ImageFont.ImageFont:
    path = _font_file(bold)
    if path is not None:
        return ImageFont.truetype(path, size * SS)
    try:
        return ImageFont.load_default(size * SS)  # Pillow >= 10.1 with FreeType
    except TypeError:  # pragma: no cover - old Pillow without sizes
        return ImageFont.load_default()


def frame_size(config: RulesConfig) -> tuple[int, int]:
    """``(height, width)`` of every picture of this configuration."""
    width = 2 * MARGIN + LABEL_W + HALF + GAP + TRAIN_SLOTS * STEP + 96
    trains = (config.num_seats + 1) * ROW_H
    hand = HAND_TITLE_H + HAND_ROWS * (TILE_H + 14) + 10
    height = 2 * MARGIN + HEADER_H + trains + 12 + hand + FOOTER_H
    return height, width


class Canvas:
    """ImageDraw in picture coordinates (drawn at ``SS`` times the size); public so that
    other pictures (the replay page's caption strips) use the table's fonts and colours."""

    def __init__(self, height: int, width: int) -> None:
        self.image = Image.new("RGB", (width * SS, height * SS), FELT)
        self.draw = ImageDraw.Draw(self.image)

    def rect(self, x0, y0, x1, y1, fill=None, outline=None, width=1, radius=0) -> None:
        box = [x0 * SS, y0 * SS, x1 * SS, y1 * SS]
        if radius:
            self.draw.rounded_rectangle(
                box, radius=radius * SS, fill=fill, outline=outline, width=width * SS
            )
        else:
            self.draw.rectangle(box, fill=fill, outline=outline, width=width * SS)

    def disc(self, x, y, r, fill, outline=None, width=1) -> None:
        box = [(x - r) * SS, (y - r) * SS, (x + r) * SS, (y + r) * SS]
        self.draw.ellipse(box, fill=fill, outline=outline, width=width * SS)

    def line(self, points, fill, width=1) -> None:
        self.draw.line([(x * SS, y * SS) for x, y in points], fill=fill, width=width * SS)

    def polygon(self, points, fill) -> None:
        self.draw.polygon([(x * SS, y * SS) for x, y in points], fill=fill)

    def text(self, x, y, text, size=14, fill=INK, bold=False, anchor="la") -> float:
        """Draws ``text``; returns its width in picture units."""
        font = _font(size, bold)
        self.draw.text((x * SS, y * SS), text, font=font, fill=fill, anchor=anchor)
        return self.draw.textlength(text, font=font) / SS

    def width_of(self, text, size=14, bold=False) -> float:
        return self.draw.textlength(text, font=_font(size, bold)) / SS

    def result(self, height: int, width: int) -> np.ndarray:
        image = self.image.resize((width, height), Image.Resampling.LANCZOS)
        return np.asarray(image, dtype=np.uint8).copy()


def _half(c: Canvas, x: float, y: float, value: int, numbers: bool) -> None:
    """One half's face (its square's top-left corner at x, y)."""
    if numbers:
        color = PIP_COLORS[1 + (value - 1) % (len(PIP_COLORS) - 1)] if value else PIP_COLORS[0]
        if value:
            c.text(x + HALF / 2, y + HALF / 2 + 1, str(value), 17, color, True, "mm")
        return
    r = HALF * (0.085 if value <= 9 else 0.072)
    color = PIP_COLORS[value]
    for px, py in _pip_layout(value):
        c.disc(x + px * HALF, y + py * HALF, r, color)


def _tile(c: Canvas, x, y, a: int, b: int, numbers: bool, outline=None, width=3) -> None:
    """A horizontal domino ``a|b`` (top-left corner at x, y), optionally outlined."""
    if outline is not None:
        pad = width + 1
        c.rect(x - pad, y - pad, x + TILE_W + pad, y + TILE_H + pad, fill=outline, radius=6)
    c.rect(x, y, x + TILE_W, y + TILE_H, fill=TILE_FACE, outline=TILE_EDGE, width=1, radius=4)
    c.line([(x + HALF, y + 4), (x + HALF, y + TILE_H - 4)], TILE_EDGE, 1)
    _half(c, x, y, a, numbers)
    _half(c, x + HALF, y, b, numbers)


def _tile_back(c: Canvas, x, y) -> None:
    c.rect(x, y, x + TILE_W, y + TILE_H, fill=TILE_BACK, outline=INK_DIM, width=1, radius=4)
    c.line([(x + HALF, y + 5), (x + HALF, y + TILE_H - 5)], INK_DIM, 1)


def _marker(c: Canvas, x, y) -> None:
    c.disc(x, y, 8, MARKER, outline=INK, width=2)


def _ordinal(k: int) -> str:
    return f"{k}{'st' if k == 1 else 'nd' if k == 2 else 'rd' if k == 3 else 'th'}"


def render_rgb(config: RulesConfig, match: Match | None, seat: int | None = None) -> np.ndarray:
    """The table as an H×W×3 uint8 picture (see the module docstring); ``seat`` is the
    hand shown (default: the seat to act). ``match=None`` gives an empty table."""
    n = config.num_seats
    height, width = frame_size(config)
    c = Canvas(height, width)
    numbers = config.max_pip > PIP_LIMIT
    x0, y = MARGIN, MARGIN
    right = width - MARGIN
    if match is None:
        c.text(x0, y + 4, "Mexican Train", 20, INK, True)
        c.text(x0, y + 36, "no match yet: call reset()", 15, INK_DIM)
        return c.result(height, width)
    if seat is not None and not 0 <= seat < n:
        raise ValueError(f"seat={seat!r}: expected a seat in 0..{n - 1} or None")
    state = match.state
    over = match.is_over
    to_act = None if over else state.seat
    shown = state.seat if seat is None else seat
    totals = match.totals
    places = match.places() if over else None

    # ---------------------------------------------------------------- header
    title = f"Mexican Train  ·  round {match.round_index + 1} of {config.num_rounds}"
    w = c.text(x0, y + 2, title, 20, INK, True)
    c.text(x0 + w + 18, y + 5, "engine", 15, INK_DIM)
    ex = x0 + w + 18 + c.width_of("engine", 15) + 8
    _tile(c, ex, y + 1, state.engine, state.engine, numbers, outline=ENGINE_EDGE, width=2)
    c.text(right, y + 5, f"double-{config.max_pip} set  ·  {n} seats", 15, INK_DIM, anchor="ra")
    if over:
        winners = [k for k in range(n) if places[k] == 1]
        who = " and ".join(f"seat {k}" for k in winners)
        status = f"Match over: {who} {'win' if len(winners) > 1 else 'wins'}"
    else:
        status = turn_line(state)
    c.text(x0, y + 40, status, 16, INK)

    # ---------------------------------------------------------------- trains
    y += HEADER_H
    open_doubles = state.open_doubles
    restricting = None if over else state.restricting_train
    tiles_x = x0 + LABEL_W + HALF + 2 * GAP
    for tr in range(n + 1):
        top = y + tr * ROW_H
        lit = tr == to_act
        fill = FELT_LIT if lit else (FELT_STRIPE if tr % 2 else FELT)
        c.rect(x0 - 6, top, right + 6, top + ROW_H - 2, fill=fill, radius=6)
        mid = top + ROW_H / 2 - 1
        if tr < n:
            name = f"Seat {tr}"
            if lit:
                c.polygon([(x0, mid - 13), (x0 + 9, mid - 8), (x0, mid - 3)], INK)
            c.text(x0 + 14, top + 4, name, 15, INK, True)
            if tr == shown:
                c.text(x0 + 14 + c.width_of(name, 15, True) + 6, top + 6, "(hand below)", 12, INK_DIM)
            score = f"{_ordinal(places[tr])}, {totals[tr]} pts" if over else f"{totals[tr]} pts"
            c.text(x0 + 14, top + 23, f"{state.hand_size(tr)} tiles  ·  {score}", 12, INK_DIM)
            if state.is_marked(tr):
                _marker(c, x0 + LABEL_W - 14, mid)
        else:
            c.text(x0 + 14, top + 4, "Mexican train", 15, INK, True)
            c.text(x0 + 14, top + 23, "open to every seat", 12, INK_DIM)
        # the engine's end starts every train
        ty = mid - TILE_H / 2
        hx = x0 + LABEL_W
        c.rect(hx, ty, hx + HALF, ty + TILE_H, fill=TILE_FACE, outline=ENGINE_EDGE, width=2, radius=4)
        _half(c, hx, ty, state.engine, numbers)
        chain = state.train(tr)
        x = tiles_x
        if len(chain) > TRAIN_SLOTS:
            hidden = len(chain) - (TRAIN_SLOTS - 1)
            c.text(x + TILE_W / 2, mid, f"+{hidden}", 15, INK_DIM, True, "mm")
            chain = chain[hidden:]
            x += STEP
        if not chain:
            c.text(x + 4, mid, "(empty)", 13, INK_DIM, anchor="lm")
        for i, (a, b) in enumerate(chain):
            outline, tag = None, None
            if i == len(chain) - 1 and tr in open_doubles and a == b:
                if tr == restricting:
                    outline, tag = RESTRICT, "must satisfy"
                elif state.is_dead_double(tr):
                    outline, tag = DEAD, "dead double"
                else:
                    outline, tag = OPEN, "open double"
            _tile(c, x, ty, a, b, numbers, outline)
            x += STEP
            if tag is not None:
                c.text(x + 2, mid, tag, 12, outline, True, "lm")

    # ---------------------------------------------------------------- hand
    y += (n + 1) * ROW_H + 12
    hand_h = HAND_TITLE_H + HAND_ROWS * (TILE_H + 14) + 10
    c.rect(x0 - 6, y, right + 6, y + hand_h, fill=FELT_HAND, radius=8)
    hand = state.hand(shown)
    playable: set[int] = set()
    notes = []
    if shown == to_act:
        codec = state.codec
        legal = state.legal_moves()
        playable = {codec.tile_of[m] for m in legal if m < codec.draw}
        if codec.draw in legal:
            notes.append("may draw")
        if codec.pass_ in legal:
            notes.append("may pass" if playable else "must pass")
        if state.drawn_tile is not None:
            notes.insert(0, f"drew {format_tile(state.drawn_tile)}")
        if playable:
            notes.append("green: playable")
    title = f"Seat {shown}'s hand  ({len(hand)} tile{'s' if len(hand) != 1 else ''})"
    w = c.text(x0 + 4, y + 7, title, 15, INK, True)
    if shown == to_act:
        c.text(x0 + 4 + w + 12, y + 9, "to act" + "".join(f"  ·  {s}" for s in notes), 13, INK_DIM)
    ids = state.tiles
    ty = y + HAND_TITLE_H + 6
    capacity = HAND_ROWS * HAND_SLOTS
    for i, (a, b) in enumerate(hand[:capacity]):
        if i == capacity - 1 and len(hand) > capacity:
            c.text(x0 + 10 + TILE_W / 2, ty + TILE_H / 2, f"+{len(hand) - i}", 15, INK_DIM, True, "mm")
            break
        row, col = divmod(i, HAND_SLOTS)
        tx = x0 + 10 + col * STEP
        outline = PLAYABLE if ids.id_of((a, b)) in playable else None
        _tile(c, tx, ty + row * (TILE_H + 14), a, b, numbers, outline)
    if not hand:
        c.text(x0 + 10, ty + TILE_H / 2, "(empty: went out)", 13, INK_DIM, anchor="lm")

    # ---------------------------------------------------------------- footer
    y += hand_h + 12
    for k in range(min(3, state.boneyard_size)):
        _tile_back(c, x0 + k * 8, y + 4 - k * 3)
    c.text(x0 + TILE_W + 28, y + 12, f"Boneyard: {state.boneyard_size} tiles", 15, INK, True, "lm")
    lx = right
    legend = [
        ("playable", PLAYABLE),
        ("dead double", DEAD),
        ("must satisfy", RESTRICT),
        ("open double", OPEN),
    ]
    for label, color in legend:
        lx -= c.width_of(label, 12) + 8
        c.text(lx, y + 12, label, 12, INK_DIM, anchor="lm")
        lx -= 24
        c.rect(lx, y + 5, lx + 18, y + 19, fill=TILE_FACE, outline=color, width=3, radius=3)
        lx -= 14
    lx -= c.width_of("marker (train open to all)", 12) + 8
    c.text(lx, y + 12, "marker (train open to all)", 12, INK_DIM, anchor="lm")
    _marker(c, lx - 14, y + 12)
    return c.result(height, width)
