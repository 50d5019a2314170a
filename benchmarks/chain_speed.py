"""Speed of the longest-chain search (``agents/chains.py``) against the pure-Python search it
replaced, and the recorder of the query set that ``tests/test_chains.py`` checks it on.

    .venv/bin/python benchmarks/chain_speed.py queries [--repeats 5] [--against REF]
    .venv/bin/python benchmarks/chain_speed.py games [--repeats 5] [--games 4] [--against REF]
    .venv/bin/python benchmarks/chain_speed.py startup [--repeats 5]
    .venv/bin/python benchmarks/chain_speed.py record OUT.json.gz [--against REF]

``REF`` is the search to compare with: a git revision whose ``agents/chains.py`` is loaded
as a temporary module (default ``7067e5b``, the last commit with the pure-Python search),
a path to such a file, or a checkout holding ``agents/chains.py``. Timings are process CPU
time (the machine may be shared; wall time is printed too); each run times both searches,
interleaved, the first of the two alternating from run to run; medians over the runs and
the ratio reference/current are printed.

- ``queries``: every recorded query of ``tests/data/chain_queries.json.gz`` (the default
  ``--data``), at each recorded node budget, from an empty memo (``clear()`` before
  each): CPU µs per query over the whole set, over the queries the reference answered
  within its budget, over those it capped and per source; every answer is checked
  against the recorded one.
- ``games``: whole matches with fixed seeds, games/s: ``longest-train`` self-play at 2 and
  at 4 seats, and a trainer-like 2-seat table (a ``random`` seat whose observations go
  through the learner's ``pairs`` features, against ``longest-train``); both searches must
  give the same final scores.
- ``startup``: the one-time costs each new process (a rollout worker) pays, in fresh
  subprocesses: importing numba, importing ``mt_env.agents.chains``, and the first search,
  which loads the compiled kernel from numba's on-disk cache or, with an empty cache
  (a fresh ``NUMBA_CACHE_DIR``), compiles it.
- ``record``: plays seeded games (the ``SOURCES`` below) with the reference search in every
  planner, collects the distinct ``(hand, end)`` queries and writes them with the
  reference's answers: rows ``[max_pip, hand mask (hex), end, chain tile ids, nodes,
  capped, source]`` at the default node budget, and again at the ``search`` agent's
  rollout budget (200) for the queries that need more than 200 nodes.
"""

from __future__ import annotations

import argparse
import gzip
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from mt_env import Match, RulesConfig  # noqa: E402
from mt_env.agents import chains, features, longest_train, make_agent  # noqa: E402
from mt_env.agents.features import make_featurizer  # noqa: E402
from mt_env.observation import ObservationEncoder  # noqa: E402
from mt_env.tiles import tile_set  # noqa: E402

DEFAULT_REF = "7067e5b"
DATA = ROOT / "tests" / "data" / "chain_queries.json.gz"
ROLLOUT_BUDGET = 200  # mt_env.agents.search.ROLLOUT_CHAIN_BUDGET
# Recorded query sources: (name, RulesConfig options, seat-0 agents cycled game by game, the
# other seats' agents cycled game by game, queries wanted). Seat 0's observations also go
# through the learner's pairs features; so do a random opponent's (an untrained learner in
# self-play). The double-18 table puts tile ids past 128 into the hands (all three words).
SEAT0 = ("random", "greedy", "longest-train")
SOURCES = (
    ("2 seats", {"num_seats": 2}, SEAT0, ("longest-train",), 4000),
    ("4 seats", {"num_seats": 4}, SEAT0, ("longest-train",), 4000),
    ("8 seats", {"num_seats": 8}, SEAT0, ("longest-train",), 2000),
    ("trainer, 2 seats", {"num_seats": 2}, ("random",), ("longest-train", "random"), 10000),
    (
        "double-18, 4 seats",
        {"num_seats": 4, "max_pip": 18, "hand_size": 15},
        SEAT0,
        ("longest-train",),
        500,
    ),
)


# ---------------------------------------------------------------------- the reference
def load_reference(ref: str):
    """The module ``agents/chains.py`` of ``ref`` (a revision, a file or a checkout)."""
    path = Path(ref)
    if path.is_dir():
        path = path / "agents" / "chains.py"
    if path.is_file():
        source = path.read_text()
    else:
        try:
            source = subprocess.run(
                ["git", "show", f"{ref}:agents/chains.py"],
                cwd=ROOT,
                capture_output=True,
                text=True,
                check=True,
            ).stdout
        except subprocess.CalledProcessError as err:
            raise SystemExit(
                f"--against {ref!r}: expected a git revision, a chains.py file or a checkout "
                f"holding agents/chains.py ({err.stderr.strip()})"
            ) from None
    fd, name = tempfile.mkstemp(suffix="_chains_reference.py")
    with os.fdopen(fd, "w") as f:
        f.write(source)
    spec = importlib.util.spec_from_file_location("chains_reference", name)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    os.unlink(name)
    return module


def using(planner_class) -> None:
    """Make the agents and the featurizer built from now on use ``planner_class``."""
    longest_train.ChainPlanner = planner_class
    features.ChainPlanner = planner_class


def load_queries(path: Path) -> dict:
    with gzip.open(path, "rt") as f:
        return json.load(f)


# ---------------------------------------------------------------------- queries
def time_queries(planner_class, rows, budget: int) -> dict:
    """CPU seconds per group of rows (source, capped), each query from an empty memo; wall
    seconds over all; how many answers differ from the recorded ones."""
    planners = {mp: planner_class(tile_set(mp), node_budget=budget) for mp in {r[0] for r in rows}}
    groups: dict[tuple[int, bool], list] = {}
    for mp, hand, end, chain, _, capped, source in rows:
        groups.setdefault((source, capped), []).append((planners[mp], int(hand, 16), end, chain))
    out = {"wall": 0.0, "wrong": 0}
    for key, queries in sorted(groups.items()):
        w0, c0 = time.perf_counter(), time.process_time()
        answers = []
        for planner, hand, end, _ in queries:
            planner.clear()
            answers.append(planner.longest(hand, end))
        out[key] = time.process_time() - c0
        out["wall"] += time.perf_counter() - w0
        out["wrong"] += sum(list(a) != q[3] for a, q in zip(answers, queries, strict=True))
    return out


def cmd_queries(args) -> None:
    ref = load_reference(args.against)
    data = load_queries(args.data)
    arms = {"reference": ref.ChainPlanner, "current": chains.ChainPlanner}
    chains.ChainPlanner(tile_set(12)).longest(7, 0)  # kernel ready (startup measures that)
    for block in data["sets"]:
        rows, budget = block["rows"], block["node_budget"]
        print(f"node budget {budget}: {len(rows)} queries, {sum(r[5] for r in rows)} capped")
        runs: dict[str, list[dict]] = {k: [] for k in arms}
        for r in range(args.repeats):
            for name in list(arms) if r % 2 == 0 else list(arms)[::-1]:
                res = time_queries(arms[name], rows, budget)
                runs[name].append(res)
                cpu = sum(v for k, v in res.items() if isinstance(k, tuple))
                print(
                    f"  run {r + 1} {name:9s} cpu {cpu:.3f} s, wall {res['wall']:.3f} s, "
                    f"answers differing from the recorded ones: {res['wrong']}",
                    flush=True,
                )
        keys = [k for k in runs["current"][0] if isinstance(k, tuple)]
        parts = [("all", keys), ("uncapped", [k for k in keys if not k[1]])]
        parts.append(("capped", [k for k in keys if k[1]]))
        parts += [(name, [k for k in keys if k[0] == s]) for s, name in enumerate(data["sources"])]
        print(f"  medians over {args.repeats} runs (cpu µs/query) and reference/current ratios:")
        for label, part in parts:
            n = sum(sum(1 for r in rows if (r[6], r[5]) == k) for k in part)
            if not n:
                continue
            total = {a: [sum(run[k] for k in part) for run in v] for a, v in runs.items()}
            med = {a: statistics.median(v) for a, v in total.items()}
            ratios = [x / y for x, y in zip(total["reference"], total["current"], strict=True)]
            print(
                f"  {label:19s} {n:6d} queries: reference {1e6 * med['reference'] / n:8.1f}, "
                f"current {1e6 * med['current'] / n:6.1f}, ratio of medians "
                f"{med['reference'] / med['current']:5.1f} (per run "
                f"{', '.join(f'{x:.1f}' for x in ratios)})"
            )


# ---------------------------------------------------------------------- games
GAME_SETUPS = (
    ("longest-train self-play, 2 seats", 2, ("longest-train", "longest-train"), False),
    ("longest-train self-play, 4 seats", 4, ("longest-train",) * 4, False),
    (
        "trainer-like: random + pairs features vs longest-train",
        2,
        ("random", "longest-train"),
        True,
    ),
)


def play(seats: int, lineup, featurize: bool, games: int) -> tuple[float, float, list]:
    """CPU and wall seconds of ``games`` seeded matches; their final scores."""
    config = RulesConfig(num_seats=seats)
    enc = ObservationEncoder(config)
    scores = []
    w0, c0 = time.perf_counter(), time.process_time()
    for g in range(games):
        feat = make_featurizer(config, "pairs") if featurize else None
        players = [make_agent(name, config, seed=g) for name in lineup]
        match = Match(config, seed=5000 + g)
        while not match.is_over:
            seat = match.state.seat
            obs, mask = enc.encode(match, seat), enc.action_mask(match, seat)
            if feat is not None and seat == 0:
                feat(obs[None])
            action = int(players[seat].act(obs, mask))
            match.apply(match.state.codec.to_move(action, seat))
        scores.append(list(match.totals))
    return time.process_time() - c0, time.perf_counter() - w0, scores


def cmd_games(args) -> None:
    ref = load_reference(args.against)
    arms = {"reference": ref.ChainPlanner, "current": chains.ChainPlanner}
    chains.ChainPlanner(tile_set(12)).longest(7, 0)  # kernel ready (startup measures that)
    for label, seats, lineup, featurize in GAME_SETUPS:
        print(f"{label}: {args.games} matches per run")
        runs: dict[str, list[float]] = {k: [] for k in arms}
        scores = {}
        for r in range(args.repeats):
            order = list(arms) if r % 2 == 0 else list(arms)[::-1]
            for name in order:
                using(arms[name])
                cpu, wall, scores[name] = play(seats, lineup, featurize, args.games)
                runs[name].append(args.games / cpu)
                print(
                    f"  run {r + 1} {name:9s} {args.games / cpu:7.2f} games/s cpu "
                    f"({args.games / wall:.2f} wall)",
                    flush=True,
                )
        using(chains.ChainPlanner)
        med = {k: statistics.median(v) for k, v in runs.items()}
        ratios = [b / a for a, b in zip(runs["reference"], runs["current"], strict=True)]
        print(
            f"  median games/s: reference {med['reference']:.2f}, current {med['current']:.2f}, "
            f"ratio {med['current'] / med['reference']:.2f} (per-run ratios "
            f"{', '.join(f'{x:.2f}' for x in ratios)}); same final scores: "
            f"{scores['reference'] == scores['current']}"
        )


# ---------------------------------------------------------------------- startup
STARTUP = """
import time
clocks = [(time.perf_counter(), time.process_time())]
import numba
clocks.append((time.perf_counter(), time.process_time()))
from mt_env.agents.chains import ChainPlanner
from mt_env.tiles import tile_set
clocks.append((time.perf_counter(), time.process_time()))
ChainPlanner(tile_set(12)).longest(7, 0)
clocks.append((time.perf_counter(), time.process_time()))
print(*(b[k] - a[k] for k in (1, 0) for a, b in zip(clocks, clocks[1:])))
"""


def cmd_startup(args) -> None:
    results: dict[str, list[list[float]]] = {"cached kernel": [], "empty cache": []}
    for r in range(args.repeats):
        for name in results:
            env = dict(os.environ)
            with tempfile.TemporaryDirectory() as cache:
                if name == "empty cache":
                    env["NUMBA_CACHE_DIR"] = cache
                out = subprocess.run(
                    [sys.executable, "-c", STARTUP],
                    cwd=ROOT,
                    env=env,
                    capture_output=True,
                    text=True,
                    check=True,
                ).stdout
            times = [float(x) for x in out.split()]  # cpu of the 3 steps, then their wall
            results[name].append(times)
            print(
                f"  run {r + 1} {name:13s} cpu s: import numba {times[0]:.3f}, import chains "
                f"{times[1]:.3f}, first search {times[2]:.3f} (wall {times[3]:.3f}, "
                f"{times[4]:.3f}, {times[5]:.3f})",
                flush=True,
            )
    for name, runs in results.items():
        med = [statistics.median(x[i] for x in runs) for i in range(6)]
        print(
            f"median cpu s, {name}: import numba {med[0]:.3f}, import chains {med[1]:.3f}, "
            f"first search {med[2]:.3f}, total {sum(med[:3]):.3f} (wall {sum(med[3:]):.3f})"
        )


# ---------------------------------------------------------------------- record
def collect(ref, name, rules, first, others, wanted) -> list[tuple[int, int, int]]:
    """Distinct (max_pip, hand, end) queries of seeded games, in the order first asked."""
    seen: dict[tuple[int, int, int], None] = {}

    class Recording(ref.ChainPlanner):
        def longest(self, hand, end):
            seen.setdefault((self.tiles.max_pip, hand, int(end)))
            return super().longest(hand, end)

    using(Recording)
    config = RulesConfig(**rules)
    seats = config.num_seats
    enc = ObservationEncoder(config)
    feat = make_featurizer(config, "pairs")
    g = 0
    while len(seen) < wanted:
        lineup = [first[g % len(first)]] + [others[g % len(others)]] * (seats - 1)
        players = [make_agent(a, config, seed=g) for a in lineup]
        match = Match(config, seed=10_000 + g)
        while not match.is_over and len(seen) < wanted:
            seat = match.state.seat
            obs, mask = enc.encode(match, seat), enc.action_mask(match, seat)
            if seat == 0 or lineup[seat] == "random":
                feat(obs[None])
            match.apply(match.state.codec.to_move(int(players[seat].act(obs, mask)), seat))
        g += 1
    using(chains.ChainPlanner)
    print(f"{name}: {len(seen)} queries from {g} games", flush=True)
    return list(seen)


def answer(ref, queries, source: int, budget: int) -> list[list]:
    planners = {}
    rows = []
    for max_pip, hand, end in queries:
        planner = planners.setdefault(max_pip, ref.ChainPlanner(tile_set(max_pip), budget))
        planner.clear()
        before = planner.nodes
        chain = planner.longest(hand, end)
        nodes = planner.nodes - before
        rows.append([max_pip, format(hand, "x"), end, list(chain), nodes, nodes >= budget, source])
    return rows


def cmd_record(args) -> None:
    ref = load_reference(args.against)
    default, rollout = [], []
    for source, (name, rules, first, others, wanted) in enumerate(SOURCES):
        queries = collect(ref, name, rules, first, others, wanted)
        rows = answer(ref, queries, source, ref.DEFAULT_NODE_BUDGET)
        default += rows
        deep = [q for q, row in zip(queries, rows, strict=True) if row[4] > ROLLOUT_BUDGET]
        rollout += answer(ref, deep, source, ROLLOUT_BUDGET)
    data = {
        "about": "distinct longest-chain queries of seeded games with the answers of the "
        f"search of {args.against} (benchmarks/chain_speed.py record); rows: max_pip, hand "
        "mask (hex), end, chain tile ids, nodes expanded, capped, source",
        "sources": [s[0] for s in SOURCES],
        "sets": [
            {"node_budget": ref.DEFAULT_NODE_BUDGET, "rows": default},
            {"node_budget": ROLLOUT_BUDGET, "rows": rollout},
        ],
    }
    # no name and no time in the gzip header: the same games give the same bytes
    with open(args.out, "wb") as raw, gzip.GzipFile("", "wb", fileobj=raw, mtime=0) as f:
        f.write(json.dumps(data, separators=(",", ":")).encode())
    for block in data["sets"]:
        rows = block["rows"]
        print(
            f"node budget {block['node_budget']}: {len(rows)} queries, "
            f"{sum(r[5] for r in rows)} capped, mean nodes "
            f"{statistics.mean(r[4] for r in rows):.0f}"
        )
    print(f"wrote {args.out} ({args.out.stat().st_size:,} bytes)")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = parser.add_subparsers(dest="command", required=True)
    for name in ("queries", "games", "startup", "record"):
        p = sub.add_parser(name)
        if name != "record":
            p.add_argument("--repeats", type=int, default=5)
        if name != "startup":
            p.add_argument("--against", default=DEFAULT_REF, help="revision, file or checkout")
        if name == "queries":
            p.add_argument("--data", type=Path, default=DATA)
        if name == "games":
            p.add_argument("--games", type=int, default=4)
        if name == "record":
            p.add_argument("out", type=Path)
    args = parser.parse_args()
    {"queries": cmd_queries, "games": cmd_games, "startup": cmd_startup, "record": cmd_record}[
        args.command
    ](args)


if __name__ == "__main__":
    main()
