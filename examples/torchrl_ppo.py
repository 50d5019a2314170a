"""Train a masked PPO agent with TorchRL against ``longest-train``, then rate it in our tournament.

    .venv-torchrl/bin/python examples/torchrl_ppo.py            # ~10 minutes on one busy core
    .venv-torchrl/bin/python examples/torchrl_ppo.py --frames 1000000 --out runs/torchrl

Laid out like TorchRL's PPO tutorial: the environment
(:func:`mt_env.integrations.torchrl.make_env`: one learning seat, a random seat each match,
against ``longest-train`` opponents, observations with the project's policy features and a
bool ``"action_mask"``), a masked categorical actor (:func:`~mt_env.integrations.torchrl.make_actor`)
and an MLP critic, a ``Collector`` gathering ``--batch`` frames at a time, ``GAE``
advantages, and ``ClipPPOLoss`` minimised over a few epochs of minibatches. The actor is
saved to ``OUT/actor.pt`` and played, greedily and within the mask, in duplicate-deal
tournaments (:func:`~mt_env.agents.evaluation.report.evaluation_table`) against
``random`` and against ``longest-train``, through the agent spec
``py:mt_env.integrations.torchrl:agent:OUT/actor.pt`` — the same spec works in
``mt-tournament`` and ``mt-play``. Needs the ``torchrl`` extra (``.venv-torchrl``).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import torch
from torch import nn
from torchrl.collectors import Collector
from torchrl.data import LazyTensorStorage, ReplayBuffer
from torchrl.data.replay_buffers.samplers import SamplerWithoutReplacement
from torchrl.envs import RewardSum
from torchrl.modules import MLP, ValueOperator
from torchrl.objectives import ClipPPOLoss
from torchrl.objectives.value import GAE

from mt_env.agents.evaluation.report import evaluation_table
from mt_env.config import RulesConfig
from mt_env.integrations.torchrl import HIDDEN, make_actor, make_env, save_actor

OPPONENT = "longest-train"
GAMMA, LAMBDA = 0.99, 0.95
CLIP_EPSILON, ENTROPY_COEF = 0.2, 0.01
EPOCHS, MINIBATCH, LEARNING_RATE, MAX_GRAD_NORM = 5, 256, 3e-4, 1.0


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seats", type=int, default=2, help="seats at the table (default 2)")
    parser.add_argument(
        "--frames",
        type=int,
        default=44 * 2048,
        help="learner decisions to train on (default 90112: 44 updates of 2048)",
    )
    parser.add_argument("--batch", type=int, default=2048, help="frames per PPO update")
    parser.add_argument("--out", type=Path, default=Path("runs/torchrl_ppo"), help="folder")
    parser.add_argument("--eval-games", type=int, default=200, help="games per evaluation")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    for name in ("frames", "batch", "eval_games"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be a positive integer")
    if args.frames < args.batch:
        parser.error(f"--frames ({args.frames}) must be at least --batch ({args.batch})")
    return args


def make_critic(env) -> ValueOperator:
    """V(observation): an MLP of the actor's width."""
    net = MLP(
        in_features=env.observation_spec["observation"].shape[-1],
        out_features=1,
        num_cells=list(HIDDEN),
        activation_class=nn.Tanh,
    )
    return ValueOperator(net, in_keys=["observation"])


def train(env, actor, critic, frames: int, batch: int) -> int:
    """PPO on ``env`` (:func:`make_env` plus ``RewardSum``) for ``frames`` learner decisions,
    ``batch`` at a time; prints a line per update and returns the frames trained on."""
    collector = Collector(
        env,
        actor,
        frames_per_batch=batch,
        total_frames=frames,
        auto_register_policy_transforms=False,  # a feed-forward actor needs no InitTracker
    )
    buffer = ReplayBuffer(storage=LazyTensorStorage(batch), sampler=SamplerWithoutReplacement())
    advantage = GAE(gamma=GAMMA, lmbda=LAMBDA, value_network=critic, average_gae=True)
    loss_module = ClipPPOLoss(
        actor_network=actor,
        critic_network=critic,
        clip_epsilon=CLIP_EPSILON,
        entropy_coeff=ENTROPY_COEF,
        critic_coeff=1.0,
        loss_critic_type="smooth_l1",
    )
    optimizer = torch.optim.Adam(loss_module.parameters(), LEARNING_RATE)
    minibatch = min(MINIBATCH, batch)

    start, done_frames = time.perf_counter(), 0
    returns: list[float] = []  # one per finished match
    for data in collector:
        done_frames += data.numel()
        ended = data["next", "done"].squeeze(-1)
        returns += data["next", "episode_reward"][ended].squeeze(-1).tolist()
        for _ in range(EPOCHS):
            with torch.no_grad():
                advantage(data)  # recomputed each epoch, with the critic being trained
            buffer.extend(data.reshape(-1))
            for _ in range(batch // minibatch):
                losses = loss_module(buffer.sample(minibatch))
                loss = losses["loss_objective"] + losses["loss_critic"] + losses["loss_entropy"]
                loss.backward()
                nn.utils.clip_grad_norm_(loss_module.parameters(), MAX_GRAD_NORM)
                optimizer.step()
                optimizer.zero_grad()
        collector.update_policy_weights_()
        recent = returns[-100:]
        mean = f"{sum(recent) / len(recent):+.3f} ({len(recent)} matches)" if recent else "-"
        print(
            f"frames {done_frames:>8d}  matches {len(returns):>4d}  mean return (last 100) "
            f"{mean}  {time.perf_counter() - start:6.0f} s",
            flush=True,
        )
    collector.shutdown()
    elapsed = time.perf_counter() - start
    print(f"trained on {done_frames} frames in {elapsed:.0f} s ({done_frames / elapsed:.0f}/s)")
    return done_frames


def evaluate(path: Path, args: argparse.Namespace) -> None:
    """Our duplicate tournament against each baseline (one core: the machine is shared)."""
    spec = f"py:mt_env.integrations.torchrl:agent:{path}"
    config = RulesConfig(num_seats=args.seats)
    print(
        evaluation_table(spec, config, ("random", OPPONENT), args.eval_games, args.seed, workers=1)
    )


def main() -> None:
    args = parse_args()
    torch.set_num_threads(1)  # small networks: more threads only contend for the cores
    torch.manual_seed(args.seed)
    env = make_env(num_seats=args.seats, opponents=OPPONENT, seed=args.seed)
    env.append_transform(RewardSum())  # "episode_reward": each match's return, for the log
    actor = make_actor(env.config)  # MLP logits, masked to the legal actions
    critic = make_critic(env)
    train(env, actor, critic, args.frames, args.batch)
    path = save_actor(actor, args.out / "actor.pt", env.config)
    print(f"saved {path}")
    evaluate(path, args)


if __name__ == "__main__":
    main()
