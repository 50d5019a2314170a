"""Play Mexican Train in a terminal against agents, save the game, replay it (``mt-play``).

``python -m mt_env.agents.evaluation.play --agents human longest-train [--seed 0]
[--rounds 2] [--rules first_turn=single ...] [--save game.json]``

``python -m mt_env.agents.evaluation.play --replay game.json [--all | --pictures DIR --html PAGE]``

**Seats.** ``--agents`` lists one entry per seat (seat 0 first), so the number of entries
is the number of seats: ``human`` for each person, otherwise any spec of
:func:`mt_env.agents.make_agent` (``random``, ``greedy``, ``longest-train``,
``longest-train-reserve``, ``search``, ``ckpt:PATH``, ``search-ppo:PATH`` and ``py:MODULE:FACTORY[:ARG]``
for a model trained with another library, e.g. ``py:mt_env.integrations.sb3:agent:m.zip``).
``--rules`` takes the options of :class:`mt_env.config.RulesConfig` as ``key=value`` (parsed by the tournament's
:func:`~mt_env.agents.evaluation.tournament.parse_rules`); ``--rounds N`` is
``--rules num_rounds=N``. ``--seed`` fixes the deals and the agents' choices (without
it a seed is drawn and printed, so any game can be played again).

**A human's turn.** The table is shown from that seat's point of view
(:func:`mt_env.render.render_text` with ``seat`` = the acting seat: the trains, markers,
open doubles, every hand's *size*, the boneyard's *size* and that seat's own tiles — never
another hand nor the boneyard's order), then the legal moves numbered ``1..k``; type a
number (plain digits: :func:`read_choice`). ``?`` lists the moves again, ``q`` quits (the
standings so far are printed), and anything else is asked again with a hint saying what
was wrong; no answer makes the program fail. With several humans at one keyboard, the
program waits for Enter before showing the next person's hand. Scripted seats move on
their own, one line per move.

**Game records** (``--save PATH``; :func:`save_record` / :func:`load_record`) are JSON::

    {
      "format": "mt_env game record",
      "version": 1,
      "rules": {...},              # RulesConfig.to_dict(): every option, num_seats included
      "seed": 7,                   # the match seed (deals) and the agents' seed source
      "lineup": ["human", "longest-train"],   # spec per seat
      "rounds": [                  # every round reached, in order
        {
          "deal": {                # the round's starting position (mt_env.rules.Deal)
            "hands": [[[0, 3], [2, 7], ...], ...],  # per seat, after the engine was found
            "boneyard": [[4, 4], ...],             # draw order: the first is drawn first
            "engine": 9,                           # the engine double's pip
            "start_seat": 1                        # the seat that plays first
          },
          "moves": [               # every decision of the round, in order
            {"seat": 1, "move": 57, "text": "play 5|9 on Mexican"},
            ...
          ]
        }
      ],
      "finished": true,            # false: a person quit; the last round is unfinished
      "totals": [35, 12],          # match totals of the finished rounds
      "places": [2, 1]             # places after them (1 = best)
    }

``move`` is the absolute move integer of :mod:`mt_env.actions` (trains are seat indices,
``num_seats`` is the Mexican train; ``draw`` and ``pass`` are the last two integers) and
``text`` its :meth:`~mt_env.actions.MoveCodec.describe`. Tiles are ``[a, b]`` pips.

**Replay** (:func:`replay`, ``--replay PATH``) rebuilds the match from ``rules`` and the
recorded deals (the seed is not needed) and plays every move, checking that it is legal,
made by the recorded seat, described by its ``text``, and that every round ends exactly
where its moves do; at the end the totals must equal the recorded ones. The first
mismatch raises :class:`RecordError` naming the round and move. Step by step (Enter for
the next move, ``a`` for the rest, ``q`` to stop) or all at once (``--all``). The same
check runs before pictures are made: ``--replay PATH --pictures DIR`` writes one PNG per
position and ``--html PAGE`` one self-contained HTML page with the pictures, buttons, a
slider and the moves (:mod:`mt_env.agents.evaluation.replay_page`: an *open* replay, which
shows the hand of the seat to act).

**Files** (the record, the pictures, the page) are written whole or not at all: to a
temporary file first, then renamed into place. An unusable path is an ``error:`` line
and exit code 1 — for ``--save``, before the game starts.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from mt_env.agents import make_agent
from mt_env.agents.evaluation.tournament import (
    check_output_dir,
    derive_seed,
    parse_rules,
    write_files_atomically,
)
from mt_env.config import RulesConfig
from mt_env.match import Match, RoundResult
from mt_env.observation import ObservationEncoder
from mt_env.render import render_text
from mt_env.rules import Deal, DealError, RoundState
from mt_env.tiles import format_tile

HUMAN = "human"
RECORD_FORMAT = "mt_env game record"
RECORD_VERSION = 1
QUIT_WORDS = ("q", "quit", "exit")
HELP_WORDS = ("?", "h", "help")
RULE = "=" * 72

InputFn = Callable[[str], str]
PrintFn = Callable[..., None]


class RecordError(ValueError):
    """A game record that is malformed or does not replay (names the first bad move)."""


class _Quit(Exception):
    """A person asked to stop (``q``, end of input or Ctrl-C)."""

    def __init__(self, why: str) -> None:
        super().__init__(why)
        self.why = why


# ---------------------------------------------------------------------- words
def ordinal(k: int) -> str:
    suffix = "th" if 10 <= k % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(k % 10, "th")
    return f"{k}{suffix}"


def seat_label(lineup: Sequence[str], seat: int) -> str:
    """``"seat 1 (longest-train)"``."""
    return f"seat {seat} ({lineup[seat]})"


def _tile_from_end(state: RoundState, move: int) -> tuple[str, int]:
    """The played tile written from the end it joins (``"6|1"`` on a train ending in 6),
    and the train."""
    codec = state.codec
    tile, train = codec.split(move)
    a, b = state.tiles.tiles[tile]
    end = state.open_end(train)
    if b == end and a != end:
        a, b = b, a
    return format_tile((a, b)), train


def _marker_on_pass(state: RoundState) -> bool:
    """Whether passing now puts a marker on the seat's train (R10/R13/R17: every pass
    except the end of a free first turn in which the seat played)."""
    return not (state.in_free_first_turn and state.tiles_played_this_turn > 0)


def describe_for_player(state: RoundState, move: int) -> str:
    """A legal move of the seat to act, in its own words: ``"play 6|1 on your train"``."""
    codec, seat = state.codec, state.seat
    if move == codec.draw:
        return "draw from the boneyard"
    if move == codec.pass_:
        if not _marker_on_pass(state):
            return "pass: end your turn here"
        if state.is_marked(seat):
            return "pass (the marker stays on your train)"
        return "pass (your train gets a marker: open to everyone)"
    tile, train = _tile_from_end(state, move)
    return f"play {tile} on {_train_words(state, train, seat, 'your train')}"


def describe_for_table(state: RoundState, move: int, lineup: Sequence[str]) -> str:
    """A move of the seat to act as everyone hears it:
    ``"seat 1 (longest-train) plays 5|9 on the Mexican train"``."""
    codec, seat = state.codec, state.seat
    who = seat_label(lineup, seat)
    if move == codec.draw:
        return f"{who} draws from the boneyard"
    if move == codec.pass_:
        marker = _marker_on_pass(state) and not state.is_marked(seat)
        return f"{who} passes" + (" (a marker goes on its train)" if marker else "")
    tile, train = _tile_from_end(state, move)
    return f"{who} plays {tile} on {_train_words(state, train, seat, 'its own train')}"


def _train_words(state: RoundState, train: int, seat: int, own: str) -> str:
    """A train as a player names it: ``own`` for the acting seat's, the Mexican train, or
    another seat's."""
    if train == state.mexican_train:
        return "the Mexican train"
    return own if train == seat else f"seat {train}'s train"


def ordered_moves(state: RoundState) -> list[int]:
    """The legal moves in the order a person reads them: plays on the own train, then on
    the other seats' trains clockwise, then on the Mexican train (by tile within a train),
    then draw, then pass."""
    codec, seat, n = state.codec, state.seat, state.num_seats

    def key(move: int) -> tuple[int, int, int]:
        if move >= codec.draw:
            return (1, move, 0)
        tile, train = codec.split(move)
        rank = n if train == n else (train - seat) % n
        return (0, rank, tile)

    return sorted(state.legal_moves(), key=key)


def round_summary(
    result: RoundResult, config: RulesConfig, lineup: Sequence[str], totals: Sequence[int]
) -> str:
    n = config.num_seats
    if result.end_reason == "out":
        how = " and ".join(seat_label(lineup, k) for k in result.out_seats) + " went out"
    else:
        how = "the game is blocked (nobody can play and the boneyard is empty)"
    lines = [
        RULE,
        f"Round {result.round_index + 1} of {config.num_rounds} is over: {how}.",
        "Round scores (pips left in hand; lower is better):"
        if config.scoring == "penalty"
        else "Round scores (the pips left in the other hands, to whoever went out; higher "
        "is better):",
    ]
    lines += [f"  {seat_label(lineup, k)}: {result.scores[k]}" for k in range(n)]
    lines.append(f"Match totals after {result.round_index + 1} round(s):")
    lines += [f"  {seat_label(lineup, k)}: {totals[k]}" for k in range(n)]
    return "\n".join(lines)


def standings(match: Match, lineup: Sequence[str], final: bool) -> str:
    """Places (1 = best), totals and the winner(s) — or the leader(s) so far."""
    n = match.config.num_seats
    done = len(match.results)
    totals, places = match.totals, match.places()
    head = (
        f"Final standings after {done} round(s):"
        if final
        else f"Standings so far ({done} of {match.config.num_rounds} round(s) finished; "
        "an unfinished round is not scored):"
    )
    lines = [RULE, head]
    for k in sorted(range(n), key=lambda k: (places[k], k)):
        lines.append(f"  {ordinal(places[k])}: {seat_label(lineup, k)} with {totals[k]} points")
    best = [seat_label(lineup, k) for k in range(n) if places[k] == 1]
    if final:
        lines.append(
            f"Winner: {best[0]}" if len(best) == 1 else f"Winners (tied): {', '.join(best)}"
        )
    elif done:
        lines.append(("Leader: " if len(best) == 1 else "Leaders (tied): ") + ", ".join(best))
    return "\n".join(lines)


# ---------------------------------------------------------------------- playing
def _deal_dict(state: RoundState) -> dict:
    """The starting position of a round that has not moved yet (a :class:`Deal` as JSON)."""
    return {
        "hands": [[list(t) for t in state.hand(k)] for k in range(state.num_seats)],
        "boneyard": [list(t) for t in state.boneyard],
        "engine": state.engine,
        "start_seat": state.seat,
    }


class Game:
    """One match between people and agents, driven through ``input_fn``/``print_fn``.

    ``lineup`` holds one spec per seat (``"human"`` or a :func:`make_agent` spec).
    :meth:`run` plays until the match ends or a person quits and returns the game record
    (module docstring); afterwards :attr:`match`, :attr:`record` and :attr:`quit` tell
    how it went.
    """

    def __init__(
        self,
        lineup: Sequence[str],
        config: RulesConfig,
        seed: int | None = None,
        input_fn: InputFn = input,
        print_fn: PrintFn = print,
        clear_screen: bool = False,
    ) -> None:
        lineup = list(lineup)
        if len(lineup) != config.num_seats:
            raise ValueError(
                f"the lineup has {len(lineup)} entries for {config.num_seats} seats: "
                "give one agent spec (or 'human') per seat"
            )
        if seed is None:
            seed = random.SystemRandom().randrange(2**31)
        self.lineup = lineup
        self.config = config
        self.seed = seed
        self.input_fn = input_fn
        self.print_fn = print_fn
        self.clear_screen = clear_screen
        self.humans = [k for k, spec in enumerate(lineup) if spec == HUMAN]
        self.agents = {}
        for seat, spec in enumerate(lineup):
            if spec != HUMAN:
                agent = make_agent(spec, config, seed=derive_seed(seed, seat))
                agent.reset()
                self.agents[seat] = agent
        self.encoder = ObservationEncoder(config)
        self.match = Match(config, seed=seed)
        self.rounds: list[dict] = [{"deal": _deal_dict(self.match.state), "moves": []}]
        self.quit: str | None = None
        self._last_human: int | None = None

    # -- the record --------------------------------------------------------------
    @property
    def record(self) -> dict:
        return {
            "format": RECORD_FORMAT,
            "version": RECORD_VERSION,
            "rules": self.config.to_dict(),
            "seed": self.seed,
            "lineup": self.lineup,
            "rounds": self.rounds,
            "finished": self.match.is_over,
            "totals": self.match.totals,
            "places": self.match.places(),
        }

    # -- the loop ----------------------------------------------------------------
    def run(self) -> dict:
        out = self.print_fn
        match = self.match
        out(RULE)
        out(
            f"Mexican Train: {self.config.num_seats} seats, double-{self.config.max_pip} set, "
            f"{self.config.num_rounds} round(s), seed {self.seed}"
        )
        for k in range(self.config.num_seats):
            out(f"  {seat_label(self.lineup, k)}")
        if self.humans:
            out("Type the number of a move; ? lists the moves again, q quits.")
        self._round_start()
        try:
            while not match.is_over:
                state = match.state
                seat = state.seat
                move = self._agent_move(seat) if seat in self.agents else self._human_move(seat)
                self._apply(move)
        except _Quit as stop:
            self.quit = stop.why
            out("")
            out(f"{stop.why}: the game stops here.")
            out(standings(match, self.lineup, final=False))
            return self.record
        out(standings(match, self.lineup, final=True))
        return self.record

    def _round_start(self) -> None:
        state = self.match.state
        self.print_fn(RULE)
        self.print_fn(
            f"Round {self.match.round_index + 1} of {self.config.num_rounds}: engine "
            f"{state.engine}|{state.engine}; {seat_label(self.lineup, state.seat)} starts."
        )

    def _apply(self, move: int) -> None:
        match = self.match
        state = match.state
        line = describe_for_table(state, move, self.lineup)
        self.rounds[-1]["moves"].append(
            {"seat": state.seat, "move": move, "text": state.codec.describe(move)}
        )
        result = match.apply(move)
        self.print_fn(line)
        if result is not None:
            self.print_fn(round_summary(result, self.config, self.lineup, match.totals))
            if not match.is_over:
                self.rounds.append({"deal": _deal_dict(match.state), "moves": []})
                self._round_start()

    def _agent_move(self, seat: int) -> int:
        match, enc = self.match, self.encoder
        mask = enc.action_mask(match, seat)
        action = int(self.agents[seat].act(enc.encode(match, seat), mask))
        if not 0 <= action < mask.size or not mask[action]:
            raise RuntimeError(
                f"agent {self.lineup[seat]!r} in seat {seat} returned the illegal action {action}"
            )
        return match.state.codec.to_move(action, seat)

    # -- a person's turn -----------------------------------------------------------
    def _read(self, prompt: str) -> str:
        try:
            return self.input_fn(prompt)
        except EOFError:
            raise _Quit("End of input") from None
        except KeyboardInterrupt:
            raise _Quit("Interrupted") from None

    def _handoff(self, seat: int) -> None:
        """Several people at one keyboard: hide the last hand before showing the next."""
        if len(self.humans) < 2 or self._last_human in (None, seat):
            self._last_human = seat
            return
        if self.clear_screen:
            self.print_fn("\033[H\033[2J", end="")
        self.print_fn(RULE)
        answer = self._read(
            f"{seat_label(self.lineup, seat)}: your turn. Others look away; press Enter to "
            "see your hand (q quits): "
        )
        if answer.strip().lower() in QUIT_WORDS:
            raise _Quit(f"Seat {seat} quit")
        self._last_human = seat

    def _human_move(self, seat: int) -> int:
        out = self.print_fn
        state = self.match.state
        self._handoff(seat)
        moves = ordered_moves(state)
        texts = [describe_for_player(state, m) for m in moves]
        k = len(moves)
        out(RULE)
        out(f"Your turn, {seat_label(self.lineup, seat)}.")
        out(render_text(self.match, seat=seat))
        menu = "\n".join(["Your moves:", *(f"  {i}. {t}" for i, t in enumerate(texts, 1))])
        out(menu)
        numbers = "1" if k == 1 else f"a number from 1 to {k}"
        hint = f"type {numbers}, ? to list the moves, or q to quit"
        while True:
            raw = self._read(f"Your move ({'1' if k == 1 else f'1-{k}'}, q quits): ")
            text = raw.strip()
            low = text.lower()
            if low in QUIT_WORDS:
                raise _Quit(f"Seat {seat} quit")
            if low in HELP_WORDS:
                out(menu)
                continue
            choice = read_choice(text, k)
            if isinstance(choice, str):
                out(f"{choice}: {hint}.")
                continue
            return moves[choice - 1]


def read_choice(text: str, k: int) -> int | str:
    """A person's answer to a menu of ``k`` moves: the number typed (1..k), or what is
    wrong with the answer. Only ASCII digits count, with an optional sign (so ``1_0``,
    ``２`` or ``٣``, which Python's ``int`` would read as 10, 2 and 3, are not numbers
    here: a typo must not become another move)."""
    if not text:
        return "Nothing typed"
    shown = repr(text if len(text) <= 24 else text[:21] + "...")
    if _INTEGER.fullmatch(text):
        digits = text.lstrip("+-").lstrip("0") or "0"  # no int() of a 5000-digit answer
        if not text.startswith("-") and len(digits) <= 6 and 1 <= int(digits) <= k:
            return int(digits)
        return f"There is no move {text if len(text) <= 24 else text[:21] + '...'}"
    if _DECIMAL.fullmatch(text):
        return f"{shown} is not a whole number"
    return f"{shown} is not a move number"


_INTEGER = re.compile(r"[+-]?[0-9]+")
_DECIMAL = re.compile(r"[+-]?(?:[0-9]+\.[0-9]*|\.[0-9]+)")


def play(
    lineup: Sequence[str],
    config: RulesConfig,
    seed: int | None = None,
    input_fn: InputFn = input,
    print_fn: PrintFn = print,
    clear_screen: bool = False,
) -> Game:
    """Play one match (see :class:`Game`) and return the finished (or quit) game."""
    game = Game(lineup, config, seed, input_fn, print_fn, clear_screen)
    game.run()
    return game


# ---------------------------------------------------------------------- records
def dumps_record(record: dict, width: int = 100) -> str:
    """JSON for people: one move per line, tiles packed several to a line."""

    def leaf(v) -> bool:
        return not isinstance(v, list | dict) or (
            isinstance(v, list) and all(not isinstance(x, list | dict) for x in v)
        )

    def fmt(value, indent: int) -> str:
        one = json.dumps(value)
        if not isinstance(value, list | dict) or not value or indent + len(one) <= width:
            return one
        pad, end = " " * (indent + 2), " " * indent
        if isinstance(value, dict):
            body = [f"{pad}{json.dumps(k)}: {fmt(v, indent + 2)}" for k, v in value.items()]
            return "{\n" + ",\n".join(body) + "\n" + end + "}"
        items = [fmt(v, indent + 2) for v in value]
        if not all(leaf(v) for v in value):
            return "[\n" + ",\n".join(pad + i for i in items) + "\n" + end + "]"
        lines, line = [], ""
        for item in items:  # pack short items (tiles, numbers) up to the width
            if line and len(pad) + len(line) + len(item) + 2 > width:
                lines.append(line + ",")
                line = item
            else:
                line = f"{line}, {item}" if line else item
        lines.append(line)
        return "[\n" + "\n".join(pad + x for x in lines) + "\n" + end + "]"

    return fmt(record, 0) + "\n"


def save_record(record: dict, path: str | os.PathLike) -> Path:
    """Write a game record as JSON (:func:`dumps_record`); returns the path. The file is
    written whole or not at all (a temporary file, then a rename); ``OSError`` naming the
    path if it cannot be."""
    path = check_file_path(path)
    data = dumps_record(record).encode()
    return write_files_atomically(path.parent, [(path.name, lambda fh: fh.write(data))])[0]


def check_file_path(path: str | os.PathLike) -> Path:
    """``path``, once its folder exists (created if needed) and is writable and ``path``
    is not a folder; ``OSError`` naming it otherwise. Run it before the work whose
    result goes there."""
    path = Path(path)
    if path.is_dir():
        raise IsADirectoryError(f"cannot write {str(path)!r}: it is a folder, not a file")
    try:
        check_output_dir(path.parent)
    except OSError as err:
        raise OSError(err.errno, f"cannot write {str(path)!r}: {err.strerror or err}") from None
    return path


def load_record(path: str | os.PathLike) -> dict:
    try:
        data = json.loads(Path(path).read_text())
    except OSError as err:
        raise RecordError(f"cannot read the game record {str(path)!r}: {err}") from None
    except json.JSONDecodeError as err:
        raise RecordError(f"{str(path)!r} is not a game record: invalid JSON ({err})") from None
    return data


def _parse(record: dict) -> tuple[RulesConfig, list[str], list[dict]]:
    if not isinstance(record, dict):
        raise RecordError("a game record is a JSON object (see mt_env.agents.evaluation.play)")
    if record.get("format") != RECORD_FORMAT:
        raise RecordError(
            f"not a game record: 'format' is {record.get('format')!r}, expected {RECORD_FORMAT!r}"
        )
    if record.get("version") != RECORD_VERSION:
        raise RecordError(
            f"game record version {record.get('version')!r}: this program reads {RECORD_VERSION}"
        )
    for key in ("rules", "lineup", "rounds"):
        if key not in record:
            raise RecordError(f"the game record has no {key!r}")
    try:
        config = RulesConfig.from_dict(dict(record["rules"]))
    except (TypeError, ValueError) as err:
        raise RecordError(f"the game record's rules are invalid: {err}") from None
    lineup = record["lineup"]
    if not isinstance(lineup, list) or len(lineup) != config.num_seats:
        raise RecordError(
            f"the game record's lineup {lineup!r} does not name one entry per seat "
            f"({config.num_seats})"
        )
    rounds = record["rounds"]
    if not isinstance(rounds, list) or not rounds:
        raise RecordError("the game record's 'rounds' must be a non-empty list")
    if len(rounds) > config.num_rounds:
        raise RecordError(
            f"the game record has {len(rounds)} rounds; its rules play {config.num_rounds}"
        )
    for r, rnd in enumerate(rounds, 1):
        if not isinstance(rnd, dict) or not isinstance(rnd.get("moves"), list) or "deal" not in rnd:
            raise RecordError(f"round {r} of the game record needs a 'deal' and a list of 'moves'")
    return config, [str(s) for s in lineup], rounds


@dataclass
class ReplayStep:
    """What a :class:`Replay` yields, in order, for each round of the record.

    ``kind`` is ``"round"`` when a round starts (no move fields), ``"move"`` just before a
    checked move is made (the match shows the position it is made in), and ``"made"``
    right after it (``result`` is set when the move ended the round; ``state`` is then that
    finished round, since the match has already dealt the next one).
    """

    kind: str
    round: int  # 0-based
    state: RoundState  # the round being played
    index: int = 0  # 1-based number of the move in its round
    count: int = 0  # moves the record holds for the round
    seat: int = -1
    move: int = -1
    text: str = ""  # the record's text: MoveCodec.describe(move)
    line: str = ""  # the move as the table hears it (describe_for_table)
    result: RoundResult | None = None


class Replay:
    """A game record replayed and checked move by move (module docstring, **Replay**).

    Building it checks the rules and the deals; iterating it plays every move and yields
    :class:`ReplayStep` s, raising :class:`RecordError` at the first move that does not
    replay (and, at the end, if the totals differ). :attr:`match` is the match being
    replayed. The terminal replay and the pictures
    (:mod:`mt_env.agents.evaluation.replay_page`) both walk a record this way.
    """

    def __init__(self, record: dict) -> None:
        self.config, self.lineup, self.rounds = _parse(record)
        self.record = record
        deals = []
        for r, rnd in enumerate(self.rounds, 1):
            try:
                deal = Deal.coerce(rnd["deal"])
                RoundState(self.config, deal)  # validates the deal against the rules
            except (DealError, TypeError, ValueError) as err:
                raise RecordError(f"round {r}'s deal is invalid: {err}") from None
            deals.append(deal)
        try:
            self.match = Match(self.config, seed=record.get("seed"), deals=deals)
        except (DealError, TypeError, ValueError) as err:
            raise RecordError(f"a deal of the game record is invalid: {err}") from None

    def header(self) -> list[str]:
        """The replay's opening lines: the table and its seats."""
        cfg = self.config
        lines = [
            f"Replay: {cfg.num_seats} seats, double-{cfg.max_pip} set, {cfg.num_rounds} "
            f"round(s), seed {self.record.get('seed')}"
        ]
        return lines + [f"  {seat_label(self.lineup, k)}" for k in range(cfg.num_seats)]

    def __iter__(self) -> Iterator[ReplayStep]:
        match, rounds = self.match, self.rounds
        for r, rnd in enumerate(rounds):
            if match.is_over or match.round_index != r:
                raise RecordError(f"round {r + 1}: the match was already over before it")
            moves = rnd["moves"]
            yield ReplayStep("round", r, match.state, count=len(moves))
            for i, entry in enumerate(moves, 1):
                where = f"round {r + 1}, move {i}"
                if match.is_over or match.round_index != r:
                    raise RecordError(
                        f"{where}: the round already ended after move {i - 1}, but the record "
                        f"has {len(moves) - i + 1} more move(s) in it"
                    )
                state = match.state
                move = self._checked(state, entry, where)
                step = ReplayStep(
                    "move", r, state, i, len(moves), state.seat, move,
                    text=state.codec.describe(move),
                    line=describe_for_table(state, move, self.lineup),
                )  # fmt: skip
                yield step
                step.result = match.apply(move)
                step.kind = "made"
                yield step
            last = r == len(rounds) - 1
            ended = match.is_over or match.round_index != r
            if not last and not ended:
                raise RecordError(
                    f"round {r + 1}: its {len(moves)} move(s) stop before the round ends, but "
                    f"the record goes on to round {r + 2}"
                )
            if last and self.record.get("finished") and not match.is_over:
                raise RecordError(
                    f"the record says the match finished, but round {r + 1}'s moves stop "
                    "before the match ends"
                )
        recorded = self.record.get("totals")
        if recorded is not None and list(recorded) != match.totals:
            raise RecordError(
                f"the replay's match totals {match.totals} differ from the recorded "
                f"{list(recorded)}"
            )

    @staticmethod
    def _checked(state: RoundState, entry, where: str) -> int:
        """The recorded move, if it is legal here, made by the seat to act and described by
        the recorded text."""
        if not isinstance(entry, dict) or "move" not in entry:
            raise RecordError(f"{where}: expected an object with a 'move', got {entry!r}")
        move, said = entry["move"], entry.get("text")
        label = f"{where} (seat {entry.get('seat', '?')}, {said!r})"
        if isinstance(move, bool) or not isinstance(move, int):
            raise RecordError(f"{label}: the move {move!r} is not an integer")
        if "seat" in entry and entry["seat"] != state.seat:
            raise RecordError(
                f"{label}: the record says seat {entry['seat']} moves, but it is seat "
                f"{state.seat}'s turn"
            )
        codec = state.codec
        legal = state.legal_moves()
        if move not in legal:
            what = codec.describe(move) if 0 <= move < codec.num_actions else "no move at all"
            options = ", ".join(codec.describe(m) for m in legal)
            raise RecordError(
                f"{label}: move {move} ({what}) is not legal here; seat {state.seat}'s legal "
                f"moves are [{options}]"
            )
        if said is not None and said != codec.describe(move):
            raise RecordError(
                f"{label}: the text does not match move {move}, which is {codec.describe(move)!r}"
            )
        return move


def replay(
    record: dict,
    input_fn: InputFn = input,
    print_fn: PrintFn | None = print,
    step: bool = True,
) -> Match:
    """Replay a game record in the terminal (module docstring), checking every move;
    returns the match.

    ``step``: wait for Enter after each move (``a`` plays the rest, ``q`` stops; a stop
    still checks the remaining moves, silently). ``print_fn=None`` only checks.
    RecordError names the first move that does not replay.
    """
    game = Replay(record)
    config, lineup, match = game.config, game.lineup, game.match
    quiet = print_fn is None
    out = print_fn or (lambda *a, **k: None)
    out(RULE)
    out("\n".join(game.header()))
    for event in game:
        state = event.state
        if event.kind == "round" and not quiet:
            out(RULE)
            out(
                f"Round {event.round + 1} of {config.num_rounds}: engine {state.engine}|"
                f"{state.engine}; {seat_label(lineup, state.seat)} starts."
            )
        elif event.kind == "move" and not quiet and step:
            out(RULE)
            out(render_text(match, seat=state.seat))
        elif event.kind == "made":
            out(event.line)
            if event.result is not None:
                out(round_summary(event.result, config, lineup, match.totals))
            if not quiet and step:
                try:
                    answer = input_fn("Enter: next move, a: all the rest, q: stop ").strip()
                except (EOFError, KeyboardInterrupt):
                    answer = "q"
                if answer.lower() in QUIT_WORDS:
                    out("Replay stopped; checking the rest of the record.")
                    out, quiet = (lambda *a, **k: None), True
                elif answer.lower() in ("a", "all"):
                    step = False
    if match.is_over:
        out(RULE)
        out(render_text(match))
    out(standings(match, lineup, final=match.is_over))
    return match


def check_record(record: dict) -> Match:
    """Replay silently; RecordError at the first move that does not replay."""
    return replay(record, print_fn=None, step=False)


# ---------------------------------------------------------------------- CLI
def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m mt_env.agents.evaluation.play",
        description=(
            "Play Mexican Train in the terminal against agents (one --agents entry per "
            "seat; 'human' for each person), save the game, or replay a saved game."
        ),
        epilog=(
            "Examples: --agents human longest-train; --agents ckpt:checkpoints/"
            "default-2seat.pt human --rounds 2 --save game.json; --replay game.json --all; "
            "--replay game.json --html replay.html --pictures frames/"
        ),
    )
    parser.add_argument(
        "--agents",
        nargs="+",
        metavar="SPEC",
        help="one per seat, seat 0 first: human, random, greedy, longest-train, "
        "longest-train-reserve, search, ckpt:PATH, search-ppo:PATH, py:MODULE:FACTORY[:ARG]",
    )
    parser.add_argument("--seed", type=int, default=None, help="seed of the deals and agents")
    parser.add_argument(
        "--rules",
        nargs="*",
        default=[],
        metavar="KEY=VALUE",
        help="rules options of mt_env.config.RulesConfig, e.g. num_rounds=2 first_turn=single",
    )
    parser.add_argument("--rounds", type=int, default=None, help="shortcut for num_rounds=N")
    parser.add_argument("--save", metavar="PATH", help="write the game record (JSON) here")
    parser.add_argument("--replay", metavar="PATH", help="replay a saved game record")
    parser.add_argument(
        "--all", action="store_true", help="with --replay: print the whole game at once"
    )
    parser.add_argument(
        "--pictures",
        metavar="DIR",
        help="with --replay: write one PNG per position into DIR instead of showing the game",
    )
    parser.add_argument(
        "--html",
        metavar="PATH",
        help="with --replay: write one self-contained HTML replay page (pictures, buttons, "
        "slider, moves, results) instead of showing the game",
    )
    return parser


def config_from_args(
    agents: Sequence[str], rules: Sequence[str], rounds: int | None
) -> RulesConfig:
    items = list(rules)
    if any(item.partition("=")[0] == "num_seats" for item in items):
        raise ValueError("--rules num_seats=...: the number of --agents entries sets the seats")
    if rounds is not None:
        if any(item.partition("=")[0] == "num_rounds" for item in items):
            raise ValueError("give --rounds or --rules num_rounds=..., not both")
        items.append(f"num_rounds={rounds}")
    if not 2 <= len(agents) <= 14:
        raise ValueError(f"--agents: {len(agents)} entries; a table seats 2 to 14 (one per seat)")
    return parse_rules(items, len(agents))


def main(
    argv: Sequence[str] | None = None, input_fn: InputFn = input, print_fn: PrintFn = print
) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.replay:
        if args.agents or args.save:
            parser.error("--replay takes no --agents or --save: the record holds the game")
        try:
            record = load_record(args.replay)
            if args.pictures is None and args.html is None:
                replay(record, input_fn, print_fn, step=not args.all)
            else:
                _write_replay(record, args.pictures, args.html, print_fn)
        except (RecordError, OSError) as err:
            print(f"error: {_message(err)}", file=sys.stderr)
            return 1
        return 0
    if args.pictures is not None or args.html is not None:
        parser.error("--pictures and --html go with --replay PATH (a saved game)")
    if not args.agents:
        parser.error("give --agents (one spec per seat, 'human' for a person) or --replay PATH")
    if args.save:
        try:  # an unusable path fails now, not after the game
            check_file_path(args.save)
        except OSError as err:
            print(f"error: --save: {_message(err)}", file=sys.stderr)
            return 1
    try:
        config = config_from_args(args.agents, args.rules, args.rounds)
        game = Game(
            args.agents,
            config,
            args.seed,
            input_fn,
            print_fn,
            clear_screen=sys.stdout.isatty() and args.agents.count(HUMAN) > 1,
        )
    except ValueError as err:
        parser.error(str(err))
    game.run()
    if args.save:
        try:
            path = save_record(game.record, args.save)
        except OSError as err:
            print(f"error: the game record was not saved: {_message(err)}", file=sys.stderr)
            return 1
        print_fn(f"Game record saved to {path} (replay: --replay {path})")
    return 0


def _message(err: Exception) -> str:
    """An error for people: an ``OSError`` without its ``[Errno n]`` unless a file name
    is needed to say which file."""
    if isinstance(err, OSError) and err.strerror and err.filename is None:
        return err.strerror
    return str(err)


def _write_replay(record: dict, pictures: str | None, page: str | None, print_fn) -> None:
    """``--pictures`` / ``--html`` (:func:`~mt_env.agents.evaluation.replay_page.write_replay`)."""
    # imported here: replay_page imports this module
    from mt_env.agents.evaluation.replay_page import write_replay

    paths = write_replay(record, pictures, page)
    if pictures is not None:
        pngs = paths[: len(paths) - (page is not None)]
        print_fn(f"{len(pngs)} pictures written to {pictures} ({pngs[0].name} … {pngs[-1].name})")
    if page is not None:
        print_fn(f"Replay page written to {paths[-1]} ({paths[-1].stat().st_size / 1e6:.2f} MB)")


if __name__ == "__main__":
    raise SystemExit(main())
