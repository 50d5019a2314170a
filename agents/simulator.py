"""A compact model of one round for search agents: guessed worlds, fast rollouts.

A search agent may not read the rules core's state (it holds hidden tiles), and it
cannot rebuild a :class:`mt_env.rules.RoundState` from what it sees (the observation
gives the trains' open ends, not their tiles). :class:`SimRules` is therefore a small,
self-contained model of a round, built from a :class:`agents.view.SeatView` plus a guess
of the hidden tiles (:func:`sample_world`). It follows RULES.md sections 4–8 under every
variant of :class:`mt_env.config.RulesConfig`, but models only what search needs: *plays*
are listed, while draw and pass are taken by :meth:`SimRules.finish_turn` itself. The
agent tests replay whole random rounds through both this model and the rules core and
check that the legal plays agree at every step.

Two simplifications: the model does not know how many turns in a row went without a
play when it starts (R25's counter starts at 0), and it scores pip totals (R26) whatever
the scoring variant, because search compares pip totals.

Seats and trains are relative to the observer (seat 0), as in the observation. Hands
are bitsets over tile ids; the boneyard is a list drawn from its end.
"""

from __future__ import annotations

import random

from mt_env.config import RulesConfig
from mt_env.tiles import tile_set

from .view import SeatView


class SimRound:
    """Mutable round state (see the module docstring); copy with :meth:`copy`."""

    __slots__ = (
        "hands",
        "bone",
        "unplayed",
        "ends",
        "dbl_end",
        "marked",
        "od",
        "first_pending",
        "seat",
        "plays",
        "drawn",
        "follow",
        "turn_doubles",
        "no_play",
        "over",
        "out",
    )

    hands: list[int]  # bitset per seat
    bone: list[int]  # boneyard, drawn from the end
    unplayed: int  # tiles in hands or boneyard (R22)
    ends: list[int]  # open end pip per train
    dbl_end: list[bool]  # the train's last tile is a double played in an ordinary turn
    marked: list[bool]
    od: list[int]  # open doubles' trains in the order they became open (R19)
    first_pending: list[bool]
    seat: int  # seat to act
    plays: int  # tiles played this turn
    drawn: int  # tile drawn since the last play, or -1
    follow: int  # train of the double owing a follow-up (R16), or -1
    turn_doubles: list[int]  # trains of doubles played this ordinary turn
    no_play: int  # finished turns in a row without a play (R25)
    over: bool
    out: list[int]  # seats that went out

    def copy(self) -> SimRound:
        new = SimRound.__new__(SimRound)
        new.hands = self.hands[:]
        new.bone = self.bone[:]
        new.unplayed = self.unplayed
        new.ends = self.ends[:]
        new.dbl_end = self.dbl_end[:]
        new.marked = self.marked[:]
        new.od = self.od[:]
        new.first_pending = self.first_pending[:]
        new.seat = self.seat
        new.plays = self.plays
        new.drawn = self.drawn
        new.follow = self.follow
        new.turn_doubles = self.turn_doubles[:]
        new.no_play = self.no_play
        new.over = self.over
        new.out = self.out[:]
        return new


class SimRules:
    """Tables, rule switches and the transition functions of :class:`SimRound`."""

    def __init__(self, config: RulesConfig) -> None:
        ts = tile_set(config.max_pip)
        self.config = config
        self.tiles = ts
        self.n = config.num_seats
        self.free_first = config.first_turn != "single"
        self.draw_first = config.first_turn == "draw"
        self.oldest_first = config.doubles_order == "oldest"
        self.dead_rule = config.dead_doubles
        self.follow_on_double = config.follow_up_on_double
        self.pip_mask = ts.pip_mask
        self.bit = ts.bit
        self.is_double = ts.is_double
        self.pips = ts.pips
        self.double_bit = [ts.bit[ts.double_of[p]] for p in range(ts.max_pip + 1)]
        self.other = [{a: b, b: a} for a, b in ts.tiles]
        value = list(ts.pips)
        value[ts.double_of[0]] = config.double_blank_value
        self.value = value

    # ------------------------------------------------------------------ building
    def from_view(
        self, v: SeatView, hands: list[int], boneyard: list[int], turn_plays: int, drawn: int
    ) -> SimRound:
        """The round as ``v`` shows it, the observer (seat 0) to act, with the other seats'
        ``hands`` and the ``boneyard`` guessed; ``turn_plays`` and ``drawn`` (tile or -1)
        describe the observer's turn so far."""
        s = SimRound()
        s.hands = [v.hand, *hands]
        s.bone = boneyard
        u = v.hand
        for h in hands:
            u |= h
        for t in boneyard:
            u |= self.bit[t]
        s.unplayed = u
        s.ends = v.ends[:]
        s.dbl_end = v.open_double[:]
        s.marked = v.marked[:]
        s.od = v.open_order[:] if self.oldest_first else v.open_order[::-1]
        s.first_pending = v.first_pending[:]
        s.seat = 0
        s.plays = turn_plays
        s.drawn = drawn
        s.follow = v.follow_up_train
        s.turn_doubles = [v.follow_up_train] if v.follow_up_train >= 0 else []
        if v.follow_up_train >= 0:
            s.dbl_end[v.follow_up_train] = True
        s.no_play = 0
        s.over = False
        s.out = []
        return s

    # ------------------------------------------------------------------ rules
    def restricting(self, s: SimRound) -> int:
        """Train of the open double to satisfy (R20–R22), or -1."""
        od = s.od
        if not od:
            return -1
        order = od if self.oldest_first else od[::-1]
        if not self.dead_rule:
            return order[0]
        unplayed, pm, ends = s.unplayed, self.pip_mask, s.ends
        for tr in order:
            if unplayed & pm[ends[tr]]:
                return tr
        return -1

    def in_free_first(self, s: SimRound) -> bool:
        return self.free_first and s.first_pending[s.seat]

    def trains(self, s: SimRound) -> list[int]:
        """Trains the seat to act may play on now (R9, R11, R16, R20)."""
        seat = s.seat
        if self.free_first and s.first_pending[seat]:
            return [seat]
        if s.follow >= 0:
            if self.follow_on_double:
                cand = self.bit[s.drawn] if s.drawn >= 0 else s.hands[seat]
                if cand & self.pip_mask[s.ends[s.follow]]:
                    return [s.follow]
        else:
            r = self.restricting(s)
            if r >= 0:
                return [r]
        n, marked = self.n, s.marked
        return [seat, n] + [t for t in range(n) if marked[t] and t != seat]

    def legal_plays(self, s: SimRound) -> list[tuple[int, int]]:
        """``(tile, train)`` plays legal for the seat to act; draw and pass are not listed."""
        if s.over:
            return []
        cand = self.bit[s.drawn] if s.drawn >= 0 else s.hands[s.seat]
        out = []
        pm, ends = self.pip_mask, s.ends
        for tr in self.trains(s):
            m = cand & pm[ends[tr]]
            while m:
                low = m & -m
                out.append((low.bit_length() - 1, tr))
                m ^= low
        return out

    def play(self, s: SimRound, tile: int, train: int) -> None:
        """The seat to act plays ``tile`` on ``train`` (assumed legal)."""
        seat = s.seat
        bit = self.bit[tile]
        s.hands[seat] ^= bit
        s.unplayed ^= bit
        s.ends[train] = self.other[tile][s.ends[train]]
        if train == seat:
            s.marked[seat] = False  # R10
        if train in s.od:
            s.od.remove(train)  # the tile satisfies that double (R20)
        s.drawn = -1
        s.plays += 1
        free = self.free_first and s.first_pending[seat]
        double = self.is_double[tile]
        s.dbl_end[train] = double and not free
        if not s.hands[seat]:
            s.out.append(seat)
            if free:
                self.end_turn(s, passed=False)  # R24
            else:
                s.over = True  # R23
            return
        if free:
            return  # R11
        if double:
            s.follow = train  # R16
            s.turn_doubles.append(train)
            return
        self.end_turn(s, passed=False)

    def draw(self, s: SimRound) -> None:
        tile = s.bone.pop()
        s.hands[s.seat] |= self.bit[tile]
        s.drawn = tile

    def end_turn(self, s: SimRound, passed: bool) -> None:
        seat = s.seat
        free = self.free_first and s.first_pending[seat]
        if passed and not (free and s.plays):
            s.marked[seat] = True  # R10, R13, R17, R18, R20
        for tr in s.turn_doubles:  # R19
            if s.dbl_end[tr] and tr not in s.od:
                s.od.append(tr)
        s.turn_doubles = []
        s.first_pending[seat] = False
        s.no_play = 0 if s.plays else s.no_play + 1
        s.plays = 0
        s.drawn = -1
        s.follow = -1
        n = self.n
        if s.out and not any(s.first_pending):
            s.over = True  # R24
            return
        if not s.bone and s.no_play >= n and not any(self.can_play(s, k) for k in range(n)):
            s.over = True  # R25
            return
        s.seat = (seat + 1) % n

    def can_play(self, s: SimRound, seat: int) -> bool:
        """R25's test for ``seat``."""
        hand, pm, ends = s.hands[seat], self.pip_mask, s.ends
        r = self.restricting(s)
        if r >= 0:
            return bool(hand & pm[ends[r]])
        if hand & (pm[ends[seat]] | pm[ends[self.n]]):
            return True
        return any(s.marked[t] and hand & pm[ends[t]] for t in range(self.n) if t != seat)

    def no_play_move(self, s: SimRound) -> str:
        """With no legal play: ``"draw"`` or ``"pass"`` (R11–R13, R17, R18, V-first-turn-draw)."""
        if s.drawn >= 0 or not s.bone:
            return "pass"
        if self.free_first and s.first_pending[s.seat]:
            return "draw" if self.draw_first and s.plays == 0 else "pass"
        return "draw"

    def scores(self, s: SimRound) -> list[int]:
        """R26 pip totals (0 for a seat that went out)."""
        value = self.value
        out = []
        for k, hand in enumerate(s.hands):
            total = 0
            if k not in s.out:
                while hand:
                    low = hand & -hand
                    total += value[low.bit_length() - 1]
                    hand ^= low
            out.append(total)
        return out


def sample_world(
    v: SeatView, unknown: list[int], rng: random.Random, bit: tuple[int, ...]
) -> tuple[list[int], list[int]]:
    """Deal the ``unknown`` tiles at random: the other seats' hands (sizes from ``v``),
    the rest to the boneyard in a random order."""
    pool = unknown[:]
    rng.shuffle(pool)
    hands = []
    i = 0
    for size in v.hand_sizes[1:]:
        m = 0
        for t in pool[i : i + size]:
            m |= bit[t]
        hands.append(m)
        i += size
    return hands, pool[i:]


def rollout(rules: SimRules, s: SimRound, rng: random.Random, planner=None) -> None:
    """Play ``s`` to the end of the round with a fast scripted policy for every seat.

    The policy: in a free first turn, lay a chain on the own train (the
    :class:`agents.chains.ChainPlanner`'s if one is given, else heaviest-first); in
    ordinary turns, satisfy a double just played if possible, else prefer a double that
    can be followed up, then tiles that cannot extend the own train played elsewhere, then
    the own train, heaviest tile first; draw or pass only when nothing is legal.
    """
    pm, bit, is_double, pips, other = (
        rules.pip_mask,
        rules.bit,
        rules.is_double,
        rules.pips,
        rules.other,
    )
    free_first = rules.free_first
    while not s.over:
        seat = s.seat
        if free_first and s.first_pending[seat]:
            if s.plays == 0 and s.drawn < 0 and planner is not None:
                chain = planner.longest(s.hands[seat], s.ends[seat])
                for t in chain:
                    rules.play(s, t, seat)
                    if s.over or s.seat != seat or not s.first_pending[seat]:
                        break
                if s.over or s.seat != seat or not s.first_pending[seat]:
                    continue
            plays = rules.legal_plays(s)
            if plays:
                t, tr = max(plays, key=lambda p: pips[p[0]])
                rules.play(s, t, tr)
            elif rules.no_play_move(s) == "draw":
                rules.draw(s)
            else:
                rules.end_turn(s, passed=True)
            continue
        plays = rules.legal_plays(s)
        if not plays:
            if rules.no_play_move(s) == "draw":
                rules.draw(s)
            else:
                rules.end_turn(s, passed=True)
            continue
        if len(plays) == 1:
            t, tr = plays[0]
        else:
            hand = s.hands[seat]
            follow = s.follow
            own = pm[s.ends[seat]]
            best = -1e9
            for p in plays:
                t0, tr0 = p
                if tr0 == follow:
                    key = 1000 + pips[t0]
                elif is_double[t0]:
                    key = (
                        500 + pips[t0]
                        if (hand ^ bit[t0]) & pm[other[t0][s.ends[tr0]]]
                        else pips[t0] - 500
                    )
                elif tr0 == seat:
                    key = 100 + pips[t0]  # the own train is kept for when nothing else fits
                elif bit[t0] & own:
                    key = pips[t0]  # a tile that could extend the own train, played elsewhere
                else:
                    key = 200 + pips[t0]
                if key > best:
                    best, t, tr = key, t0, tr0
        rules.play(s, t, tr)
