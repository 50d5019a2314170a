"""Plant realistic one-line bugs, one at a time, and count how many the tests catch.

    .venv/bin/python benchmarks/mutants.py [--only MODULE] [--list]

Each mutant is an exact snippet of a source file and a plausible wrong replacement (a bug
someone could really write: an off-by-one, a dropped correction, a wrong frame of
reference, a check removed). For each, the script copies the repository to a scratch
folder once, applies the one mutant there, runs the test files that cover that module
(pytest -x), and calls the mutant *killed* if any test fails. It prints one line per
mutant and a table of kill rates per module. The working tree is never modified.

A mutant whose snippet is no longer in its file is reported as ``stale`` (the code
changed): update the list rather than ignore it. Not a test: it takes minutes.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Mutant:
    path: str
    old: str
    new: str
    why: str
    tests: tuple[str, ...]


MUTANTS: list[Mutant] = []  # filled below, module by module


def mutant(path: str, old: str, new: str, why: str, *tests: str) -> None:
    MUTANTS.append(Mutant(path, old, new, why, tests))


def mirrors(path: str) -> list[str]:
    """Where a file lives in the scratch copy: the repository's path and, for the folders
    that the install maps to other names, the importable one (see ``prepare``)."""
    if path.startswith("agents/"):
        return [path, "mt_env/" + path]
    if path == "train.py":
        return [path, "mt_env/cli/train.py"]
    return [path]


def prepare(scratch: Path) -> None:
    """Lay the mapped folders out where imports find them without the editable install
    (which points at the real checkout): agents/ as mt_env/agents, the top level as
    mt_env/cli."""
    shutil.copytree(scratch / "agents", scratch / "mt_env" / "agents")
    cli = scratch / "mt_env" / "cli"
    cli.mkdir()
    for name in ("__init__.py", "train.py"):
        shutil.copy(scratch / name, cli / name)
    shutil.copytree(scratch / "configs", cli / "configs")


def run(m: Mutant, scratch: Path) -> str:
    targets = [scratch / q for q in mirrors(m.path)]
    sources = [t.read_text() for t in targets]
    if sources[0].count(m.old) != 1:
        return "stale"
    for t, source in zip(targets, sources, strict=True):
        t.write_text(source.replace(m.old, m.new))
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", *m.tests],
            cwd=scratch, capture_output=True, text=True, timeout=900,
        )
        return "survived" if proc.returncode == 0 else "killed"
    except subprocess.TimeoutExpired:
        return "killed (timeout)"
    finally:
        for t, source in zip(targets, sources, strict=True):
            t.write_text(source)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--only", default=None, help="only mutants of paths containing this")
    p.add_argument("--list", action="store_true", help="list the mutants and exit")
    args = p.parse_args()
    chosen = [m for m in MUTANTS if args.only is None or args.only in m.path]
    if args.list:
        for m in chosen:
            print(f"{m.path}: {m.why}")
        return
    tally: dict[str, list[str]] = defaultdict(list)
    with tempfile.TemporaryDirectory() as tmp:
        scratch = Path(tmp) / "repo"
        shutil.copytree(ROOT, scratch, ignore=shutil.ignore_patterns(
            ".git", ".venv", "runs", "__pycache__", ".pytest_cache", ".hypothesis", "build"))
        prepare(scratch)
        for m in chosen:
            outcome = run(m, scratch)
            tally[m.path].append(outcome)
            print(f"{outcome:9s} {m.path}: {m.why}", flush=True)
    print("\n| module | mutants | killed | survived | stale | kill rate |\n|---|---|---|---|---|---|")
    for path, outcomes in tally.items():
        killed = sum(o.startswith("killed") for o in outcomes)
        stale = outcomes.count("stale")
        live = len(outcomes) - stale
        rate = f"{killed / live:.0%}" if live else "-"
        print(f"| {path} | {len(outcomes)} | {killed} | {outcomes.count('survived')} | {stale} | {rate} |")


if __name__ == "__main__":
    main()
