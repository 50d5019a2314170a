"""Memory over long runs: resident set size (RSS) of the AEC env over many steps and resets.

    .venv/bin/python benchmarks/memory.py [--steps 200000] [--resets 10000] [--seats 4]

Plays uniformly random legal actions through ``mt_env.env()`` for ``--steps`` agent steps
(resetting at each episode's end), then does ``--resets`` resets in a row, and prints the
process's RSS (from /proc/self/status, Linux) at evenly spaced checkpoints. Flat memory
means the RSS stops growing after warm-up; the last line compares the final RSS with the
RSS after the first tenth of each phase.
"""

from __future__ import annotations

import argparse
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from mt_env import env  # noqa: E402


def rss_mib() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS in /proc/self/status")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--steps", type=int, default=200_000)
    p.add_argument("--resets", type=int, default=10_000)
    p.add_argument("--seats", type=int, default=4)
    p.add_argument("--points", type=int, default=10, help="RSS readings per phase")
    args = p.parse_args()
    rng = random.Random(0)
    e = env(num_seats=args.seats)
    e.reset(seed=0)
    episodes, warm = 0, {}
    print(f"start: {rss_mib():.1f} MiB")
    for step in range(1, args.steps + 1):
        obs, _, term, trunc, _ = e.last()
        if term or trunc:
            e.step(None)
        else:
            e.step(rng.choice(obs["action_mask"].nonzero()[0].tolist()))
        if not e.agents:
            episodes += 1
            e.reset(seed=episodes)
        if step % (args.steps // args.points) == 0:
            r = rss_mib()
            warm.setdefault("steps", r)
            print(f"steps {step:>8,}: {r:.1f} MiB ({episodes} episodes)", flush=True)
    for k in range(1, args.resets + 1):
        e.reset(seed=k)
        if k % (args.resets // args.points) == 0:
            r = rss_mib()
            warm.setdefault("resets", r)
            print(f"resets {k:>7,}: {r:.1f} MiB", flush=True)
    end = rss_mib()
    print(f"growth after warm-up: steps phase {end - warm['steps']:+.1f} MiB "
          f"(from {warm['steps']:.1f}), resets phase {end - warm['resets']:+.1f} MiB")


if __name__ == "__main__":
    main()
