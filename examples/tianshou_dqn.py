"""Train Tianshou's DQN against ``longest-train``, then rate it in our tournament.

    .venv-tianshou/bin/python examples/tianshou_dqn.py            # ~10 minutes on one core
    .venv-tianshou/bin/python examples/tianshou_dqn.py --steps 1000000 --out runs/tianshou

DQN, because in Tianshou 2.x the Q-learning policies are the ones that honour the action
mask (``batch.obs.mask``: greedy action, epsilon-greedy exploration and the double-DQN
target all stay among the legal moves); its actor-critic policies ignore it. The learner
takes a random seat each match against ``longest-train`` opponents
(:func:`mt_env.integrations.tianshou.make_env`: observations with the project's policy
features, the mask where Tianshou reads it). The policy is saved to ``OUT/dqn.pt`` and
played, greedily and within the mask, in duplicate-deal tournaments
(:func:`~mt_env.agents.evaluation.report.evaluation_table`) against ``random`` and
against ``longest-train``, through the agent spec
``py:mt_env.integrations.tianshou:agent:OUT/dqn.pt`` — the same spec works in
``mt-tournament`` and ``mt-play``. Needs the ``tianshou`` extra (``.venv-tianshou``).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import torch
from tianshou.algorithm import DQN
from tianshou.algorithm.optim import AdamOptimizerFactory
from tianshou.data import Collector, CollectStats, VectorReplayBuffer
from tianshou.env import DummyVectorEnv
from tianshou.trainer import OffPolicyTrainerParams
from tianshou.utils import LazyLogger

from mt_env.agents.evaluation.report import evaluation_table
from mt_env.config import RulesConfig
from mt_env.integrations.tianshou import make_env, make_policy, save_policy

OPPONENT = "longest-train"
NUM_ENVS = 8  # matches played side by side: one batched forward pass serves them all
EPOCHS = 10  # progress lines; each epoch is steps / EPOCHS env steps
HYPERPARAMETERS = dict(
    lr=3e-4,
    gamma=0.99,
    n_step=3,
    target_update_freq=500,  # gradient steps between target-network copies
    batch_size=128,
    buffer_size=50_000,
    steps_per_collect=32,  # env steps (over all envs) between updates...
    updates_per_step=0.25,  # ...and gradient steps per env step
    eps_start=0.5,  # epsilon-greedy among legal moves, decayed linearly...
    eps_end=0.02,
    eps_decay_fraction=0.5,  # ...over this fraction of the steps
)


class Progress(LazyLogger):
    """Prints, after each epoch, the steps so far and how the epoch's matches went: the mean
    match return (in 2 seats, > 0 exactly when the learner finished with fewer points,
    i.e. won) and the share of matches with a positive return."""

    def __init__(self, policy) -> None:
        super().__init__()
        self.policy = policy
        self.returns: list[float] = []
        self.matches = 0
        self.started = time.perf_counter()

    def log_training_data(self, log_data: dict, step: int) -> None:
        self.returns.extend(np.asarray(log_data["returns"], dtype=float).ravel())

    def save_data(self, epoch: int, env_step: int, update_step: int, *args) -> None:
        returns = np.array(self.returns)
        self.matches += len(returns)
        mean = f"{returns.mean():+.3f}" if len(returns) else "n/a"
        won = f"{(returns > 0).mean():.0%}" if len(returns) else "n/a"
        print(
            f"epoch {epoch:2d}: {env_step:7d} steps, {self.matches:5d} matches, "
            f"eps {self.policy.eps_training:.2f}, mean return {mean}, return > 0 in {won}, "
            f"{(time.perf_counter() - self.started) / 60:.1f} min",
            flush=True,
        )
        self.returns = []


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seats", type=int, default=2, help="seats at the table (default 2)")
    parser.add_argument(
        "--steps",
        type=int,
        default=50_000,
        help="learner decisions to train on (default 50000: ~10 minutes on one busy core)",
    )
    parser.add_argument("--out", default="runs/tianshou_dqn", help="folder for dqn.pt")
    parser.add_argument(
        "--eval-games", type=int, default=200, help="games against each opponent (default 200)"
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--workers", type=int, default=1, help="tournament processes (default 1)")
    return parser.parse_args()


def train(args: argparse.Namespace) -> Path:
    hp = HYPERPARAMETERS
    envs = DummyVectorEnv(
        [lambda i=i: make_env(args.seats, OPPONENT, seed=args.seed + i) for i in range(NUM_ENVS)]
    )
    config = envs.get_env_attr("config")[0]
    torch.manual_seed(args.seed)
    np.random.seed(args.seed)  # Tianshou's epsilon-greedy and replay sampling use numpy's
    policy = make_policy(config, eps_training=hp["eps_start"])
    dqn = DQN(
        policy=policy,
        optim=AdamOptimizerFactory(lr=hp["lr"]),
        gamma=hp["gamma"],
        n_step_return_horizon=hp["n_step"],
        target_update_freq=hp["target_update_freq"],
    )
    buffer = VectorReplayBuffer(hp["buffer_size"], NUM_ENVS)
    collector = Collector[CollectStats](dqn, envs, buffer, exploration_noise=True)
    collector.reset()
    decay_steps = hp["eps_decay_fraction"] * args.steps

    def training_fn(epoch: int, env_step: int) -> None:
        done = min(env_step / decay_steps, 1.0)
        policy.set_eps_training(hp["eps_start"] + done * (hp["eps_end"] - hp["eps_start"]))

    result = dqn.run_training(
        OffPolicyTrainerParams(
            training_collector=collector,
            max_epochs=EPOCHS,
            epoch_num_steps=max(1, args.steps // EPOCHS),
            collection_step_num_env_steps=hp["steps_per_collect"],
            update_step_num_gradient_steps_per_sample=hp["updates_per_step"],
            batch_size=hp["batch_size"],
            training_fn=training_fn,
            test_in_training=False,
            logger=Progress(policy),
            show_progress=False,
        )
    )
    print(
        f"trained on {result.train_step} steps ({result.train_episode} matches, "
        f"{result.update_step} update steps) in {result.timing.total_time / 60:.1f} min"
    )
    return save_policy(policy, Path(args.out) / "dqn.pt")


def evaluate(path: Path, args: argparse.Namespace) -> None:
    """Our duplicate tournament against each baseline."""
    spec = f"py:mt_env.integrations.tianshou:agent:{path}"
    config = RulesConfig(num_seats=args.seats)
    games, seed, workers = args.eval_games, args.seed, args.workers
    print(evaluation_table(spec, config, ("random", OPPONENT), games, seed, workers=workers))


def main() -> None:
    args = parse_args()
    torch.set_num_threads(1)  # a small MLP: more threads only contend for the cores
    path = train(args)
    print(f"saved {path}")
    evaluate(path, args)


if __name__ == "__main__":
    main()
