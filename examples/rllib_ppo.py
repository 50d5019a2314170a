"""Train RLlib's PPO by self-play (one shared, masking policy), then rate it in our tournament.

    .venv-ray/bin/python examples/rllib_ppo.py                  # ~10 minutes on one core
    .venv-ray/bin/python examples/rllib_ppo.py --minutes 60 --out runs/rllib

Every seat of :class:`mt_env.integrations.rllib.MexicanTrainMultiAgentEnv` is played by
the same RLModule (RLlib's ``ActionMaskingTorchRLModule``,
:func:`~mt_env.integrations.rllib.ppo_config`): self-play, so the model only ever meets
itself while it learns. Training stops after ``--iterations`` PPO iterations or once
``--minutes`` have passed, whichever comes first. The algorithm is saved to ``OUT``
(``algo.save``) and its module played, greedily and within the mask, in duplicate-deal
tournaments (:func:`~mt_env.agents.evaluation.report.evaluation_table`) against
``random`` and against ``longest-train``, through the agent spec
``py:mt_env.integrations.rllib:agent:OUT`` — the same spec works in ``mt-tournament``
and ``mt-play``. Needs the ``rllib`` extra (``.venv-ray``).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import ray
import torch

from mt_env.agents.evaluation.report import evaluation_table
from mt_env.config import RulesConfig
from mt_env.integrations.rllib import SHARED, ppo_config

HYPERPARAMETERS = dict(
    hidden_sizes=(256, 256),
    train_batch_size=4000,
    minibatch_size=500,
    num_epochs=4,
    lr=3e-4,
    gae_lambda=0.95,
    entropy_coeff=0.01,
)


def train(config: RulesConfig, iterations: int | None, minutes: float, out: Path, seed: int):
    """PPO iterations until the budget is spent; saves the algorithm to ``out``."""
    algo = ppo_config(config, seed=seed, **HYPERPARAMETERS).build_algo()
    started = time.perf_counter()
    done = 0
    while (iterations is None or done < iterations) and (
        time.perf_counter() - started < minutes * 60
    ):
        result = algo.train()
        done += 1
        runners, learner = result["env_runners"], result["learners"][SHARED]
        print(
            f"iteration {done:>3}  {int(runners['num_env_steps_sampled_lifetime']):>8,} steps"
            f"  {int(runners['num_episodes_lifetime']):>4} matches"
            f"  {time.perf_counter() - started:5.0f} s  entropy {learner['entropy']:.3f}"
            f"  value explained var {learner['vf_explained_var']:+.2f}",
            flush=True,
        )
    steps = int(result["env_runners"]["num_env_steps_sampled_lifetime"]) if done else 0
    print(f"trained {done} iterations, {steps:,} steps in {time.perf_counter() - started:.0f} s")
    algo.save(str(out.resolve()))
    algo.stop()
    print(f"saved {out}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seats", type=int, default=2, help="seats at the table (default 2)")
    parser.add_argument(
        "--iterations", type=int, default=None, help="PPO iterations (4,000 steps each)"
    )
    parser.add_argument("--minutes", type=float, default=10.0, help="training time budget")
    parser.add_argument("--out", default="runs/rllib_ppo", help="checkpoint folder")
    parser.add_argument("--eval-games", type=int, default=200, help="games per opponent")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    torch.set_num_threads(1)  # small networks: extra threads only contend for the cores
    config = RulesConfig(num_seats=args.seats)
    out = Path(args.out)
    ray.init(num_cpus=1, include_dashboard=False, log_to_driver=False)
    try:
        train(config, args.iterations, args.minutes, out, args.seed)
    finally:
        ray.shutdown()

    spec = f"py:mt_env.integrations.rllib:agent:{out}"  # loads the module without Ray
    opponents = ("random", "longest-train")
    print(evaluation_table(spec, config, opponents, args.eval_games, args.seed, workers=1))


if __name__ == "__main__":
    main()
