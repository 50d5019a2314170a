"""Throughput of the Mexican Train env, the bare rules core, and connect_four_v3 for reference.

Every figure is agents' decisions per second under uniformly random legal play, full
games with resets, the median of ``--repeats`` timed runs of ``--duration`` seconds. The
benchmarks are interleaved (repeat 1 of each, then repeat 2 of each, …) so that a noisy
machine slows them alike, and PettingZoo's ``connect_four_v3`` is measured in the same
run, through the same loop, as the reference; the ``x connect_four`` column is the median
of the per-repeat ratios to it:

- ``AEC env``: ``mt_env.env(num_seats=n)`` (default rules, wrapped); each step is
  ``env.last()`` (observation vector + action mask), a random legal action from the mask,
  ``env.step``;
- ``rules core``: ``Match`` with ``legal_moves()`` and ``apply()`` of a random legal move;
- ``connect_four_v3``: the AEC loop above on ``connect_four_v3.env()``.

Targets: AEC env (default rules) >= 2.5x connect_four_v3's agent-steps/s at 4 seats and
>= 2x at 14 (issue 13; 1.5x at 4 seats before); the bare core >= 250,000 moves/s (4 seats). Run: ``python benchmarks/env_throughput.py``.
"""

from __future__ import annotations

import argparse
import platform
import random
import statistics
import sys
import time
import types
from collections.abc import Callable

import numpy as np

ENV_TARGET_RATIO = {4: 2.5, 14: 2.0}  # seats -> AEC steps/s over connect_four_v3's
CORE_TARGET = 250_000
CHECK_EVERY = 64  # look at the clock every this many steps


def connect_four_env():
    try:
        import pygame  # noqa: F401
    except ImportError:
        # connect_four imports pygame at module level but uses it only to render;
        # with render_mode=None a placeholder module is never touched.
        sys.modules["pygame"] = types.ModuleType("pygame")
    from pettingzoo.classic import connect_four_v3

    return connect_four_v3.env()


def aec_runner(make_env: Callable, seed: int) -> Callable[[float], float]:
    """A function that plays random legal moves for ``duration`` s and returns steps/s."""
    env = make_env()
    env.reset(seed=seed)
    rng = random.Random(seed)
    flatnonzero = np.flatnonzero

    def run(duration: float) -> float:
        last, step, randrange = env.last, env.step, rng.randrange
        steps = 0
        clock = time.perf_counter
        start = clock()
        end = start + duration
        while True:
            for _ in range(CHECK_EVERY):
                obs, _, term, trunc, _ = last()
                if term or trunc:
                    step(None)
                    if not env.agents:
                        env.reset()
                    continue
                legal = flatnonzero(obs["action_mask"])
                step(int(legal[randrange(len(legal))]))
                steps += 1
            now = clock()
            if now >= end:
                return steps / (now - start)

    return run


def core_runner(num_seats: int, seed: int) -> Callable[[float], float]:
    from mt_env import Match, RulesConfig

    config = RulesConfig(num_seats=num_seats)
    rng = random.Random(seed)
    state = {"match": Match(config, seed=rng.getrandbits(64))}

    def run(duration: float) -> float:
        match = state["match"]
        randrange = rng.randrange
        moves = 0
        clock = time.perf_counter
        start = clock()
        end = start + duration
        while True:
            for _ in range(CHECK_EVERY):
                if match.is_over:
                    match = Match(config, seed=rng.getrandbits(64))
                legal = match.state.legal_moves()
                match.apply(legal[randrange(len(legal))])
                moves += 1
            now = clock()
            if now >= end:
                state["match"] = match
                return moves / (now - start)

    return run


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=float, default=1.0, help="seconds per timed run")
    parser.add_argument("--repeats", type=int, default=5, help="timed runs per figure (median)")
    parser.add_argument("--seats", type=int, nargs="+", default=[2, 4, 8, 14], help="seat counts")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    if args.repeats < 1 or args.duration <= 0:
        parser.error("--repeats must be >= 1 and --duration > 0")

    import mt_env

    benches: dict[str, Callable[[float], float]] = {
        "connect_four_v3 (reference)": aec_runner(connect_four_env, args.seed)
    }
    env_seats = {f"AEC env, {n} seats": n for n in args.seats}
    for name, n in env_seats.items():
        benches[name] = aec_runner(lambda n=n: mt_env.env(num_seats=n), args.seed)
    for n in args.seats:
        benches[f"rules core, {n} seats"] = core_runner(n, args.seed)

    for run in benches.values():  # warm-up: imports, caches, first deals
        run(min(0.2, args.duration))
    samples: dict[str, list[float]] = {name: [] for name in benches}
    for _ in range(args.repeats):
        for name, run in benches.items():
            samples[name].append(run(args.duration))
    median = {name: statistics.median(v) for name, v in samples.items()}

    ref_name = "connect_four_v3 (reference)"
    ref = samples[ref_name]
    # Ratios pair each repeat with the reference measured in the same repeat (seconds
    # apart), which cancels most of a shared machine's changing load.
    ratio = {
        name: statistics.median(v / r for v, r in zip(values, ref, strict=True))
        for name, values in samples.items()
    }
    print(
        f"Python {platform.python_version()} on {platform.machine()}; "
        f"median of {args.repeats} x {args.duration:g} s, random legal play, full games"
    )
    print(f"{'benchmark':<30}{'steps/s':>12}{'min':>10}{'max':>10}{'x connect_four':>16}  target")
    for name, value in median.items():
        lo, hi = min(samples[name]), max(samples[name])
        note = ""
        seats = env_seats.get(name)
        if seats in ENV_TARGET_RATIO:
            ok = ratio[name] >= ENV_TARGET_RATIO[seats]
            note = f">= {ENV_TARGET_RATIO[seats]}x connect_four: {'PASS' if ok else 'FAIL'}"
        elif name == "rules core, 4 seats":
            ok = value >= CORE_TARGET
            note = f">= {CORE_TARGET:,} moves/s: {'PASS' if ok else 'FAIL'}"
        print(f"{name:<30}{value:>12,.0f}{lo:>10,.0f}{hi:>10,.0f}{ratio[name]:>15.2f}x  {note}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
