"""Where a policy and its teacher part: agreement by phase, on the teacher's games and its own.

    .venv/bin/python benchmarks/clone_agreement.py --checkpoint PATH [--teacher search]
        [--path teacher|student] [--games 300] [--seats 2] [--seed 0]

Seat 0 is the pair under study, every other seat ``--opponent`` (``longest-train``). At each
of seat 0's decisions with more than one legal action, the checkpoint's argmax (the ``ckpt:``
agent), the teacher and a second copy of the teacher (another random seed: the teacher's own
noise) each choose; ``--path teacher`` plays the teacher's choice (the states behaviour
cloning learns from), ``--path student`` the checkpoint's (the states it meets when it plays;
the teachers still see every decision, so their memory of the round stays whole). Printed per
phase — the free first turn (R11), where a seat lays its first train, and every other
decision — how often the checkpoint and the teacher's second copy agree with the teacher;
then the win rate of the seat-0 player against the opponents, 95% Wilson interval, on the
same deals for either path. The agreement of the teacher with itself bounds what any
imitation can reach; a mode-finding imitator would agree more than the second copy does.
docs/experiments.md section 3.14.
"""

from __future__ import annotations

import argparse
import time

from mt_env import RulesConfig
from mt_env.agents import make_agent
from mt_env.agents.base import act_in_match
from mt_env.agents.evaluation.stats import wilson
from mt_env.agents.evaluation.tournament import derive_seed
from mt_env.match import Match
from mt_env.observation import ObservationEncoder
from mt_env.rewards import match_rewards


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--checkpoint", required=True, help="the policy (a train.py checkpoint)")
    parser.add_argument("--teacher", default="search", help="agent spec of the teacher")
    parser.add_argument("--opponent", default="longest-train", help="agent spec of the other seats")
    parser.add_argument("--path", choices=("teacher", "student"), default="teacher")
    parser.add_argument("--games", type=int, default=300)
    parser.add_argument("--seats", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    config = RulesConfig(num_seats=args.seats)
    enc = ObservationEncoder(config)
    policy = make_agent("ckpt:" + args.checkpoint, config)
    teacher = make_agent(args.teacher, config)
    twin = make_agent(args.teacher, config)
    opponents = [make_agent(args.opponent, config) for _ in range(args.seats - 1)]
    counts = {"free first turn": [0, 0, 0], "other": [0, 0, 0]}  # decisions, policy, twin
    wins = 0.0
    start = time.perf_counter()
    for game in range(args.games):
        for i, agent in enumerate((policy, teacher, twin, *opponents)):
            agent.seed(derive_seed(args.seed, game, i))
            agent.reset()
        match = Match(config, seed=derive_seed(args.seed, game))
        while not match.is_over:
            seat = match.state.seat
            mask = enc.action_mask(match, seat)
            if seat:
                action = act_in_match(opponents[seat - 1], enc, match, seat, mask)
            else:
                phase = "free first turn" if match.state.in_free_first_turn else "other"
                mine, best, second = (
                    int(act_in_match(a, enc, match, 0, mask)) for a in (policy, teacher, twin)
                )
                if mask.sum() > 1:
                    row = counts[phase]
                    row[0] += 1
                    row[1] += mine == best
                    row[2] += second == best
                action = best if args.path == "teacher" else mine
            match.apply(match.state.codec.to_move(int(action), seat))
        wins += match_rewards("win", match.places())[0]  # a win shared by tied first places
    seconds = time.perf_counter() - start
    player = args.teacher if args.path == "teacher" else "the checkpoint"
    print(
        f"{args.games} games, {args.seats} seats, seat 0 plays {player}'s choices; {seconds:.0f} s"
    )
    for phase, (n, agree, twin_agree) in counts.items():
        print(
            f"{phase}: {n} decisions with a choice; the checkpoint agrees with {args.teacher} on "
            f"{agree / max(n, 1):.1%}, a second {args.teacher} on {twin_agree / max(n, 1):.1%}"
        )
    rate = wins / args.games
    lo, hi = wilson(rate, args.games)
    print(f"seat 0 won {rate:.1%} [{lo:.1%}, {hi:.1%}] against {args.opponent}")


if __name__ == "__main__":
    main()
