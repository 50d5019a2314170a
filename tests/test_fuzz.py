"""Property-based fuzzing of the rules core: random games over every seat count and
variant, interleaved with illegal and ill-typed moves.

After every rejected move the state is exactly as before (its public position and its
hidden tiles); tiles are conserved at every step (hands + boneyard + table = the set,
each tile once); a ``copy()`` taken at a random moment is independent of the original.
Hypothesis is derandomized here, so a run is reproducible.
"""

from __future__ import annotations

import random

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mt_env import IllegalMoveError, RoundState, RulesConfig, random_deal
from mt_env.config import VARIANTS

MAX_MOVES = 5_000
VARIANT_NAMES = ["default", *VARIANTS]


def snapshot(state: RoundState) -> tuple:
    """Everything a move could change: each seat's position and the hidden tiles."""
    n = state.num_seats
    return (
        tuple(state.public(k) for k in range(n)),
        tuple(state.hand_mask(k) for k in range(n)),
        state.boneyard_ids,
        tuple(state.legal_moves()),
    )


def conserved(state: RoundState) -> bool:
    ts = state.tiles
    masks = [state.hand_mask(k) for k in range(state.num_seats)]
    masks.append(ts.mask_of(state.boneyard_ids))
    masks.append(state.table_mask)
    union = 0
    for m in masks:
        if union & m:
            return False
        union |= m
    total = sum(m.bit_count() for m in masks)
    return union == ts.full_mask and total == ts.num_tiles


def bad_moves(state: RoundState, rng: random.Random) -> list:
    """Illegal integers (out of range, or in range but not legal) and ill-typed values."""
    legal = set(state.legal_moves())
    top = state.codec.num_actions
    illegal = [m for m in rng.sample(range(top), min(top, 12)) if m not in legal][:3]
    return [*illegal, -1, top, 2**70, 1.0, "0", None, True, np.float32(0), [0],
            np.int64(next(iter(illegal), top))]


@settings(max_examples=80, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(2, 14),
       variant=st.sampled_from(VARIANT_NAMES))
def test_random_games_with_bad_moves_never_corrupt_the_state(seed, n, variant):
    config = RulesConfig(num_seats=n, num_rounds=1, **VARIANTS.get(variant, {}))
    rng = random.Random(seed)
    state = RoundState(config, random_deal(config, rng, config.max_pip))
    twin = twin_moves = None
    for _ in range(MAX_MOVES):
        if state.is_over:
            break
        assert conserved(state)
        if rng.random() < 0.3:
            before = snapshot(state)
            bad_list = bad_moves(state, rng)
            state.legal_moves().extend(bad_list)  # a caller scribbling on the list it got
            for bad in bad_list:
                try:
                    state.apply(bad)
                except IllegalMoveError:
                    pass
                else:
                    raise AssertionError(f"{bad!r} was accepted; legal: {state.legal_moves()}")
                assert snapshot(state) == before
        if twin is None and rng.random() < 0.05:
            twin, twin_moves, frozen = state.copy(), [], snapshot(state)
        move = rng.choice(state.legal_moves())
        state.apply(move)
        if twin is not None:
            twin_moves.append(move)
            if len(twin_moves) == 5:  # the copy did not move with the original
                assert snapshot(twin) == frozen
                for m in twin_moves:  # and replays the same way on its own
                    twin.apply(m)
                assert snapshot(twin) == snapshot(state)
                twin = None
    assert state.is_over and conserved(state)
    assert state.legal_moves() == []
