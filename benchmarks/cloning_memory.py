"""Peak memory of behaviour cloning: the trainer's and its rollout workers' peak RSS.

    .venv/bin/python benchmarks/cloning_memory.py [--seats 2 4 8 14] [--decisions 50000 200000]
        [--python PYTHON] [--root REPO] [--extra "--pretrain-epochs 1"]

For each (seats, decisions) runs ``train.py --config default-4seat --rules.num-seats S
--pretrain-decisions N --total-steps 0`` (cloning only: no PPO update, no evaluation) in a
temporary run folder, one run at a time, and polls ``/proc`` every 0.1 s for the peak RSS
(``VmHWM``) of the trainer process and of each worker process it started. Prints one
markdown row per run: peak RSS of the trainer and of the largest worker (MiB), the wall time,
and train.py's own "recorded in ... fitted in ..." line. ``--python``/``--root`` run another
checkout (e.g. an older commit with its own venv) for a before/after table. Linux only.
"""

from __future__ import annotations

import argparse
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def peak_kib(pid: int) -> int | None:
    """The process's peak resident set size (VmHWM) in KiB, or None once it is gone."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def children(pid: int) -> list[int]:
    """The live child processes of ``pid``."""
    out = []
    try:
        for task in Path(f"/proc/{pid}/task").iterdir():
            out += [int(c) for c in (task / "children").read_text().split()]
    except OSError:
        pass
    return out


def measure(python: str, root: Path, seats: int, decisions: int, extra: list[str]) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [
            python,
            str(root / "train.py"),
            "--config",
            "default-4seat",
            "--rules.num-seats",
            str(seats),
            "--pretrain-decisions",
            str(decisions),
            "--total-steps",
            "0",
            "--final-eval-games",
            "0",
            "--eval-every",
            "0",
            "--no-progress",
            "--run-dir",
            tmp,
            *extra,
        ]
        t0 = time.time()
        proc = subprocess.Popen(
            cmd, cwd=root, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )
        trainer, workers = 0, {}
        while proc.poll() is None:
            trainer = max(trainer, peak_kib(proc.pid) or 0)
            for c in children(proc.pid):
                workers[c] = max(workers.get(c, 0), peak_kib(c) or 0)
            time.sleep(0.1)
        out = proc.stdout.read()
        wall = time.time() - t0
    line = next((ln for ln in out.splitlines() if ln.startswith("behaviour cloning of")), "")
    if proc.returncode != 0:
        line = f"FAILED (exit {proc.returncode}): {out.strip().splitlines()[-1:]}"
    return {
        "trainer": trainer / 1024,
        "worker": max(workers.values(), default=0) / 1024,
        "workers": len(workers),
        "wall": wall,
        "line": line,
    }


def main() -> None:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--seats", type=int, nargs="+", default=[2, 4, 8, 14])
    p.add_argument("--decisions", type=int, nargs="+", default=[50_000, 200_000])
    p.add_argument("--python", default=sys.executable)
    p.add_argument("--root", type=Path, default=ROOT)
    p.add_argument("--extra", default="", help="more train.py options, one string")
    args = p.parse_args()
    print(
        "| seats | decisions | trainer peak RSS (MiB) | largest worker peak RSS (MiB) | wall (s) | train.py |"
    )
    print("|---|---|---|---|---|---|", flush=True)
    for seats in args.seats:
        for n in args.decisions:
            r = measure(args.python, args.root, seats, n, shlex.split(args.extra))
            print(
                f"| {seats} | {n:,} | {r['trainer']:,.0f} | {r['worker']:,.0f} ({r['workers']}) "
                f"| {r['wall']:.0f} | {r['line']} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
