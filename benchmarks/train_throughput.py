"""End-to-end training throughput: environment agent-steps per second of rollout + PPO update.

Runs the real trainer (``train.py``) for a few updates in a temporary folder and reports,
per update, every seat's moves (learner, opponents and forced moves alike) divided by the
wall time of that update's rollout and optimisation. The first update is dropped (worker
start-up, imports); the figure is the median of the rest. The presets' behaviour cloning
(a one-off before the first update) is switched off here: it is not a PPO update.
Target (issue 4): >= 5,000 agent-steps/s on 2 cores.

    python benchmarks/train_throughput.py                     # default-4seat preset
    python benchmarks/train_throughput.py --config default-2seat --updates 8
"""

from __future__ import annotations

import argparse
import csv
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import train  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--config", default="default-4seat")
    ap.add_argument("--updates", type=int, default=6, help="updates to time (plus one warm-up)")
    ap.add_argument("--workers", type=int, default=2)
    args, extra = ap.parse_known_args(argv)
    preset = train.load_preset(args.config)
    steps = preset.rollout_steps * (args.updates + 1)
    with tempfile.TemporaryDirectory() as tmp:
        run = train.main([
            "--config", args.config, "--total-steps", str(steps), "--num-workers", str(args.workers),
            "--run-dir", tmp, "--eval-every", "0", "--final-eval-games", "0", "--no-progress",
            "--time-limit-minutes", "0", "--pretrain-teacher", "", *extra,
        ])
        with (Path(run) / "log.csv").open() as f:
            rows = list(csv.DictReader(f))
    sps = [float(r["sps"]) for r in rows[1:]]
    med = statistics.median(sps)
    print(f"{args.config}: {len(sps)} timed updates of {preset.rollout_steps} learner steps, "
          f"{args.workers} rollout workers")
    print("agent-steps/s per update: " + ", ".join(f"{s:,.0f}" for s in sps))
    print(f"median {med:,.0f} agent-steps/s (target >= 5,000: {'PASS' if med >= 5000 else 'FAIL'})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
