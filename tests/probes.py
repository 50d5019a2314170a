"""A tally of the failure-path probes the tests run (issue 12's table).

Each probe is one hostile action against the envs or the tournament's outputs: an
illegal or ill-typed action, a step after the end, a misbehaving opponent, an unusable
or failing output folder. The tests call :func:`record` once per probe, *before*
asserting, so the counts are what really ran; a test fails on any probe that was not a
clear error or that lost or corrupted something, so in a passing run the last column is
all zeros.

Print the table (runs the probing tests in this process, then tallies them)::

    .venv/bin/python tests/probes.py
"""

from __future__ import annotations

from collections import defaultdict

# probe class -> [tried, clear errors (or the documented outcome), lost or corrupted]
PROBES: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])

# probe classes shared by both test files
OPPONENT_IN_STEP = "Gymnasium: opponent fails in step() (illegal, ill-typed, raises)"
OPPONENT_IN_RESET = "Gymnasium: opponent fails in reset()"

PROBE_TESTS = ["tests/test_fuzz_envs.py", "tests/test_failure_paths.py", "tests/test_train_failures.py"]


def record(probe_class: str, clear: bool, lost: bool = False) -> None:
    row = PROBES[probe_class]
    row[0] += 1
    row[1] += bool(clear)
    row[2] += bool(lost)


def table() -> str:
    lines = [
        "| probe class | probes tried | clear errors | anything lost or corrupted |",
        "|---|---:|---:|---:|",
    ]
    totals = [0, 0, 0]
    for name in sorted(PROBES):
        row = PROBES[name]
        totals = [a + b for a, b in zip(totals, row, strict=True)]
        lines.append(f"| {name} | {row[0]} | {row[1]} | {row[2]} |")
    lines.append(f"| **total** | {totals[0]} | {totals[1]} | {totals[2]} |")
    return "\n".join(lines)


if __name__ == "__main__":  # pragma: no cover - a reporting script
    import sys
    from pathlib import Path

    import pytest

    root = Path(__file__).resolve().parents[1]
    sys.path.insert(0, str(root / "tests"))
    sys.path.insert(0, str(root))  # test_train_failures imports train.py from the root
    import probes  # the module the tests import (this file runs as __main__)

    code = pytest.main(
        ["-q", "-p", "no:cacheprovider", *(str(root / t) for t in PROBE_TESTS)]
    )
    print(probes.table())
    raise SystemExit(int(code))
