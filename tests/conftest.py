"""Shared helpers for the rules tests: explicit deals, move builders, state snapshots.

Tiles are written as ``(a, b)`` pairs; trains as seat indices, the Mexican train as
``state.mexican_train`` (= number of seats, R8).
"""

from __future__ import annotations

import time

import pytest

from mt_env import Deal
from mt_env.tiles import tile_set

# Each library's integration tests run in that library's own venv (scripts/integrations.sh),
# with their paths named explicitly; a plain `pytest` leaves them out.
collect_ignore = ["integrations"]


def make_deal(max_pip, hands, engine=None, start_seat=0, boneyard=(), rest="asc"):
    """A :class:`Deal` from short ``hands``.

    The boneyard is ``boneyard`` (drawn first, in that order) followed by every tile of
    the double-``max_pip`` set that is in no hand, not in ``boneyard`` and not the engine,
    in id order (``rest="asc"``), reverse id order (``"desc"``) or left out (``None``,
    to build deliberately incomplete deals). ``engine`` defaults to ``max_pip``.
    """
    ts = tile_set(max_pip)
    engine = max_pip if engine is None else engine
    used = set()
    for t in [*(t for h in hands for t in h), *boneyard]:
        try:
            used.add(ts.id_of(t))
        except ValueError:  # a tile outside the set, for DealError tests
            pass
    if 0 <= engine <= max_pip:
        used.add(ts.double_of[engine])
    remaining = [ts.tiles[i] for i in range(ts.num_tiles) if i not in used]
    if rest == "desc":
        remaining.reverse()
    elif rest is None:
        remaining = []
    return Deal(
        hands=tuple(tuple(h) for h in hands),
        boneyard=tuple(boneyard) + tuple(remaining),
        engine=engine,
        start_seat=start_seat,
    )


def mv(state, tile, train):
    """The move ``play(tile, train)`` of ``state``'s codec (tile as an ``(a, b)`` pair)."""
    return state.codec.play(tile_set(state.config.max_pip).id_of(tile), train)


def plays(state, *pairs):
    """The set of moves ``play(tile, train)`` for ``(tile, train)`` pairs."""
    return {mv(state, t, tr) for t, tr in pairs}


def legal(state):
    return set(state.legal_moves())


def do(state, *moves):
    """Apply moves written as ``"draw"``, ``"pass"`` or ``(tile, train)``."""
    for m in moves:
        if m == "draw":
            state.apply(state.codec.draw)
        elif m == "pass":
            state.apply(state.codec.pass_)
        else:
            state.apply(mv(state, *m))


def snapshot(state):
    """Everything observable about a round state, for "unchanged" comparisons."""
    n = state.num_seats
    return (
        tuple(tuple(state.hand(k)) for k in range(n)),
        tuple(state.boneyard),
        tuple(tuple(state.train(t)) for t in range(n + 1)),
        tuple(state.open_end(t) for t in range(n + 1)),
        tuple(state.is_marked(k) for k in range(n)),
        tuple(state.open_doubles),
        tuple(state.first_turn_pending(k) for k in range(n)),
        state.seat,
        state.end_reason,
        state.out_seats,
        state.follow_up_train,
        state.drawn_tile,
        state.tiles_played_this_turn,
        state.turns_without_play,
        state.turns_completed,
        tuple(state.legal_moves()),
    )


# ---------------------------------------------------------------- trainer tests
TRAIN_SMOKE_ARGS = (
    "--config", "quick", "--total-steps", "600", "--rollout-steps", "300",
    "--games-per-worker", "4", "--num-workers", "0", "--no-progress",
    "--eval-every", "0", "--final-eval-games", "0", "--checkpoint-every", "1",
    "--snapshot-every", "1", "--pretrain-teacher", "",  # the quick preset clones a teacher first
    # No wall clock in the smoke run: the quick preset's 6-minute limit would also shape the
    # learning-rate schedule (annealed over the time limit when that ends the run sooner).
    "--time-limit-minutes", "0",
)


@pytest.fixture(scope="session")
def smoke_args() -> list[str]:
    """``train.py`` flags for a two-update run of a few hundred learner steps in this process
    (no workers, no evaluations, no cloning), a checkpoint and a pool snapshot per update."""
    return list(TRAIN_SMOKE_ARGS)


def game_steps(limit: int = 50_000):
    """Count the steps of a test's game loop and fail the test, instead of hanging or
    eating memory, if a game does not end within ``limit`` steps (a broken round end)."""
    yield from range(limit)
    raise AssertionError(f"the game did not end within {limit} steps")


@pytest.fixture
def clock_jumps_after_each_update(monkeypatch):
    """``install(seconds)``: train.py's clock jumps ``seconds`` forward after every PPO
    update, so tests reach a time limit without waiting. Between jumps it ticks 1 ms per
    reading, whatever the wall clock does: a slow, busy machine reads the same times."""

    def install(seconds: float) -> None:
        import train  # the trainer (and torch) only for the tests that ask for it

        class Clock:
            skipped = 0.0
            start = time.time()
            readings = 0

            def time(self) -> float:
                self.readings += 1
                return self.start + self.skipped + 0.001 * self.readings

        clock, update = Clock(), train.ppo_update

        def update_then_jump(*args, **kwargs):
            out = update(*args, **kwargs)
            clock.skipped += seconds
            return out

        monkeypatch.setattr(train, "time", clock)
        monkeypatch.setattr(train, "ppo_update", update_then_jump)

    return install
