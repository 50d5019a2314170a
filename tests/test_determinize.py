"""One model of the game: a seat's public position, determinization, the observation
decoder, and dealing from an explicit tile order.

- ``RoundState.public(seat)`` + ``determinize`` with the true hidden tiles rebuilds a
  state that plays the rest of the round exactly like the real one (every variant).
- ``ObservationEncoder.position`` (what the search agent sees) + ``determinize`` gives a
  state whose legal moves are exactly the observer's action mask, at every decision.
- ``deal_from_order`` (R4–R6, V-engine-aside) deals a pinned order as the rules say, and
  ``random_deal`` is a shuffle followed by it.
"""

from __future__ import annotations

import random

import numpy as np
import pytest

from mt_env import (
    Deal,
    DealError,
    Match,
    RoundState,
    RulesConfig,
    deal_from_order,
    determinize,
    random_deal,
)
from mt_env.config import VARIANTS as CONFIG_VARIANTS
from mt_env.observation import ObservationEncoder
from mt_env.rules import HIDDEN_DRAW
from mt_env.tiles import tile_set

VARIANTS = [{}, *CONFIG_VARIANTS.values()]  # the default rules, then every alternative
MAX_MOVES = 5_000  # every loop below is bounded: a round of 14 seats ends well before


def rotated(seq, seat: int):
    """``seq`` (one entry per seat) seen from ``seat``: entry ``r`` is seat ``seat + r``."""
    n = len(seq)
    return [seq[(seat + r) % n] for r in range(n)]


def truth(st: RoundState, observer: int = 0) -> tuple[list[int], list[int]]:
    """The hidden tiles of ``st`` as determinize takes them: hands seen from ``observer``
    (``observer`` = 0 keeps absolute seats) and the boneyard in draw order."""
    hands = [st.hand_mask(k) for k in range(st.num_seats)]
    return rotated(hands, observer), list(st.boneyard_ids)


def drawn_id(st: RoundState) -> int | None:
    return st.tiles.id_of(st.drawn_tile) if st.drawn_since_play else None


@pytest.mark.parametrize("variant", VARIANTS)
def test_public_position_with_the_true_hidden_tiles_replays_the_round(variant):
    """determinize(public(seat), true tiles) is the same round: same legal moves at every
    later step under the same moves, same end, same scores — for acting and waiting
    observers, including one that did not see the tile the seat to act drew."""
    checked = hidden_draws = 0
    for num_seats in (2, 3, 4, 7):
        config = RulesConfig(num_seats=num_seats, num_rounds=1, **variant)
        for seed in range(4):
            rng = random.Random(seed)
            st = RoundState(config, random_deal(config, rng, config.max_pip))
            world = None
            for _ in range(MAX_MOVES):
                if st.is_over:
                    break
                if world is None and (rng.random() < 0.1 or st.drawn_since_play):
                    observer = rng.randrange(num_seats)
                    position = st.public(observer)
                    assert position.hand == st.hand_mask(observer)
                    hidden_draws += position.drawn == HIDDEN_DRAW
                    hands, bone = truth(st)
                    world = determinize(position, hands, bone, drawn=drawn_id(st))
                if world is not None:
                    assert world.legal_moves() == st.legal_moves()
                    assert world.seat == st.seat
                    checked += 1
                move = rng.choice(st.legal_moves())
                st.apply(move)
                if world is not None:
                    world.apply(move)
                    assert world.is_over == st.is_over
            assert st.is_over
            if world is not None:
                assert world.scores() == st.scores()
                assert world.end_reason == st.end_reason
                assert world.out_seats == st.out_seats
                assert [world.train(t) for t in range(num_seats + 1)] == [
                    st.train(t) for t in range(num_seats + 1)
                ]
    assert checked > 300 and hidden_draws > 0


@pytest.mark.parametrize("variant", VARIANTS)
def test_position_from_an_observation_gives_exactly_the_masked_moves(variant):
    """At every decision, the observer's decoded observation determinized with the true
    hidden tiles (in the observer's frame) has the action mask as its legal moves, and
    plays the rest of the observer's turn identically."""
    checked = seen_drawn = 0
    for num_seats, seed in [(2, 0), (2, 1), (4, 0), (7, 0)]:
        config = RulesConfig(num_seats=num_seats, num_rounds=2, **variant)
        enc = ObservationEncoder(config)
        rng = random.Random(seed)
        match = Match(config, seed=seed)
        for _ in range(MAX_MOVES):
            if match.is_over:
                break
            st, seat = match.state, match.state.seat
            obs, mask = enc.encode(match, seat), enc.action_mask(match, seat)
            position = enc.position(enc.decode(obs, mask))
            hands, bone = truth(st, observer=seat)
            world = determinize(position, [None, *hands[1:]], bone, drawn=drawn_id(st))
            assert sorted(world.legal_moves()) == np.flatnonzero(mask).tolist()
            assert world.seat == 0 and position.seat == 0
            # the turn so far, as far as an observation tells it
            assert (position.turn_plays > 0) == (st.tiles_played_this_turn > 0)
            if st.drawn_since_play and position.drawn != HIDDEN_DRAW:
                assert position.drawn == drawn_id(st)
                seen_drawn += 1
            move = rng.choice(st.legal_moves())
            match.apply(move)
            checked += 1
            if st is match.state and not st.is_over and st.seat == seat:
                world.apply(st.codec.to_action(move, seat))  # the same turn goes on
                assert sorted(st.codec.to_move(a, seat) for a in world.legal_moves()) == sorted(
                    st.legal_moves()
                )
        assert match.is_over
    assert checked > 450 and seen_drawn > 0


@pytest.mark.parametrize("variant", [{}, {"doubles_order": "newest"}])
def test_decode_reads_back_every_piece_the_encoder_wrote(variant):
    """Every piece, for the seat to act and the waiting seats, in the observer's frame;
    small hands on a double-6 set make open, dead and restricting doubles common."""
    config = RulesConfig(num_seats=3, max_pip=6, hand_size=5, num_rounds=3, **variant)
    enc = ObservationEncoder(config)
    rng = random.Random(0)
    n, seen_follow, seen_marked, seen_open, seen_dead = config.num_seats, 0, 0, 0, 0
    seen_voids = 0
    for game in range(6):
        match = Match(config, seed=11 + game)
        for _ in range(MAX_MOVES):
            if match.is_over:
                break
            st = match.state
            for observer in range(n):  # the seat to act and the waiting seats
                v = enc.decode(enc.encode(match, observer), enc.action_mask(match, observer))
                absolute = rotated(list(range(n)), observer) + [n]
                assert v.hand == st.hand_mask(observer)
                assert v.table == st.table_mask
                assert v.ends == [st.open_end(t) for t in absolute]
                assert v.lengths == [st.train_length(t) for t in absolute]
                assert v.marked == [st.is_marked(t) for t in absolute[:n]]
                assert v.hand_sizes == [st.hand_size(t) for t in absolute[:n]]
                assert v.first_pending == [st.first_turn_pending(t) for t in absolute[:n]]
                assert v.boneyard == st.boneyard_size and v.engine == st.engine
                assert v.round_index == match.round_index
                assert v.totals == rotated(match.totals, observer)
                assert v.voids == rotated(list(st.voids), observer)
                seen_voids += any(v.voids)
                assert v.to_act == (observer == st.seat)
                assert v.mexican_started == st.mexican_started
                od = st.open_doubles  # in the order they became open (R19)
                order = od if config.doubles_order == "oldest" else od[::-1]  # next to satisfy first
                assert [absolute[r] for r in v.open_order] == order
                assert v.open_double == [t in od for t in absolute]
                assert v.dead_double == [t in od and st.is_dead_double(t) for t in absolute]
                seen_open += bool(od)
                seen_dead += any(v.dead_double)
                if observer == st.seat:
                    assert v.free_first == st.in_free_first_turn
                    assert v.drawn == st.drawn_since_play
                    follow = st.follow_up_train
                    assert v.follow_up_train == (-1 if follow is None else absolute.index(follow))
                    r = st.restricting_train
                    assert v.restricting == (-1 if r is None else absolute.index(r))
                    seen_follow += follow is not None
                    legal = {st.codec.to_action(m, observer) for m in st.legal_moves()}
                    got = {a for a, _, _ in v.plays}
                    got |= {enc.codec.draw} if v.can_draw else set()
                    got |= {enc.codec.pass_} if v.can_pass else set()
                    assert got == legal
                    for a, tile, train in v.plays:
                        assert enc.codec.play(tile, train) == a
                else:
                    assert not (v.free_first or v.drawn or v.follow_up) and not v.plays
                    with pytest.raises(ValueError, match="not the seat to act"):
                        enc.position(v)
                seen_marked += any(v.marked)
            match.apply(rng.choice(match.state.legal_moves()))
    assert seen_follow > 0 and seen_marked > 0 and seen_open > 0 and seen_dead > 0
    assert seen_voids > 0


def test_determinize_refuses_a_guess_that_does_not_fit():
    config = RulesConfig(num_seats=3, num_rounds=1)
    st = RoundState(config, random_deal(config, random.Random(3), config.max_pip))
    position = st.public(0)
    hands, bone = truth(st)
    ts = tile_set(config.max_pip)
    with pytest.raises(ValueError, match="one per seat"):
        determinize(position, hands[:2], bone)
    with pytest.raises(ValueError, match="own hand"):
        determinize(position, [hands[1], hands[1], hands[2]], bone)
    moved = hands[:]  # a boneyard tile moved into seat 1's hand: wrong public size
    moved[1] |= ts.bit[bone[0]]
    with pytest.raises(ValueError, match="public size"):
        determinize(position, moved, bone[1:])
    swapped = hands[:]  # seat 2 gets one of seat 1's tiles instead of its own: a repeat
    t1, t2 = ts.ids_in(hands[1])[0], ts.ids_in(hands[2])[0]
    swapped[2] = hands[2] ^ ts.bit[t2] | ts.bit[t1]
    with pytest.raises(ValueError, match="repeats a tile"):
        determinize(position, swapped, bone)
    with pytest.raises(ValueError, match="distinct boneyard"):
        determinize(position, hands, bone[:-1])
    swapped = hands[:]  # a seat-1 tile replaced by one of the observer's: unseen tile left out
    t0 = ts.ids_in(hands[0])[0]
    swapped[1] = hands[1] ^ ts.bit[t1] | ts.bit[t0]
    with pytest.raises(ValueError, match="every unseen tile"):
        determinize(position, swapped, bone)
    with pytest.raises(ValueError, match="expected a seat"):
        st.public(3)


def test_a_hidden_draw_must_be_named():
    config = RulesConfig(num_seats=2, num_rounds=1, first_turn="single")
    rng = random.Random(0)
    for seed in range(50):
        st = RoundState(config, random_deal(config, random.Random(seed), config.max_pip))
        for _ in range(MAX_MOVES):
            if st.is_over or st.drawn_since_play:
                break
            st.apply(rng.choice(st.legal_moves()))
        if st.drawn_since_play:
            break
    assert st.drawn_since_play
    waiting = 1 - st.seat
    position = st.public(waiting)
    assert position.drawn == HIDDEN_DRAW and st.public(st.seat).drawn == drawn_id(st)
    hands, bone = truth(st)
    with pytest.raises(ValueError, match="drew a tile the observer did not see"):
        determinize(position, hands, bone)
    world = determinize(position, hands, bone, drawn=drawn_id(st))
    assert world.legal_moves() == st.legal_moves()


# ---------------------------------------------------------------------- dealing
def test_deal_from_order_deals_hands_in_seat_order_and_keeps_the_rest_in_order():
    """R4: seat 0 gets the first hand_size tiles, seat 1 the next, ...; R6: the holder of
    the engine double places it and starts; the boneyard keeps the order."""
    config = RulesConfig(num_seats=2, max_pip=6, hand_size=3)
    order = [(0, 1), (6, 6), (2, 3), (4, 4), (1, 5), (0, 0)] + [
        t for t in tile_set(6).tiles if t not in {(0, 1), (6, 6), (2, 3), (4, 4), (1, 5), (0, 0)}
    ]
    deal = deal_from_order(config, order, engine=6)
    assert deal.hands == (((0, 1), (2, 3)), ((4, 4), (1, 5), (0, 0)))
    assert deal.start_seat == 0 and deal.engine == 6
    assert list(deal.boneyard) == order[6:]


def test_deal_from_order_draws_for_the_engine_from_the_first_drawer():
    """R6: nobody holds the engine: seats draw in turn from ``first_drawer``, keeping what
    they draw; whoever draws the engine places it and starts."""
    config = RulesConfig(num_seats=3, max_pip=6, hand_size=2)
    rest = [t for t in tile_set(6).tiles if t != (5, 5)]
    order = rest[:6] + rest[6:9] + [(5, 5)] + rest[9:]  # B[0..2], then the engine at B[3]
    deal = deal_from_order(config, order, engine=5, first_drawer=2)
    # drawers 2, 0, 1, 2: seat 2 draws B[0] and B[3] (the engine), 0 B[1], 1 B[2]
    assert deal.start_seat == 2
    assert deal.hands == (
        (rest[0], rest[1], rest[7]),
        (rest[2], rest[3], rest[8]),
        (rest[4], rest[5], rest[6]),
    )
    assert list(deal.boneyard) == rest[9:]


def test_deal_from_order_engine_aside():
    """V-engine-aside: the engine is not in the order; ``first_drawer`` starts."""
    config = RulesConfig(num_seats=3, max_pip=6, hand_size=4, engine_source="aside")
    order = [t for t in tile_set(6).tiles if t != (6, 6)]
    deal = deal_from_order(config, order, engine=6, first_drawer=1)
    assert deal.start_seat == 1
    assert [list(h) for h in deal.hands] == [order[0:4], order[4:8], order[8:12]]
    with pytest.raises(DealError, match="V-engine-aside"):
        deal_from_order(config, tile_set(6).tiles, engine=6)


def test_random_deal_is_a_shuffle_then_deal_from_order():
    for variant in ({}, {"engine_source": "aside"}):
        config = RulesConfig(num_seats=4, **variant)
        for seed in range(5):
            order = list(tile_set(config.max_pip).tiles)
            if variant:
                order.remove((12, 12))
            random.Random(seed).shuffle(order)
            expected = deal_from_order(config, order, 12, first_drawer=seed % 4)
            assert random_deal(config, random.Random(seed), 12, seed % 4) == expected


@pytest.mark.parametrize(
    ("order", "kwargs", "match"),
    [
        (lambda ts: ts.tiles[:-1], {}, "exactly once"),
        (lambda ts: ts.tiles[:-1] + ts.tiles[:1], {}, "exactly once"),
        (lambda ts: [(1, 2, 3)] + list(ts.tiles[1:]), {}, "malformed tile order"),
        (lambda ts: [(7, 7)] + list(ts.tiles[1:]), {}, "malformed tile order"),
        (lambda ts: ts.tiles, {"engine": 9}, "engine=9"),
        (lambda ts: ts.tiles, {"first_drawer": 2}, "first_drawer=2"),
    ],
)
def test_deal_from_order_refuses_a_malformed_order(order, kwargs, match):
    config = RulesConfig(num_seats=2, max_pip=6, hand_size=7)
    args = {"engine": 6, "first_drawer": 0} | kwargs
    with pytest.raises(DealError, match=match):
        deal_from_order(config, list(order(tile_set(6))), **args)


def test_a_deal_from_order_plays():
    config = RulesConfig(num_seats=2, max_pip=6, hand_size=7)
    deal = deal_from_order(config, list(reversed(tile_set(6).tiles)), engine=6)
    assert isinstance(deal, Deal)
    st = RoundState(config, deal)
    assert st.seat == deal.start_seat and st.hand_size(0) + st.hand_size(1) == 13


def test_a_view_built_from_the_match_equals_the_decoded_observation():
    """ObservationEncoder.view (what rollouts and tournaments give scripted agents) is
    decode(encode(...)) field for field, for every seat, to act or not, over whole matches."""
    from mt_env.observation import SeatView

    for seats, rules in [(2, {}), (3, {"doubles_order": "newest"}), (4, {}), (14, {})]:
        config = RulesConfig(num_seats=seats, num_rounds=2, **rules)
        enc, rng = ObservationEncoder(config), random.Random(seats)
        match = Match(config, seed=seats)
        while True:
            for seat in range(seats):
                mask = enc.action_mask(match, seat)
                view, decoded = enc.view(match, seat, mask), enc.decode(enc.encode(match, seat), mask)
                for name in SeatView.__slots__:
                    assert getattr(view, name) == getattr(decoded, name), (seats, seat, name)
            if match.is_over:
                break
            moves = match.state.legal_moves()
            match.apply(moves[rng.randrange(len(moves))])


@pytest.mark.parametrize("num_seats", [2, 4])
def test_an_imagined_world_shows_every_seat_its_real_observation(num_seats):
    """What ``search-ppo``'s policy rollouts read: the acting seat's decoded observation,
    determinized with the true hidden tiles (the observer is seat 0 there), encoded for
    world seat ``k`` by ``encode_round`` with the round and the totals rotated to the
    observer's frame, is exactly the real observation of seat ``seat + k`` — in later
    rounds too, where the totals are nonzero."""
    config = RulesConfig(num_seats=num_seats, num_rounds=3)
    enc = ObservationEncoder(config)
    rng = random.Random(num_seats)
    match = Match(config, seed=num_seats)
    checked = later_rounds = 0
    for _ in range(MAX_MOVES):
        if match.is_over:
            break
        st, seat = match.state, match.state.seat
        obs, mask = enc.encode(match, seat), enc.action_mask(match, seat)
        position = enc.position(enc.decode(obs, mask))
        hands, bone = truth(st, observer=seat)
        world = determinize(position, [None, *hands[1:]], bone, drawn=drawn_id(st))
        totals = rotated(match.totals, seat) if match.results else None
        for k in range(num_seats):
            real = enc.encode(match, (seat + k) % num_seats)
            assert np.array_equal(enc.encode_round(world, k, match.round_index, totals), real)
        assert np.array_equal(enc.round_action_mask(world, 0), mask)
        checked += 1
        later_rounds += match.round_index > 0 and any(match.totals)
        match.apply(rng.choice(st.legal_moves()))
    assert match.is_over and checked > 150 and later_rounds > 50, (checked, later_rounds)
