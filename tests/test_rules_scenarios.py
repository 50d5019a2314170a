"""Scripted rounds from explicit deals, one or more per rule id of docs/rules.md.

Every expected value here (legal move sets, markers, open doubles, scores, places) is
worked out by hand from docs/rules.md. Unless stated otherwise a scenario uses a double-6
set with engine 6|6 and two seats, so trains 0 and 1 are the seats' personal trains
and train 2 is the Mexican train (R8). The boneyard of ``make_deal`` is the tiles
listed first, then every other tile in id order (0|0, 0|1, …, 5|6).
"""

from __future__ import annotations

import random

import pytest
from conftest import do, legal, make_deal, mv, plays, snapshot

from mt_env import (
    Deal,
    DealError,
    IllegalMoveError,
    Match,
    RoundResult,
    RoundState,
    RulesConfig,
    places,
    random_deal,
    score_round,
)
from mt_env.tiles import tile_set

M2 = 2  # the Mexican train with two seats
M3 = 3  # ... with three seats


def cfg(n=2, **kw):
    kw.setdefault("max_pip", 6)
    return RulesConfig(num_seats=n, **kw)


def pips(tiles, blank=50):
    return sum(blank if (a, b) == (0, 0) else a + b for a, b in tiles)


def assert_illegal(state, move):
    before = snapshot(state)
    with pytest.raises(IllegalMoveError):
        state.apply(move)
    assert snapshot(state) == before


# ======================================================================== 1. equipment and deal
@pytest.mark.parametrize("n,size", [(6, 28), (9, 55), (12, 91), (15, 136), (18, 190)])
def test_R1_double_n_set(n, size):
    """R1: a double-N set holds every a|b, 0 <= a <= b <= N; a deal must hold exactly those."""
    ts = tile_set(n)
    assert ts.num_tiles == size
    assert ts.id_of((n, 0)) == ts.id_of((0, n))
    with pytest.raises(ValueError):
        ts.id_of((n + 1, 0))
    config = RulesConfig(num_seats=2, max_pip=n, hand_size=1, engine_source="aside")
    state = RoundState(config, make_deal(n, [[(0, 1)], [(1, 1)]]))
    assert state.boneyard_size == size - 3
    with pytest.raises(DealError):
        RoundState(config, make_deal(n, [[(0, 1), (n + 1, n + 1)], [(1, 1)]]))


def test_R2_two_and_fourteen_seats():
    """R2: 2 to 14 seats; R8: n personal trains + the Mexican train (index n)."""
    with pytest.raises(ValueError, match="num_seats"):
        RulesConfig(num_seats=1)
    with pytest.raises(ValueError, match="num_seats"):
        RulesConfig(num_seats=15)
    config = RulesConfig(num_seats=14)  # double-18, 11 each (R3)
    hands = [[(18, k), (k, k)] for k in range(14)]
    state = RoundState(config, make_deal(18, hands, start_seat=13))
    assert state.num_seats == 14 and state.mexican_train == 14
    # seat 13's free first turn: own train only (R11/R12)
    assert legal(state) == plays(state, ((18, 13), 13)) | {state.codec.pass_}
    do(state, ((18, 13), 13), ((13, 13), 13))  # seat 13 goes out in its first turn (R24)
    assert state.seat == 0 and not state.is_over


@pytest.mark.parametrize("players", range(2, 15))
def test_R3_random_deal_hand_sizes(players):
    """R3/R4: every seat gets the table's hand size; the rest is the boneyard."""
    config = RulesConfig(num_seats=players, engine_source="aside")
    deal = random_deal(config, random.Random(players), config.max_pip, 0)
    size = config.hand_size
    assert [len(h) for h in deal.hands] == [size] * players
    assert len(deal.boneyard) == config.num_tiles - 1 - players * size


def test_R4_boneyard_drawn_in_fixed_order():
    """R4: the boneyard is drawn in a fixed order: a deal's boneyard[0] comes first."""
    config = cfg(first_turn="single")
    deal = make_deal(6, [[(0, 0)], [(1, 1)]], boneyard=[(2, 3), (4, 5)], rest="desc")
    state = RoundState(config, deal)
    assert state.boneyard == list(deal.boneyard)
    assert state.boneyard[:3] == [(2, 3), (4, 5), (5, 6)]
    assert legal(state) == {state.codec.draw}  # nothing joins 6 (R18)
    do(state, "draw")
    assert state.drawn_tile == (2, 3) and (2, 3) in state.hand(0)
    assert state.boneyard[0] == (4, 5)
    do(state, "pass")
    do(state, "draw")
    assert state.drawn_tile == (4, 5)
    # same seed -> same deal; the hands are disjoint
    cfg4 = RulesConfig(num_seats=4)
    a = random_deal(cfg4, random.Random(7), 12)
    assert a == random_deal(cfg4, random.Random(7), 12)
    assert a != random_deal(cfg4, random.Random(8), 12)


# ======================================================================== 2. rounds and engine
def _first_legal_match(match):
    """Play a match with the first legal move, returning each round's starting state."""
    starts = [match.state.copy()]
    for _ in range(100_000):
        if match.is_over:
            return starts
        if match.apply(match.legal_moves()[0]) is not None and not match.is_over:
            starts.append(match.state.copy())
    raise AssertionError("the match does not terminate")


def test_R5_match_engines_run_down():
    """R5: a double-N match has N+1 rounds with engines N, N-1, ..., 0."""
    match = Match(cfg(), seed=3)
    starts = _first_legal_match(match)
    assert [r.engine for r in match.results] == [6, 5, 4, 3, 2, 1, 0]
    assert [s.engine for s in starts] == [6, 5, 4, 3, 2, 1, 0]
    assert [r.round_index for r in match.results] == list(range(7))
    assert match.legal_moves() == []
    with pytest.raises(ValueError):  # C3 at the match level
        match.apply(0)
    short = Match(cfg(first_engine=4, num_rounds=2), seed=1)
    _first_legal_match(short)
    assert [r.engine for r in short.results] == [4, 3]


def _drawn_pattern(deal, size):
    """Extra tiles each seat drew under R6 (the start seat placed the engine: +1)."""
    return [len(h) - size + (1 if k == deal.start_seat else 0) for k, h in enumerate(deal.hands)]


def _expected_pattern(n, first, k):
    return [sum(1 for j in range(k) if (first + j) % n == seat) for seat in range(n)]


def test_R6_engine_holder_is_start_seat():
    """R6: the seat dealt the engine places it (it leaves the hand) and starts."""
    config = RulesConfig(num_seats=4)  # double-12, 15 each: 60 of 91 dealt
    ts = tile_set(12)
    seen = 0
    for seed in range(40):
        deal = random_deal(config, random.Random(seed), 12, first_drawer=2)
        if len(deal.boneyard) != 91 - 60:
            continue  # somebody had to draw
        seen += 1
        tiles = [t for h in deal.hands for t in h] + list(deal.boneyard)
        assert (12, 12) not in tiles and len(set(tiles)) == 90
        assert sorted(map(len, deal.hands)) == [14, 15, 15, 15]
        assert len(deal.hands[deal.start_seat]) == 14
        assert {ts.id_of(t) for t in tiles} | {ts.double_of[12]} == set(range(91))
    assert seen > 10


def test_R6_drawing_for_the_engine_from_first_drawer():
    """R6: if nobody holds the engine, seats draw in turn from ``first_drawer``, keeping
    what they draw, until one draws it; that seat is the start seat. With the same shuffle,
    moving the first drawer rotates who gets the drawn tiles and leaves the boneyard alone."""
    config = RulesConfig(num_seats=3)  # double-9, 15 each: 45 of 55 dealt
    size, n = 15, 3
    checked = 0
    for seed in range(60):
        deals = [random_deal(config, random.Random(seed), 9, first_drawer=f) for f in range(n)]
        k = sum(_drawn_pattern(deals[0], size))
        if k == 0:
            assert all(d == deals[0] for d in deals)
            continue
        checked += 1
        for f, deal in enumerate(deals):
            assert _drawn_pattern(deal, size) == _expected_pattern(n, f, k)
            assert deal.start_seat == (f + k - 1) % n
            assert deal.boneyard == deals[0].boneyard
            assert (9, 9) not in [t for h in deal.hands for t in h]
        # The j-th drawn tile goes to seat (f + j) % n, so a seat's dealt hand is what it
        # holds under every first drawer, and what seat s drew under first drawer 0 is what
        # seat s + f drew under f (the engine, drawn last, is placed by the start seat).
        bases = [set.intersection(*(set(d.hands[i]) for d in deals)) for i in range(n)]
        assert [len(b) for b in bases] == [size] * n
        extras = [[set(d.hands[i]) - bases[i] for i in range(n)] for d in deals]
        assert sum(map(len, extras[0])) == k - 1
        for f in range(n):
            for seat in range(n):
                assert extras[f][(seat + f) % n] == extras[0][seat]
    assert checked >= 5


def test_R6_drawn_tiles_come_from_the_front_of_the_boneyard():
    """R4/R6: seats draw the boneyard's tiles in its draw order. The engine is dealt like any
    tile, so one seed shuffles the same way whatever the engine: with an engine some seat
    holds, the deal shows the hands and the whole boneyard B in draw order; with an engine
    at B[p], seats f, f+1, ... draw B[0..p] and the boneyard left is B[p+1:]."""
    config = RulesConfig(num_seats=3)  # double-9, 15 each, 10 tiles in the boneyard
    n, checked = 3, 0
    for seed in range(30):
        f = seed % n
        deals = {e: random_deal(config, random.Random(seed), e, first_drawer=f) for e in range(10)}
        held = [e for e, d in deals.items() if len(d.boneyard) == 10]
        if not held:
            continue
        ref = deals[held[0]]
        base = [set(h) for h in ref.hands]
        base[ref.start_seat].add((held[0], held[0]))
        B = list(ref.boneyard)
        for e, deal in deals.items():
            hands = [set(h) for h in base]
            if (e, e) in B:
                p = B.index((e, e))
                for j in range(p + 1):
                    hands[(f + j) % n].add(B[j])
                start, rest = (f + p) % n, B[p + 1 :]
                checked += 1
            else:
                start, rest = next(k for k in range(n) if (e, e) in base[k]), B
            hands[start].discard((e, e))
            assert deal.start_seat == start
            assert list(deal.boneyard) == rest
            assert [set(h) for h in deal.hands] == hands
    assert checked >= 30


def test_R6_match_rotates_first_drawer():
    """R6: seat 0 draws first in round 1; later, the seat after the previous start seat."""
    config = RulesConfig(num_seats=3)
    rounds_with_draws = 0
    for seed in range(6):
        match = Match(config, seed=seed)
        starts = _first_legal_match(match)
        previous = None
        for state, result in zip(starts, match.results, strict=True):
            hands = [state.hand(k) for k in range(3)]
            deal = Deal(hands, state.boneyard, state.engine, state.seat)
            k = sum(_drawn_pattern(deal, 15))
            first = 0 if previous is None else (previous + 1) % 3
            assert _drawn_pattern(deal, 15) == _expected_pattern(3, first, k)
            if k:
                rounds_with_draws += 1
                assert result.start_seat == (first + k - 1) % 3
            assert result.start_seat == state.seat
            previous = result.start_seat
    assert rounds_with_draws >= 5


def test_R6_explicit_first_round_then_rotation():
    """R6 with an explicit round 1 (start seat 2): round 2's first drawer is seat 0."""
    config = RulesConfig(num_seats=3, num_rounds=2)  # double-9, engines 9 and 8
    found = 0
    for seed in range(40):
        deal = make_deal(9, [[(0, 0)], [(1, 1)], [(9, 0)]], engine=9, start_seat=2)
        match = Match(config, seed=seed, deals=[deal])
        match.apply(mv(match.state, (9, 0), 2))  # seat 2 goes out in its first turn (R24)
        match.apply(match.state.codec.pass_)
        match.apply(match.state.codec.pass_)
        assert len(match.results) == 1 and match.results[0].start_seat == 2
        st = match.state
        d = Deal([st.hand(k) for k in range(3)], st.boneyard, st.engine, st.seat)
        k = sum(_drawn_pattern(d, 15))
        assert _drawn_pattern(d, 15) == _expected_pattern(3, 0, k)
        found += k > 1
    assert found >= 2


def test_V_engine_aside_deal_and_rotation():
    """V-engine-aside: the engine is out of the deal; start seat 0, then one seat clockwise."""
    config = RulesConfig(num_seats=3, engine_source="aside")
    for f in range(3):
        deal = random_deal(config, random.Random(5), 9, first_drawer=f)
        assert deal.start_seat == f
        assert [len(h) for h in deal.hands] == [15, 15, 15]
        assert len(deal.boneyard) == 55 - 1 - 45
        assert (9, 9) not in [t for h in deal.hands for t in h] + list(deal.boneyard)
    match = Match(config, seed=11)
    starts = _first_legal_match(match)
    assert [r.start_seat for r in match.results] == [k % 3 for k in range(10)]
    assert all(sorted(map(len, (s.hand(k) for k in range(3)))) == [15] * 3 for s in starts)
    with pytest.raises(ValueError, match="hand_size"):
        RulesConfig(num_seats=2, max_pip=6, hand_size=14, engine_source="aside")


def test_R7_start_seat_then_clockwise():
    """R7: the start seat acts first, then seats follow clockwise, wrapping."""
    state = RoundState(cfg(3), make_deal(6, [[(0, 0)], [(1, 1)], [(2, 2)]], start_seat=2))
    order = []
    for _ in range(3):
        order.append(state.seat)
        do(state, "pass")  # nothing joins 6: each seat passes (R11/R13)
    assert order == [2, 0, 1] and state.seat == 2
    assert state.legal_moves() == [state.codec.draw]  # seat 2's second turn (R18)
    assert [state.first_turn_pending(k) for k in range(3)] == [False] * 3


def test_C1_engine_is_placed_not_played():
    """C1: the engine needs no follow-up, is never open, is in no train, and only its own
    pip joins it (no double can start a train). Under V-first-turn-single the first turn
    is ordinary, so the start seat plays one tile and the turn ends."""
    state = RoundState(
        cfg(first_turn="single"), make_deal(6, [[(6, 1), (1, 1), (6, 2)], [(0, 0), (0, 1)]])
    )
    assert state.open_doubles == [] and not state.follow_up_owed
    assert state.restricting_train is None
    assert legal(state) == plays(state, ((6, 1), 0), ((6, 1), M2), ((6, 2), 0), ((6, 2), M2))
    do(state, ((6, 1), 0))
    assert state.seat == 1 and state.train(0) == [(6, 1)] and state.open_doubles == []
    ts = tile_set(6)
    assert state.table_mask == ts.bit[ts.id_of((6, 6))] | ts.bit[ts.id_of((1, 6))]


# ======================================================================== 3. trains
def test_R8_tile_joins_open_end():
    """R8: a tile joins by either end; its other end becomes the open end."""
    state = RoundState(
        cfg(), make_deal(6, [[(1, 6), (2, 1), (2, 2), (5, 2), (0, 4)], [(6, 3), (0, 0)]])
    )
    P = state.codec.pass_
    assert state.open_end(0) == 6 and state.train(0) == []
    assert legal(state) == plays(state, ((1, 6), 0)) | {P}
    do(state, ((1, 6), 0))
    assert state.train(0) == [(6, 1)] and state.open_end(0) == 1
    assert legal(state) == plays(state, ((1, 2), 0)) | {P}
    do(state, ((2, 1), 0))
    assert state.train(0) == [(6, 1), (1, 2)] and state.open_end(0) == 2
    assert legal(state) == plays(state, ((2, 2), 0), ((2, 5), 0)) | {P}
    do(state, ((5, 2), 0))
    assert state.train(0) == [(6, 1), (1, 2), (2, 5)] and state.open_end(0) == 5
    assert legal(state) == {P}  # 2|2 and 0|4 do not join 5
    assert state.open_end(1) == 6 and state.open_end(M2) == 6


def _r9_state():
    """Three seats (Mexican train = 3). Seat 0 starts 0-ward, seat 1 plays 6|1, seat 2
    has no 6 and is marked (R13)."""
    hands = [[(6, 0), (0, 3), (6, 4), (1, 5)], [(6, 1), (3, 3), (2, 5)], [(0, 0), (2, 3), (4, 5)]]
    state = RoundState(cfg(3), make_deal(6, hands, boneyard=[(0, 2)]))
    P = state.codec.pass_
    assert legal(state) == plays(state, ((6, 0), 0), ((6, 4), 0)) | {P}
    do(state, ((6, 0), 0))
    assert legal(state) == plays(state, ((0, 3), 0)) | {P}
    do(state, "pass")
    assert legal(state) == plays(state, ((6, 1), 1)) | {P}
    do(state, ((6, 1), 1))
    assert legal(state) == {P}
    do(state, "pass")
    assert legal(state) == {P}
    do(state, "pass")
    assert [state.is_marked(k) for k in range(3)] == [False, False, True]
    return state


def test_R9_where_a_seat_may_play():
    """R9: own train, the Mexican train, another seat's train only if marked."""
    state = _r9_state()
    # own end 0: 0|3; Mexican end 6: 6|4; seat 2 marked, end 6: 6|4; seat 1 unmarked: not 1|5
    assert legal(state) == plays(state, ((0, 3), 0), ((6, 4), M3), ((6, 4), 2))


def test_R10_markers():
    """R10: a marker goes on when a seat ends a turn by passing, comes off only when the
    owner plays on its own train; others playing on a marked train leave it on."""
    state = _r9_state()
    do(state, ((6, 4), 2))  # seat 0 plays on seat 2's marked train
    assert state.is_marked(2) and state.open_end(2) == 4
    # seat 1: own end 1, Mexican 6, seat 2 (marked) end 4 -> nothing: draw 0|2, no fit, pass
    assert legal(state) == {state.codec.draw}
    do(state, "draw")
    assert state.drawn_tile == (0, 2) and legal(state) == {state.codec.pass_}
    do(state, "pass")
    assert state.is_marked(1)
    # seat 2: own end 4 -> 4|5 (seat 1 marked at end 1: nothing; seat 0 unmarked: not 0|0)
    assert legal(state) == plays(state, ((4, 5), 2))
    do(state, ((4, 5), 2))
    assert not state.is_marked(2)
    # seat 0: own end 0 -> 0|3; seat 1 marked, end 1 -> 1|5; seat 2 unmarked again (end 5)
    assert legal(state) == plays(state, ((0, 3), 0), ((1, 5), 1))
    do(state, ((1, 5), 1))
    assert state.is_marked(1)
    assert legal(state) == plays(state, ((2, 5), 1))
    do(state, ((2, 5), 1))
    assert not state.is_marked(1)
    assert [state.is_marked(k) for k in range(3)] == [False, False, False]


# ======================================================================== 5. first turn
def test_R11_free_first_train():
    """R11: many tiles on the own train, pass at any moment, doubles need no follow-up and
    never open; passing after a tile does not mark; the last tile ends the turn."""
    state = RoundState(
        cfg(), make_deal(6, [[(6, 2), (2, 2), (2, 4), (4, 1), (0, 0)], [(6, 3), (3, 3)]])
    )
    P = state.codec.pass_
    assert state.in_free_first_turn
    assert legal(state) == plays(state, ((6, 2), 0)) | {P}
    do(state, ((6, 2), 0))
    assert legal(state) == plays(state, ((2, 2), 0), ((2, 4), 0)) | {P}
    do(state, ((2, 2), 0))
    assert not state.follow_up_owed and state.seat == 0
    assert legal(state) == plays(state, ((2, 4), 0)) | {P}
    do(state, ((2, 4), 0))
    assert legal(state) == plays(state, ((4, 1), 0)) | {P}
    do(state, "pass")
    assert state.seat == 1 and not state.is_marked(0) and state.open_doubles == []
    assert state.train(0) == [(6, 2), (2, 2), (2, 4)]
    do(state, ((6, 3), 1), ((3, 3), 1))  # last tile, a double: out at once (R24)
    assert state.is_over and state.end_reason == "out" and state.out_seats == (1,)
    assert state.open_doubles == []
    assert state.scores() == [5 + 50, 0]


def test_R11_pass_before_any_tile_marks():
    """R11/R13: pass is legal before any tile even when a tile joins; it then marks."""
    state = RoundState(cfg(), make_deal(6, [[(6, 2), (1, 1)], [(6, 3), (0, 0)]]))
    assert state.codec.pass_ in legal(state)
    do(state, "pass")
    assert state.is_marked(0) and state.hand(0) == [(1, 1), (2, 6)]


def test_R12_free_first_turn_own_train_only():
    """R12: in the free first turn no play on the Mexican train or a (marked) other train."""
    state = RoundState(cfg(), make_deal(6, [[(0, 0), (1, 2)], [(6, 3), (6, 5), (0, 1)]]))
    do(state, "pass")
    assert state.is_marked(0) and state.open_end(0) == 6
    assert legal(state) == plays(state, ((6, 3), 1), ((6, 5), 1)) | {state.codec.pass_}


def test_R13_no_tile_in_first_turn_marks_without_drawing():
    """R13: a seat with nothing that joins passes (no draw) and is marked."""
    state = RoundState(cfg(), make_deal(6, [[(0, 0), (1, 2)], [(6, 3), (0, 1)]]))
    size = state.boneyard_size
    assert state.legal_moves() == [state.codec.pass_]
    do(state, "pass")
    assert state.is_marked(0) and state.boneyard_size == size
    assert state.hand(0) == [(0, 0), (1, 2)] and state.seat == 1


def _r14_state():
    state = RoundState(cfg(), make_deal(6, [[(6, 1), (1, 5), (6, 3)], [(6, 2), (6, 4), (3, 4)]]))
    P = state.codec.pass_
    assert legal(state) == plays(state, ((6, 1), 0), ((6, 3), 0)) | {P}
    do(state, ((6, 1), 0))
    assert legal(state) == plays(state, ((1, 5), 0)) | {P}
    do(state, "pass")
    assert legal(state) == plays(state, ((6, 2), 1), ((6, 4), 1)) | {P}
    do(state, ((6, 2), 1))
    assert legal(state) == {P}
    do(state, "pass")
    return state


def test_R14_mexican_train_from_the_second_turn():
    """R14: from its second turn any seat may start the Mexican train."""
    state = _r14_state()
    assert not state.in_free_first_turn and not state.mexican_started
    assert legal(state) == plays(state, ((1, 5), 0), ((6, 3), M2))
    do(state, ((6, 3), M2))
    assert state.mexican_started and state.train(M2) == [(6, 3)]
    # seat 1: own end 2 nothing, Mexican end 3 -> 3|4 (6|4 no longer fits anywhere)
    assert legal(state) == plays(state, ((3, 4), M2))


def test_R15_one_tile_and_must_play():
    """R15: an ordinary turn plays one tile; with a legal play, draw and pass are illegal."""
    state = _r14_state()
    assert state.codec.draw not in legal(state) and state.codec.pass_ not in legal(state)
    assert_illegal(state, state.codec.draw)
    assert_illegal(state, state.codec.pass_)
    do(state, ((1, 5), 0))
    assert state.seat == 1 and state.tiles_played_this_turn == 0
    assert state.open_end(0) == 5


def test_V_first_turn_single_first_turn_is_ordinary():
    """V-first-turn-single: no free first turn; the Mexican train may be started at once;
    one tile per turn; a seat with nothing draws (R18)."""
    state = RoundState(
        cfg(first_turn="single"),
        make_deal(6, [[(6, 1), (1, 3), (6, 2), (0, 3)], [(0, 4), (2, 5)]], boneyard=[(1, 5)]),
    )
    assert not state.in_free_first_turn
    assert legal(state) == plays(state, ((6, 1), 0), ((6, 1), M2), ((6, 2), 0), ((6, 2), M2))
    do(state, ((6, 1), M2))
    assert state.seat == 1 and state.mexican_started
    assert legal(state) == {state.codec.draw}  # own 6, Mexican 1, seat 0 unmarked
    do(state, "draw")
    assert legal(state) == plays(state, ((1, 5), M2))
    do(state, ((1, 5), M2))
    # seat 0: own end 6 -> 6|2; Mexican end 5 -> nothing
    assert legal(state) == plays(state, ((6, 2), 0))


def test_V_first_turn_draw_forced_draw_then_free_turn_goes_on():
    """V-first-turn-draw: no joining tile and no tile played -> the only move is draw; a
    drawn tile that joins must be played and the free turn goes on; one that does not
    join -> pass, marked."""
    config = cfg(first_turn="draw")
    deal = make_deal(6, [[(0, 1), (2, 3), (3, 5)], [(1, 2), (4, 4)]], boneyard=[(6, 3), (0, 0)])
    state = RoundState(config, deal)
    P = state.codec.pass_
    assert state.legal_moves() == [state.codec.draw]
    do(state, "draw")
    assert state.drawn_tile == (3, 6)
    assert legal(state) == plays(state, ((6, 3), 0))  # must be played: no pass
    do(state, ((6, 3), 0))
    assert state.seat == 0 and state.in_free_first_turn
    assert legal(state) == plays(state, ((3, 5), 0), ((2, 3), 0)) | {P}
    do(state, ((3, 2), 0))
    assert legal(state) == {P}  # nothing joins 2 and a tile was played: no draw
    do(state, "pass")
    assert not state.is_marked(0)
    assert legal(state) == {state.codec.draw}
    do(state, "draw")
    assert state.drawn_tile == (0, 0) and legal(state) == {P}
    do(state, "pass")
    assert state.is_marked(1) and (0, 0) in state.hand(1)


def test_V_first_turn_draw_with_a_joining_tile_and_empty_boneyard():
    """V-first-turn-draw: a seat with a joining tile may play or pass (no draw); an empty
    boneyard means pass."""
    state = RoundState(cfg(first_turn="draw"), make_deal(6, [[(6, 1), (0, 0)], [(1, 1)]]))
    assert state.boneyard_size > 0
    assert legal(state) == plays(state, ((6, 1), 0)) | {state.codec.pass_}
    ts = tile_set(6)
    sixes = [(6, k) for k in range(6)]
    others = [t for t in ts.tiles if 6 not in t]
    state = RoundState(cfg(first_turn="draw"), make_deal(6, [others, sixes], rest=None))
    assert state.boneyard_size == 0
    assert state.legal_moves() == [state.codec.pass_]
    do(state, "pass")
    assert legal(state) == plays(state, *((t, 1) for t in sixes)) | {state.codec.pass_}


# ======================================================================== 6. ordinary turns
def _r16_state(config):
    hands = [[(6, 3), (3, 3), (3, 1), (6, 5), (0, 0)], [(6, 2), (2, 4), (3, 4), (5, 5)]]
    state = RoundState(config, make_deal(6, hands))
    do(state, ((6, 3), 0), "pass", ((6, 2), 1), "pass")
    assert legal(state) == plays(state, ((3, 3), 0), ((3, 1), 0), ((6, 5), M2))
    do(state, ((3, 3), 0))
    return state


def test_R16_double_needs_follow_up():
    """R16: after a double the same seat plays again, anywhere legal (R19: the double does
    not restrict its own turn); then R19/R20: it is open and the next seat must satisfy it,
    here on seat 0's unmarked train."""
    state = _r16_state(cfg())
    assert state.seat == 0 and state.follow_up_owed and state.follow_up_train == 0
    assert legal(state) == plays(state, ((3, 1), 0), ((6, 5), M2))
    do(state, ((6, 5), M2))
    assert state.seat == 1 and state.open_doubles == [0] and state.restricting_train == 0
    assert not state.is_marked(0)
    # seat 1 must satisfy 3|3: not 2|4 on its own train, not 5|5 on the Mexican (end 5)
    assert legal(state) == plays(state, ((3, 4), 0))
    do(state, ((3, 4), 0))
    assert state.seat == 0 and state.open_doubles == [] and state.restricting_train is None
    assert state.train(0) == [(6, 3), (3, 3), (3, 4)]


def _chain_state(config, h0_extra=(), h1=((6, 2), (0, 0)), boneyard=()):
    """V-first-turn-single; seat 0 opens its train with 6|1, seat 1 the Mexican with 6|2."""
    hands = [[(6, 1), *h0_extra], list(h1)]
    state = RoundState(config.replace(first_turn="single"), make_deal(6, hands, boneyard=boneyard))
    do(state, ((6, 1), 0), ((6, 2), M2))
    return state


def test_R16_double_after_double_plays_again():
    """R16: if the follow-up is a double too, the seat plays again, possibly on it."""
    state = _chain_state(cfg(), h0_extra=[(1, 1), (2, 2), (2, 3), (4, 5)])
    assert legal(state) == plays(state, ((1, 1), 0), ((2, 2), M2), ((2, 3), M2))
    do(state, ((1, 1), 0))
    assert legal(state) == plays(state, ((2, 2), M2), ((2, 3), M2))
    do(state, ((2, 2), M2))
    assert state.seat == 0 and state.follow_up_train == M2
    assert legal(state) == plays(state, ((2, 3), M2))
    do(state, ((2, 3), M2))
    assert state.seat == 1 and state.open_doubles == [0]  # 2|2 was covered, 1|1 was not


def test_R16_follow_up_on_a_marked_train():
    """R16: the follow-up may go on another seat's marked train (R9)."""
    deal = make_deal(6, [[(6, 1), (1, 1), (6, 3), (2, 5)], [(0, 0), (4, 5)]], boneyard=[(0, 2)])
    state = RoundState(cfg(first_turn="single"), deal)
    do(state, ((6, 1), 0))
    assert state.legal_moves() == [state.codec.draw]
    do(state, "draw", "pass")
    assert state.is_marked(1)
    assert legal(state) == plays(state, ((1, 1), 0), ((6, 3), M2), ((6, 3), 1))
    do(state, ((1, 1), 0))
    assert legal(state) == plays(state, ((6, 3), M2), ((6, 3), 1))
    do(state, ((6, 3), 1))
    assert state.seat == 1 and state.open_doubles == [0] and state.is_marked(1)
    assert state.train(1) == [(6, 3)]


def test_V_follow_up_on_double_forced_onto_the_double():
    """V-follow-up-on-double: a tile that joins the double just played must go there."""
    state = _r16_state(cfg(follow_up_on_double=True))
    assert legal(state) == plays(state, ((3, 1), 0))
    do(state, ((3, 1), 0))
    assert state.seat == 1 and state.open_doubles == []


def test_V_follow_up_on_double_free_when_nothing_joins():
    """V-follow-up-on-double: nothing joins the double -> anywhere legal; a later double."""
    state = _chain_state(cfg(follow_up_on_double=True), h0_extra=[(1, 1), (2, 2), (2, 3), (4, 5)])
    do(state, ((1, 1), 0))
    assert legal(state) == plays(state, ((2, 2), M2), ((2, 3), M2))
    do(state, ((2, 2), M2))
    assert legal(state) == plays(state, ((2, 3), M2))


@pytest.mark.parametrize("forced", [False, True])
def test_V_follow_up_on_double_drawn_tile(forced):
    """R17 + V-follow-up-on-double: a drawn tile that joins the double must go there;
    by default (R16) it may go anywhere legal."""
    state = _chain_state(
        cfg(follow_up_on_double=forced), h0_extra=[(1, 1), (4, 5)], boneyard=[(1, 2)]
    )
    assert legal(state) == plays(state, ((1, 1), 0))
    do(state, ((1, 1), 0))
    assert state.legal_moves() == [state.codec.draw]
    do(state, "draw")
    expected = {((1, 2), 0)} if forced else {((1, 2), 0), ((1, 2), M2)}
    assert legal(state) == plays(state, *expected)


def test_R17_unable_to_follow_up_draws_then_passes_marked():
    """R17: no follow-up -> draw; the drawn tile does not fit -> pass: marked even though a
    tile was played, and the double stays open."""
    state = _chain_state(cfg(), h0_extra=[(1, 1), (4, 5)], boneyard=[(0, 3)])
    do(state, ((1, 1), 0))
    assert state.legal_moves() == [state.codec.draw]
    do(state, "draw")
    assert state.legal_moves() == [state.codec.pass_]
    do(state, "pass")
    assert state.is_marked(0) and state.open_doubles == [0] and state.seat == 1
    assert state.restricting_train == 0


def test_R17_drawn_tile_played_elsewhere_leaves_double_open():
    """R17/R19: the drawn tile is played (here on the Mexican train): no marker, but the
    double has no tile on it, so it becomes open."""
    state = _chain_state(cfg(), h0_extra=[(1, 1), (4, 5)], boneyard=[(1, 2)])
    do(state, ((1, 1), 0), "draw", ((1, 2), M2))
    assert state.seat == 1 and not state.is_marked(0) and state.open_doubles == [0]


def test_R17_empty_boneyard_passes_at_once():
    """R17/R18: after a double with no follow-up and an empty boneyard the seat passes."""
    ts = tile_set(6)
    h1 = [(6, 2), (0, 1), (0, 2), (1, 2), (1, 3), (1, 4), (1, 5), (2, 2), (2, 3), (2, 4), (2, 5)]
    h0 = [(6, 1), (1, 1)] + [t for t in ts.tiles if t not in h1 + [(2, 6), (1, 6), (1, 1), (6, 6)]]
    state = RoundState(cfg(first_turn="single"), make_deal(6, [h0, h1], rest=None))
    assert state.boneyard_size == 0
    do(state, ((6, 1), 0), ((6, 2), M2))
    assert legal(state) == plays(state, ((1, 1), 0))
    do(state, ((1, 1), 0))
    assert state.legal_moves() == [state.codec.pass_]
    do(state, "pass")
    assert state.is_marked(0) and state.open_doubles == [0]


def test_R18_unable_to_play_draws_and_must_play_drawn_double():
    """R18: no legal play -> draw; a drawn tile that fits must be played (R16 if a double);
    a drawn tile that does not fit -> pass, marked."""
    deal = make_deal(6, [[(6, 1), (0, 0)], [(6, 2), (4, 4)]], boneyard=[(1, 1), (6, 3), (0, 5)])
    state = RoundState(cfg(), deal)
    do(state, ((6, 1), 0), "pass", ((6, 2), 1), "pass")
    assert state.legal_moves() == [state.codec.draw]
    do(state, "draw")
    assert state.drawn_tile == (1, 1) and state.drawn_since_play
    assert legal(state) == plays(state, ((1, 1), 0))
    do(state, ((1, 1), 0))
    assert state.follow_up_owed and state.legal_moves() == [state.codec.draw]
    do(state, "draw")
    assert legal(state) == plays(state, ((6, 3), M2))
    do(state, ((6, 3), M2))
    assert state.seat == 1 and state.open_doubles == [0] and not state.is_marked(0)
    # seat 1 must satisfy 1|1 (R20): 4|4 cannot -> draw 0|5 -> cannot -> pass, marked
    assert state.legal_moves() == [state.codec.draw]
    do(state, "draw")
    assert state.legal_moves() == [state.codec.pass_]
    do(state, "pass")
    assert state.is_marked(1) and state.hand(1) == [(0, 5), (4, 4)]


def _voids(state):
    """Each seat's known voids as a set of pips (RoundState.voids)."""
    return [{p for p in range(7) if v >> p & 1} for v in state.voids]


def test_R18_a_draw_and_a_pass_show_which_pips_a_seat_lacks():
    """Known voids (R15, R17, R18): a draw shows the hand bears none of the open ends the
    seat was checked against; a pass after a draw replaces them (the drawn tile may bear an
    older void); playing the drawn tile keeps them; a free-first-turn pass shows nothing."""
    deal = make_deal(6, [[(6, 1), (0, 0), (3, 3)], [(6, 2), (4, 4), (0, 4)]],
                     boneyard=[(1, 1), (2, 3), (3, 5), (2, 5)])
    state = RoundState(cfg(), deal)
    do(state, ((6, 1), 0), "pass")  # free first turn: a pass proves nothing (R11)
    do(state, ((6, 2), 1), "pass")
    assert _voids(state) == [set(), set()]
    # seat 0 may play on its own train (end 1) and the Mexican train (engine 6): nothing
    assert state.legal_moves() == [state.codec.draw]
    do(state, "draw")  # 1|1: fits its own train, must be played (R17)
    assert _voids(state) == [{1, 6}, set()]
    do(state, ((1, 1), 0))  # a double: follow-up owed on its end 1, nothing joins
    do(state, "draw")  # 2|3 does not fit 1 (own train) or 6 (Mexican): pass, marked
    assert _voids(state) == [{1, 6}, set()]
    do(state, "pass")
    assert _voids(state) == [{1, 6}, set()] and state.is_marked(0)
    # seat 1: the open double 1|1 restricts it (R20): only pip 1 is checked
    assert state.restricting_train == 0 and state.legal_moves() == [state.codec.draw]
    do(state, "draw")  # 3|5 does not bear 1
    assert _voids(state) == [{1, 6}, {1}]
    do(state, "pass")
    assert _voids(state) == [{1, 6}, {1}] and state.hand(1) == [(0, 4), (3, 5), (4, 4)]
    # the voids are public: every seat's position carries them
    assert state.public(0).voids == state.public(1).voids == state.voids


def test_R18_empty_boneyard_passes_at_once():
    """R18: with an empty boneyard a seat with no play passes at once (and is marked)."""
    state = _blocked_state()
    do(state, ((6, 5), M2))  # seat 0 (turn 5) -> all trains end at 6
    assert state.legal_moves() == [state.codec.pass_]
    do(state, "pass")
    assert state.is_marked(1)


# ======================================================================== 7. open doubles
def _two_doubles(config, first):
    """V-first-turn-single. Seat 0 (own end 1, Mexican end 2) plays 1|1 and 2|2 in the order
    ``first``, cannot follow up, draws 0|3 and passes."""
    state = _chain_state(
        config,
        h0_extra=[(1, 1), (2, 2), (4, 5)],
        h1=[(6, 2), (0, 0), (1, 4), (2, 5)],
        boneyard=[(0, 3), (2, 4)],
    )
    assert legal(state) == plays(state, ((1, 1), 0), ((2, 2), M2))
    if first == 0:
        do(state, ((1, 1), 0))
        assert legal(state) == plays(state, ((2, 2), M2))
        do(state, ((2, 2), M2))
    else:
        do(state, ((2, 2), M2))
        assert legal(state) == plays(state, ((1, 1), 0))
        do(state, ((1, 1), 0))
    assert state.legal_moves() == [state.codec.draw]
    do(state, "draw")
    assert state.legal_moves() == [state.codec.pass_]
    do(state, "pass")
    return state


@pytest.mark.parametrize("first", [0, M2])
def test_R19_doubles_open_in_the_order_played(first):
    """R19: at the end of the turn each uncovered double becomes open, in order played."""
    state = _two_doubles(cfg(), first)
    assert state.open_doubles == ([0, M2] if first == 0 else [M2, 0])
    assert state.is_marked(0) and state.seat == 1


def test_R20_satisfy_on_any_train_else_draw_pass_marked():
    """R20: only plays on the open double count; cannot -> draw; the drawn tile does not
    satisfy it (though it fits the own train) -> pass, marked; the owner then satisfies its
    own double, which ends its turn."""
    hands = [[(6, 3), (3, 3), (3, 1), (6, 5), (0, 0)], [(6, 2), (2, 4), (5, 5), (0, 1)]]
    state = RoundState(cfg(), make_deal(6, hands, boneyard=[(0, 2)]))
    do(state, ((6, 3), 0), "pass", ((6, 2), 1), "pass", ((3, 3), 0), ((6, 5), M2))
    assert state.restricting_train == 0
    assert state.legal_moves() == [state.codec.draw]  # 2|4 fits own, 5|5 fits Mexican
    do(state, "draw")
    assert state.drawn_tile == (0, 2) and state.legal_moves() == [state.codec.pass_]
    do(state, "pass")
    assert state.is_marked(1) and state.open_doubles == [0]
    assert legal(state) == plays(state, ((3, 1), 0))  # not 0|0, not anything on seat 1's train
    do(state, ((3, 1), 0))
    assert state.seat == 1 and state.open_doubles == []


def test_R20_double_on_the_mexican_train():
    """R20: an open double on the Mexican train restricts like any other."""
    state = _two_doubles(cfg(doubles_order="newest"), 0)
    assert state.restricting_train == M2
    assert legal(state) == plays(state, ((2, 5), M2))


def test_R21_oldest_first():
    """R21: several open doubles are satisfied oldest first."""
    state = _two_doubles(cfg(), 0)  # open: [seat 0's 1|1, Mexican 2|2]
    assert state.restricting_train == 0
    # seat 1 holds 1|4 (fits 1|1) and 2|5 (fits 2|2): only the oldest counts
    assert legal(state) == plays(state, ((1, 4), 0))
    do(state, ((1, 4), 0))
    assert state.open_doubles == [M2] and state.restricting_train == M2
    # seat 0: 4|5 / 0|3 cannot satisfy 2|2 -> draws 2|4, which also fits its own train (end 4)
    assert state.legal_moves() == [state.codec.draw]
    do(state, "draw")
    assert legal(state) == plays(state, ((2, 4), M2))
    do(state, ((2, 4), M2))
    assert state.open_doubles == [] and state.seat == 1


def test_V_doubles_reverse_newest_first():
    """V-doubles-reverse: the newest open double is satisfied first."""
    state = _two_doubles(cfg(doubles_order="newest"), 0)
    assert state.open_doubles == [0, M2] and state.restricting_train == M2
    assert legal(state) == plays(state, ((2, 5), M2))
    do(state, ((2, 5), M2))
    assert state.open_doubles == [0] and state.restricting_train == 0
    # seat 0: 4|5 fits the Mexican (end 5) but 1|1 restricts: draw 2|4, no fit, pass
    assert state.legal_moves() == [state.codec.draw]
    do(state, "draw")
    assert state.legal_moves() == [state.codec.pass_]
    do(state, "pass")
    assert state.open_doubles == [0] and state.is_marked(0)


def test_V_doubles_reverse_order_of_play_matters():
    state = _two_doubles(cfg(doubles_order="newest"), M2)  # open: [Mexican 2|2, seat 0's 1|1]
    assert state.restricting_train == 0
    assert legal(state) == plays(state, ((1, 4), 0))


def _dead_state(config):
    """Every 3-tile but 3|3 goes down in the first turns (both trains end at 3); seat 0
    then plays 3|3 (follow-up 6|5 on the Mexican): an open double nobody can satisfy."""
    h0 = [(3, 6), (0, 3), (0, 1), (1, 3), (3, 3), (5, 6), (1, 5), (2, 5), (1, 1), (2, 4)]
    h1 = [(2, 6), (2, 3), (3, 4), (4, 5), (3, 5), (5, 5), (0, 4), (1, 2)]
    state = RoundState(config, make_deal(6, [h0, h1], boneyard=[(0, 0)]))
    do(state, ((6, 3), 0), ((3, 0), 0), ((0, 1), 0), ((1, 3), 0))
    assert legal(state) == plays(state, ((3, 3), 0)) | {state.codec.pass_}
    do(state, "pass")
    do(state, ((6, 2), 1), ((2, 3), 1), ((3, 4), 1), ((4, 5), 1))
    assert legal(state) == plays(state, ((5, 5), 1), ((3, 5), 1)) | {state.codec.pass_}
    do(state, ((5, 3), 1))
    assert state.legal_moves() == [state.codec.pass_]
    do(state, "pass")
    assert legal(state) == plays(state, ((3, 3), 0), ((6, 5), M2))
    do(state, ((3, 3), 0))
    assert legal(state) == plays(state, ((6, 5), M2))
    do(state, ((6, 5), M2))
    assert state.open_doubles == [0] and state.is_dead_double(0)
    return state


def test_R22_dead_double_restricts_nobody():
    """R22: a dead open double stays open but restricts nobody; the next one in order does."""
    state = _dead_state(cfg())
    assert state.restricting_train is None
    assert legal(state) == plays(state, ((5, 5), M2))
    do(state, ((5, 5), M2))  # seat 1: no follow-up (0|4, 1|2) -> draw 0|0 -> pass
    assert state.legal_moves() == [state.codec.draw]
    do(state, "draw", "pass")
    assert state.open_doubles == [0, M2] and state.is_marked(1)
    assert not state.is_dead_double(M2)
    # 3|3 is older but dead: the Mexican 5|5 restricts
    assert state.restricting_train == M2
    assert legal(state) == plays(state, ((1, 5), M2), ((2, 5), M2))
    do(state, ((1, 5), M2))
    assert state.open_doubles == [0] and state.restricting_train is None


def test_R22_dead_doubles_off_still_restricts():
    """R22 switched off: the dead double keeps restricting; nobody can play."""
    state = _dead_state(cfg(dead_doubles=False))
    assert state.restricting_train == 0
    assert state.legal_moves() == [state.codec.draw]  # 5|5 would fit the Mexican
    do(state, "draw")
    assert state.legal_moves() == [state.codec.pass_]
    do(state, "pass")
    assert state.restricting_train == 0
    assert state.legal_moves() == [state.codec.draw]  # seat 0: 1|5, 2|5 fit the Mexican
    do(state, "draw")
    assert state.drawn_tile == (0, 2) and state.legal_moves() == [state.codec.pass_]


# ======================================================================== 8. end of a round
@pytest.mark.parametrize("last,value", [((4, 4), 57), ((4, 1), 57)])
def test_R23_going_out_ends_the_round_at_once(last, value):
    """R23: playing the last tile in an ordinary turn ends the round at once — also on a
    double (no follow-up owed, never open)."""
    state = RoundState(cfg(), make_deal(6, [[(6, 4), last], [(6, 1), (0, 0), (2, 5)]]))
    do(state, ((6, 4), 0), "pass", ((6, 1), 1), "pass")
    assert legal(state) == plays(state, (last, 0))
    do(state, (last, 0))
    assert state.is_over and state.end_reason == "out" and state.out_seats == (0,)
    assert state.open_doubles == [] and not state.follow_up_owed
    assert state.legal_moves() == []
    assert state.scores() == [0, value]  # R26: 0|0 = 50, 2|5 = 7


def test_R24_several_seats_out_in_the_free_first_turn():
    """R24: going out in the free first turn ends that turn; the round ends only after
    every seat's first turn; several seats may go out."""
    hands = [[(6, 1), (1, 2)], [(6, 3), (3, 3)], [(6, 4), (4, 0), (5, 5)]]
    state = RoundState(cfg(3), make_deal(6, hands))
    do(state, ((6, 1), 0), ((1, 2), 0))
    assert not state.is_over and state.seat == 1 and state.out_seats == (0,)
    assert legal(state) == plays(state, ((6, 3), 1)) | {state.codec.pass_}
    do(state, ((6, 3), 1), ((3, 3), 1))
    assert not state.is_over and state.seat == 2 and state.out_seats == (0, 1)
    do(state, ((6, 4), 2))
    assert legal(state) == plays(state, ((4, 0), 2)) | {state.codec.pass_}
    do(state, "pass")
    assert state.is_over and state.end_reason == "out" and state.out_seats == (0, 1)
    assert state.scores() == [0, 0, 4 + 10]
    assert score_round(cfg(3, scoring="positive"), state) == (14, 14, 0)


def test_R24_out_seat_then_others_and_last_seat_out():
    """R24: seat 1 plays no tile (marked), seat 2 goes out too: out seats (0, 2)."""
    hands = [[(6, 1)], [(0, 0), (2, 3)], [(6, 4), (4, 4)]]
    state = RoundState(cfg(3), make_deal(6, hands))
    do(state, ((6, 1), 0))
    assert state.seat == 1 and not state.is_over
    do(state, "pass")
    assert state.is_marked(1) and not state.is_over
    do(state, ((6, 4), 2), ((4, 4), 2))
    assert state.is_over and state.out_seats == (0, 2)
    assert state.scores() == [0, 55, 0]
    # every seat out in its first turn: all score 0, also under V-positive-score
    both = RoundState(cfg(), make_deal(6, [[(6, 1)], [(6, 2)]]))
    do(both, ((6, 1), 0))
    assert not both.is_over
    do(both, ((6, 2), 1))
    assert both.end_reason == "out" and both.out_seats == (0, 1) and both.scores() == [0, 0]
    assert score_round(cfg(scoring="positive"), both) == (0, 0)


def _blocked_state(config=None):
    """Empty boneyard. First turns: seat 0 lays 6|0 0|1 1|6, seat 1 lays 6|2 2|3 3|6;
    then 6|4 (seat 0), 4|5 (seat 1) on the Mexican train; seat 0 to play."""
    h0 = [(6, 0), (0, 1), (1, 6), (6, 4), (5, 6)]
    h0 += [(0, 0), (0, 2), (0, 3), (0, 4), (0, 5), (1, 1), (1, 2), (1, 3), (1, 4)]
    h1 = [(6, 2), (2, 3), (3, 6), (4, 5)]
    h1 += [(1, 5), (2, 2), (2, 4), (2, 5), (3, 3), (3, 4), (3, 5), (4, 4), (5, 5)]
    state = RoundState(config or cfg(), make_deal(6, [h0, h1], rest=None))
    assert state.boneyard_size == 0
    do(state, ((6, 0), 0), ((0, 1), 0), ((1, 6), 0))
    assert legal(state) == plays(state, ((6, 4), 0), ((5, 6), 0)) | {state.codec.pass_}
    do(state, "pass", ((6, 2), 1), ((2, 3), 1), ((3, 6), 1))
    assert state.legal_moves() == [state.codec.pass_]
    do(state, "pass")
    assert legal(state) == plays(state, ((6, 4), 0), ((6, 4), M2), ((5, 6), 0), ((5, 6), M2))
    do(state, ((6, 4), M2))
    assert legal(state) == plays(state, ((4, 5), M2), ((2, 4), M2), ((3, 4), M2), ((4, 4), M2))
    do(state, ((4, 5), M2))
    assert legal(state) == plays(state, ((5, 6), 0), ((5, 6), M2), ((0, 5), M2))
    return state


def test_R25_blocked_round():
    """R25: empty boneyard, n turns without a tile, nobody can play -> blocked; R26 scores
    the hands (0|0 = 50)."""
    state = _blocked_state()
    do(state, ((5, 6), M2))  # every 6 is down; all three trains end at 6
    do(state, "pass")
    assert not state.is_over and state.turns_without_play == 1 and state.is_marked(1)
    assert state.legal_moves() == [state.codec.pass_]
    do(state, "pass")
    assert state.is_over and state.end_reason == "blocked" and state.out_seats == ()
    assert state.turns_without_play == 2 and state.legal_moves() == []
    assert state.scores() == [78, 62]
    assert state.scores() == [pips(state.hand(0)), pips(state.hand(1))]
    assert score_round(cfg(scoring="positive"), state) == (0, 0)  # V-positive-score


def test_V_blank_zero_double_blank_counts_zero():
    """V-blank-zero: 0|0 counts 0 (R26 counts it 50)."""
    state = _blocked_state(cfg(double_blank_value=0))
    do(state, ((5, 6), M2), "pass", "pass")
    assert state.end_reason == "blocked" and state.scores() == [28, 62]
    assert state.hand_value(0) == 28


def test_R25_first_two_conditions_but_a_seat_can_play():
    """R25: boneyard empty and n turns without a tile, but seat 0 can now play on seat 1's
    freshly marked train: play goes on and seat 0 must play."""
    h0 = [(6, 0), (0, 5), (5, 5), (5, 1), (1, 2), (2, 5), (5, 3), (3, 4), (4, 5)]
    h0 += [(5, 6), (0, 3), (1, 3), (3, 3), (3, 6)]
    h1 = [(6, 2), (2, 3), (0, 0), (0, 1), (0, 2), (0, 4), (1, 1), (1, 4), (1, 6)]
    h1 += [(2, 2), (2, 4), (4, 4), (4, 6)]
    state = RoundState(cfg(), make_deal(6, [h0, h1], rest=None))
    assert state.boneyard_size == 0
    P = state.codec.pass_
    assert legal(state) == plays(state, ((6, 0), 0), ((5, 6), 0), ((3, 6), 0)) | {P}
    do(state, ((6, 0), 0), ((0, 5), 0), ((5, 5), 0), ((5, 1), 0), ((1, 2), 0), ((2, 5), 0))
    do(state, ((5, 3), 0), ((3, 4), 0), ((4, 5), 0))
    assert legal(state) == plays(state, ((5, 6), 0)) | {P}
    do(state, "pass")
    assert legal(state) == plays(state, ((6, 2), 1), ((1, 6), 1), ((4, 6), 1)) | {P}
    do(state, ((6, 2), 1), "pass")
    assert legal(state) == plays(state, ((5, 6), 0), ((5, 6), M2), ((3, 6), M2))
    do(state, ((5, 6), M2))
    assert legal(state) == plays(state, ((2, 3), 1), ((0, 2), 1), ((2, 2), 1), ((2, 4), 1))
    do(state, ((2, 3), 1))
    assert state.legal_moves() == [P]  # seat 1's train (end 3) is not marked
    do(state, "pass")
    assert state.legal_moves() == [P]  # no 3 or 5 in seat 1's hand
    do(state, "pass")
    assert state.turns_without_play == 2 and state.boneyard_size == 0
    assert not state.is_over and state.seat == 0
    assert legal(state) == plays(state, ((0, 3), 1), ((1, 3), 1), ((3, 3), 1), ((3, 6), 1))


# ======================================================================== 9. scoring
def test_R26_round_score_and_V_positive_score():
    """R26: out -> 0, others their pip total with 0|0 = 50; V-positive-score: the seat
    that went out receives the others' total."""
    state = RoundState(cfg(3), make_deal(6, [[(6, 1)], [(0, 0), (2, 3)], [(4, 6), (1, 1)]]))
    do(state, ((6, 1), 0), "pass", ((6, 4), 2), "pass")
    assert state.is_over and state.out_seats == (0,)
    assert state.scores() == [0, 55, 2]
    assert [state.hand_value(k) for k in range(3)] == [0, 55, 2]
    assert score_round(cfg(3, scoring="positive"), state) == (57, 0, 0)
    fresh = RoundState(cfg(3), make_deal(6, [[(6, 1)], [(0, 0)], [(1, 1)]]))
    with pytest.raises(ValueError):
        fresh.scores()  # no score before the end


def _match_deals():
    # round 1 (engine 6): seat 0 goes out in its free first turn; seat 1 keeps 2|3 + 0|0
    r1 = make_deal(6, [[(6, 1)], [(6, 2), (2, 3), (0, 0)]], engine=6)
    # round 2 (engine 5), seat 1 starts and goes out; seat 0 keeps 1|2 + 3|4
    r2 = make_deal(6, [[(1, 2), (3, 4)], [(5, 0)]], engine=5, start_seat=1)
    return [r1, r2]


def _play_match_deals(config):
    match = Match(config, seed=0, deals=_match_deals())
    do(match.state, ((6, 1), 0))
    assert match.round_index == 0
    r1 = match.apply(mv(match.state, (6, 2), 1))
    assert r1 is None
    r1 = match.apply(match.state.codec.pass_)
    assert r1 is not None and match.round_index == 1 and match.state.engine == 5
    assert match.state.seat == 1
    do(match.state, ((5, 0), 1))
    r2 = match.apply(match.state.codec.pass_)
    assert r2 is not None and match.is_over
    return match, r1, r2


def test_R27_match_totals_lowest_wins():
    """R27: scores add up over the rounds; the lowest total wins."""
    match, r1, r2 = _play_match_deals(cfg(first_engine=6, num_rounds=2))
    assert r1.scores == (0, 55) and r1.hand_values == (0, 55) and r1.out_seats == (0,)
    assert r1.start_seat == 0 and r1.end_reason == "out" and r1.engine == 6
    assert r2.scores == (10, 0) and r2.start_seat == 1 and r2.engine == 5
    assert match.totals == [10, 55]
    assert match.places() == [1, 2]
    assert match.legal_moves() == []
    with pytest.raises(ValueError):
        match.apply(0)


def test_V_positive_score_match():
    """V-positive-score: the seat that went out gets the others' R26 total; highest wins."""
    match, r1, r2 = _play_match_deals(cfg(first_engine=6, num_rounds=2, scoring="positive"))
    assert r1.scores == (55, 0) and r1.hand_values == (0, 55)
    assert r2.scores == (0, 10)
    assert match.totals == [55, 10] and match.places() == [1, 2]


def _result(scores, out=()):
    return RoundResult(
        0, 6, 0, "out" if out else "blocked", tuple(out), tuple(scores), tuple(scores)
    )


def test_R28_tie_breaks():
    """R28: equal totals -> most rounds scored at 0 -> lowest single non-zero round score
    (each seat's smallest) -> shared place."""
    config = cfg(3)
    # totals 12, 12, 20; zeros: seat 0 one, seat 1 none -> seat 0 first
    results = [_result((0, 6, 10)), _result((12, 6, 10))]
    assert places(config, results) == [1, 2, 3]
    # totals 12, 12, 12; zeros 1, 1, 1; smallest non-zero: 4, 6, 3 -> seat 2, seat 0, seat 1
    results = [_result((0, 0, 0)), _result((4, 6, 9)), _result((8, 6, 3))]
    assert places(config, results) == [2, 3, 1]
    # seats 0 and 1 tie on everything: places 1, 1, 3
    results = [_result((0, 10, 5)), _result((10, 0, 5))]
    assert places(config, results) == [1, 1, 3]
    # all tied
    assert places(config, [_result((7, 7, 7))]) == [1, 1, 1]
    # lowest total beats more zeros
    assert places(cfg(2), [_result((0, 1)), _result((0, 1)), _result((5, 1))]) == [2, 1]


def test_R28_shared_places_behind_the_winner():
    """R28: seat 0 and seat 2 tie on total, zeros and lowest score."""
    config = cfg(3)
    results = [_result((5, 0, 0), out=(1,)), _result((0, 3, 5), out=(0,))]
    # totals 5, 3, 5 -> seat 1 first; seats 0 and 2: one zero each, lowest non-zero 5 and 5
    assert places(config, results) == [2, 1, 2]


def test_V_positive_score_tie_breaks():
    """V-positive-score: highest total, then most rounds gone out in, then shared."""
    config = cfg(3, scoring="positive")
    # totals 20, 20, 0; one round out each -> shared first place
    results = [_result((20, 0, 0), out=(0,)), _result((0, 20, 0), out=(1,))]
    assert places(config, results) == [1, 1, 3]
    # totals 20, 20, 0; seat 1 went out twice -> seat 1 first
    results = [
        _result((20, 0, 0), out=(0,)),
        _result((0, 10, 0), out=(1,)),
        _result((0, 10, 0), out=(1,)),
    ]
    assert places(config, results) == [2, 1, 3]
    results = [_result((9, 0, 9), out=(0, 2)), _result((0, 0, 0))]
    assert places(config, results) == [1, 3, 1]


# ======================================================================== C2, C3, illegal moves
def test_C2_forced_moves_are_moves():
    """C2: a forced pass or draw is still a move the seat must make; nothing happens alone."""
    state = RoundState(cfg(first_turn="single"), make_deal(6, [[(0, 0)], [(6, 1), (1, 1)]]))
    assert state.legal_moves() == [state.codec.draw]
    assert state.seat == 0 and state.turns_completed == 0
    do(state, "draw")
    assert state.seat == 0 and state.legal_moves() == [state.codec.pass_]
    do(state, "pass")
    assert state.seat == 1 and state.turns_completed == 1 and state.turns_without_play == 1


def test_C3_no_moves_after_the_round():
    """C3: once the round is over there are no legal moves; any move raises
    IllegalMoveError and leaves the state unchanged."""
    state = RoundState(cfg(), make_deal(6, [[(6, 4), (4, 4)], [(6, 1), (0, 0), (2, 5)]]))
    do(state, ((6, 4), 0), "pass", ((6, 1), 1), "pass", ((4, 4), 0))
    assert state.is_over and state.legal_moves() == []
    before = snapshot(state)
    for move in [*range(state.codec.num_actions), -1, state.codec.num_actions, 10**9]:
        with pytest.raises(IllegalMoveError):
            state.apply(move)
    with pytest.raises(IllegalMoveError, match="over"):
        state.apply(state.codec.pass_)
    assert snapshot(state) == before
    assert state.scores() == [0, 57]


def test_illegal_moves_raise_and_leave_state_unchanged():
    """Section 4: anything not in legal_moves() raises IllegalMoveError, state unchanged."""
    state = RoundState(cfg(), make_deal(6, [[(6, 1), (1, 5), (6, 3)], [(6, 2), (6, 4), (3, 4)]]))
    c = state.codec
    for move in [
        mv(state, (6, 1), M2),  # R12
        mv(state, (6, 1), 1),  # R12
        mv(state, (1, 5), 0),  # does not join (R8)
        mv(state, (6, 2), 0),  # not in the hand
        c.draw,  # R13: no draw in the free first turn
        -1,
        c.num_actions,
        True,
        1.0,
        None,
        "0",
    ]:
        assert_illegal(state, move)
    do(state, ((6, 1), 0), "pass", ((6, 2), 1), "pass")
    for move in [
        c.draw,
        c.pass_,
        mv(state, (1, 5), 1),
        mv(state, (6, 3), 0),
        mv(state, (3, 4), M2),
    ]:
        assert_illegal(state, move)
    with pytest.raises(IllegalMoveError, match="seat 0"):
        state.apply(c.pass_)


def test_illegal_after_draw():
    """Section 4: after a draw only the drawn tile's plays (or pass); no second draw."""
    deal = make_deal(6, [[(6, 1), (0, 0), (2, 3)], [(6, 2), (4, 4)]], boneyard=[(1, 3)])
    state = RoundState(cfg(), deal)
    do(state, ((6, 1), 0), "pass", ((6, 2), 1), "pass")
    assert state.legal_moves() == [state.codec.draw]
    do(state, "draw")
    assert legal(state) == plays(state, ((1, 3), 0))
    for move in [state.codec.draw, state.codec.pass_, mv(state, (2, 3), 0)]:
        assert_illegal(state, move)


def test_numpy_integer_moves_accepted():
    np = pytest.importorskip("numpy")
    state = RoundState(cfg(), make_deal(6, [[(6, 1), (1, 5)], [(6, 2)]]))
    state.apply(np.int64(mv(state, (6, 1), 0)))
    assert state.train(0) == [(6, 1)]


# ======================================================================== DealError
def _deal_error(config, deal, *words):
    with pytest.raises(DealError) as err:
        RoundState(config, deal)
    for w in words:
        assert w in str(err.value), (w, str(err.value))


def test_deal_error_duplicate_tile():
    _deal_error(
        cfg(), make_deal(6, [[(1, 2)], [(2, 1)]], rest="asc"), "1|2", "twice", "seat 0", "seat 1"
    )
    base = make_deal(6, [[(1, 2), (3, 4)], [(0, 0)]])
    dup = Deal(base.hands, base.boneyard + ((4, 3),), 6, 0)
    _deal_error(cfg(), dup, "3|4", "twice", "boneyard")
    _deal_error(cfg(), make_deal(6, [[(1, 2), (6, 6)], [(0, 0)]]), "6|6", "twice", "engine")
    same_hand = Deal((((1, 2), (1, 2)), ((0, 0),)), (), 6, 0)
    _deal_error(cfg(), same_hand, "1|2", "twice")


def test_deal_error_missing_tile():
    base = make_deal(6, [[(1, 2)], [(0, 0)]])
    short = Deal(base.hands, tuple(t for t in base.boneyard if t != (3, 5)), 6, 0)
    _deal_error(cfg(), short, "3|5", "misses")


def test_deal_error_wrong_hand_count():
    _deal_error(cfg(), make_deal(6, [[(1, 2)], [(0, 0)], [(3, 3)]]), "3 hands", "2")
    _deal_error(cfg(3), make_deal(6, [[(1, 2)], [(0, 0)]]), "2 hands", "3")


def test_deal_error_tile_out_of_set():
    base = make_deal(6, [[(1, 2)], [(0, 0)]])
    _deal_error(
        cfg(), Deal([[(1, 2), (7, 1)], [(0, 0)]], base.boneyard, 6, 0), "(7, 1)", "double-6"
    )
    _deal_error(cfg(), Deal([[(1, 2), (-1, 1)], [(0, 0)]], base.boneyard, 6, 0), "double-6")


def test_deal_error_engine_and_start_seat():
    base = make_deal(6, [[(1, 2)], [(0, 0)]])
    for engine in (7, -1, "6", None):
        _deal_error(cfg(), Deal(base.hands, base.boneyard, engine, 0), "engine")
    for seat in (2, -1, "0", None):
        _deal_error(cfg(), Deal(base.hands, base.boneyard, 6, seat), "start_seat")


def test_deal_error_empty_hand_and_mapping():
    _deal_error(cfg(), make_deal(6, [[(1, 2)], []]), "seat 1", "empty")
    base = make_deal(6, [[(1, 2)], [(0, 0)]])
    state = RoundState(
        cfg(), {"hands": base.hands, "boneyard": base.boneyard, "engine": 6, "start_seat": 1}
    )
    assert state.seat == 1
    with pytest.raises(DealError, match="keys"):
        RoundState(cfg(), {"hands": base.hands, "engine": 6, "start_seat": 1})


def test_deal_error_match_engine_and_count():
    """R5: an explicit deal for round k must use round k's engine."""
    deals = _match_deals()
    with pytest.raises(DealError, match="engine"):
        Match(cfg(first_engine=5, num_rounds=2), deals=deals)
    with pytest.raises(DealError, match="3 deals"):
        Match(cfg(first_engine=6, num_rounds=2), deals=deals + deals[:1])


def test_V_deal_hand_sizes_in_a_deal():
    """V-deal: double-12 with 2 players -> 16 each; double-9 with 4 -> 10 each."""
    for players, max_pip, hand in [(2, 12, 16), (3, 12, 16), (4, 9, 10)]:
        config = RulesConfig(num_seats=players, max_pip=max_pip, engine_source="aside")
        assert config.hand_size == hand
        deal = random_deal(config, random.Random(1), max_pip)
        assert [len(h) for h in deal.hands] == [hand] * players
        RoundState(config, deal)
