"""Throughput of scripted play: tournament games/s, agent decisions/s, chain searches/s.

    .venv/bin/python benchmarks/tournament_speed.py [--games 200] [--repeats 3]
        [--workers N] [--agents random greedy longest-train longest-train] [--rules k=v ...]

1. **Tournament:** a 4-seat tournament (default rules: full 13-round double-12 matches)
   of the given scripted agents, run ``--repeats`` times on ``--workers`` processes;
   prints each run's games/s and decisions/s and the median (the process start-up is
   included: that is what a user waits for).
2. **Agents:** decisions/s of each agent's ``act`` alone, on the same recorded
   observations (a few thousand decisions of 4-seat games), so the figure excludes the
   environment.
3. **Chain search:** ``ChainPlanner.longest`` on fresh 15-tile double-12 hands (cache
   off): searches/s and the mean and largest number of nodes expanded.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from mt_env import Match, RulesConfig  # noqa: E402
from mt_env.agents import make_agent  # noqa: E402
from mt_env.agents.chains import ChainPlanner  # noqa: E402
from mt_env.agents.evaluation.tournament import parse_rules, run_tournament  # noqa: E402
from mt_env.observation import ObservationEncoder  # noqa: E402
from mt_env.tiles import tile_set  # noqa: E402


def tournament_speed(agents, config, games, repeats, workers) -> None:
    print(
        f"tournament: {' '.join(agents)} | {config.num_seats} seats, "
        f"double-{config.max_pip}, {config.num_rounds} round(s)/game, {games} games/run"
    )
    rates = []
    for rep in range(repeats):
        res = run_tournament(
            agents, config, games, seed=rep, workers=workers, progress=False, keep_records=False
        )
        rates.append(res.games_per_s)
        print(
            f"  run {rep + 1}: {res.games} games in {res.elapsed_s:.2f} s = "
            f"{res.games_per_s:.2f} games/s, {res.decisions / res.elapsed_s:,.0f} decisions/s"
        )
    print(f"  median: {statistics.median(rates):.2f} games/s")


def recorded_decisions(config: RulesConfig, count: int) -> list:
    enc = ObservationEncoder(config)
    players = [
        make_agent(s, config, seed=k)
        for k, s in enumerate(["longest-train", "greedy", "longest-train", "random"])
    ]
    out, seed = [], 0
    while len(out) < count:
        match = Match(config, seed=seed)
        seed += 1
        while not match.is_over and len(out) < count:
            seat = match.state.seat
            obs, mask = enc.encode(match, seat), enc.action_mask(match, seat)
            out.append((obs, mask))
            match.apply(match.state.codec.to_move(players[seat].act(obs, mask), seat))
    return out


def agent_speed(names, config: RulesConfig, count: int) -> None:
    data = recorded_decisions(config, count)
    print(f"agents: act() alone on {len(data)} recorded {config.num_seats}-seat decisions")
    for name in names:
        agent = make_agent(name, config, seed=0)
        reps = 1 if name == "search" else 3
        best = float("inf")
        for _ in range(reps):
            agent.reset()
            start = time.perf_counter()
            for obs, mask in data:
                agent.act(obs, mask)
            best = min(best, time.perf_counter() - start)
        print(f"  {name:14s} {len(data) / best:10,.0f} decisions/s")


def chain_speed(count: int) -> None:
    ts = tile_set(12)
    planner = ChainPlanner(ts)
    rng = random.Random(0)
    pool = [t for t in range(ts.num_tiles) if t != ts.double_of[12]]
    hands = [ts.mask_of(rng.sample(pool, 15)) for _ in range(count)]
    nodes = []
    start = time.perf_counter()
    for hand in hands:
        planner.clear()
        before = planner.nodes
        planner.longest(hand, 12)
        nodes.append(planner.nodes - before)
    elapsed = time.perf_counter() - start
    print(
        f"chain search: {count} fresh 15-tile double-12 hands: {count / elapsed:,.0f} searches/s, "
        f"nodes mean {statistics.mean(nodes):.0f}, max {max(nodes)} "
        f"(budget {planner.node_budget})"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--agents", nargs="+", default=["random", "greedy", "longest-train", "longest-train"]
    )
    parser.add_argument("--games", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--workers", type=int, default=None)
    parser.add_argument("--rules", nargs="*", default=[])
    parser.add_argument("--decisions", type=int, default=3000)
    args = parser.parse_args()
    config = parse_rules(args.rules, 4)
    tournament_speed(args.agents, config, args.games, args.repeats, args.workers)
    agent_speed(
        ["random", "greedy", "longest-train", "search"],
        parse_rules(["num_rounds=1"], 4),
        args.decisions,
    )
    chain_speed(2000)


if __name__ == "__main__":
    main()
