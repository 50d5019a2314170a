"""``ObservationTracker`` (the AEC env's observations, kept up to date move by move) gives
exactly ``ObservationEncoder.encode``'s vectors: bit for bit, for every seat, whether it
is asked after every move or after many, across rounds, the match's end, new matches
and matches that take turns.

The tracker rewrites only what changed since its last call, so these tests vary what
changes in between: every seat after every move, one random seat after a random number
of moves, and two matches alternately (a rebuild on every call).
"""

from __future__ import annotations

import random

import numpy as np
import pytest

from mt_env import Match, RulesConfig, env
from mt_env.config import VARIANTS
from mt_env.observation import ObservationEncoder, ObservationTracker

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

CASES = [
    *((seats, {}) for seats in (2, 4, 14)),
    *((4, variant) for variant in VARIANTS.values()),
    (3, {"doubles_order": "newest", "dead_doubles": False}),
]


def same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    """Equal as float32 bit patterns (so -0.0 != 0.0 and every rounding counts)."""
    return (
        a.dtype == b.dtype == np.float32
        and a.shape == b.shape
        and np.array_equal(a.view(np.uint32), b.view(np.uint32))
    )


def random_move(match: Match, rng: random.Random) -> None:
    moves = match.state.legal_moves()
    match.apply(moves[rng.randrange(len(moves))])


@pytest.mark.parametrize(("seats", "variant"), CASES)
def test_tracker_equals_encode_for_every_seat_after_every_move(seats, variant):
    config = RulesConfig(num_seats=seats, num_rounds=3, **variant)
    enc = ObservationEncoder(config)
    tracker = ObservationTracker(enc)
    rng = random.Random(seats)
    for game in range(2):
        match = Match(config, seed=rng.getrandbits(64))
        while True:
            order = list(range(seats))
            rng.shuffle(order)  # the diffs are made by whichever seat asks first
            for seat in order:
                obs = tracker.encode(match, seat)
                assert same_bits(obs, enc.encode(match, seat)), (game, seat)
                obs[:] = 7.0  # a caller's array is its own: the next call is unchanged
            if match.is_over:
                break
            random_move(match, rng)


@pytest.mark.parametrize("seats", [2, 4, 14])
def test_tracker_equals_encode_when_asked_now_and_then(seats):
    """Many moves between calls (several trains, hands, markers and first turns change,
    rounds end) and a random seat each time, over many games."""
    config = RulesConfig(num_seats=seats, num_rounds=2)
    enc = ObservationEncoder(config)
    tracker = ObservationTracker(enc)
    rng = random.Random(100 + seats)
    for _ in range(60 if seats < 14 else 30):
        match = Match(config, seed=rng.getrandbits(64))
        while not match.is_over:
            for _ in range(rng.choice([1, 1, 2, 3, seats, 2 * seats])):
                if match.is_over:
                    break
                random_move(match, rng)
            seat = rng.randrange(seats)
            assert same_bits(tracker.encode(match, seat), enc.encode(match, seat))
            assert same_bits(
                tracker.encode(match, match.state.seat), enc.encode(match, match.state.seat)
            )


def test_tracker_equals_encode_on_two_matches_in_turn():
    config = RulesConfig(num_seats=4, num_rounds=2)
    enc = ObservationEncoder(config)
    tracker = ObservationTracker(enc)
    rng = random.Random(7)
    matches = [Match(config, seed=1), Match(config, seed=2)]
    while not all(m.is_over for m in matches):
        for match in matches:
            if not match.is_over:
                random_move(match, rng)
            for seat in range(4):
                assert same_bits(tracker.encode(match, seat), enc.encode(match, seat))


@pytest.mark.parametrize("seats", [2, 4, 14])
def test_aec_observations_equal_a_fresh_encode(seats):
    """What the env hands out (through its tracker) for the agent to act and for every
    other agent, over whole episodes and resets."""
    e = env(num_seats=seats, num_rounds=2)
    raw = e.unwrapped
    rng = random.Random(seats)
    e.reset(seed=seats)
    for _ in range(3):
        for agent in e.agent_iter():
            obs, _, term, trunc, _ = e.last()
            seat = raw.possible_agents.index(agent)
            assert same_bits(obs["observation"], raw.encoder.encode(raw.match, seat))
            other = raw.possible_agents[rng.randrange(seats)]
            assert same_bits(
                raw.observe(other)["observation"],
                raw.encoder.encode(raw.match, raw.possible_agents.index(other)),
            )
            if term or trunc:
                e.step(None)
            else:
                legal = np.flatnonzero(obs["action_mask"])
                e.step(int(legal[rng.randrange(len(legal))]))
        e.reset()
