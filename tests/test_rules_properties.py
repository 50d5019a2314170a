"""Property tests over random games: every seat count 2..14, every set, every variant.

Each random round is played in lockstep with ``Ref``, a plain reference model written
from docs/rules.md (sets of ``(a, b)`` tiles, oriented trains, lists — nothing shared with the
core but the Deal). After every move the two must agree on the legal moves and on the
whole visible position. At sampled states the invariants of the brief are checked:
tile conservation, trains chaining from the engine, every legal move applying on a copy,
other move integers raising IllegalMoveError without changing anything, copy()
independence; at the end, termination and R26 scores; over matches, totals and places.
"""

from __future__ import annotations

import random

import pytest
from conftest import game_steps, snapshot
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mt_env import IllegalMoveError, Match, RoundState, RulesConfig, random_deal
from mt_env.config import VARIANTS as CONFIG_VARIANTS
from mt_env.tiles import SET_SIZES, tile_set

PLAY, DRAW, PASS = "play", "draw", "pass"


def canon(t):
    a, b = t
    return (a, b) if a <= b else (b, a)


class Ref:
    """A reference round, straight from docs/rules.md sections 4–8 and R26."""

    def __init__(self, config: RulesConfig, deal) -> None:
        self.c = config
        self.n = n = config.num_seats
        self.hands = [{canon(t) for t in h} for h in deal.hands]
        self.boneyard = [canon(t) for t in deal.boneyard]  # [0] is drawn next (R4)
        self.engine = deal.engine
        self.trains = [[] for _ in range(n + 1)]  # (inner, outer) pairs; n = Mexican (R8)
        self.marked = [False] * n
        self.open = []  # trains with an open double, in the order they opened (R19)
        self.seat = deal.start_seat  # R7
        self.first = [True] * n
        self.played = 0  # tiles played this turn
        self.drawn = None  # tile drawn since the last play this turn
        self.follow = None  # train of the double owing a follow-up (R16)
        self.turn_doubles = []
        self.idle = 0  # consecutive finished turns without a tile (R25)
        self.out = []
        self.over = None
        self.voids = [set() for _ in range(n)]  # pips each seat is known to lack

    def end(self, tr):
        return self.trains[tr][-1][1] if self.trains[tr] else self.engine

    def in_free_turn(self):
        return self.c.first_turn != "single" and self.first[self.seat]

    def is_dead(self, tr):  # R22
        p = self.end(tr)
        return not any(p in t for t in self.boneyard) and not any(
            p in t for h in self.hands for t in h
        )

    def restricting(self):  # R20–R22
        order = self.open if self.c.doubles_order == "oldest" else self.open[::-1]
        for tr in order:
            if not (self.c.dead_doubles and self.is_dead(tr)):
                return tr
        return None

    def allowed_trains(self, s):  # R9
        return [s, self.n] + [k for k in range(self.n) if k != s and self.marked[k]]

    def legal(self):
        if self.over:
            return set()  # C3
        s = self.seat
        cand = [self.drawn] if self.drawn else list(self.hands[s])
        if self.in_free_turn():  # R11–R13, V-first-turn-draw
            moves = {(PLAY, t, s) for t in cand if self.end(s) in t}
            if self.drawn:
                return moves or {PASS}
            if moves:
                return moves | {PASS}
            if self.c.first_turn == "draw" and not self.played and self.boneyard:
                return {DRAW}
            return {PASS}
        if self.follow is not None:  # R16, V-follow-up-on-double
            fu = self.follow
            if self.c.follow_up_on_double and any(self.end(fu) in t for t in cand):
                trains = [fu]
            else:
                trains = self.allowed_trains(s)
        else:
            r = self.restricting()
            trains = [r] if r is not None else self.allowed_trains(s)
        moves = {(PLAY, t, tr) for tr in trains for t in cand if self.end(tr) in t}
        if moves:
            return moves  # R15
        if self.drawn is None and self.boneyard:
            return {DRAW}  # R17/R18
        return {PASS}

    def checked_ends(self):
        """The open ends a seat with no legal play was checked against: its own train's
        in the free first turn (R11), the restricting double's (R20), else those of the
        trains it may play on (R9; owing a follow-up it found no play on the double)."""
        s = self.seat
        if self.in_free_turn():
            return {self.end(s)}
        r = self.restricting() if self.follow is None else None
        trains = [r] if r is not None else self.allowed_trains(s)
        return {self.end(tr) for tr in trains}

    def apply(self, m):
        s = self.seat
        if m == DRAW:  # legal only with no play (R17): the hand bears none of those ends
            self.voids[s] |= self.checked_ends()
            self.drawn = self.boneyard.pop(0)
            self.hands[s].add(self.drawn)
            return
        if m == PASS:
            if self.drawn:  # the drawn tile bears none of them; it may bear older voids
                self.voids[s] = self.checked_ends()
            elif not self.in_free_turn():  # R18: no play and an empty boneyard
                self.voids[s] |= self.checked_ends()
            self._end_turn(passed=True)
            return
        _, t, tr = m
        free = self.in_free_turn()
        self.hands[s].remove(t)
        e = self.end(tr)
        self.trains[tr].append(t if t[0] == e else (t[1], t[0]))
        if tr == s:
            self.marked[s] = False  # R10
        if tr in self.open:
            self.open.remove(tr)  # R20
        self.drawn = None
        self.played += 1
        if not self.hands[s]:
            self.out.append(s)
            if free:
                self._end_turn(passed=False)  # R24
            else:
                self.over = "out"  # R23
            return
        if free:
            return
        if t[0] == t[1]:
            self.follow = tr
            self.turn_doubles.append(tr)
            return
        self._end_turn(passed=False)

    def can_play(self, k):  # R25
        r = self.restricting()
        trains = [r] if r is not None else self.allowed_trains(k)
        return any(self.end(tr) in t for tr in trains for t in self.hands[k])

    def _end_turn(self, passed):
        s = self.seat
        if passed and not (self.in_free_turn() and self.played):
            self.marked[s] = True
        for tr in self.turn_doubles:  # R19
            last = self.trains[tr][-1]
            if last[0] == last[1] and tr not in self.open:
                self.open.append(tr)
        self.first[s] = False
        self.idle = 0 if self.played else self.idle + 1
        self.played, self.drawn, self.follow, self.turn_doubles = 0, None, None, []
        if self.out and not any(self.first):
            self.over = "out"  # R24
            return
        if not self.boneyard and self.idle >= self.n and not any(map(self.can_play, range(self.n))):
            self.over = "blocked"  # R25
            return
        self.seat = (s + 1) % self.n

    def scores(self):  # R26
        blank = self.c.double_blank_value
        return [
            0 if k in self.out else sum(blank if t == (0, 0) else t[0] + t[1] for t in h)
            for k, h in enumerate(self.hands)
        ]


# ---------------------------------------------------------------- helpers
def random_config(
    rng: random.Random, n: int | None = None, max_pip: int | None = None
) -> RulesConfig:
    n = n or rng.randint(2, 14)
    aside = rng.random() < 0.3
    variants = dict(
        first_turn=rng.choice(("free", "free", "single", "draw")),
        follow_up_on_double=rng.random() < 0.4,
        doubles_order=rng.choice(("oldest", "newest")),
        dead_doubles=rng.random() < 0.7,
        double_blank_value=rng.choice((50, 0)),
        engine_source="aside" if aside else "hand",
        scoring=rng.choice(("penalty", "positive")),
    )
    if max_pip is None:
        max_pip = rng.choice([m for m in SET_SIZES if (m + 1) * (m + 2) // 2 - aside >= 2 * n])
    if rng.random() < 0.5:
        try:
            return RulesConfig(num_seats=n, max_pip=max_pip, **variants)
        except ValueError:
            pass  # R3 has no default for this set: pick a hand size
    dealable = (max_pip + 1) * (max_pip + 2) // 2 - aside
    hand = rng.randint(2, min(20, dealable // n))
    return RulesConfig(num_seats=n, max_pip=max_pip, hand_size=hand, **variants)


def decode(state, move):
    if move == state.codec.draw:
        return DRAW
    if move == state.codec.pass_:
        return PASS
    tile, train = state.codec.split(move)
    return (PLAY, tile_set(state.config.max_pip).tiles[tile], train)


def check_same(state: RoundState, ref: Ref) -> None:
    n = ref.n
    assert [set(state.hand(k)) for k in range(n)] == ref.hands
    assert state.boneyard == ref.boneyard
    assert [state.train(t) for t in range(n + 1)] == ref.trains
    assert [state.open_end(t) for t in range(n + 1)] == [ref.end(t) for t in range(n + 1)]
    assert [state.is_marked(k) for k in range(n)] == ref.marked
    assert state.open_doubles == ref.open
    assert state.end_reason == ref.over and list(state.out_seats) == ref.out
    assert [state.first_turn_pending(k) for k in range(n)] == ref.first
    assert state.turns_without_play == ref.idle
    sizes, ends, lengths, marked, pending = state.public_lists()  # the encoder's one read
    assert sizes == [len(h) for h in ref.hands] and pending == ref.first
    assert ends == [ref.end(t) for t in range(n + 1)]
    assert lengths == [len(t) for t in ref.trains]
    assert [bool(marked >> k & 1) for k in range(n)] == ref.marked
    if ref.over is None:
        assert state.seat == ref.seat
        assert state.follow_up_train == ref.follow
        assert state.drawn_tile == ref.drawn
        assert state.tiles_played_this_turn == ref.played
        expected_r = None if ref.in_free_turn() else ref.restricting()
        assert state.restricting_train == expected_r
    assert {decode(state, m) for m in state.legal_moves()} == ref.legal()
    assert len(set(state.legal_moves())) == len(state.legal_moves())
    # known voids: the same as the reference's, and sound: no hand bears a voided pip (a
    # tile just drawn, still to be played or passed on, is not counted)
    pips = range(state.config.max_pip + 1)
    assert [{p for p in pips if v >> p & 1} for v in state.voids] == ref.voids
    for k in range(n):
        held = ref.hands[k] - {ref.drawn} if ref.over is None and k == ref.seat else ref.hands[k]
        assert not any(a in ref.voids[k] or b in ref.voids[k] for a, b in held)


def check_conservation(state: RoundState) -> None:
    """Hands + boneyard + trains + engine = the set, each tile once."""
    ts = tile_set(state.config.max_pip)
    tiles = [t for k in range(state.num_seats) for t in state.hand(k)]
    tiles += state.boneyard
    tiles += [canon(t) for tr in range(state.num_seats + 1) for t in state.train(tr)]
    tiles.append((state.engine, state.engine))
    assert sorted(tiles) == sorted(ts.tiles)


def check_chains(state: RoundState) -> None:
    """Every train chains from the engine and ends at its open end (R8); no train starts
    with a double (C1)."""
    for tr in range(state.num_seats + 1):
        end = state.engine
        train = state.train(tr)
        for a, b in train:
            assert a == end
            end = b
        assert state.open_end(tr) == end
        if train:
            assert train[0][0] != train[0][1]


def check_moves(state: RoundState, rng: random.Random) -> None:
    """Every legal move applies on a copy; a sample of other integers raise and change
    nothing; mutating a copy never changes the original."""
    before = snapshot(state)
    legal = state.legal_moves()
    for move in legal:
        c = state.copy()
        c.apply(move)
        check_conservation(c)
        check_chains(c)
    assert snapshot(state) == before
    others = [m for m in range(-2, state.codec.num_actions + 2) if m not in legal]
    for move in rng.sample(others, min(12, len(others))):
        with pytest.raises(IllegalMoveError):
            state.apply(move)
    assert snapshot(state) == before
    # play a copy to the end: the original does not move
    c = state.copy()
    for _ in range(move_bound(state.config)):
        if c.is_over:
            break
        c.apply(rng.choice(c.legal_moves()))
    assert c.is_over, "the round does not terminate"
    assert snapshot(state) == before


def move_bound(config: RulesConfig) -> int:
    """Generous: every turn plays a tile, draws one, or is one of n idle turns per tile."""
    t, n = config.num_tiles, config.num_seats
    return 4 * (n + 2) * (t + n + 2)


def play_round(config: RulesConfig, rng: random.Random, check_every: float = 0.03) -> RoundState:
    engine = rng.randint(0, config.max_pip)
    deal = random_deal(config, rng, engine, first_drawer=rng.randrange(config.num_seats))
    state, ref = RoundState(config, deal), Ref(config, deal)
    check_same(state, ref)
    check_conservation(state)
    moves = 0
    for _ in game_steps():
        if state.is_over:
            break
        if rng.random() < check_every:
            check_conservation(state)
            check_chains(state)
            check_moves(state, rng)
        move = rng.choice(state.legal_moves())
        m = decode(state, move)
        state.apply(move)
        ref.apply(m)
        check_same(state, ref)
        moves += 1
        assert moves <= move_bound(config), "the round does not terminate"
    check_conservation(state)
    check_chains(state)
    assert state.legal_moves() == [] and state.end_reason in ("out", "blocked")
    scores = state.scores()
    assert scores == ref.scores()
    blank = config.double_blank_value
    for k in range(config.num_seats):
        value = sum(blank if t == (0, 0) else t[0] + t[1] for t in state.hand(k))
        assert scores[k] == (0 if k in state.out_seats else value)
    if state.end_reason == "out":
        assert state.out_seats and all(not state.hand(k) for k in state.out_seats)
        assert len(state.out_seats) == 1 or config.first_turn != "single"
    else:
        assert state.boneyard_size == 0 and state.turns_without_play >= config.num_seats
    return state


# ---------------------------------------------------------------- seeded loops
@pytest.mark.parametrize("n", range(2, 15))
def test_random_rounds_every_seat_count(n):
    """~100 rounds per seat count, random set / hand size / variants, lockstep with Ref."""
    rng = random.Random(1000 + n)
    reasons = set()
    for _ in range(100 if n < 9 else 50):
        state = play_round(random_config(rng, n), rng)
        reasons.add(state.end_reason)
    assert "out" in reasons


@pytest.mark.parametrize("max_pip", SET_SIZES)
def test_random_rounds_every_set(max_pip):
    rng = random.Random(max_pip)
    for _ in range(40):
        n = rng.randint(2, min(14, ((max_pip + 1) * (max_pip + 2) // 2 - 1) // 2))
        play_round(random_config(rng, n, max_pip), rng)


VARIANTS = list(CONFIG_VARIANTS.values())  # every alternative rule (mt_env.config)


@pytest.mark.parametrize(
    "variant", VARIANTS, ids=lambda v: "-".join(f"{k}={x}" for k, x in v.items())
)
def test_random_rounds_every_variant(variant):
    """Small boards (double-6, 2–4 seats, short hands) make doubles, blocks and dead
    doubles frequent."""
    rng = random.Random(str(variant))
    reasons = set()
    for _ in range(80):
        n = rng.randint(2, 4)
        config = RulesConfig(num_seats=n, max_pip=6, hand_size=rng.randint(3, 27 // n), **variant)
        reasons.add(play_round(config, rng, check_every=0.05).end_reason)
    assert reasons == {"out", "blocked"}


def test_blocked_and_dead_doubles_occur():
    """Coverage guard: the random games do reach the rarer rules (R22, R25, R24)."""
    rng = random.Random(5)
    seen = {"dead": 0, "blocked": 0, "multi_out": 0, "open2": 0}
    for _ in range(300):
        n = rng.randint(2, 4)
        config = RulesConfig(num_seats=n, max_pip=6, hand_size=rng.choice([2, 2, 3, 5, 27 // n]))
        deal = random_deal(config, rng, rng.randint(0, 6), 0)
        state, ref = RoundState(config, deal), Ref(config, deal)
        for _ in range(move_bound(config)):
            if state.is_over:
                break
            if any(state.is_dead_double(t) for t in state.open_doubles):
                seen["dead"] += 1
            if len(state.open_doubles) >= 2:
                seen["open2"] += 1
            move = rng.choice(state.legal_moves())
            ref.apply(decode(state, move))
            state.apply(move)
            check_same(state, ref)
        seen["blocked"] += state.end_reason == "blocked"
        seen["multi_out"] += len(state.out_seats) > 1
    assert all(v > 0 for v in seen.values()), seen


# ---------------------------------------------------------------- hypothesis
@settings(max_examples=25, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(2, 14))
def test_hypothesis_rounds(seed, n):
    rng = random.Random(seed)
    play_round(random_config(rng, n), rng, check_every=0.02)


# ---------------------------------------------------------------- matches
def expected_places(config, results):
    """R27/R28 or V-positive-score, written pairwise: k's place = 1 + seats strictly better."""
    n = config.num_seats
    tot = [sum(r.scores[k] for r in results) for k in range(n)]
    if config.scoring == "penalty":
        zeros = [sum(r.scores[k] == 0 for r in results) for k in range(n)]
        low = [
            min([r.scores[k] for r in results if r.scores[k]] or [float("inf")]) for k in range(n)
        ]

        def better(j, k):
            if tot[j] != tot[k]:
                return tot[j] < tot[k]
            if zeros[j] != zeros[k]:
                return zeros[j] > zeros[k]
            return low[j] < low[k]
    else:
        outs = [sum(k in r.out_seats for r in results) for k in range(n)]

        def better(j, k):
            if tot[j] != tot[k]:
                return tot[j] > tot[k]
            return outs[j] > outs[k]

    return [1 + sum(better(j, k) for j in range(n)) for k in range(n)]


def test_random_matches_totals_and_places():
    rng = random.Random(77)
    for i in range(60):
        config = random_config(rng, rng.randint(2, 8))
        first = rng.randint(0, config.max_pip)
        config = config.replace(first_engine=first, num_rounds=rng.randint(1, min(3, first + 1)))
        match = Match(config, seed=i)
        n = config.num_seats
        check_conservation(match.state)
        for _ in range(config.num_rounds * move_bound(config)):
            if match.is_over:
                break
            state = match.state
            result = match.apply(rng.choice(match.legal_moves()))
            if result is None:
                continue
            values = state.scores()
            assert result.hand_values == tuple(values)
            assert result.engine == config.engine_of_round(result.round_index) == state.engine
            assert result.end_reason == state.end_reason and result.out_seats == state.out_seats
            if config.scoring == "penalty":
                assert result.scores == result.hand_values
            else:  # V-positive-score
                total = sum(values)
                assert result.scores == tuple(
                    total - values[k] if k in state.out_seats else 0 for k in range(n)
                )
            if config.engine_source == "aside":
                assert result.start_seat == result.round_index % n
            if not match.is_over:
                assert match.state is not state and match.round_index == result.round_index + 1
                check_conservation(match.state)
        assert match.is_over and len(match.results) == config.num_rounds
        assert match.totals == [sum(r.scores[k] for r in match.results) for k in range(n)]
        assert match.places() == expected_places(config, match.results)
        assert match.legal_moves() == []
