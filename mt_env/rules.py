"""The rules of one round of Mexican Train (docs/rules.md sections 1–8, R26's round score).

What lives here: :class:`Deal` (an explicit starting position), :func:`deal_from_order`
and :func:`random_deal` (R4–R6, V-engine-aside), :class:`RoundState` (legal moves,
applying a move, round end, round scores, a read-only view, a cheap copy) and the
determinization pair :meth:`RoundState.public` / :func:`determinize` (below). Nothing
here imports an RL library; the match (several rounds, totals, places) is
:mod:`mt_env.match`.

State layout (all plain Python ints and lists, so ``copy()`` is a handful of list
copies; nothing outside this module reads it — the properties and methods below are
the read-only view):

- ``_hands[seat]`` — bitset over tile ids (:mod:`mt_env.tiles`);
- ``_boneyard`` — tile ids, *last element drawn next*;
- ``_unplayed`` — bitset of every tile in a hand or the boneyard (R22's test);
- ``_lengths[train]`` — tiles in the train; ``_ends[train]`` its open end pip; train
  ``n`` is the Mexican train. ``_trains[train]`` records the tile ids from the engine
  outward, or is ``None`` in a state determinized from an observation (which shows
  ends and lengths, not the order of the tiles): no rule reads it;
- ``_marked`` — bitset over seats: bit ``k`` is the marker on seat ``k``'s train (R10);
- ``_open_doubles`` — trains whose last tile is an open double, in the order they
  became open (R19); a train appears at most once;
- turn state: ``_turn_plays`` (tiles played this turn), ``_drawn`` (tile drawn since
  the last play, or -1), ``_follow_up`` (train of the double owing a follow-up, R16,
  or -1), ``_turn_doubles`` (trains whose last tile is a double played this ordinary
  turn, in the order played: they become open doubles when the turn ends, R19);
- ``_first_pending[seat]`` — the seat has not finished its first turn;
- ``_no_play_turns`` — consecutive finished turns without a tile played (R25);
- ``_voids`` — per seat, a bitset over pips: the pips the seat is *publicly known* to
  hold none of (below); a tuple, replaced when it changes, so copies share it;
- ``_no_play`` — the open ends (bitset over pips) of the trains the seat to act was
  checked against when :meth:`_compute_legal` found no legal play; what a draw or a
  forced pass then proves it lacks.

Known voids (public inference). A draw is legal only when no play is (R15, R17), and a
pass outside the free first turn too (R17, R18): everyone who sees a seat draw or pass
learns that the tiles it was checked against — its hand, or after a draw the drawn tile —
bear none of the open ends of the trains it may play on (R9, R20). ``voids[seat]``
keeps that knowledge while it stays true: a draw adds those ends; a pass after a draw
replaces the set with them (the drawn tile, unknown, may bear the older ones); a play
only shrinks the hand. A pass in the free first turn proves nothing (R11 allows it at
any time). The voids describe the hand less a tile drawn this turn that is still to be
played or passed on (that tile may join a voided end). They are sound (no such hand
ever holds a tile with a pip in its seat's voids: ``tests/test_rules_properties.py``),
not complete (a seat may lack more).

Moves are the integers of :class:`mt_env.actions.MoveCodec`.

Determinization (OpenSpiel's ``resample_from_infostate``): :meth:`RoundState.public`
gives a seat's :class:`PublicPosition` — the table, markers, open doubles, turn state and
hand *sizes* that every seat sees, plus that seat's own hand. :func:`determinize` builds
a full :class:`RoundState` from a position and a guess of the hidden tiles (the other
hands and the boneyard's order), so a search agent imagines worlds on this module's own
rules instead of a second model. :meth:`mt_env.observation.ObservationEncoder.position`
rebuilds a position from an observation vector.
"""

from __future__ import annotations

import numbers
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache

from .actions import move_codec
from .config import RulesConfig
from .tiles import TileSet, format_tile, tile_set

Tile = tuple[int, int]


class IllegalMoveError(ValueError):
    """A move that is not among the legal moves of the seat to act (the state is unchanged)."""


class DealError(ValueError):
    """An explicit deal that is not a valid starting position for the configuration."""


@dataclass(frozen=True)
class Deal:
    """A round's starting position, after the engine is placed (R4–R6).

    ``hands[seat]`` are the tiles each seat holds, ``boneyard`` the face-down tiles
    **in draw order** (``boneyard[0]`` is drawn first), ``engine`` the engine's pip
    (the double ``engine|engine`` stands in the centre, in no hand), ``start_seat``
    the seat that takes the first turn (R7). Tiles are ``(a, b)`` pairs in either
    orientation. Together, hands + boneyard + engine must be exactly the set.
    """

    hands: tuple[tuple[Tile, ...], ...]
    boneyard: tuple[Tile, ...]
    engine: int
    start_seat: int

    def __post_init__(self) -> None:
        try:
            object.__setattr__(self, "hands", tuple(tuple(map(tuple, h)) for h in self.hands))
            object.__setattr__(self, "boneyard", tuple(map(tuple, self.boneyard)))
        except TypeError:
            raise DealError(
                "a deal's hands must be a sequence of sequences of (a, b) tiles, and its "
                "boneyard a sequence of (a, b) tiles"
            ) from None

    @classmethod
    def coerce(cls, deal: Deal | Mapping) -> Deal:
        """A :class:`Deal`, or a mapping with keys hands, boneyard, engine, start_seat."""
        if isinstance(deal, Deal):
            return deal
        if isinstance(deal, Mapping):
            keys = {"hands", "boneyard", "engine", "start_seat"}
            if set(deal) != keys:
                raise DealError(
                    f"a deal mapping needs exactly the keys {sorted(keys)}, got {sorted(deal)}"
                )
            return cls(**deal)
        raise DealError(f"expected a Deal or a mapping, got {type(deal).__name__}")


def random_deal(
    config: RulesConfig, rng: random.Random, engine: int, first_drawer: int = 0
) -> Deal:
    """Shuffle (R4), then deal with :func:`deal_from_order`.

    ``first_drawer`` is the seat that draws first if nobody holds the engine (R6:
    seat 0 in round 1, later the seat after the previous round's start seat); under
    V-engine-aside it is the start seat itself.
    """
    ts = tile_set(config.max_pip)
    order = list(ts.tiles)
    if config.engine_source == "aside":  # V-engine-aside: the engine is never shuffled
        order.remove((engine, engine))
    rng.shuffle(order)
    return deal_from_order(config, order, engine, first_drawer)


def deal_from_order(
    config: RulesConfig, tiles_in_order: Sequence[Tile], engine: int, first_drawer: int = 0
) -> Deal:
    """Deal a shuffled set: the first ``hand_size`` tiles to seat 0, the next to seat 1,
    …, the rest to the boneyard in that order (R4); then find the engine (R6).

    R6: the seat holding the engine double places it and starts; if nobody holds it,
    seats draw in turn from ``first_drawer`` on, keeping what they draw, until one draws
    it. Under V-engine-aside the engine is set aside before the deal (``tiles_in_order``
    must not contain it) and ``first_drawer`` starts. ``tiles_in_order`` must be the
    whole set (less the engine under V-engine-aside) in any orientation; DealError if not.
    """
    ts = tile_set(config.max_pip)
    n, size = config.num_seats, config.hand_size
    if isinstance(engine, bool) or not isinstance(engine, int) or not 0 <= engine <= ts.max_pip:
        raise DealError(f"engine={engine!r}: expected a pip in 0..{ts.max_pip}")
    if isinstance(first_drawer, bool) or not isinstance(first_drawer, int) or not 0 <= first_drawer < n:
        raise DealError(f"first_drawer={first_drawer!r}: expected a seat in 0..{n - 1}")
    try:
        ids = [ts.id_of(t) for t in tiles_in_order]
    except (TypeError, ValueError) as err:
        raise DealError(f"malformed tile order: {err}") from None
    engine_id = ts.double_of[engine]
    aside = config.engine_source == "aside"
    expected = ts.num_tiles - 1 if aside else ts.num_tiles
    if len(set(ids)) != len(ids) or len(ids) != expected or (aside and engine_id in ids):
        raise DealError(
            f"a tile order must hold each tile of the double-{ts.max_pip} set exactly once"
            + (f", less the engine {engine}|{engine} set aside (V-engine-aside)" if aside else "")
            + f": expected {expected} distinct tiles, got {len(ids)} ({len(set(ids))} distinct)"
        )
    hands = [ids[k * size : (k + 1) * size] for k in range(n)]
    boneyard = ids[n * size :]
    if aside:
        start = first_drawer
    else:
        holder = next((k for k in range(n) if engine_id in hands[k]), None)
        seat = first_drawer
        while holder is None:  # R6: draw in turn, keeping the tiles, until the engine comes
            tile = boneyard.pop(0)
            hands[seat].append(tile)
            if tile == engine_id:
                holder = seat
            seat = (seat + 1) % n
        hands[holder].remove(engine_id)
        start = holder
    as_tiles = ts.tiles.__getitem__
    return Deal(
        hands=tuple(tuple(map(as_tiles, h)) for h in hands),
        boneyard=tuple(map(as_tiles, boneyard)),
        engine=engine,
        start_seat=start,
    )


@cache
def _pip_values(max_pip: int, double_blank_value: int) -> tuple[int, ...]:
    """R26: each tile's value in a hand, the double-blank at 50 or 0 (V-blank-zero)."""
    ts = tile_set(max_pip)
    value = list(ts.pips)
    value[ts.double_of[0]] = double_blank_value
    return tuple(value)


@cache
def _playable_trains(n: int, seat: int, marked: int) -> tuple[int, ...]:
    """R9: ``seat``'s own train, the Mexican train (``n``) and every other seat's marked
    train (``marked``: bitset over seats). Cached: the same few answers recur."""
    return (seat, n, *(k for k in range(n) if marked >> k & 1 and k != seat))


class RoundState:
    """One round in progress. Build from a :class:`Deal`; see the module docstring."""

    __slots__ = (
        "config",
        "codec",
        "engine",
        "_hands",
        "_ts",
        "_n",
        "_draw",
        "_pass",
        "_free_first",
        "_draw_first",
        "_oldest_first",
        "_dead_rule",
        "_follow_on_double",
        "_value",
        "_boneyard",
        "_unplayed",
        "_trains",
        "_lengths",
        "_ends",
        "_marked",
        "_open_doubles",
        "_seat",
        "_turn_plays",
        "_drawn",
        "_follow_up",
        "_turn_doubles",
        "_first_pending",
        "_no_play_turns",
        "_out_seats",
        "_end_reason",
        "_turns",
        "_legal",
        "_voids",
        "_no_play",
    )

    def __init__(self, config: RulesConfig, deal: Deal | Mapping) -> None:
        deal = Deal.coerce(deal)
        self._set_rules(config)
        ts, n = self._ts, self._n
        hands, boneyard = self._validate(deal, ts, n)
        self.engine = deal.engine
        self._hands = [ts.mask_of(h) for h in hands]
        self._boneyard = boneyard[::-1]
        self._unplayed = ts.full_mask ^ ts.bit[ts.double_of[deal.engine]]
        self._trains: list[list[int]] | None = [[] for _ in range(n + 1)]
        self._lengths = [0] * (n + 1)
        self._ends = [deal.engine] * (n + 1)
        self._marked = 0
        self._open_doubles: list[int] = []
        self._seat = deal.start_seat
        self._turn_plays = 0
        self._drawn = -1
        self._follow_up = -1
        self._turn_doubles: list[int] = []
        self._first_pending = [True] * n
        self._no_play_turns = 0
        self._out_seats: list[int] = []
        self._end_reason: str | None = None
        self._turns = 0
        self._legal: list[int] | None = None
        self._voids: tuple[int, ...] = (0,) * n
        self._no_play = 0

    def _set_rules(self, config: RulesConfig) -> None:
        """The slots that follow from the configuration alone (tables and rule switches)."""
        ts = tile_set(config.max_pip)
        n = config.num_seats
        self.config = config
        self.codec = move_codec(n, config.max_pip)
        self._ts = ts
        self._n = n
        self._draw = self.codec.draw
        self._pass = self.codec.pass_
        self._free_first = config.first_turn != "single"
        self._draw_first = config.first_turn == "draw"
        self._oldest_first = config.doubles_order == "oldest"
        self._dead_rule = config.dead_doubles
        self._follow_on_double = config.follow_up_on_double
        self._value = _pip_values(config.max_pip, config.double_blank_value)

    @staticmethod
    def _validate(deal: Deal, ts, n: int) -> tuple[list[list[int]], list[int]]:
        if len(deal.hands) != n:
            raise DealError(f"the deal has {len(deal.hands)} hands: expected one per seat ({n})")
        if not isinstance(deal.engine, int) or not 0 <= deal.engine <= ts.max_pip:
            raise DealError(f"engine={deal.engine!r}: expected a pip in 0..{ts.max_pip}")
        if not isinstance(deal.start_seat, int) or not 0 <= deal.start_seat < n:
            raise DealError(f"start_seat={deal.start_seat!r}: expected a seat in 0..{n - 1}")
        try:
            hands = [[ts.id_of(t) for t in h] for h in deal.hands]
            boneyard = [ts.id_of(t) for t in deal.boneyard]
        except ValueError as err:
            raise DealError(f"malformed deal: {err}") from None
        for seat, hand in enumerate(hands):
            if not hand:
                raise DealError(f"seat {seat}'s hand is empty: every seat needs at least one tile")
        seen: dict[int, str] = {ts.double_of[deal.engine]: "the engine"}
        for where, ids in [(f"seat {k}'s hand", h) for k, h in enumerate(hands)] + [
            ("the boneyard", boneyard)
        ]:
            for i in ids:
                if i in seen:
                    raise DealError(
                        f"tile {format_tile(ts.tiles[i])} appears twice ({seen[i]} and {where}): "
                        f"a deal must hold each tile of the double-{ts.max_pip} set exactly once"
                    )
                seen[i] = where
        if len(seen) != ts.num_tiles:
            missing = [format_tile(t) for i, t in enumerate(ts.tiles) if i not in seen]
            raise DealError(
                f"the deal misses {len(missing)} tile(s) of the double-{ts.max_pip} set "
                f"({', '.join(missing[:8])}{', …' if len(missing) > 8 else ''}): hands, boneyard "
                f"and engine must be exactly the set"
            )
        return hands, boneyard

    # ------------------------------------------------------------------ moves
    def legal_moves(self) -> list[int]:
        """The legal moves of the seat to act (section 4); ``[]`` once the round is over (C3).

        A new list each call: changing it cannot change what :meth:`apply` accepts.
        """
        legal = self._legal
        if legal is None:
            legal = self._legal = self._compute_legal()
        return legal[:]

    def _compute_legal(self) -> list[int]:
        if self._end_reason is not None:
            return []  # C3
        s = self._seat
        pip_mask = self._ts.pip_mask
        ends = self._ends
        move_of = self.codec.move_of
        drawn = self._drawn
        cand = self._ts.bit[drawn] if drawn >= 0 else self._hands[s]
        moves: list[int] = []
        if self._free_first and self._first_pending[s]:
            # R11/R12: own train only; pass at any moment.
            m = cand & pip_mask[ends[s]]
            while m:
                low = m & -m
                moves.append(move_of[low.bit_length() - 1][s])
                m ^= low
            if moves and drawn < 0:
                moves.append(self._pass)
            if moves:
                return moves  # V-first-turn-draw: a drawn tile that joins must be played
            self._no_play = 1 << ends[s]
            if drawn < 0 and self._draw_first and self._turn_plays == 0 and self._boneyard:
                return [self._draw]  # V-first-turn-draw
            return [self._pass]  # R11/R13: nothing joins, the seat passes
        # Ordinary turn (section 6).
        trains = None
        if self._follow_up >= 0:
            fu = self._follow_up
            if self._follow_on_double and cand & pip_mask[ends[fu]]:
                trains = (fu,)  # V-follow-up-on-double
        elif self._open_doubles:
            r = self._restricting()
            if r >= 0:
                trains = (r,)  # R20
        if trains is None:
            trains = _playable_trains(self._n, s, self._marked)
        for tr in trains:
            m = cand & pip_mask[ends[tr]]
            while m:
                low = m & -m
                moves.append(move_of[low.bit_length() - 1][tr])
                m ^= low
        if moves:
            return moves  # R15: a seat with a legal play must play
        no_play = 0
        for tr in trains:
            no_play |= 1 << ends[tr]
        self._no_play = no_play
        if drawn < 0 and self._boneyard:
            return [self._draw]  # R17/R18
        return [self._pass]  # R17/R18: drawn tile does not fit, or empty boneyard

    def _restricting(self) -> int:
        """The train of the open double that restricts play (R20–R22), or -1."""
        od = self._open_doubles
        if not od:
            return -1
        order = od if self._oldest_first else od[::-1]
        if not self._dead_rule:
            return order[0]
        unplayed, pip_mask, ends = self._unplayed, self._ts.pip_mask, self._ends
        for tr in order:
            if unplayed & pip_mask[ends[tr]]:
                return tr
        return -1  # R22: every open double is dead

    def apply(self, move: int) -> None:
        """Make ``move`` for the seat to act; IllegalMoveError (state unchanged) if not legal."""
        legal = self._legal
        if legal is None:
            legal = self._legal = self._compute_legal()
        if move.__class__ is not int:
            move = self._as_int(move)
        if move not in legal:
            self._raise_illegal(move)
        self._legal = None
        s = self._seat
        if move >= self._draw:
            # Known voids (module docstring): a draw, a pass after a draw and a pass
            # outside the free first turn each show that no play was legal.
            if move == self._draw:
                self._learn_void(s, self._voids[s] | self._no_play)
                tile = self._boneyard.pop()
                self._hands[s] |= self._ts.bit[tile]
                self._drawn = tile
            else:
                if self._drawn >= 0:
                    self._learn_void(s, self._no_play)
                elif not (self._free_first and self._first_pending[s]):
                    self._learn_void(s, self._voids[s] | self._no_play)
                self._end_turn(passed=True)
            return
        codec = self.codec
        tile, tr = codec.tile_of[move], codec.train_of[move]
        ts = self._ts
        bit = ts.bit[tile]
        self._hands[s] ^= bit
        self._unplayed ^= bit
        low = ts.low[tile]
        self._ends[tr] = ts.high[tile] if low == self._ends[tr] else low
        self._lengths[tr] += 1
        if self._trains is not None:
            self._trains[tr].append(tile)
        if tr == s:
            self._marked &= ~(1 << s)  # R10
        od = self._open_doubles
        if od and tr in od:
            od.remove(tr)  # the tile satisfies that double (R20)
        td = self._turn_doubles
        if td and tr in td:
            td.remove(tr)  # the double played on it this turn is followed up (R16): not open
        self._drawn = -1
        self._turn_plays += 1
        free = self._free_first and self._first_pending[s]
        if not self._hands[s]:
            self._out_seats.append(s)
            if free:
                self._end_turn(passed=False)  # R24: the round waits for every first turn
            else:
                self._end_reason = "out"  # R23, also on a double
            return
        if free:
            return  # R11: the free first turn goes on
        if ts.is_double[tile]:
            self._follow_up = tr  # R16
            self._turn_doubles.append(tr)
            return
        self._end_turn(passed=False)  # R15

    def _learn_void(self, seat: int, pips: int) -> None:
        if pips != self._voids[seat]:  # often the same: a new tuple only when it is not
            voids = list(self._voids)
            voids[seat] = pips
            self._voids = tuple(voids)

    def _as_int(self, move) -> int:
        """Accept numpy integers; reject bools, floats and the rest with a clear error."""
        if isinstance(move, bool) or not isinstance(move, numbers.Integral):
            raise IllegalMoveError(
                f"move {move!r} is not a move: expected an int in 0..{self.codec.num_actions - 1}"
            )
        return int(move)

    def _index(self, value, kind: str) -> int:
        """``value`` as a seat (0..n-1) or train (0..n, n = Mexican) index; numpy integers
        are accepted, anything else — negative numbers included — is a ValueError."""
        top = self._n - 1 if kind == "seat" else self._n
        if isinstance(value, numbers.Integral) and not isinstance(value, bool):
            if 0 <= value <= top:
                return int(value)
        raise ValueError(f"{kind}={value!r}: expected a {kind} in 0..{top}")

    def _raise_illegal(self, move: int) -> None:
        if self._end_reason is not None:
            raise IllegalMoveError(f"move {move!r}: the round is over, no move is legal (C3)")
        if not 0 <= move < self.codec.num_actions:
            raise IllegalMoveError(
                f"move {move!r} is not a move: expected an int in 0..{self.codec.num_actions - 1}"
            )
        legal = ", ".join(self.codec.describe(m) for m in self.legal_moves())
        raise IllegalMoveError(
            f"move {move} ({self.codec.describe(move)}) is not legal for seat {self._seat}: legal moves are [{legal}]"
        )

    def _end_turn(self, passed: bool) -> None:
        s = self._seat
        free = self._free_first and self._first_pending[s]
        if passed and not (free and self._turn_plays):
            self._marked |= 1 << s  # R10, R13, R17, R18, R20
        if self._turn_doubles:
            od = self._open_doubles
            for tr in self._turn_doubles:  # R19: doubles still last on their train, in the order played
                if tr not in od:
                    od.append(tr)
            self._turn_doubles = []
        self._first_pending[s] = False
        self._no_play_turns = 0 if self._turn_plays else self._no_play_turns + 1
        self._turn_plays = 0
        self._drawn = -1
        self._follow_up = -1
        self._turns += 1
        n = self._n
        if self._out_seats and not any(self._first_pending):
            self._end_reason = "out"  # R24
            return
        if (
            not self._boneyard
            and self._no_play_turns >= n
            and not any(self.can_play(k) for k in range(n))
        ):
            self._end_reason = "blocked"  # R25
            return
        self._seat = (s + 1) % n  # R7: clockwise

    def can_play(self, seat: int) -> bool:
        """R25's test: does ``seat`` hold a tile it could play on the restricting open
        double if there is one, else on its own, the Mexican or a marked train?"""
        if seat.__class__ is not int or not 0 <= seat < self._n:
            seat = self._index(seat, "seat")
        hand, pip_mask, ends = self._hands[seat], self._ts.pip_mask, self._ends
        r = self._restricting()
        trains = (r,) if r >= 0 else _playable_trains(self._n, seat, self._marked)
        return any(hand & pip_mask[ends[tr]] for tr in trains)

    # ------------------------------------------------------------------ end and score
    @property
    def is_over(self) -> bool:
        return self._end_reason is not None

    @property
    def end_reason(self) -> str | None:
        """``None`` while playing, ``"out"`` (R23/R24) or ``"blocked"`` (R25)."""
        return self._end_reason

    @property
    def out_seats(self) -> tuple[int, ...]:
        """Seats that played their last tile, in order (several only under R24)."""
        return tuple(self._out_seats)

    def hand_value(self, seat: int) -> int:
        """Pip total of ``seat``'s hand, the double-blank at 50 or 0 (R26, V-blank-zero)."""
        if seat.__class__ is not int or not 0 <= seat < self._n:
            seat = self._index(seat, "seat")
        value, total, m = self._value, 0, self._hands[seat]
        while m:
            low = m & -m
            total += value[low.bit_length() - 1]
            m ^= low
        return total

    def scores(self) -> list[int]:
        """R26 round scores (0 for a seat that went out); ValueError before the round ends."""
        if self._end_reason is None:
            raise ValueError("the round is not over: scores exist only at its end (R26)")
        return [0 if k in self._out_seats else self.hand_value(k) for k in range(self._n)]


    # ------------------------------------------------------------------ determinization
    def public(self, seat: int) -> PublicPosition:
        """What ``seat`` knows now: everything public plus its own hand (see
        :class:`PublicPosition`); :func:`determinize` turns it back into a state."""
        if seat.__class__ is not int or not 0 <= seat < self._n:
            seat = self._index(seat, "seat")
        drawn = self._drawn
        if drawn >= 0 and self._seat != seat:
            drawn = HIDDEN_DRAW  # everyone sees the draw, only the drawer the tile
        return PublicPosition(
            config=self.config,
            observer=seat,
            hand=self._hands[seat],
            hand_sizes=tuple(h.bit_count() for h in self._hands),
            boneyard_size=len(self._boneyard),
            engine=self.engine,
            table=self.table_mask,
            ends=tuple(self._ends),
            lengths=tuple(self._lengths),
            trains=None if self._trains is None else tuple(map(tuple, self._trains)),
            marked=tuple(bool(self._marked >> k & 1) for k in range(self._n)),
            open_doubles=tuple(self._open_doubles),
            first_pending=tuple(self._first_pending),
            out_seats=tuple(self._out_seats),
            seat=self._seat,
            turn_plays=self._turn_plays,
            drawn=drawn,
            follow_up=self._follow_up,
            turn_doubles=tuple(self._turn_doubles),
            no_play_turns=self._no_play_turns,
            turns_completed=self._turns,
            voids=self._voids,
            over=self._end_reason is not None,
        )

    # ------------------------------------------------------------------ copy
    def copy(self) -> RoundState:
        """An independent copy (shares only immutable tables); cheap enough for search."""
        new = object.__new__(RoundState)
        for name in _SHARED_SLOTS:
            object.__setattr__(new, name, getattr(self, name))
        new._hands = self._hands[:]
        new._boneyard = self._boneyard[:]
        new._trains = None if self._trains is None else [t[:] for t in self._trains]
        new._lengths = self._lengths[:]
        new._ends = self._ends[:]
        new._open_doubles = self._open_doubles[:]
        new._turn_doubles = self._turn_doubles[:]
        new._first_pending = self._first_pending[:]
        new._out_seats = self._out_seats[:]
        new._legal = None
        return new

    # ------------------------------------------------------------------ read-only view
    @property
    def num_seats(self) -> int:
        return self._n

    @property
    def mexican_train(self) -> int:
        """The Mexican train's index (= number of seats)."""
        return self._n

    @property
    def seat(self) -> int:
        """The seat to act (after the round ends: the seat that acted last)."""
        return self._seat

    @property
    def tiles(self) -> TileSet:
        """The set's lookup tables (tile ids, pips, per-pip masks); immutable, shared."""
        return self._ts

    def hand(self, seat: int) -> list[Tile]:
        if seat.__class__ is not int or not 0 <= seat < self._n:
            seat = self._index(seat, "seat")
        return [self._ts.tiles[i] for i in self._ts.ids_in(self._hands[seat])]

    def hand_mask(self, seat: int) -> int:
        """``seat``'s hand as a bitset over tile ids (an int: a copy, never the state)."""
        if seat.__class__ is not int or not 0 <= seat < self._n:
            seat = self._index(seat, "seat")
        return self._hands[seat]

    def hand_size(self, seat: int) -> int:
        if seat.__class__ is not int or not 0 <= seat < self._n:
            seat = self._index(seat, "seat")
        return self._hands[seat].bit_count()

    @property
    def boneyard(self) -> list[Tile]:
        """The boneyard in draw order (first element is drawn next). Hidden information."""
        return [self._ts.tiles[i] for i in reversed(self._boneyard)]

    @property
    def boneyard_ids(self) -> tuple[int, ...]:
        """The boneyard's tile ids in draw order (first is drawn next). Hidden information,
        for training-only code (a privileged critic) and tests."""
        return tuple(reversed(self._boneyard))

    @property
    def boneyard_size(self) -> int:
        return len(self._boneyard)

    def train(self, train: int) -> list[Tile]:
        """A train's tiles from the engine outward, each oriented ``(inner, outer)``."""
        out, end = [], self.engine
        for i in self.train_ids(train):
            a, b = self._ts.tiles[i]
            if a != end:
                a, b = b, a
            out.append((a, b))
            end = b
        return out

    def train_ids(self, train: int) -> tuple[int, ...]:
        """A train's tile ids from the engine outward. ValueError in a state determinized
        from an observation, which records the trains' ends and lengths, not their tiles."""
        if train.__class__ is not int or not 0 <= train <= self._n:
            train = self._index(train, "train")
        if self._trains is None:
            raise ValueError(
                "this state was determinized from an observation, which shows each train's "
                "open end and length but not its tiles: train_ids/train are unknown here"
            )
        return tuple(self._trains[train])

    def train_length(self, train: int) -> int:
        if train.__class__ is not int or not 0 <= train <= self._n:
            train = self._index(train, "train")
        return self._lengths[train]

    def open_end(self, train: int) -> int:
        if train.__class__ is not int or not 0 <= train <= self._n:
            train = self._index(train, "train")
        return self._ends[train]

    def is_marked(self, seat: int) -> bool:
        if seat.__class__ is not int or not 0 <= seat < self._n:
            seat = self._index(seat, "seat")
        return bool(self._marked >> seat & 1)

    @property
    def mexican_started(self) -> bool:
        return self._lengths[self._n] > 0

    @property
    def open_doubles(self) -> list[int]:
        """Trains whose open double is unsatisfied, in the order they became open (R19)."""
        return self._open_doubles[:]

    @property
    def restricting_train(self) -> int | None:
        """The train of the open double the seat to act must satisfy (R20–R22), or None.

        In a free first turn open doubles restrict nobody (R11)."""
        if self._free_first and self._first_pending[self._seat]:
            return None
        r = self._restricting()
        return None if r < 0 else r

    def is_dead_double(self, train: int) -> bool:
        """R22: no tile in a hand or the boneyard bears this open double's pip."""
        if train.__class__ is not int or not 0 <= train <= self._n:
            train = self._index(train, "train")
        return not self._unplayed & self._ts.pip_mask[self._ends[train]]

    def first_turn_pending(self, seat: int) -> bool:
        if seat.__class__ is not int or not 0 <= seat < self._n:
            seat = self._index(seat, "seat")
        return self._first_pending[seat]

    @property
    def voids(self) -> tuple[int, ...]:
        """Per seat, a bitset over pips: the pips everyone knows that seat holds none of,
        from its draws and passes (module docstring, "Known voids")."""
        return self._voids

    def public_lists(self) -> tuple[list[int], list[int], list[int], int, list[bool]]:
        """What :meth:`hand_size`, :meth:`open_end`, :meth:`train_length`, :meth:`is_marked`
        and :meth:`first_turn_pending` answer one at a time, in one call (the observation
        encoder's hot path): hand sizes by seat, open ends and lengths by train, the marker
        bitset over seats, first-turn flags by seat. The ends, lengths and flags are the
        state's own lists: read them, never change them."""
        sizes = [h.bit_count() for h in self._hands]
        return sizes, self._ends, self._lengths, self._marked, self._first_pending

    @property
    def in_free_first_turn(self) -> bool:
        return self._free_first and self._first_pending[self._seat]

    @property
    def follow_up_owed(self) -> bool:
        """The seat to act played a double this ordinary turn and must play again (R16)."""
        return self._follow_up >= 0

    @property
    def follow_up_train(self) -> int | None:
        return self._follow_up if self._follow_up >= 0 else None

    @property
    def drawn_since_play(self) -> bool:
        return self._drawn >= 0

    @property
    def drawn_tile(self) -> Tile | None:
        return self._ts.tiles[self._drawn] if self._drawn >= 0 else None

    @property
    def tiles_played_this_turn(self) -> int:
        return self._turn_plays

    @property
    def turns_without_play(self) -> int:
        return self._no_play_turns

    @property
    def turns_completed(self) -> int:
        return self._turns

    @property
    def table_mask(self) -> int:
        """Bitset of the tiles on the table, the engine included."""
        return self._ts.full_mask ^ self._unplayed

    def describe(self, move: int) -> str:
        return self.codec.describe(move)


HIDDEN_DRAW = -2
"""``PublicPosition.drawn`` when the seat to act drew a tile the observer cannot see."""


@dataclass(frozen=True)
class PublicPosition:
    """One seat's information state in a round: what every seat sees, plus the
    observer's own hand. Seats and trains are absolute (``n`` = the Mexican train);
    hands and the table are bitsets over tile ids.

    Built by :meth:`RoundState.public` (exact) or, from an observation vector, by
    :meth:`mt_env.observation.ObservationEncoder.position` — the observation then
    being the observer's whole knowledge, with three limits it documents there
    (train tile order, R25's no-play counter, doubles of an unfinished turn other than
    the one owing a follow-up). :func:`determinize` completes it into a
    :class:`RoundState` with a guess of the hidden tiles.
    """

    config: RulesConfig
    observer: int
    hand: int  # the observer's tiles
    hand_sizes: tuple[int, ...]  # per seat
    boneyard_size: int
    engine: int
    table: int  # tiles on the table, the engine included
    ends: tuple[int, ...]  # open end pip per train
    lengths: tuple[int, ...]  # tiles per train
    trains: tuple[tuple[int, ...], ...] | None  # tile ids per train, or None if unknown
    marked: tuple[bool, ...]  # per seat (R10)
    open_doubles: tuple[int, ...]  # trains, in the order they became open (R19)
    first_pending: tuple[bool, ...]  # per seat: first turn not finished (R11)
    out_seats: tuple[int, ...]  # seats that went out in a free first turn (R24)
    seat: int  # the seat to act
    turn_plays: int  # tiles it played this turn
    drawn: int  # tile it drew since its last play, -1 if none, HIDDEN_DRAW if unseen
    follow_up: int  # train of the double owing a follow-up (R16), or -1
    turn_doubles: tuple[int, ...]  # trains ending in a double played this turn (R19)
    no_play_turns: int  # finished turns in a row without a play (R25)
    turns_completed: int
    voids: tuple[int, ...]  # per seat: bitset of the pips it is known to lack (RoundState.voids)
    over: bool = False

    @property
    def unseen(self) -> int:
        """Bitset of the tiles the observer cannot place: the other hands and the boneyard."""
        return tile_set(self.config.max_pip).full_mask & ~self.hand & ~self.table


def determinize(
    position: PublicPosition,
    hands: Sequence[int | None],
    boneyard: Sequence[int],
    drawn: int | None = None,
) -> RoundState:
    """The :class:`RoundState` that ``position`` describes, with the hidden tiles guessed.

    ``hands[k]`` is seat ``k``'s hand as a bitset (``None`` or the observer's own hand at
    the observer's index), ``boneyard`` the boneyard's tile ids in draw order (first
    drawn first). Together they must place every unseen tile exactly once, each hand of
    its public size. ``drawn`` names the tile the seat to act drew when the observer
    could not see it (``position.drawn == HIDDEN_DRAW``); it must be in that seat's hand.
    ValueError if the guess does not fit the position. The state plays on with this
    module's rules — no second model of the game (OpenSpiel's ``resample_from_infostate``).
    The state keeps the position's known voids; a guess that gives a seat a tile bearing
    one of them is a world the public history rules out, and is not refused here: a
    sampler that wants consistent worlds keeps such tiles away from that seat.
    """
    cfg = position.config
    n = cfg.num_seats
    if len(hands) != n:
        raise ValueError(f"determinize: {len(hands)} hands given, expected one per seat ({n})")
    hands = list(hands)
    obs = position.observer
    if hands[obs] is None:
        hands[obs] = position.hand
    elif hands[obs] != position.hand:
        raise ValueError(f"determinize: hands[{obs}] differs from the observer's own hand")
    ts = tile_set(cfg.max_pip)
    placed = 0
    for k, h in enumerate(hands):
        if h.__class__ is not int or not 0 <= h <= ts.full_mask:
            raise ValueError(
                f"determinize: hands[{k}]={h!r}: expected a bitset (int) over the set's "
                f"tile ids (None only at the observer's index)"
            )
        if h.bit_count() != position.hand_sizes[k]:
            raise ValueError(
                f"determinize: seat {k}'s guessed hand has {h.bit_count()} tiles, "
                f"expected its public size {position.hand_sizes[k]}"
            )
        if k != obs:
            if placed & h:
                raise ValueError(f"determinize: seat {k}'s guessed hand repeats a tile")
            placed |= h
    bone = 0
    for t in boneyard:
        if t.__class__ is not int or not 0 <= t < ts.num_tiles:
            raise ValueError(
                f"determinize: boneyard tile {t!r}: expected a tile id in 0..{ts.num_tiles - 1}"
            )
        bone |= ts.bit[t]
    if len(boneyard) != position.boneyard_size or bone.bit_count() != len(boneyard):
        raise ValueError(
            f"determinize: expected {position.boneyard_size} distinct boneyard tiles, "
            f"got {len(boneyard)}"
        )
    if placed & bone or placed | bone != position.unseen:
        raise ValueError(
            "determinize: the guessed hands and boneyard must place every unseen tile "
            "(neither in the observer's hand nor on the table) exactly once"
        )
    tile = position.drawn
    if tile == HIDDEN_DRAW:
        if drawn is None or not hands[position.seat] & ts.bit[drawn]:
            raise ValueError(
                f"determinize: seat {position.seat} drew a tile the observer did not see: "
                f"pass drawn=<a tile id in its guessed hand>"
            )
        tile = drawn
    st = object.__new__(RoundState)
    st._set_rules(cfg)
    st.engine = position.engine
    st._hands = hands
    st._boneyard = list(boneyard)[::-1]
    st._unplayed = ts.full_mask & ~position.table
    st._trains = None if position.trains is None else [list(t) for t in position.trains]
    st._lengths = list(position.lengths)
    st._ends = list(position.ends)
    st._marked = sum(1 << k for k, m in enumerate(position.marked) if m)
    st._open_doubles = list(position.open_doubles)
    st._seat = position.seat
    st._turn_plays = position.turn_plays
    st._drawn = tile
    st._follow_up = position.follow_up
    st._turn_doubles = list(position.turn_doubles)
    st._first_pending = list(position.first_pending)
    st._no_play_turns = position.no_play_turns
    st._out_seats = list(position.out_seats)
    st._end_reason = None
    st._turns = position.turns_completed
    st._legal = None
    if len(position.voids) != n:
        raise ValueError(f"determinize: position.voids has {len(position.voids)} entries, expected {n}")
    st._voids = tuple(position.voids)
    st._no_play = 0
    if position.over:
        raise ValueError("determinize: the round is over; there is nothing left to play")
    return st


# copy() copies these lists; every other slot holds an int, a bool, a str or an immutable
# table and is shared.
_COPIED_SLOTS = (
    "_hands",
    "_boneyard",
    "_trains",
    "_lengths",
    "_ends",
    "_open_doubles",
    "_turn_doubles",
    "_first_pending",
    "_out_seats",
    "_legal",
)
_SHARED_SLOTS = tuple(s for s in RoundState.__slots__ if s not in _COPIED_SLOTS)
