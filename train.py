"""PPO self-play for Mexican Train, readable top to bottom (in the spirit of CleanRL's ppo.py).

    python train.py --config quick                    # a few minutes, smoke-sized
    python train.py --config default-4seat            # the 4-seat preset
    python train.py --config default-2seat --lr 1e-4  # any option overridden on the command line
    python train.py --resume runs/NAME/checkpoint.pt  # continue an interrupted run
    python train.py --config quick --help             # every option with its doc

Steps: (1) options from a preset in ``configs/`` plus command-line overrides;
(2) seeding, run folder, TensorBoard + CSV logs; (3) the policy, its optimizer,
and rollout workers (:mod:`agents.rollout`: per-seat streams, rewards credited to
each seat's last decision, GAE per seat); (4) loop: collect, PPO update with the
action mask re-applied, log, snapshot into the opponent pool, evaluate against
the baselines (keeping the best checkpoint), checkpoint atomically; (5) a final
evaluation table against every baseline.
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import json
import math
import os
import random
import sys
import time
import tomllib
import typing
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
import tyro
from torch.utils.tensorboard import SummaryWriter
from tqdm import tqdm

from agents.ppo import (
    CHECKPOINT_FORMAT,
    CHECKPOINT_VERSION,
    CheckpointError,
    layout,
    load_checkpoint,
    make_critic,
    make_policy,
    save_checkpoint,
)
from agents.rollout import Collector, CollectorProcess, RolloutSpec
from mt_env.config import RulesConfig
from mt_env.rewards import check_reward_mode

CONFIG_DIR = Path(__file__).resolve().parent / "configs"
CRITICS = ("observation", "privileged")

# The rules options as the trainer takes them: RulesConfig's fields with their declared
# defaults (None = "resolve by R3/R5"), so overriding num_seats re-derives set and hand size.
_RULE_HINTS = typing.get_type_hints(RulesConfig)
RulesOptions = dataclasses.make_dataclass(
    "RulesOptions",
    [(f.name, _RULE_HINTS[f.name], field(default=f.default)) for f in dataclasses.fields(RulesConfig)],
)


@dataclass
class TrainConfig:
    """PPO self-play trainer options. Presets in configs/*.toml use exactly these keys."""

    exp_name: str = "mt"
    """run name; the run folder is runs/<exp_name>-seed<seed>"""
    seed: int = 1
    """seed of everything: torch, deals, opponents, seat draws"""
    total_steps: int = 2_000_000
    """learner decisions to train on"""
    time_limit_minutes: float = 0.0
    """stop after this much wall time (0 = no limit); the final checkpoint is still written"""
    num_workers: int = 2
    """rollout worker processes (0 = collect in the main process)"""
    games_per_worker: int = 32
    """matches played at once by each collector (batched policy inference)"""
    rollout_steps: int = 4096
    """learner transitions per PPO update (all collectors together)"""
    learning_rate: float = 5e-4
    """Adam learning rate"""
    anneal_lr: bool = True
    """anneal the learning rate linearly to 0 over total_steps (or time_limit_minutes if sooner)"""
    gamma: float = 1.0
    """discount (per decision of the same seat)"""
    gae_lambda: float = 0.95
    """GAE lambda"""
    num_minibatches: int = 4
    """minibatches per epoch"""
    update_epochs: int = 4
    """epochs over each batch"""
    norm_adv: bool = True
    """normalise advantages per minibatch"""
    clip_coef: float = 0.2
    """PPO clip coefficient"""
    clip_vloss: bool = True
    """clip the value loss as in PPO's reference implementation"""
    ent_coef: float = 0.01
    """entropy bonus"""
    vf_coef: float = 0.5
    """value loss coefficient"""
    max_grad_norm: float = 0.5
    """global gradient-norm clip"""
    hidden_sizes: tuple[int, ...] = (128, 128)
    """MLP trunk widths (of the privileged critic too)"""
    critic: str = "observation"
    """value function: observation (a head on the policy trunk) | privileged (a separate
    network that also sees the other hands and the boneyard; training only, the policy
    still sees only its observation)"""
    features: str = "pairs"
    """policy input features: none | planning | pairs (agents/features.py)"""
    reward: str = "score_zero_sum"
    """reward scheme of mt_env.rewards: score | score_zero_sum | rank | win"""
    reward_scale: float = 0.01
    """multiplier of score-based rewards"""
    round_is_episode: bool = True
    """end each seat's return at the round's end (round rewards are independent of later rounds)"""
    learner_seats: int = 1
    """seats per match played by the learning policy; the rest come from opponent_mix"""
    opponent_mix: str = "self=0.4,past=0.2,longest-train=0.4"
    """opponent proportions NAME=WEIGHT,...: self (learning policy), past (pool snapshot), a baseline"""
    pretrain_teacher: str = ""
    """scripted agent (e.g. search) the policy imitates before PPO starts; empty = none"""
    pretrain_decisions: int = 200_000
    """teacher decisions recorded for that behaviour cloning (forced moves excluded)"""
    pretrain_epochs: int = 4
    """epochs of behaviour cloning over those decisions"""
    snapshot_every: int = 10
    """updates between snapshots added to the opponent pool"""
    pool_size: int = 8
    """snapshots kept in the pool (oldest dropped)"""
    eval_every: int = 25
    """updates between evaluations (0 = only at the end)"""
    eval_games: int = 200
    """games per evaluation during training (duplicate deals, rotated seats)"""
    eval_opponent: str = "longest-train"
    """baseline the periodic evaluation plays against (the learner takes one seat)"""
    final_eval_games: int = 400
    """games per baseline in the final evaluation table"""
    final_eval_opponents: tuple[str, ...] = ("random", "greedy", "longest-train")
    """baselines of the final evaluation table"""
    checkpoint_every: int = 10
    """updates between checkpoints"""
    run_dir: str = "runs"
    """parent folder of run folders"""
    resume: str = ""
    """checkpoint to resume from (its run folder and options are reused)"""
    progress: bool = True
    """show a progress bar"""
    rules: RulesOptions = field(default_factory=RulesOptions)  # type: ignore[valid-type]
    """the rules of the game trained on (mt_env.config.RulesConfig options)"""

    def rules_config(self) -> RulesConfig:
        return RulesConfig(**dataclasses.asdict(self.rules))

    def validate(self) -> None:
        check_reward_mode(self.reward)
        if self.critic not in CRITICS:
            raise ValueError(f"critic={self.critic!r}: expected one of {CRITICS}")
        self.rules_config()
        layout(self.rules_config(), self.features)
        if not 1 <= self.learner_seats <= self.rules_config().num_seats:
            raise ValueError(
                f"learner_seats={self.learner_seats}: expected 1..{self.rules_config().num_seats}"
            )
        from agents import make_agent

        for name in self.opponents():
            if name not in ("self", "past"):
                make_agent(name, self.rules_config())  # raises ValueError for unknown names
        if self.pretrain_teacher:
            make_agent(self.pretrain_teacher, self.rules_config())
        for key in ("rollout_steps", "num_minibatches", "update_epochs", "games_per_worker",
                    "pretrain_decisions", "pretrain_epochs"):
            if getattr(self, key) < 1:
                raise ValueError(f"{key}={getattr(self, key)}: expected a positive int")

    def opponents(self) -> dict[str, float]:
        """``opponent_mix`` parsed: {name: weight}; ValueError if malformed."""
        mix = {}
        for part in self.opponent_mix.split(","):
            name, sep, weight = part.strip().partition("=")
            try:
                mix[name.strip()] = float(weight)
            except ValueError:
                sep = ""
            if not sep or not name.strip() or mix.get(name.strip(), -1) < 0:
                raise ValueError(
                    f"opponent_mix={self.opponent_mix!r}: expected NAME=WEIGHT,... with "
                    f"non-negative weights, e.g. 'self=0.5,longest-train=0.5'"
                )
        if sum(mix.values()) <= 0:
            raise ValueError(f"opponent_mix={self.opponent_mix!r}: the weights sum to 0")
        return mix

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


def config_from_dict(data: dict, where: str) -> TrainConfig:
    """A TrainConfig from a preset/checkpoint dict; unknown keys are errors naming them."""
    names = {f.name for f in dataclasses.fields(TrainConfig)}
    unknown = sorted(set(data) - names)
    if unknown:
        raise ValueError(f"{where}: unknown option(s) {unknown}; known options: {sorted(names)}")
    data = dict(data)
    rules = data.pop("rules", {})
    rule_names = {f.name for f in dataclasses.fields(RulesConfig)}
    bad = sorted(set(rules) - rule_names)
    if bad:
        raise ValueError(f"{where}: unknown rules option(s) {bad}; known: {sorted(rule_names)}")
    for key in ("hidden_sizes", "final_eval_opponents"):
        if key in data:
            data[key] = tuple(data[key])
    return TrainConfig(**data, rules=RulesOptions(**rules))


def load_preset(name: str) -> TrainConfig:
    path = Path(name) if name.endswith(".toml") else CONFIG_DIR / f"{name}.toml"
    if not path.is_file():
        known = sorted(p.stem for p in CONFIG_DIR.glob("*.toml"))
        raise ValueError(f"--config {name}: no such preset; known presets: {known}")
    with path.open("rb") as f:
        return config_from_dict(tomllib.load(f), str(path))


def parse_args(argv: list[str]) -> TrainConfig:
    pre = argparse.ArgumentParser(add_help=False)
    pre.add_argument("--config", default="default-4seat")
    pre.add_argument("--resume", default="")
    known, rest = pre.parse_known_args(argv)
    if known.resume:
        data = load_checkpoint(known.resume)
        if "optimizer" not in data:
            raise CheckpointError(f"{known.resume} is a policy-only export: it cannot be resumed")
        base = config_from_dict(data["train_config"], f"checkpoint {known.resume}")
    else:
        base = load_preset(known.config)
    cfg = tyro.cli(TrainConfig, default=base, args=rest, description=__doc__)
    cfg.resume = known.resume
    cfg.validate()
    return cfg


# ------------------------------------------------------------------------------ evaluation
def evaluate(checkpoint: Path, cfg: TrainConfig, opponent: str, games: int, seed: int) -> dict:
    """The policy in one seat, ``opponent`` in every other seat: duplicate deals, rotated
    seats (:func:`agents.tournament.run_tournament`). Returns the policy's result row."""
    from agents.tournament import run_tournament

    rules = cfg.rules_config()
    spec = f"ckpt:{checkpoint}"
    lineup = [spec] + [opponent] * (rules.num_seats - 1)
    result = run_tournament(lineup, rules, games=games, seed=seed, workers=None, progress=False)
    return result.agent_row(spec)


# ------------------------------------------------------------------------------ main
def main(argv: list[str] | None = None) -> Path:
    cfg = parse_args(sys.argv[1:] if argv is None else argv)
    rules = cfg.rules_config()
    lay = layout(rules, cfg.features)

    # -- seeding and run folder
    random.seed(cfg.seed)
    np.random.seed(cfg.seed)
    torch.manual_seed(cfg.seed)
    torch.set_num_threads(max(1, os.cpu_count() or 1))
    run_dir = Path(cfg.resume).parent if cfg.resume else Path(cfg.run_dir) / f"{cfg.exp_name}-seed{cfg.seed}"
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "config.json").write_text(json.dumps(cfg.to_dict(), indent=2))

    # -- policy and optimizer (and trainer state when resuming)
    policy = make_policy(rules, cfg.features, cfg.hidden_sizes)
    # critic=privileged: values from a separate network that also sees the hidden tiles
    critic = make_critic(rules, cfg.features, cfg.hidden_sizes) if cfg.critic == "privileged" else None
    params = list(policy.parameters()) + (list(critic.parameters()) if critic else [])
    optimizer = torch.optim.Adam(params, lr=cfg.learning_rate, eps=1e-5)
    global_step, iteration, env_steps, pool, best = 0, 0, 0, [], -math.inf
    pretrained = False
    if cfg.resume:
        data = load_checkpoint(cfg.resume, rules)
        policy.load_state_dict(data["model"])
        if (data.get("critic") is None) != (critic is None):
            trained_with = "observation" if data.get("critic") is None else "privileged"
            raise CheckpointError(
                f"checkpoint {cfg.resume} was trained with critic={trained_with!r}, not "
                f"{cfg.critic!r}: resume it with --critic {trained_with}"
            )
        if critic is not None:
            critic.load_state_dict(data["critic"])
        optimizer.load_state_dict(data["optimizer"])
        global_step, iteration = data["global_step"], data["iteration"]
        env_steps, best = data["env_steps"], data["best_eval"]
        pool = list(data["pool"])
        pretrained = data.get("pretrained", False)
        torch.set_rng_state(data["torch_rng"])
        print(f"resumed {cfg.resume} at update {iteration}, step {global_step}")

    writer = SummaryWriter(str(run_dir / "tb"), purge_step=iteration + 1 if cfg.resume else None)
    writer.add_text("config", "```\n" + json.dumps(cfg.to_dict(), indent=2) + "\n```")
    log_path = run_dir / "log.csv"
    log_file = log_path.open("a", newline="")
    log = csv.writer(log_file)
    if log_path.stat().st_size == 0:
        log.writerow(["update", "global_step", "env_steps", "sps", "win_rate", "round_score", "opponent_round_score",
                      "policy_loss", "value_loss", "entropy", "approx_kl", "clipfrac", "explained_variance",
                      "eval_win_rate"])

    # -- rollout collectors: one per worker process (or one in-process)
    n_coll = max(1, cfg.num_workers)
    specs = [
        RolloutSpec(
            rules=rules,
            num_games=cfg.games_per_worker,
            seed=cfg.seed * 1000 + k + 7919 * iteration,
            reward=cfg.reward,
            reward_scale=cfg.reward_scale,
            round_is_episode=cfg.round_is_episode,
            learner_seats=cfg.learner_seats,
            opponent_mix=cfg.opponents(),
            features=cfg.features,
            hidden_sizes=cfg.hidden_sizes,
            gamma=cfg.gamma,
            gae_lambda=cfg.gae_lambda,
            critic=cfg.critic,
        )
        for k in range(n_coll)
    ]
    make = CollectorProcess if cfg.num_workers > 0 else Collector
    collectors = [make(spec) for spec in specs]
    if pool:
        for c in collectors:
            c.set_pool(pool)

    def checkpoint_payload() -> dict:
        return {
            "format": CHECKPOINT_FORMAT,
            "format_version": CHECKPOINT_VERSION,
            **{k: lay[k] for k in ("observation_version", "obs_size", "num_actions", "features")},
            "hidden_sizes": list(cfg.hidden_sizes),
            "rules": rules.to_dict(),
            "train_config": cfg.to_dict(),
            "model": policy.state_dict(),
            "critic": critic.state_dict() if critic is not None else None,
            "optimizer": optimizer.state_dict(),
            "global_step": global_step,
            "iteration": iteration,
            "env_steps": env_steps,
            "best_eval": best,
            "pool": pool,
            "pretrained": pretrained,
            "torch_rng": torch.get_rng_state(),
        }

    num_updates = math.ceil(cfg.total_steps / cfg.rollout_steps)
    start = time.time()
    bar = tqdm(total=cfg.total_steps, initial=min(global_step, cfg.total_steps), unit="step",
               disable=not cfg.progress, dynamic_ncols=True)
    last_eval = "-"
    try:
        # -- optional behaviour cloning of a scripted teacher before PPO (counts in the time limit)
        if cfg.pretrain_teacher and not pretrained:
            t0 = time.time()
            demo_specs = [dataclasses.replace(s, teacher=cfg.pretrain_teacher, gae_lambda=1.0,
                                              seed=s.seed + 104729) for s in specs]
            demo_collectors = [make(s) for s in demo_specs]
            share = math.ceil(cfg.pretrain_decisions / len(demo_collectors))
            if cfg.num_workers > 0:
                for c in demo_collectors:
                    c.start_demonstrate(share)
                parts = [c.result() for c in demo_collectors]
                for c in demo_collectors:
                    c.close()
            else:
                parts = [c.demonstrate(share) for c in demo_collectors]
            demo = {k: np.concatenate([p[k] for p in parts]) for k in parts[0] if k != "stats"}
            env_steps += sum(p["stats"]["env_steps"] for p in parts)
            t1 = time.time()
            fit = behaviour_clone(policy, critic, optimizer, demo, cfg)
            pretrained = True
            for key, value in fit.items():
                writer.add_scalar(f"pretrain/{key}", value, 0)
            print(f"behaviour cloning of {cfg.pretrain_teacher}: {len(demo['actions'])} decisions "
                  f"recorded in {t1 - t0:.0f} s, fitted in {time.time() - t1:.0f} s; held-out "
                  f"accuracy {fit['accuracy']:.1%}, value explained variance {fit['explained_variance']:.2f}")
            del demo, parts
            save_checkpoint(run_dir / "checkpoint.pt", checkpoint_payload())
        while global_step < cfg.total_steps:
            if cfg.time_limit_minutes and time.time() - start > cfg.time_limit_minutes * 60:
                print(f"time limit of {cfg.time_limit_minutes} min reached")
                break
            iteration += 1
            if cfg.anneal_lr:  # linear to 0 over total_steps, or over the time limit if sooner
                frac = 1.0 - (iteration - 1) / num_updates
                if cfg.time_limit_minutes:
                    frac = min(frac, 1.0 - (time.time() - start) / (cfg.time_limit_minutes * 60))
                optimizer.param_groups[0]["lr"] = max(frac, 0.0) * cfg.learning_rate
            t0 = time.time()

            # -- rollout (workers in parallel)
            weights = {k: v.detach().clone() for k, v in policy.state_dict().items()}
            critic_weights = None if critic is None else {
                k: v.detach().clone() for k, v in critic.state_dict().items()}
            share = math.ceil(cfg.rollout_steps / n_coll)
            if cfg.num_workers > 0:
                for c in collectors:
                    c.start_collect(weights, share, critic_weights)
                parts = [c.result() for c in collectors]
            else:
                parts = [c.collect(weights, share, critic_weights) for c in collectors]
            batch = {k: np.concatenate([p[k] for p in parts]) for k in parts[0] if k != "stats"}
            stats = [p["stats"] for p in parts]
            steps = len(batch["actions"])
            global_step += steps
            env_steps += sum(s["env_steps"] for s in stats)

            # -- PPO update, the mask re-applied inside the network's forward
            b_obs = torch.from_numpy(batch["obs"])
            b_masks = torch.from_numpy(batch["masks"])
            b_actions = torch.from_numpy(batch["actions"])
            # The legal actions of each row, padded to the batch's widest row: the loss only
            # ever looks at these few logits (every other one is masked to the minimum).
            b_legal, b_valid, b_pos = legal_index(b_masks, b_actions)
            b_logprobs = torch.from_numpy(batch["logprobs"])
            b_adv = torch.from_numpy(batch["advantages"])
            b_returns = torch.from_numpy(batch["returns"])
            b_values = torch.from_numpy(batch["values"])
            b_priv = torch.from_numpy(batch["priv"])
            clipfracs = []
            policy.train()
            for _ in range(cfg.update_epochs):
                for mb in torch.randperm(steps).tensor_split(cfg.num_minibatches):
                    logits, newvalue = policy(b_obs[mb], b_masks[mb])  # mask re-applied
                    if critic is not None:
                        newvalue = critic(policy.trunk_input(b_obs[mb]), b_priv[mb])
                    legal_logp = legal_log_probs(logits, b_legal[mb], b_valid[mb])
                    newlogprob = legal_logp.gather(1, b_pos[mb, None]).squeeze(1)
                    entropy = -(legal_logp.exp() * legal_logp.masked_fill(~b_valid[mb], 0.0)).sum(-1)
                    logratio = newlogprob - b_logprobs[mb]
                    ratio = logratio.exp()
                    with torch.no_grad():
                        approx_kl = ((ratio - 1) - logratio).mean()
                        clipfracs.append(((ratio - 1.0).abs() > cfg.clip_coef).float().mean().item())
                    mb_adv = b_adv[mb]
                    if cfg.norm_adv and len(mb) > 1:
                        mb_adv = (mb_adv - mb_adv.mean()) / (mb_adv.std() + 1e-8)
                    pg_loss = torch.max(
                        -mb_adv * ratio, -mb_adv * ratio.clamp(1 - cfg.clip_coef, 1 + cfg.clip_coef)
                    ).mean()
                    if cfg.clip_vloss:
                        v_clipped = b_values[mb] + (newvalue - b_values[mb]).clamp(
                            -cfg.clip_coef, cfg.clip_coef
                        )
                        v_loss = 0.5 * torch.max(
                            (newvalue - b_returns[mb]) ** 2, (v_clipped - b_returns[mb]) ** 2
                        ).mean()
                    else:
                        v_loss = 0.5 * ((newvalue - b_returns[mb]) ** 2).mean()
                    ent = entropy.mean()
                    loss = pg_loss - cfg.ent_coef * ent + cfg.vf_coef * v_loss
                    optimizer.zero_grad()
                    loss.backward()
                    torch.nn.utils.clip_grad_norm_(params, cfg.max_grad_norm)
                    optimizer.step()
            policy.eval()
            var_y = b_returns.var()
            explained_var = (
                float("nan") if var_y == 0 else 1 - (b_returns - b_values).var().item() / var_y.item()
            )

            # -- logging
            dt = time.time() - t0
            sps = sum(s["env_steps"] for s in stats) / dt
            matches = sum(s["learner_matches"] for s in stats)
            win_rate = (
                sum(s["learner_win_rate"] * s["learner_matches"] for s in stats if s["learner_matches"])
                / matches
                if matches
                else float("nan")
            )
            round_score = float(np.nanmean([s["learner_round_score"] for s in stats]))
            opp_score = float(np.nanmean([s["opponent_round_score"] for s in stats]))
            writer.add_scalar("charts/learning_rate", optimizer.param_groups[0]["lr"], global_step)
            writer.add_scalar("charts/env_steps_per_second", sps, global_step)
            writer.add_scalar("charts/learner_round_score", round_score, global_step)
            writer.add_scalar("charts/opponent_round_score", opp_score, global_step)
            if matches:
                writer.add_scalar("charts/learner_win_rate", win_rate, global_step)
            writer.add_scalar("losses/value_loss", v_loss.item(), global_step)
            writer.add_scalar("losses/policy_loss", pg_loss.item(), global_step)
            writer.add_scalar("losses/entropy", ent.item(), global_step)
            writer.add_scalar("losses/approx_kl", approx_kl.item(), global_step)
            writer.add_scalar("losses/clipfrac", float(np.mean(clipfracs)), global_step)
            writer.add_scalar("losses/explained_variance", explained_var, global_step)

            # -- opponent pool
            if cfg.snapshot_every and iteration % cfg.snapshot_every == 0:
                pool.append({k: v.detach().clone() for k, v in policy.state_dict().items()})
                pool = pool[-cfg.pool_size :]
                for c in collectors:
                    c.set_pool(pool)

            # -- checkpoint, evaluation, best checkpoint
            eval_wr = float("nan")
            due_eval = cfg.eval_every and iteration % cfg.eval_every == 0
            if due_eval or iteration % cfg.checkpoint_every == 0:
                save_checkpoint(run_dir / "checkpoint.pt", checkpoint_payload())
            if due_eval:
                summary = evaluate(run_dir / "checkpoint.pt", cfg, cfg.eval_opponent,
                                   cfg.eval_games, seed=cfg.seed)
                eval_wr = summary["win_rate"]
                for key in ("win_rate", "round_score", "place"):
                    writer.add_scalar(f"eval/{key}_vs_{cfg.eval_opponent}", summary[key], global_step)
                last_eval = f"{eval_wr:.1%} [{summary['win_lo']:.1%}, {summary['win_hi']:.1%}]"
                if eval_wr > best:
                    best = eval_wr
                    save_checkpoint(run_dir / "checkpoint.pt", checkpoint_payload())
                    save_checkpoint(run_dir / "best.pt", policy_export(checkpoint_payload()))
            log.writerow([iteration, global_step, env_steps, round(sps), win_rate, round_score, opp_score,
                          pg_loss.item(), v_loss.item(), ent.item(), approx_kl.item(),
                          float(np.mean(clipfracs)), explained_var, eval_wr])
            log_file.flush()
            bar.update(steps)
            bar.set_postfix(sps=f"{sps:,.0f}", win=f"{win_rate:.2f}",
                            score=f"{round_score:.1f}/{opp_score:.1f}",
                            eval=last_eval)
    finally:
        bar.close()
        for c in collectors:
            if isinstance(c, CollectorProcess):
                c.close()
        save_checkpoint(run_dir / "checkpoint.pt", checkpoint_payload())
        save_checkpoint(run_dir / "final.pt", policy_export(checkpoint_payload()))
        writer.close()
        log_file.close()
    print(f"trained {global_step} learner steps ({env_steps} env steps) in "
          f"{time.time() - start:.0f} s; checkpoints in {run_dir}")

    # -- final evaluation table against every baseline
    if cfg.final_eval_games > 0:
        final_table(run_dir, cfg)
    return run_dir


def legal_index(masks: torch.Tensor, actions: torch.Tensor):
    """Per row of a ``(B, A)`` bool mask: the legal action ids padded to the widest row
    ``(B, K)``, which of those are real ``(B, K)``, and the position of ``actions`` among them."""
    counts = masks.sum(1)
    width = int(counts.max())
    order = torch.argsort(masks.to(torch.int8), dim=1, descending=True, stable=True)
    legal = order[:, :width]
    valid = torch.arange(width)[None, :] < counts[:, None]
    pos = (legal == actions[:, None]).logical_and(valid).float().argmax(1)
    return legal, valid, pos


def legal_log_probs(logits: torch.Tensor, legal: torch.Tensor, valid: torch.Tensor) -> torch.Tensor:
    """Log-probabilities over each row's legal actions ``(B, K)`` (from :func:`legal_index`);
    padding columns get -inf."""
    return torch.log_softmax(logits.gather(1, legal).masked_fill(~valid, -math.inf), -1)


def behaviour_clone(policy: torch.nn.Module, critic: torch.nn.Module | None,
                    optimizer: torch.optim.Optimizer, demo: dict, cfg: TrainConfig,
                    holdout: float = 0.05) -> dict:
    """Fit the policy to a teacher's decisions (cross-entropy over the legal actions, as in
    the PPO loss) and the value function (its head, or ``critic``) to their Monte-Carlo
    returns, in minibatches of 512,
    holding out ``holdout`` of the decisions; report the held-out action accuracy, cross
    entropy and value explained variance."""
    obs = torch.from_numpy(demo["obs"])
    masks = torch.from_numpy(demo["masks"])
    actions = torch.from_numpy(demo["actions"])
    returns = torch.from_numpy(demo["returns"])
    priv = torch.from_numpy(demo["priv"])
    legal, valid, pos = legal_index(masks, actions)
    order = torch.randperm(len(actions))
    n_test = max(1, int(len(order) * holdout))
    test, train_rows = order[:n_test], order[n_test:]
    batch = 512

    def losses(rows: torch.Tensor):
        logits, value = policy(obs[rows], masks[rows])
        if critic is not None:
            value = critic(policy.trunk_input(obs[rows]), priv[rows])
        legal_logp = legal_log_probs(logits, legal[rows], valid[rows])
        ce = -legal_logp.gather(1, pos[rows, None]).squeeze(1)
        hit = legal_logp.argmax(1) == pos[rows]
        return ce, hit, value

    policy.train()
    for _ in range(cfg.pretrain_epochs):
        for mb in train_rows[torch.randperm(len(train_rows))].split(batch):
            ce, _, value = losses(mb)
            loss = ce.mean() + cfg.vf_coef * 0.5 * ((value - returns[mb]) ** 2).mean()
            optimizer.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(
                [p for group in optimizer.param_groups for p in group["params"]], cfg.max_grad_norm)
            optimizer.step()
    policy.eval()
    with torch.no_grad():
        ce, hit, value = losses(test)
    var = returns[test].var().item()
    return {
        "cross_entropy": ce.mean().item(),
        "accuracy": hit.float().mean().item(),
        "explained_variance": 1 - (returns[test] - value).var().item() / var if var > 0 else float("nan"),
    }


def policy_export(payload: dict) -> dict:
    """A checkpoint holding what an agent needs (weights, layout, rules, config), no trainer state."""
    keep = ("format", "format_version", "observation_version", "obs_size", "num_actions",
            "features", "hidden_sizes", "rules", "train_config", "model", "global_step",
            "iteration", "env_steps")
    return {k: payload[k] for k in keep}


def final_table(run_dir: Path, cfg: TrainConfig) -> None:
    ckpt = run_dir / "best.pt" if (run_dir / "best.pt").exists() else run_dir / "final.pt"
    rows = []
    for opponent in cfg.final_eval_opponents:
        s = evaluate(ckpt, cfg, opponent, cfg.final_eval_games, seed=cfg.seed + 1)
        rows.append((opponent, s))
    n = cfg.rules_config().num_seats
    fair = 1.0 / n
    lines = [
        f"Evaluation of {ckpt} ({cfg.final_eval_games} games each, {n} seats: the policy in one "
        f"seat, the opponent in the other {n - 1}; fair share {fair:.0%})",
        "",
        "| opponent | win rate [95% CI] | mean round score [95% CI] | mean place [95% CI] |",
        "|---|---|---|---|",
    ]
    for opponent, s in rows:
        lines.append(
            f"| {opponent} | {s['win_rate']:.1%} [{s['win_lo']:.1%}, {s['win_hi']:.1%}] | "
            f"{s['round_score']:.1f} [{s['round_score_lo']:.1f}, {s['round_score_hi']:.1f}] | "
            f"{s['place']:.2f} [{s['place_lo']:.2f}, {s['place_hi']:.2f}] |"
        )
    text = "\n".join(lines)
    print(text)
    (run_dir / "evaluation.md").write_text(text + "\n")


if __name__ == "__main__":
    main()
