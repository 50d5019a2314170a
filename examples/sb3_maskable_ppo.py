"""Train sb3-contrib's MaskablePPO against ``longest-train``, then rate it in our tournament.

    .venv-sb3/bin/python examples/sb3_maskable_ppo.py            # ~10 minutes on one core
    .venv-sb3/bin/python examples/sb3_maskable_ppo.py --timesteps 1000000 --out runs/sb3

The learner takes a random seat each match against ``longest-train`` opponents
(:func:`mt_env.integrations.sb3.make_env`: observations with the project's policy
features, the action mask honoured by MaskablePPO). The model is saved to
``OUT/model.zip`` and played, greedily and within the mask, in duplicate-deal
tournaments (:func:`~mt_env.agents.evaluation.report.evaluation_table`) against
``random`` and against ``longest-train``, through the agent spec
``py:mt_env.integrations.sb3:agent:OUT/model.zip`` — the same spec works in
``mt-tournament`` and ``mt-play``. Needs the ``sb3`` extra (``.venv-sb3``).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import torch
from sb3_contrib import MaskablePPO
from stable_baselines3.common.callbacks import BaseCallback

from mt_env.agents.evaluation.report import evaluation_table
from mt_env.config import RulesConfig
from mt_env.integrations.sb3 import make_env

OPPONENT = "longest-train"
HYPERPARAMETERS = dict(
    n_steps=2048,
    batch_size=256,
    n_epochs=5,
    learning_rate=3e-4,
    gamma=0.95,  # a round (~20 decisions) is the horizon that matters: rounds are dealt anew
    ent_coef=0.01,
    policy_kwargs=dict(net_arch=[256, 256]),
)


class Progress(BaseCallback):
    """Prints, after each rollout, the steps so far and the last 100 matches' results."""

    def __init__(self, total: int) -> None:
        super().__init__()
        self.total = total
        self.started = time.perf_counter()

    def _on_step(self) -> bool:
        return True

    def _on_rollout_end(self) -> None:
        episodes = list(self.model.ep_info_buffer)  # Monitor's, with "places" and "seat"
        if not episodes:
            return
        first = np.mean([ep["places"][ep["seat"]] == 1 for ep in episodes])
        ret = np.mean([ep["r"] for ep in episodes])
        print(
            f"{self.num_timesteps:>9,}/{self.total:,} steps  {time.perf_counter() - self.started:6.0f} s"
            f"  last {len(episodes)} matches vs {OPPONENT}: first place {first:.0%}, "
            f"mean return {ret:+.2f}",
            flush=True,
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seats", type=int, default=2, help="seats at the table (default 2)")
    parser.add_argument("--timesteps", type=int, default=200_000, help="learner decisions")
    parser.add_argument("--out", default="runs/sb3_maskable_ppo", help="folder for model.zip")
    parser.add_argument("--eval-games", type=int, default=200, help="games per opponent")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    torch.set_num_threads(1)  # small networks: extra threads only contend for the cores
    env = make_env(num_seats=args.seats, opponents=OPPONENT, seed=args.seed)
    model = MaskablePPO("MultiInputPolicy", env, seed=args.seed, **HYPERPARAMETERS)
    started = time.perf_counter()
    model.learn(args.timesteps, callback=Progress(args.timesteps))
    print(f"trained {model.num_timesteps:,} steps in {time.perf_counter() - started:.0f} s")
    path = Path(args.out) / "model.zip"
    path.parent.mkdir(parents=True, exist_ok=True)
    model.save(path)
    print(f"saved {path}")

    spec = f"py:mt_env.integrations.sb3:agent:{path}"
    config = RulesConfig(num_seats=args.seats)
    print(
        evaluation_table(spec, config, ("random", OPPONENT), args.eval_games, args.seed, workers=1)
    )


if __name__ == "__main__":
    main()
