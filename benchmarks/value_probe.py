"""How much of a round's return can a value network predict, and do the hidden tiles help?

    .venv/bin/python benchmarks/value_probe.py [--seats 2] [--checkpoint PATH]
        [--decisions 1000000] [--epochs 6] [--seed 5]

Collects ``--decisions`` learner decisions with the trainer's own collector: the checkpoint's
policy sampling its moves in one seat, opponents ``self=0.3,longest-train=0.7``, the
default ``score_zero_sum`` reward, each round its own episode and Monte-Carlo returns
(``gae_lambda = 1``, so the returns do not depend on any value estimate). Then it fits two
value networks of the same size (one hidden layer of 64, Adam) to those returns, one on the
policy trunk's input (what the trained value head sees) and one that also sees the hidden
tiles (the privileged critic's input: the other hands and the boneyard), and prints each
one's explained variance per epoch on the rows it trains on and on the last 20% of the
decisions, which come from other rounds (a random split would put decisions of one round
on both sides, and the networks would look far better than they are by remembering
rounds). It also prints the checkpoint's own value head on all the rows.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch

from mt_env import RulesConfig
from mt_env.agents.ppo.checkpoint import load_checkpoint, pair_width
from mt_env.agents.ppo.policy import build_policy, make_critic
from mt_env.agents.ppo.rollout import Collector, RolloutSpec


def explained(pred: torch.Tensor, target: torch.Tensor) -> float:
    return 1.0 - ((target - pred).var() / target.var()).item()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--seats", type=int, default=2)
    p.add_argument("--checkpoint", default="", help="default: checkpoints/default-{seats}seat.pt")
    p.add_argument("--decisions", type=int, default=1_000_000)
    p.add_argument("--epochs", type=int, default=6)
    p.add_argument("--seed", type=int, default=5)
    args = p.parse_args()

    torch.manual_seed(args.seed)
    rules = RulesConfig(num_seats=args.seats)
    path = args.checkpoint or f"checkpoints/default-{args.seats}seat.pt"
    data = load_checkpoint(path, rules)
    policy = build_policy(data)
    hidden = tuple(data["hidden_sizes"])
    spec = RolloutSpec(
        rules=rules, num_games=64, seed=args.seed, reward="score_zero_sum", reward_scale=0.01,
        round_is_episode=True, learner_seats=1, opponent_mix={"self": 0.3, "longest-train": 0.7},
        features=data["features"], hidden_sizes=hidden, pair_hidden=pair_width(data["model"]),
        gamma=1.0, gae_lambda=1.0,
        critic="privileged",  # records the hidden tiles with each decision
    )
    collector, critic = Collector(spec), make_critic(rules, data["features"], hidden)
    t0, parts, total = time.time(), [], 0
    while total < args.decisions:
        batch = collector.collect(policy.state_dict(), 8192, critic.state_dict())
        batch.pop("stats")
        parts.append({k: batch[k] for k in ("obs", "masks", "returns", "priv")})
        total += len(batch["returns"])
    rows = {k: np.concatenate([b[k] for b in parts]) for k in parts[0]}
    y = torch.from_numpy(rows["returns"])
    print(f"{total:,} decisions in {time.time() - t0:.0f} s; return variance {y.var().item():.4f}")

    obs = torch.from_numpy(rows["obs"])
    with torch.no_grad():
        value_head = policy(obs, torch.from_numpy(rows["masks"]))[1]
        trunk = policy.trunk_input(obs)
    print(f"the checkpoint's value head: explained variance {explained(value_head, y):.3f}")
    n_test = total // 5
    train, test = torch.arange(total - n_test), torch.arange(total - n_test, total)
    inputs = {"observation": trunk, "observation + hidden tiles": torch.cat([trunk, torch.from_numpy(rows["priv"])], 1)}
    for name, x in inputs.items():
        net = torch.nn.Sequential(torch.nn.Linear(x.shape[1], 64), torch.nn.ReLU(), torch.nn.Linear(64, 1))
        opt = torch.optim.Adam(net.parameters(), lr=3e-4)
        for epoch in range(args.epochs):
            for mb in train[torch.randperm(len(train))].split(1024):
                loss = ((net(x[mb]).squeeze(-1) - y[mb]) ** 2).mean()
                opt.zero_grad()
                loss.backward()
                opt.step()
            with torch.no_grad():
                seen = train[: len(test)]
                fit = explained(net(x[seen]).squeeze(-1), y[seen])
                held = explained(net(x[test]).squeeze(-1), y[test])
            print(f"{name}: epoch {epoch + 1}, explained variance {fit:.3f} on training rows, "
                  f"{held:.3f} on other rounds")


if __name__ == "__main__":
    main()
