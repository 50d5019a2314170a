"""Decisions/s of the ``search`` agent, and a same-run comparison against another checkout.

    .venv/bin/python benchmarks/search_speed.py [--seats 2] [--games 20] [--repeats 5]
        [--against /path/to/other/checkout]

Plays ``--games`` one-round matches of ``search`` against ``longest-train`` (fixed seeds)
and times every call of ``search``'s ``act``: decisions/s over all its decisions and over
the searched ones (those that run rollouts). With ``--against DIR`` the same measurement
runs, interleaved run by run, in a subprocess on the code of ``DIR`` (e.g. an export of an
older commit), so a before/after ratio comes from one session on the same, possibly busy,
machine. Prints each run and the medians.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def measure(seats: int, games: int) -> dict:
    """One run on the code importable as ``agents``/``mt_env``."""
    try:
        from mt_env.agents import make_agent
    except ImportError:  # a checkout from before agents/ was installed as mt_env.agents
        from agents import make_agent
    from mt_env import Match, RulesConfig
    from mt_env.observation import ObservationEncoder

    config = RulesConfig(num_seats=seats, num_rounds=1)
    enc = ObservationEncoder(config)
    elapsed, decisions, actions = 0.0, 0, []
    searches = 0
    for game in range(games):
        search = make_agent("search", config, seed=game)
        players = [search] + [make_agent("longest-train", config, seed=game) for _ in range(seats - 1)]
        match = Match(config, seed=1000 + game)
        rotate = game % seats  # the search agent sits at every seat in turn
        while not match.is_over:
            seat = match.state.seat
            agent = players[(seat - rotate) % seats]
            obs, mask = enc.encode(match, seat), enc.action_mask(match, seat)
            if agent is search:
                t0 = time.perf_counter()
                action = agent.act(obs, mask)
                elapsed += time.perf_counter() - t0
                decisions += 1
                actions.append(int(action))
            else:
                action = agent.act(obs, mask)
            match.apply(match.state.codec.to_move(int(action), seat))
        searches += search.searches
    return {
        "decisions": decisions,
        "searched": searches,
        "seconds": elapsed,
        "decisions_per_s": decisions / elapsed,
        "searches_per_s": searches / elapsed,
        "actions": actions,
    }


def run_child(directory: Path, seats: int, games: int) -> dict:
    env = dict(os.environ, PYTHONPATH=str(directory))
    out = subprocess.run(
        [sys.executable, "-c", CHILD, str(seats), str(games)],
        cwd=directory, env=env, check=True, capture_output=True, text=True,
    )
    return json.loads(out.stdout)


CHILD = (
    "import json, sys, importlib.util\n"
    f"spec = importlib.util.spec_from_file_location('bench', {str(Path(__file__).resolve())!r})\n"
    "m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)\n"
    "print(json.dumps(m.measure(int(sys.argv[1]), int(sys.argv[2]))))\n"
)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--seats", type=int, default=2)
    p.add_argument("--games", type=int, default=20)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--against", type=Path, default=None, help="another checkout to compare with")
    args = p.parse_args()
    arms = {"this": ROOT} | ({"against": args.against.resolve()} if args.against else {})
    runs: dict[str, list[dict]] = {k: [] for k in arms}
    for r in range(args.repeats):
        for name, directory in arms.items():  # interleaved: the same load for both arms
            res = run_child(directory, args.seats, args.games)
            runs[name].append(res)
            print(
                f"run {r + 1} {name:8s} {res['decisions']} decisions ({res['searched']} searched) "
                f"in {res['seconds']:.2f} s: {res['decisions_per_s']:.0f} decisions/s, "
                f"{res['searches_per_s']:.1f} searches/s",
                flush=True,
            )
    med = {k: statistics.median(x["decisions_per_s"] for x in v) for k, v in runs.items()}
    meds = {k: statistics.median(x["searches_per_s"] for x in v) for k, v in runs.items()}
    for k in arms:
        print(f"median {k:8s} {med[k]:.0f} decisions/s, {meds[k]:.1f} searches/s")
    if args.against:
        ratios = [a["decisions_per_s"] / b["decisions_per_s"]
                  for a, b in zip(runs["this"], runs["against"], strict=True)]
        print(f"ratio of the medians this/against: {med['this'] / med['against']:.3f}; "
              f"per-run ratios {', '.join(f'{r:.3f}' for r in ratios)}, "
              f"median {statistics.median(ratios):.3f}")
        same = runs["this"][0]["actions"] == runs["against"][0]["actions"]
        print(f"same actions in both arms: {same} ({len(runs['this'][0]['actions'])} decisions)")


if __name__ == "__main__":
    main()
