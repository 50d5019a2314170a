"""How much of a round's return is the deal's luck? The premise of ``train.py --duplicates``.

    .venv/bin/python benchmarks/duplicate_variance.py [--seats 2] [--checkpoint PATH]
        [--copies 4] [--rounds 4000] [--opponents longest-train=1] [--seed 5]

Plays rounds with the trainer's own collector in duplicate (``--copies`` copies of every
match: the same deals, boneyard order, seats and opponents), the checkpoint's policy
sampling its moves in one seat, the default ``score_zero_sum`` reward, each round its own
episode. For ``--rounds`` rounds that every copy finished it prints, of the learner's round
return:

- the variance over all copies and rounds (what GAE's advantages carry, less the little a
  critic explains: docs/experiments.md §3.10);
- the mean variance *within* a round's copies (what is left once the deal's luck cancels:
  only the policy's own sampled moves part the copies);
- the variance of the leave-one-out advantages the trainer uses (return minus the other
  copies' mean), the share of rounds whose copies all scored the same (no signal), and the
  share of decisions every copy made alike before the copies parted (advantage 0).
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from mt_env import RulesConfig
from mt_env.agents.ppo.checkpoint import load_checkpoint, pair_width
from mt_env.agents.ppo.rollout import Collector, RolloutSpec, parse_opponent_mix


class _Returns(Collector):
    """The collector, keeping every copy's round return as the copy finishes the round."""

    def __init__(self, spec: RolloutSpec) -> None:
        self.rounds: dict[tuple, list[float]] = {}
        super().__init__(spec)

    def _end_episode(self, g, round_index: int) -> None:
        for seat in g.streams:
            self.rounds.setdefault((*g.plan_key, round_index, seat), []).append(g.returns[seat])
        super()._end_episode(g, round_index)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--seats", type=int, default=2)
    p.add_argument("--checkpoint", default="", help="default: checkpoints/default-{seats}seat.pt")
    p.add_argument("--copies", type=int, default=4)
    p.add_argument("--rounds", type=int, default=4000)
    p.add_argument("--opponents", default="longest-train=1")
    p.add_argument("--seed", type=int, default=5)
    args = p.parse_args()
    if args.copies < 2 or args.rounds < 1:
        p.error("--copies must be at least 2 and --rounds at least 1")

    rules = RulesConfig(num_seats=args.seats)
    path = args.checkpoint or f"checkpoints/default-{args.seats}seat.pt"
    data = load_checkpoint(path, rules)
    spec = RolloutSpec(
        rules=rules,
        num_games=16 * args.copies,
        seed=args.seed,
        reward="score_zero_sum",
        reward_scale=0.01,
        round_is_episode=True,
        learner_seats=1,
        opponent_mix=parse_opponent_mix(args.opponents),
        features=data["features"],
        hidden_sizes=tuple(data["hidden_sizes"]),
        pair_hidden=pair_width(data["model"]),
        gamma=1.0,
        gae_lambda=0.95,
        duplicates=args.copies,
    )
    collector = _Returns(spec)
    t0, decisions, alike_decisions = time.time(), 0, 0
    while sum(len(r) == args.copies for r in collector.rounds.values()) < args.rounds:
        adv = collector.collect(data["model"], 4096)["advantages"]
        decisions += len(adv)
        alike_decisions += int((adv == 0).sum())
    done = [r for r in collector.rounds.values() if len(r) == args.copies][: args.rounds]
    returns = np.array(done) / spec.reward_scale  # pips: the round's zero-sum score
    k = args.copies
    within = returns.var(axis=1, ddof=1).mean()
    loo = returns - (returns.sum(axis=1, keepdims=True) - returns) / (k - 1)
    alike = (returns == returns[:, :1]).all(axis=1).mean()
    print(f"{path}: {len(done)} rounds x {k} copies vs {args.opponents}, {time.time() - t0:.0f} s")
    print(
        f"variance of the round's return (pips^2): over all rounds {returns.var(ddof=1):.1f}; "
        f"within a round's copies {within:.1f} ({within / returns.var(ddof=1):.1%} of it)"
    )
    print(
        f"leave-one-out advantage variance {loo.var():.1f}; copies all alike in {alike:.1%} "
        f"of the rounds"
    )
    print(
        f"{alike_decisions:,} of {decisions:,} decisions ({alike_decisions / decisions:.1%}) made "
        "alike by every copy before the copies parted: advantage 0"
    )


if __name__ == "__main__":
    main()
