"""The terminal game (mt-play): scripted people, hidden tiles, quitting, records, replay, CLI.

Every game is short (1–2 rounds, 2–3 seats) and every scripted console stops with an
end of input after a fixed number of answers, so no loop here can run away.
"""

from __future__ import annotations

import copy
import json
import re
import subprocess
import sys
from html.parser import HTMLParser
from itertools import pairwise
from pathlib import Path

import numpy as np
import pytest

from mt_env import RulesConfig
from mt_env.agents.evaluation.play import (
    Game,
    RecordError,
    check_record,
    describe_for_player,
    load_record,
    main,
    ordered_moves,
    play,
    read_choice,
    replay,
    save_record,
)

ROOT = Path(__file__).resolve().parents[1]
BAD = ["", "abc", "0", "999", "-1", "1.5"]
TILE = re.compile(r"(\d+)\|(\d+)")


class Console:
    """Scripted stdin/stdout. ``answers`` is cycled (or a callable ``(prompt, game) ->
    str``); after ``limit`` reads it raises EOFError, like a closed stdin."""

    def __init__(self, answers=("1",), limit=5000):
        self.answers = answers
        self.limit = limit
        self.reads = 0
        self.events: list[tuple[str, str]] = []  # ("in", typed) / ("out", printed)
        self.game: Game | None = None
        self.tables: list[tuple[str, int, set, set]] = []  # (text, seat, hidden, own)
        self.prompts: list[str] = []

    def input(self, prompt: str) -> str:
        if self.reads >= self.limit:
            raise EOFError
        self.prompts.append(prompt)
        if callable(self.answers):
            text = self.answers(prompt, self.game)
        else:
            text = self.answers[self.reads % len(self.answers)]
        self.reads += 1
        self.events.append(("in", text))
        return text

    def print(self, *args, end="\n", **kwargs) -> None:
        text = " ".join(map(str, args))
        self.events.append(("out", text))
        # a table shown to a person: remember what that seat must not see, right now
        if self.game is not None and "'s hand (" in text and "Your moves" not in text:
            state = self.game.match.state
            seat = state.seat
            hidden = {t for k in range(state.num_seats) if k != seat for t in state.hand(k)}
            hidden |= set(state.boneyard)
            self.tables.append((text, seat, hidden, set(state.hand(seat))))

    @property
    def output(self) -> str:
        return "\n".join(text for kind, text in self.events if kind == "out")


def run_game(lineup, config, seed=0, console=None) -> tuple[Game, Console]:
    console = console or Console()
    game = Game(lineup, config, seed, console.input, console.print)
    console.game = game
    game.run()
    return game, console


def tiles_in(text: str) -> set[tuple[int, int]]:
    return {tuple(sorted((int(a), int(b)))) for a, b in TILE.findall(text)}


TWO = RulesConfig(num_seats=2, num_rounds=2)


# ---------------------------------------------------------------------- a whole match
def test_a_whole_match_with_bad_inputs_before_every_choice():
    console = Console(answers=[*BAD, "1"], limit=20000)
    game, console = run_game(["human", "longest-train"], TWO, seed=1, console=console)
    assert game.quit is None and game.match.is_over and len(game.match.results) == 2
    human_moves = sum(m["seat"] == 0 for rnd in game.record["rounds"] for m in rnd["moves"])
    assert human_moves > 5
    assert console.reads == human_moves * (len(BAD) + 1)
    events = console.events
    bad_seen = 0
    for i, (kind, text) in enumerate(events):
        if kind == "in" and text in BAD:
            bad_seen += 1
            kind2, answer = events[i + 1]  # the very next thing printed is the re-ask
            assert kind2 == "out" and re.search(r"type (1|a number from 1 to \d+), \?", answer)
            if text == "":
                assert answer.startswith("Nothing typed")
            elif text == "abc":
                assert "'abc' is not a move number" in answer
            elif text == "1.5":
                assert "'1.5' is not a whole number" in answer
            else:
                assert answer.startswith(f"There is no move {text}")
    assert bad_seen == human_moves * len(BAD)
    out = console.output
    assert "Final standings after 2 round(s):" in out
    assert re.search(r"Winners?( \(tied\))?: seat \d", out)
    assert out.count("Round 1 of 2 is over") == 1 and out.count("Round 2 of 2 is over") == 1
    assert "seat 1 (longest-train) " in out  # the scripted seat's moves, one line each
    totals = game.match.totals
    assert f"with {totals[0]} points" in out and f"with {totals[1]} points" in out


@pytest.mark.parametrize(
    ("text", "answer"),
    [
        ("2", 2),
        ("+3", 3),
        ("0003", 3),
        ("", "Nothing typed"),
        ("0", "There is no move 0"),
        ("4", "There is no move 4"),
        ("-1", "There is no move -1"),
        ("9" * 5000, "There is no move 999999999999999999999..."),  # int() would refuse it
        ("1.5", "'1.5' is not a whole number"),
        ("1_0", "'1_0' is not a move number"),  # int() reads 10
        ("２", "'２' is not a move number"),  # int() reads 2 (a full-width digit)
        ("٣", "'٣' is not a move number"),  # int() reads 3 (an Arabic-Indic digit)
        ("ünïcødé ♠", "'ünïcødé ♠' is not a move number"),
        ("x" * 100, "'xxxxxxxxxxxxxxxxxxxxx...' is not a move number"),
    ],
)
def test_read_choice_takes_only_plain_numbers_in_range(text, answer):
    assert read_choice(text, 3) == answer


def test_moves_are_listed_in_players_words():
    game = Game(["human", "longest-train"], TWO, seed=4, input_fn=None, print_fn=print)
    state = game.match.state
    texts = [describe_for_player(state, m) for m in ordered_moves(state)]
    assert texts and all(
        re.fullmatch(r"play \d\|\d on (your train|seat \d's train|the Mexican train)", t)
        or t.startswith(("draw from the boneyard", "pass"))
        for t in texts
    ), texts
    end = state.open_end(state.seat)
    for t in texts:  # a played tile is written from the end it joins
        if t.startswith("play") and "your train" in t:
            assert t.split()[1].startswith(f"{end}|")


# ---------------------------------------------------------------------- hidden information
@pytest.mark.parametrize(
    "lineup",
    [["human", "longest-train"], ["random", "human", "longest-train"], ["human", "human"]],
)
def test_a_person_sees_only_their_own_tiles(lineup):
    config = RulesConfig(num_seats=len(lineup), num_rounds=1)
    game, console = run_game(lineup, config, seed=2)
    assert game.match.is_over and console.tables
    humans = {k for k, spec in enumerate(lineup) if spec == "human"}
    for text, seat, hidden, own in console.tables:
        assert seat in humans
        shown = tiles_in(text)
        assert not shown & hidden, (seat, shown & hidden, text)
        assert own <= shown  # the person's own hand is there
        assert "Boneyard: " in text and "tiles" in text  # a size, not tiles
    if len(humans) > 1:  # hot seat: the next person is asked before a hand is shown
        switches = sum(a[1] != b[1] for a, b in pairwise(console.tables))
        handoffs = sum("Others look away" in p for p in console.prompts)
        assert switches > 0 and handoffs == switches


# ---------------------------------------------------------------------- quitting
def test_q_quits_cleanly_with_the_standings_so_far():
    def answers(prompt, game):
        return "q" if game.match.round_index == 1 else "1"

    game, console = run_game(["human", "longest-train"], TWO, console=Console(answers, 2000))
    assert game.quit == "Seat 0 quit" and not game.match.is_over
    assert len(game.match.results) == 1
    out = console.output
    assert "Seat 0 quit: the game stops here." in out
    assert "Standings so far (1 of 2 round(s) finished" in out
    assert re.search(r"Leaders?( \(tied\))?: seat", out) and "Final standings" not in out
    assert game.record["finished"] is False


@pytest.mark.parametrize("answers", [["quit"], ["  Q  "]])
def test_quit_words(answers):
    game, console = run_game(["longest-train", "human"], TWO, console=Console(answers))
    assert game.quit == "Seat 1 quit" and "Standings so far (0 of 2" in console.output


def test_end_of_input_quits_cleanly():
    game, console = run_game(["human", "random"], TWO, console=Console(limit=3))
    assert game.quit == "End of input"
    assert "End of input: the game stops here." in console.output
    assert "Standings so far" in console.output


def test_ctrl_c_quits_cleanly():
    def answers(prompt, game):
        raise KeyboardInterrupt

    game, console = run_game(["human", "random"], TWO, console=Console(answers))
    assert game.quit == "Interrupted" and "Standings so far" in console.output


# ---------------------------------------------------------------------- records and replay
def test_save_and_replay_reach_the_same_totals(tmp_path):
    game, _ = run_game(["human", "longest-train"], TWO, seed=5)
    path = save_record(game.record, tmp_path / "games" / "g.json")
    record = load_record(path)
    assert record == json.loads(json.dumps(game.record))
    assert record["lineup"] == ["human", "longest-train"] and record["seed"] == 5
    assert RulesConfig.from_dict(record["rules"]) == TWO
    assert len(record["rounds"]) == 2 and record["finished"] is True
    deal = record["rounds"][0]["deal"]
    assert set(deal) == {"hands", "boneyard", "engine", "start_seat"}
    move = record["rounds"][0]["moves"][0]
    assert set(move) == {"seat", "move", "text"} and isinstance(move["move"], int)

    assert check_record(record).totals == game.match.totals == record["totals"]
    printed: list[str] = []
    match = replay(record, print_fn=printed.append, step=False)  # --all
    assert match.totals == game.match.totals and match.places() == record["places"]
    assert "Final standings after 2 round(s):" in printed[-1]
    steps = Console(answers=[""], limit=5000)  # step by step: Enter after every move
    match = replay(record, input_fn=steps.input, print_fn=steps.print, step=True)
    assert match.totals == game.match.totals
    assert steps.reads == sum(len(r["moves"]) for r in record["rounds"])
    stop = Console(answers=["q"])  # q stops the show; the record is still checked
    assert replay(record, input_fn=stop.input, print_fn=stop.print).totals == match.totals
    assert stop.reads == 1 and "Replay stopped" in stop.output


def test_a_quit_game_replays_too():
    game, _ = run_game(["human", "greedy"], TWO, console=Console(limit=40))
    assert game.quit == "End of input"
    record = json.loads(json.dumps(game.record))
    assert record["finished"] is False
    assert check_record(record).totals == game.match.totals


def _first_play(record):
    for r, rnd in enumerate(record["rounds"]):
        for i, m in enumerate(rnd["moves"]):
            if m["text"].startswith("play"):
                return r, i
    raise AssertionError("no play in the record")


def test_a_tampered_record_names_the_first_bad_move(tmp_path, capsys):
    game, _ = run_game(["human", "longest-train"], TWO, seed=6)
    record = json.loads(json.dumps(game.record))
    cfg = TWO
    draw = cfg.num_tiles * (cfg.num_seats + 1)

    bad = copy.deepcopy(record)  # a play turned into a draw: illegal while a play is legal
    r, i = _first_play(bad)
    bad["rounds"][r]["moves"][i]["move"] = draw
    with pytest.raises(
        RecordError, match=rf"round {r + 1}, move {i + 1} .*move {draw} \(draw\) is not legal"
    ):
        check_record(bad)

    bad = copy.deepcopy(record)  # a move integer that is no move at all
    bad["rounds"][1]["moves"][0]["move"] = 10**6
    with pytest.raises(RecordError, match=r"round 2, move 1 .*no move at all"):
        check_record(bad)

    bad = copy.deepcopy(record)  # the text no longer says what the move does
    bad["rounds"][0]["moves"][0]["text"] = "pass"
    with pytest.raises(RecordError, match=r"round 1, move 1 .*text does not match"):
        check_record(bad)

    bad = copy.deepcopy(record)  # the wrong seat
    first = bad["rounds"][0]["moves"][0]
    first["seat"] = 1 - first["seat"]
    with pytest.raises(RecordError, match=r"round 1, move 1 .*seat \d's turn"):
        check_record(bad)

    bad = copy.deepcopy(record)  # a round cut short
    bad["rounds"][0]["moves"].pop()
    with pytest.raises(RecordError, match=r"round 1: its \d+ move\(s\) stop before the round ends"):
        check_record(bad)

    bad = copy.deepcopy(record)  # an extra move after the round ended
    bad["rounds"][0]["moves"].append(bad["rounds"][0]["moves"][-1])
    with pytest.raises(RecordError, match=r"round 1, move \d+: the round already ended"):
        check_record(bad)

    bad = copy.deepcopy(record)
    bad["totals"] = [t + 1 for t in bad["totals"]]
    with pytest.raises(RecordError, match="differ from the recorded"):
        check_record(bad)

    bad = copy.deepcopy(record)
    bad["rounds"][0]["deal"]["hands"][0].append([9, 9])  # the engine twice
    with pytest.raises(RecordError, match="round 1's deal is invalid: tile 9|9 appears twice"):
        check_record(bad)

    for broken in ({"format": "x"}, {**record, "rules": {"num_seats": 99}}, [1]):
        with pytest.raises(RecordError):
            check_record(broken)

    path = tmp_path / "bad.json"  # the CLI reports it and exits 1
    bad = copy.deepcopy(record)
    bad["rounds"][r]["moves"][i]["move"] = draw
    save_record(bad, path)
    assert main(["--replay", str(path), "--all"], print_fn=lambda *a, **k: None) == 1
    assert f"error: round {r + 1}, move {i + 1} " in capsys.readouterr().err
    (tmp_path / "junk.json").write_text("{not json")
    with pytest.raises(RecordError, match="invalid JSON"):
        load_record(tmp_path / "junk.json")


# ---------------------------------------------------------------------- the CLI
def test_main_plays_saves_and_replays(tmp_path):
    path = tmp_path / "g.json"
    console = Console()
    argv = ["--agents", "human", "random", "--rounds", "1", "--seed", "3", "--save", str(path)]
    assert main(argv, console.input, console.print) == 0
    assert "Final standings after 1 round(s)" in console.output
    assert f"Game record saved to {path}" in console.output
    record = load_record(path)
    assert record["rules"]["num_rounds"] == 1 and record["lineup"] == ["human", "random"]
    shown = Console(answers=["a"])
    assert main(["--replay", str(path)], shown.input, shown.print) == 0
    assert shown.reads == 1 and f"with {record['totals'][0]} points" in shown.output


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--agents", "human"], "a table seats 2 to 14"),
        (["--agents", "human", "nobody"], "unknown agent 'nobody'"),
        (["--agents", "human", "random", "--rules", "num_seats=3"], "number of --agents"),
        (["--agents", "human", "random", "--rounds", "2", "--rules", "num_rounds=1"], "not both"),
        (["--agents", "human", "random", "--rules", "bogus=1"], "unknown rules option"),
        ([], "give --agents"),
        (["--replay", "x.json", "--agents", "human", "random"], "--replay takes no --agents"),
    ],
)
def test_main_rejects_bad_arguments(argv, message, capsys):
    with pytest.raises(SystemExit) as exc:
        main(argv, print_fn=lambda *a, **k: None)
    assert exc.value.code == 2
    assert message in capsys.readouterr().err


def test_cli_help_runs_in_a_subprocess_without_torch():
    out = subprocess.run(
        [sys.executable, "-m", "mt_env.agents.evaluation.play", "--help"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    assert "--agents" in out.stdout and "--replay" in out.stdout and "--save" in out.stdout
    code = "import sys, mt_env.agents.evaluation.play; print('torch' in sys.modules)"
    loaded = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert loaded.stdout.strip() == "False", loaded.stderr


def test_cli_reads_a_real_stdin_in_a_subprocess():
    stdin = "\n".join(["abc", "", *["1"] * 300]) + "\n"
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "mt_env.agents.evaluation.play",
            "--agents",
            "human",
            "greedy",
            "--rounds",
            "1",
            "--seed",
            "0",
        ],
        cwd=ROOT,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    assert "'abc' is not a move number" in out.stdout and "Nothing typed" in out.stdout
    assert "Final standings after 1 round(s)" in out.stdout


def test_play_function_is_the_core():
    console = Console()
    game = play(
        ["human", "random"], RulesConfig(num_seats=2, num_rounds=1), 9, console.input, console.print
    )
    assert game.match.is_over and game.record["finished"]


# ---------------------------------------------------------------------- pictures and page
SMALL = RulesConfig(num_seats=2, num_rounds=1, max_pip=6)  # ~11 moves: few pictures to draw


class PageParser(HTMLParser):
    """Collects the tags, attributes and text of a page; raises on a stray end tag."""

    VOID = {"meta", "img", "input", "br", "link"}

    def __init__(self) -> None:
        super().__init__()
        self.open: list[str] = []
        self.tags: list[tuple[str, dict]] = []
        self.text: list[str] = []  # outside scripts
        self.links: list[str] = []  # the texts of the <a> elements

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))
        if tag not in self.VOID:
            self.open.append(tag)

    def handle_endtag(self, tag):
        assert self.open and self.open[-1] == tag, (tag, self.open[-5:])
        self.open.pop()

    def handle_data(self, data):
        if self.open and self.open[-1] == "a":
            self.links.append(data)
        elif not self.open or self.open[-1] not in ("script", "style"):
            self.text.append(data)


@pytest.fixture(scope="module")
def drawn(tmp_path_factory):
    """A short finished game, saved, then drawn by the CLI: pictures and page at once."""
    folder = tmp_path_factory.mktemp("replay")
    game, _ = run_game(["longest-train", "greedy"], SMALL, seed=1)
    record = json.loads(json.dumps(game.record))
    path = save_record(record, folder / "game.json")
    console = Console()
    argv = ["--replay", str(path), "--pictures", str(folder / "pics"), "--html"]
    assert main([*argv, str(folder / "page.html")], console.input, console.print) == 0
    assert console.reads == 0  # nothing is shown step by step
    return record, folder, console.output


def test_replay_pictures_one_per_position(drawn):
    from PIL import Image

    from mt_env.agents.evaluation.replay_page import CAPTION_H
    from mt_env.picture import frame_size

    record, folder, output = drawn
    moves = sum(len(r["moves"]) for r in record["rounds"])
    files = sorted((folder / "pics").iterdir())
    assert len(files) == moves + len(record["rounds"]) > 5  # before each move + round end
    assert [f.name for f in files[:2]] == ["frame-000.png", "frame-001.png"]
    assert f"{len(files)} pictures written to" in output
    height, width = frame_size(SMALL)
    pictures = [np.asarray(Image.open(f).convert("RGB")) for f in files]
    assert {p.shape for p in pictures} == {(height + CAPTION_H, width, 3)}
    assert all((a != b).any() for a, b in pairwise(pictures))  # every move changes the table
    assert not list((folder / "pics").glob(".*"))  # no temporary file left


def test_replay_page_is_self_contained_and_complete(drawn):
    record, folder, output = drawn
    page = (folder / "page.html").read_text()
    assert "Replay page written to" in output
    parser = PageParser()
    parser.feed(page)
    parser.close()
    assert parser.open == []  # every element closed
    tags = parser.tags
    for tag, attrs in tags:  # nothing is fetched from elsewhere
        assert tag not in ("link", "iframe", "object", "embed"), tag
        assert not (tag == "script" and "src" in attrs)
        for name in ("src", "href", "action", "data"):
            value = attrs.get(name) or ""
            assert value in ("", "#") or value.startswith("data:"), (tag, name, value)
    assert not re.search(r"https?://|url\(|@import", page)
    ids = {a.get("id") for _, a in tags}
    assert {"frame", "prev", "next", "play", "slider"} <= ids
    assert ("input", "range") in {(t, a.get("type")) for t, a in tags}
    assert "ArrowLeft" in page and "ArrowRight" in page  # the keyboard
    frames = sum(len(r["moves"]) for r in record["rounds"]) + len(record["rounds"])
    pictures = re.findall(r'"data:image/(?:webp|png);base64,[A-Za-z0-9+/=]+"', page)
    assert len(pictures) == frames
    assert len(page) < 40_000 * frames  # a sensible size
    text = "".join(parser.text)
    titles = [a["title"] for t, a in tags if t == "a" and "title" in a]
    for rnd in record["rounds"]:  # every move, in the record's words and in the table's
        assert [m["text"] for m in rnd["moves"]] == titles[: len(rnd["moves"])]
        titles = titles[len(rnd["moves"]) :]
    printed: list[str] = []
    match = replay(record, print_fn=printed.append, step=False)
    said = [line for line in printed if re.match(r"seat \d \(\S+\) (plays|draws|passes)", line)]
    assert parser.links == [*said, "Round 1 is over"]  # the move list, linked to the frames
    assert f"seat 0 (longest-train) with {match.totals[0]} points" in text
    assert "Final standings after 1 round(s):" in text and "Round scores" in text


def test_a_quit_game_ends_with_the_position_where_it_stopped():
    from mt_env.agents.evaluation.replay_page import replay_frames

    game, _ = run_game(["human", "greedy"], SMALL, seed=1, console=Console(limit=2))
    assert game.quit == "End of input"
    record = json.loads(json.dumps(game.record))
    frames = list(replay_frames(record))
    assert [f.kind for f in frames] == ["move"] * len(record["rounds"][0]["moves"]) + ["stopped"]
    assert "the record stops here" in frames[-1].title


def test_pictures_and_page_refuse_a_tampered_record_and_write_nothing(tmp_path, capsys):
    game, _ = run_game(["longest-train", "greedy"], SMALL, seed=1)
    bad = json.loads(json.dumps(game.record))
    bad["rounds"][0]["moves"][2]["seat"] ^= 1
    path = save_record(bad, tmp_path / "bad.json")
    page = tmp_path / "page.html"
    page.write_text("an older page")
    argv = ["--replay", str(path), "--pictures", str(tmp_path / "pics"), "--html", str(page)]
    assert main(argv, print_fn=lambda *a, **k: None) == 1
    assert "error: round 1, move 3 " in capsys.readouterr().err
    assert page.read_text() == "an older page" and not list((tmp_path / "pics").iterdir())
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.json", "page.html", "pics"]


def test_unwritable_paths_are_an_error_not_a_traceback(tmp_path, capsys):
    game, _ = run_game(["longest-train", "greedy"], SMALL, seed=1)
    path = save_record(game.record, tmp_path / "g.json")
    blocker = tmp_path / "file"
    blocker.write_text("x")
    for option, target in [
        ("--html", blocker / "page.html"),  # under a file
        ("--html", tmp_path),  # a folder
        ("--pictures", blocker),  # a file
    ]:
        assert main(["--replay", str(path), option, str(target)], print_fn=print) == 1
        err = capsys.readouterr().err
        assert err.startswith("error: ") and str(target) in err, err
    console = Console()  # --save: refused before the game, not after it
    argv = ["--agents", "human", "random", "--save", str(blocker / "g.json")]
    assert main(argv, console.input, console.print) == 1
    assert console.reads == 0 and "error: --save: " in capsys.readouterr().err
    with pytest.raises(SystemExit) as exc:
        main(["--agents", "human", "random", "--html", str(tmp_path / "p.html")])
    assert exc.value.code == 2 and "go with --replay" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file", "g.json"]
