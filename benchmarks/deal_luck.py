"""How much of a round's return is the deal's luck? (a duplicate-deal control variate's worth)

    .venv/bin/python benchmarks/deal_luck.py [--seats 2] [--deals 150] [--agent ckpt:PATH]
        [--opponent longest-train] [--sampled] [--seed 11]

Plays every deal (a match seed) ``num_seats`` times with the roles rotated, as a duplicate
tournament does: ``--agent`` in one role, ``--opponent`` in the others, so that the agent
holds each hand of each round once. For every round and rotation it takes the agent's
``score_zero_sum`` reward (its round score against the others' mean, as the trainer's default
reward) ``own``, and the sum of the agent's rewards in the deal's other rotations
``others``. A trainer could add ``c * others`` to each round's return (it is independent of
this game's moves given the deal, so the policy gradient stays unbiased); the share of the
return's variance that leaves is at best ``corr(own, others)**2``, at ``c* = -cov / var``.
Prints both, and the share left at ``c = 1`` (the plain duplicate score). ``--sampled``: the
agent samples from its policy as in training rollouts (default: its greedy action, as in
tournaments). The default agent is ``checkpoints/default-{seats}seat.pt``.
"""

from __future__ import annotations

import argparse
import random
import time

import numpy as np

from mt_env import Match, RulesConfig
from mt_env.agents import make_agent
from mt_env.agents.base import act_in_match
from mt_env.agents.ppo.policy import PPOAgent
from mt_env.observation import ObservationEncoder
from mt_env.rewards import round_rewards


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--seats", type=int, default=2)
    p.add_argument("--deals", type=int, default=150, help="match seeds, each played --seats times")
    p.add_argument("--agent", default="", help="default: ckpt:checkpoints/default-{seats}seat.pt")
    p.add_argument("--opponent", default="longest-train")
    p.add_argument("--sampled", action="store_true", help="the agent samples its moves")
    p.add_argument("--seed", type=int, default=11)
    args = p.parse_args()

    n = args.seats
    config = RulesConfig(num_seats=n)
    enc = ObservationEncoder(config)
    spec = args.agent or f"ckpt:checkpoints/default-{n}seat.pt"
    if args.sampled:
        if not spec.startswith("ckpt:"):
            p.error("--sampled needs a ckpt:PATH agent")
        agent = PPOAgent.from_checkpoint(spec[5:], config, seed=args.seed, deterministic=False)
    else:
        agent = make_agent(spec, config, seed=args.seed)
    rng = random.Random(args.seed)
    own, others = [], []
    t0 = time.time()
    for _ in range(args.deals):
        seed = rng.randrange(2**63)
        rewards = []  # rewards[k][r]: the agent's reward in round r with the roles rotated by k
        for k in range(n):
            seats = [agent if s == k else make_agent(args.opponent, config, seed=rng.randrange(2**31))
                     for s in range(n)]
            for a in seats:
                a.reset()
            m, per_round = Match(config, seed=seed), []
            while not m.is_over:
                seat = m.state.seat
                action = act_in_match(seats[seat], enc, m, seat, enc.action_mask(m, seat))
                result = m.apply(m.state.codec.to_move(action, seat))
                if result is not None:
                    per_round.append(round_rewards("score_zero_sum", config, result, 1.0)[k])
            rewards.append(per_round)
        r = np.asarray(rewards)  # (n, rounds)
        for k in range(n):
            own.extend(r[k])
            others.extend(r.sum(0) - r[k])
    own_a, oth_a = np.asarray(own), np.asarray(others)
    cov = np.cov(own_a, oth_a)
    corr = cov[0, 1] / np.sqrt(cov[0, 0] * cov[1, 1])
    c_best = -cov[0, 1] / cov[1, 1]
    left_1 = (own_a + oth_a).var() / own_a.var()
    print(f"{spec} ({'sampled' if args.sampled else 'greedy'}) vs {args.opponent}, {n} seats: "
          f"{args.deals} deals x {n} rotations, {len(own_a)} rounds in {time.time() - t0:.0f} s")
    print(f"corr(own, others) = {corr:+.3f}; best c = {c_best:.2f} leaves {1 - corr**2:.1%} of "
          f"the return's variance; c = 1 leaves {left_1:.1%}")


if __name__ == "__main__":
    main()
