"""PPO self-play for Mexican Train, readable top to bottom (in the spirit of CleanRL's ppo.py).

    python train.py --config quick                              # a few minutes, smoke-sized
    python train.py --config default-4seat                      # the 4-seat preset
    python train.py --config default-2seat --learning-rate 1e-4 # any option, on the command line
    python train.py --resume runs/NAME/checkpoint.pt            # continue an interrupted run
    python train.py --config quick --help                       # every option with its doc
    python train.py --config quick --no-progress                # no bars: a summary line per phase
    python train.py --config quick --backend ray                # rollouts on Ray (RAY_ADDRESS)

--config NAME (a preset in configs/, or a .toml path) and --resume PATH are read first; every
other flag is a TrainConfig field below (underscores written as dashes) overriding them.

Every option is checked (types, ranges, names) and so is the run folder before any work
starts. The run folder is runs/<exp_name>-seed<seed> (--run-dir sets runs/); --resume
continues in the checkpoint's folder, or in --run-dir's if that is given (log.csv's rows
and best.pt are carried over; the old folder is left as it was). A fresh run never
overwrites another run's checkpoint.pt.

Stopping: checkpoint.pt is written when the run starts (so a kill during behaviour cloning
leaves a run to resume), after cloning, every checkpoint_every updates and when the run
stops. It, log.csv's rows (exactly one per update 1..k: --resume drops rows written after
its checkpoint) and the time used (counted against time_limit_minutes on --resume) always
describe the same last completed update. SIGINT and SIGTERM stop the run at once; it saves
that update's state and exits. A run that fails (e.g. the loss diverges to NaN) never
saves its failed state: checkpoint.pt and final.pt hold the last good update. Rollout
workers die with the trainer, even on SIGKILL. Exit codes: 0 done (total_steps or the time
limit), 1 training failed, 2 unusable options, checkpoint or run folder (nothing written),
130 SIGINT, 143 SIGTERM.

Top to bottom: the options (TrainConfig, preset loading; their checks and the run-folder
plumbing are agents/ppo/runs.py); the set-up in main() (seeding, policy and optimizer,
--resume, run folder, TensorBoard + log.csv, the collectors of agents/ppo/rollout.py); the
loop (optional behaviour cloning first, agents/ppo/cloning.py; then collect, update, log,
snapshot into the opponent pool, evaluate and keep best.pt, checkpoint atomically with
agents/ppo/checkpoint.py; at the end a table against every baseline,
agents/evaluation/report.py); and ppo_update(), the PPO update with the action mask
re-applied.
"""

from __future__ import annotations

import os

# Before torch loads OpenMP: its idle threads sleep instead of spinning. Spinning threads of
# a multi-threaded PPO update fight the rollout workers for the cores on a busy machine
# (docs/experiments.md, section 4.3); asleep they cost nothing. Set it yourself to override.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import argparse
import dataclasses
import functools
import importlib.resources
import json
import math
import random
import sys
import time
import tomllib
import typing
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

try:
    import torch
    import tyro
    from torch.utils.tensorboard import SummaryWriter
    from tqdm import tqdm
except ImportError as err:  # the environment-only install has none of these
    raise SystemExit(
        f"the trainer needs the 'train' extra ({err}): pip install 'mt_env[train]' "
        f"(or bash scripts/setup.sh in a checkout)"
    ) from None

from mt_env.agents.evaluation.report import evaluate, evaluation_table
from mt_env.agents.features import layout
from mt_env.agents.ppo.checkpoint import (
    PAIR_HIDDEN,
    CheckpointError,
    TrainerState,
    detached,
    load_policy_weights,
    policy_export,
    resumable_config,
    resume,
    save_checkpoint,
    trainer_checkpoint,
)
from mt_env.agents.ppo.cloning import behaviour_clone, demonstrations
from mt_env.agents.ppo.policy import (
    legal_index,
    legal_log_probs,
    make_belief_head,
    make_critic,
    make_policy,
    seed_critic,
)
from mt_env.agents.ppo.rollout import (
    Collectors,
    RolloutSpec,
    check_backend,
    check_duplicates,
    parse_opponent_mix,
)
from mt_env.agents.ppo.runs import (
    OptionError,
    StopSignals,
    TrainingFailed,
    UpdateLog,
    check_finite,
    check_ranges,
    check_types,
    checked,
    option_given,
    policy_file,
    prepare_run_folder,
    run_folder,
    stop_note,
    write_text_atomic,
)
from mt_env.config import RulesConfig
from mt_env.rewards import check_reward_mode

# The presets: configs/ beside this file, installed with it as package data of mt_env.cli.
CONFIG_DIR = importlib.resources.files("mt_env.cli") / "configs"
CRITICS = ("observation", "privileged")
FINAL_POLICIES = ("best", "final")

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
    """stop after this much training time (0 = no limit; a resumed run's earlier sessions count);
    the final checkpoint is still written"""
    num_workers: int = 2
    """rollout worker processes (0 = collect in the main process; at most max(2, CPU cores)),
    or Ray actors with --backend ray"""
    torch_threads: int = 1
    """torch threads of the main process (the PPO update); rollout workers use one each. On the
    2-core machine 2 threads made the update no faster (docs/experiments.md, section 4.8); with
    OpenMP's default spin-waiting they made it up to 25x slower while the workers held the
    cores (section 4.3), which OMP_WAIT_POLICY=PASSIVE, set above, prevents"""
    async_rollouts: bool = False
    """collect the next batch while the PPO update runs (the workers would otherwise wait for
    it): each batch then comes from the weights one update older than those it updates (the
    clipped ratio starts off 1, as in asynchronous PPO variants). On in the default presets:
    it keeps both cores busy on a 2-core machine, and their checkpoints were trained with it
    (docs/experiments.md, section 4.9)"""
    backend: str = "local"
    """where the rollout workers run: local (processes on this machine) | ray (actors on the Ray
    cluster at RAY_ADDRESS, else a new local Ray; pip install 'mt_env[ray]'); the same batches,
    behaviour cloning's demonstrations included"""
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
    """MLP trunk widths (of the privileged critic too): 1 to 8 layers of 1..4096"""
    pair_hidden: int = PAIR_HIDDEN
    """width of the hidden layer of the pair head, the small MLP shared by every play that
    scores it (features = pairs; agents/ppo/policy.py)"""
    critic: str = "observation"
    """value function: observation (a head on the policy trunk) | privileged (a separate
    network that also sees the other hands and the boneyard; training only, the policy
    still sees only its observation)"""
    features: str = "pairs"
    """policy input features: none | planning | pairs (agents/features.py)"""
    reward: str = "score_zero_sum"
    """reward scheme of mt_env.rewards: score | score_zero_sum | lead | win_prob | rank | win"""
    reward_scale: float = 0.01
    """multiplier of score-based rewards"""
    round_is_episode: bool = True
    """end each seat's return at the round's end (round rewards are independent of later rounds)"""
    learner_seats: int = 1
    """seats per match played by the learning policy; the rest come from opponent_mix"""
    opponent_mix: str = "self=0.4,past=0.2,longest-train=0.4"
    """opponent proportions NAME=WEIGHT,...: self (learning policy), past (pool snapshot), a baseline
    (mt_env.agents.make_agent name)"""
    pretrain_teacher: str = ""
    """scripted agent (e.g. search) the policy imitates before PPO starts; empty = none"""
    pretrain_decisions: int = 200_000
    """teacher decisions recorded for that behaviour cloning (forced moves excluded)"""
    pretrain_epochs: int = 4
    """epochs of behaviour cloning over those decisions"""
    init_policy: str = ""
    """start PPO from this policy's weights (a final.pt/best.pt export, a shipped checkpoint or
    a trainer checkpoint; same rules and features; a wider --hidden-sizes of as many layers
    or a wider --pair-hidden grows the file's network without changing its outputs) instead
    of new ones: a second stage with other options. Behaviour cloning is skipped; the
    optimizer, counters and time limit start afresh; the critic keeps the file's value
    function (the policy's value head; with --critic privileged, a critic computing the same
    values whose hidden-tile inputs start at weight 0)"""
    critic_warmup_updates: int = 0
    """first updates of the run that train only the value function (the value head, or the
    privileged critic; the shared trunk and the policy stay as they are): a value head fitted
    to another reward (init_policy with a new --reward) can learn the new returns before its
    advantages steer the policy"""
    expert_every: int = 0
    """expert iteration during PPO (0 = off): one in this many learner decisions is also decided
    by search-ppo built on the rollout worker's current policy (the policy proposes the
    candidates, plays the rollouts and is the default the search must beat); where its search
    ran, expert_coef x the cross-entropy of its choice joins the PPO loss. A label costs one
    search: about 15 ms at 2 seats (docs/experiments.md, section 3.10)"""
    expert_coef: float = 1.0
    """weight of that cross-entropy: its mean over the labelled decisions of each minibatch"""
    belief_coef: float = 0.0
    """weight of an auxiliary loss (0 = off): a training-only head on the policy trunk guesses
    where each tile the learner cannot see lies (each other seat's hand or the boneyard), and
    this x its cross-entropy joins the PPO loss, so the trunk learns what the public record says
    about the hidden hands (agents/ppo/policy.py, BeliefHead); the policy still reads only its
    observation. The collectors then record the hidden tiles, as for --critic privileged"""
    duplicates: int = 1
    """duplicate matches (1 = off): each collector plays its games in groups of this many copies
    of one match (the same deals, boneyard order, seats and opponents), and a decision's
    advantage is its round's return minus the other copies' mean return that round, in place of
    GAE's: the deal's luck cancels (agents/ppo/rollout.py). A divisor of games_per_worker; needs
    round_is_episode and gamma = 1"""
    snapshot_every: int = 10
    """updates between snapshots added to the opponent pool (0 = none)"""
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
    final_policy: str = "best"
    """the checkpoint the final evaluation table reports: best (best.pt, the best in-training
    evaluation's, if one was kept; with few evaluation games that pick is noisy) | final
    (final.pt, the last weights, where anneal_lr has brought the learning rate to 0)"""
    checkpoint_every: int = 10
    """updates between checkpoints (and whenever the run stops, fails or is signalled: its last
    completed update)"""
    run_dir: str = "runs"
    """parent folder of run folders (with --resume: given, the run continues in its
    <exp_name>-seed<seed>; not given, in the checkpoint's folder)"""
    resume: str = ""
    """checkpoint to resume from (its options, counters and time used are reused)"""
    progress: bool = True
    """a progress bar per phase (cloning, PPO, evaluations); --no-progress: a summary line per phase"""
    rules: RulesOptions = field(default_factory=RulesOptions)  # type: ignore[valid-type]
    """the rules of the game trained on (mt_env.config.RulesConfig options)"""

    def rules_config(self) -> RulesConfig:
        return RulesConfig(**dataclasses.asdict(self.rules))

    def validate(self) -> None:
        """OptionError naming the option and what was expected unless every option can be
        used: its type, its range (agents/ppo/runs.py's RANGES), the names it holds."""
        check_ranges(check_types(self.to_dict(), TrainConfig))
        if not self.exp_name or "/" in self.exp_name:
            raise OptionError(f"exp_name={self.exp_name!r}: expected a non-empty name without '/'")
        checked("reward", self.reward, lambda: check_reward_mode(self.reward))
        if self.critic not in CRITICS:
            raise OptionError(f"critic={self.critic!r}: expected one of {CRITICS}")
        if self.final_policy not in FINAL_POLICIES:
            raise OptionError(f"final_policy={self.final_policy!r}: expected one of {FINAL_POLICIES}")
        try:
            check_backend(self.backend, processes=self.num_workers > 0)
        except (ValueError, ImportError) as err:
            raise OptionError(str(err)) from None
        rules = checked("rules", self.rules, self.rules_config)
        checked("features", self.features, lambda: layout(rules, self.features))
        if self.features != "pairs" and self.pair_hidden != PAIR_HIDDEN:
            raise OptionError(f"pair_hidden={self.pair_hidden} with features={self.features!r}: only "
                              f"the 'pairs' network has a pair head; expected features='pairs' or "
                              f"pair_hidden={PAIR_HIDDEN}")
        checked("duplicates", self.duplicates, lambda: check_duplicates(
            self.duplicates, self.games_per_worker, self.round_is_episode, self.gamma))
        if not 1 <= self.learner_seats <= rules.num_seats:
            raise OptionError(f"learner_seats={self.learner_seats}: expected 1..{rules.num_seats}")
        from mt_env.agents import make_agent

        def agents(option: str, names) -> None:  # each a baseline name or ckpt:PATH
            for name in names:
                checked(option, getattr(self, option), lambda name=name: make_agent(name, rules))

        mix = checked("opponent_mix", self.opponent_mix, lambda: parse_opponent_mix(self.opponent_mix))
        agents("opponent_mix", [name for name in mix if name not in ("self", "past")])
        agents("pretrain_teacher", [self.pretrain_teacher] if self.pretrain_teacher else [])
        agents("eval_opponent", [self.eval_opponent])
        if self.final_eval_games and not self.final_eval_opponents:
            raise OptionError("final_eval_opponents=(): expected at least one baseline name "
                              "(or final_eval_games = 0)")
        agents("final_eval_opponents", self.final_eval_opponents)

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


def config_from_dict(data: dict, where: str) -> TrainConfig:
    """A TrainConfig from a preset/checkpoint dict; unknown keys and values of another type
    than the option's (e.g. a string for a list of names) are errors naming them."""
    names = {f.name for f in dataclasses.fields(TrainConfig)}
    unknown = sorted(set(data) - names)
    if unknown:
        raise OptionError(f"{where}: unknown option(s) {unknown}; known options: {sorted(names)}")
    rules = data.get("rules", {})
    rule_names = {f.name for f in dataclasses.fields(RulesConfig)}
    bad = sorted(set(rules) - rule_names) if isinstance(rules, dict) else []
    if bad:
        raise OptionError(f"{where}: unknown rules option(s) {bad}; known: {sorted(rule_names)}")
    data = check_types(data, TrainConfig, where)
    rules = data.pop("rules", {})
    return TrainConfig(**data, rules=RulesOptions(**rules))


def load_preset(name: str) -> TrainConfig:
    path = Path(name) if name.endswith(".toml") else CONFIG_DIR / f"{name}.toml"
    if not path.is_file():
        known = sorted(p.name.removesuffix(".toml") for p in CONFIG_DIR.iterdir() if p.name.endswith(".toml"))
        raise OptionError(f"--config {name}: no such preset; known presets: {known}")
    try:
        with path.open("rb") as f:
            data = tomllib.load(f)
    except (OSError, tomllib.TOMLDecodeError) as err:
        raise OptionError(f"--config {path}: cannot be read ({err})") from None
    return config_from_dict(data, str(path))


def parse_args(argv: list[str]) -> TrainConfig:
    """The options: a preset (--config) or a checkpoint's (--resume), then the command line;
    OptionError or CheckpointError before anything is done."""
    pre = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
    pre.add_argument("--config", default="default-4seat")
    pre.add_argument("--resume", default="")
    known, rest = pre.parse_known_args(argv)
    if known.resume:
        base = config_from_dict(resumable_config(known.resume), f"checkpoint {known.resume}")
    else:
        base = load_preset(known.config)
    cfg = tyro.cli(TrainConfig, default=base, args=rest, description=__doc__)
    cfg.resume = known.resume
    # A resumed run keeps its own weights; the init_policy its checkpoint records is how it began.
    if cfg.resume and option_given(rest, "--init-policy"):
        raise OptionError(f"init_policy={cfg.init_policy!r} with resume={cfg.resume!r}: expected "
                          "one of them (a resumed run keeps its own weights)")
    cfg.validate()
    return cfg


# ------------------------------------------------------------------------------ set-up and loop
LOG_COLUMNS = (
    "update", "global_step", "env_steps", "sps", "win_rate", "round_score", "opponent_round_score",
    "policy_loss", "value_loss", "entropy", "approx_kl", "clipfrac", "explained_variance",
    "eval_win_rate",
)
PPO_BAR = "{desc}: {percentage:3.0f}%|{bar}| {remaining} left{postfix}"  # % of the run's budget


def weights(module: torch.nn.Module) -> dict:
    """A detached copy of a module's state dict (for collectors and the opponent pool)."""
    return {k: v.detach().clone() for k, v in module.state_dict().items()}


def run_done(cfg: TrainConfig, step: int, elapsed: float) -> float:
    """% of the run done: steps of total_steps, or time of the time limit if that ends the run sooner."""
    limit = cfg.time_limit_minutes * 60
    steps = step / cfg.total_steps if cfg.total_steps else 1.0
    return 100 * min(1.0, max(steps, elapsed / limit if limit else 0.0))


def show_ppo_progress(bars: tuple, cfg: TrainConfig, step: int, elapsed: float, stats=None, sps=0.0):
    """The PPO bar at run_done() with the steps and time used; below it, the last update's numbers."""
    bar, status = bars
    limit = cfg.time_limit_minutes * 60
    clock = f", time {tqdm.format_interval(elapsed)} of {tqdm.format_interval(limit)}" if limit else ""
    bar.set_postfix_str(f"learner steps {step:,}/{cfg.total_steps:,}{clock}", refresh=False)
    bar.update(run_done(cfg, step, elapsed) - bar.n)
    if stats:
        won = "-" if math.isnan(stats["learner_win_rate"]) else f"{stats['learner_win_rate']:.0%}"
        score = f"{stats['learner_round_score']:.1f}/{stats['opponent_round_score']:.1f}"
        status.set_description_str(f"     last update: win rate {won}, round score me/opponents {score} "
                                   f"(lower is better), {sps:,.0f} moves/s")


def main(argv: list[str] | None = None) -> Path:
    argv = sys.argv[1:] if argv is None else argv
    cfg = parse_args(argv)
    rules = cfg.rules_config()

    # -- seeding
    random.seed(cfg.seed)
    np.random.seed(cfg.seed)
    torch.manual_seed(cfg.seed)
    torch.set_num_threads(cfg.torch_threads)

    # -- policy and optimizer; critic=privileged: values from a separate network that also
    # sees the hidden tiles (training only). --resume restores them and the trainer state,
    # after every check of the checkpoint: a rejected one leaves its run folder untouched.
    policy = make_policy(rules, cfg.features, cfg.hidden_sizes, cfg.pair_hidden)
    critic = make_critic(rules, cfg.features, cfg.hidden_sizes) if cfg.critic == "privileged" else None
    belief = make_belief_head(rules, cfg.hidden_sizes) if cfg.belief_coef > 0 else None
    params = [*policy.parameters(), *(critic.parameters() if critic else ()),
              *(belief.parameters() if belief else ())]
    optimizer = torch.optim.Adam(params, lr=cfg.learning_rate, eps=1e-5)
    state = TrainerState()
    if cfg.resume:
        state = resume(cfg.resume, rules, policy, critic, optimizer, belief)
    elif cfg.init_policy:  # a second stage: these weights instead of cloning a teacher
        load_policy_weights(cfg.init_policy, rules, policy, cfg.features, cfg.hidden_sizes)
        if critic is not None:  # starts as the file's value function, the hidden tiles read 0
            seed_critic(critic, policy)
        state.pretrained = True

    # -- run folder (agents/ppo/runs.py): checked before any work, cleaned of the temp files
    # of a killed run; log.csv keeps exactly the rows of updates 1..state.iteration
    run_dir = run_folder(cfg.run_dir, f"{cfg.exp_name}-seed{cfg.seed}", cfg.resume,
                         run_dir_given=option_given(argv, "--run-dir"))
    stale = prepare_run_folder(run_dir, cfg.resume, LOG_COLUMNS)
    log = UpdateLog(run_dir / "log.csv", LOG_COLUMNS, keep=state.iteration,
                    source=Path(cfg.resume).parent / "log.csv" if cfg.resume else None)
    write_text_atomic(run_dir / "config.json", json.dumps(cfg.to_dict(), indent=2))
    if cfg.resume:
        print(f"resumed {cfg.resume} at update {state.iteration}, step {state.global_step} "
              f"({state.elapsed:.0f} s of training) in {run_dir}")
    if stale:
        print(f"removed {len(stale)} temp file(s) of an interrupted checkpoint write in {run_dir}")
    if log.missing:
        print(f"warning: {run_dir / 'log.csv'} lacks the rows of the checkpoint's last {log.missing} update(s)")

    # -- the last good state: saved now (a kill during cloning leaves a run to resume), with
    # each update's log row, and when the run stops; a failed update never replaces it
    session_start, time_before = time.time(), state.elapsed

    def elapsed() -> float:
        """Seconds of training in this run, earlier sessions' included."""
        return time_before + time.time() - session_start

    def checkpoint() -> dict:
        state.elapsed = elapsed()
        return trainer_checkpoint(cfg.to_dict(), rules, policy, critic, optimizer, state, belief)

    good = detached(checkpoint())
    save_checkpoint(run_dir / "checkpoint.pt", good)

    # -- logs: TensorBoard and a CSV row per update
    writer = SummaryWriter(str(run_dir / "tb"), purge_step=state.iteration + 1 if cfg.resume else None)
    writer.add_text("config", "```\n" + json.dumps(cfg.to_dict(), indent=2) + "\n```")

    # -- rollout collectors: one per worker process (or one in-process)
    specs = [
        RolloutSpec(
            rules=rules, num_games=cfg.games_per_worker, seed=cfg.seed * 1000 + k + 7919 * state.iteration,
            reward=cfg.reward, reward_scale=cfg.reward_scale, round_is_episode=cfg.round_is_episode,
            learner_seats=cfg.learner_seats, opponent_mix=parse_opponent_mix(cfg.opponent_mix),
            features=cfg.features, hidden_sizes=cfg.hidden_sizes, gamma=cfg.gamma,
            gae_lambda=cfg.gae_lambda, critic=cfg.critic, expert_every=cfg.expert_every,
            duplicates=cfg.duplicates, pair_hidden=cfg.pair_hidden, hidden_tiles=belief is not None,
        )
        for k in range(max(1, cfg.num_workers))
    ]
    collectors = None  # made after cloning: on Ray, idle PPO actors would hold the CPUs it needs

    num_updates = math.ceil(cfg.total_steps / cfg.rollout_steps)
    bars = functools.partial(tqdm, disable=not cfg.progress, dynamic_ncols=True)  # a bar per phase
    ppo_bars, stop, failed = (), "", None  # the PPO bar and its status line, made once cloning is done
    signals = StopSignals()  # SIGINT, SIGTERM: stop at once, keep the last completed update
    signals.install()
    try:
        # -- optional behaviour cloning of a scripted teacher before PPO (counts in the time limit)
        if cfg.pretrain_teacher and not state.pretrained:
            t0 = time.time()
            with demonstrations(specs, cfg.pretrain_teacher, cfg.pretrain_decisions, cfg.num_workers > 0,
                                progress=bars, backend=cfg.backend, directory=run_dir) as demo:
                t1 = time.time()
                fit = behaviour_clone(policy, critic, optimizer, demo, cfg.pretrain_epochs, cfg.vf_coef,
                                      cfg.max_grad_norm, progress=bars)
                recorded, demo_steps = len(demo), demo.stats["env_steps"]
            check_finite("behaviour cloning", fit, policy, critic)
            with signals.deferred():  # the cloned policy and its marker, together
                state.env_steps += demo_steps
                state.pretrained = True
                good = detached(checkpoint())
                save_checkpoint(run_dir / "checkpoint.pt", good)
            for key, value in fit.items():
                writer.add_scalar(f"pretrain/{key}", value, 0)
            print(f"behaviour cloning of {cfg.pretrain_teacher}: {recorded} decisions "
                  f"recorded in {t1 - t0:.0f} s, fitted in {time.time() - t1:.0f} s; held-out "
                  f"accuracy {fit['accuracy']:.1%}, value explained variance {fit['explained_variance']:.2f}")

        collectors = Collectors(specs, processes=cfg.num_workers > 0, backend=cfg.backend)
        if state.pool:
            collectors.set_pool(state.pool)
        done = run_done(cfg, state.global_step, elapsed())  # before PPO: cloning, a resumed run
        ppo_bars = bars(total=100, initial=done, desc="PPO", bar_format=PPO_BAR), bars(bar_format="{desc}")
        show_ppo_progress(ppo_bars, cfg, state.global_step, elapsed())
        started = False  # a batch is being collected (async_rollouts)

        def start_rollout() -> None:  # with the weights as they are now
            collectors.start(weights(policy), cfg.rollout_steps, None if critic is None else weights(critic))

        while state.global_step < cfg.total_steps:
            if cfg.time_limit_minutes and elapsed() > cfg.time_limit_minutes * 60:
                show_ppo_progress(ppo_bars, cfg, state.global_step, elapsed())  # at 100%
                stop = f"stopped on the time limit of {cfg.time_limit_minutes:g} min: "
                break
            state.iteration += 1
            if cfg.anneal_lr:  # linear to 0 over total_steps, or over the time limit if sooner
                frac = 1.0 - (state.iteration - 1) / num_updates
                if cfg.time_limit_minutes:
                    frac = min(frac, 1.0 - elapsed() / (cfg.time_limit_minutes * 60))
                optimizer.param_groups[0]["lr"] = max(frac, 0.0) * cfg.learning_rate
            t0 = time.time()

            # -- rollout (workers in parallel), then the PPO update (NaN or infinite: it failed);
            # with async_rollouts the next batch starts from these weights before the update
            if not started:
                start_rollout()
            batch = collectors.finish()
            started = cfg.async_rollouts
            if started:
                start_rollout()
            stats = batch.pop("stats")
            steps = len(batch["actions"])
            state.global_step += steps
            state.env_steps += stats["env_steps"]
            value_only = state.iteration <= cfg.critic_warmup_updates
            losses = ppo_update(policy, critic, optimizer, params, batch, cfg, value_only, belief)
            # nan when no decision had an expert label; one that diverged shows in the weights
            expert_loss = losses.pop("expert_loss")
            belief_stats = losses.pop("belief_loss"), losses.pop("belief_accuracy")
            check_finite(f"update {state.iteration}", losses, policy, critic)

            # -- logging
            sps = stats["env_steps"] / (time.time() - t0)
            step = state.global_step
            writer.add_scalar("charts/learning_rate", optimizer.param_groups[0]["lr"], step)
            writer.add_scalar("charts/env_steps_per_second", sps, step)
            writer.add_scalar("charts/learner_round_score", stats["learner_round_score"], step)
            writer.add_scalar("charts/opponent_round_score", stats["opponent_round_score"], step)
            if stats["learner_matches"]:
                writer.add_scalar("charts/learner_win_rate", stats["learner_win_rate"], step)
            for key, value in losses.items():
                writer.add_scalar(f"losses/{key}", value, step)
            if belief is not None and not value_only:
                writer.add_scalar("losses/belief_loss", belief_stats[0], step)
                writer.add_scalar("losses/belief_accuracy", belief_stats[1], step)
            labels = stats["expert_labels"]
            if labels:  # expert iteration: how often the policy already chose as the search did
                writer.add_scalar("losses/expert_loss", expert_loss, step)
                writer.add_scalar("charts/expert_labels", labels, step)
                writer.add_scalar("charts/expert_agreement", stats["expert_agree"] / labels, step)
                writer.add_scalar("charts/expert_seconds", stats["expert_seconds"], step)

            # -- opponent pool
            if cfg.snapshot_every and state.iteration % cfg.snapshot_every == 0:
                state.pool = [*state.pool, weights(policy)][-cfg.pool_size :]
                collectors.set_pool(state.pool)

            # -- evaluation (of this policy, exported to a temp file), best checkpoint
            eval_wr = float("nan")
            due_eval = cfg.eval_every and state.iteration % cfg.eval_every == 0
            if due_eval:
                with policy_file(run_dir, policy_export(checkpoint())) as path:
                    summary = evaluate(path, rules, cfg.eval_opponent, cfg.eval_games, seed=cfg.seed,
                                       progress=functools.partial(bars, leave=False))
                eval_wr = summary["win_rate"]
                for key in ("win_rate", "round_score", "place"):
                    writer.add_scalar(f"eval/{key}_vs_{cfg.eval_opponent}", summary[key], step)
                tqdm.write(f"update {state.iteration}: evaluation win rate vs {cfg.eval_opponent} "
                           f"{eval_wr:.1%} [{summary['win_lo']:.1%}, {summary['win_hi']:.1%}]")
                if eval_wr > state.best_eval:
                    state.best_eval = eval_wr
                    save_checkpoint(run_dir / "best.pt", policy_export(checkpoint()))

            # -- the update's log row, then its checkpoint: a signal waits for both
            with signals.deferred():
                log.write([state.iteration, step, state.env_steps, round(sps), stats["learner_win_rate"],
                           stats["learner_round_score"], stats["opponent_round_score"],
                           *losses.values(), eval_wr])
                good = detached(checkpoint())
                if due_eval or state.iteration % cfg.checkpoint_every == 0:
                    save_checkpoint(run_dir / "checkpoint.pt", good)
            show_ppo_progress(ppo_bars, cfg, step, elapsed(), stats, sps)
    except BaseException as err:  # failed or interrupted: stop the workers at once
        failed = err
        if not isinstance(err, TrainingFailed | KeyboardInterrupt):
            what = f"update {state.iteration}" if ppo_bars else "behaviour cloning"  # bars: PPO began
            raise TrainingFailed(f"{what} failed ({type(err).__name__}: {err})") from err
        raise
    finally:
        signals.hold()  # nothing interrupts the final save
        for bar in ppo_bars:
            bar.close()
        if collectors is not None:
            collectors.close(graceful=failed is None)
        save_checkpoint(run_dir / "checkpoint.pt", good)  # the last good state, never a failed one
        save_checkpoint(run_dir / "final.pt", policy_export(good))
        writer.close()
        log.close(keep=good["iteration"])
        signals.restore()
        if failed is not None:
            print(stop_note(failed, run_dir, good), file=sys.stderr)
    print(f"{stop}trained {state.global_step:,} of total_steps={cfg.total_steps:,} learner steps "
          f"({state.env_steps:,} env steps) in {elapsed():.0f} s; checkpoints in {run_dir}")

    # -- final evaluation table against every baseline (of best.pt if asked and one was kept)
    if cfg.final_eval_games > 0:
        best = run_dir / "best.pt"
        ckpt = best if cfg.final_policy == "best" and best.exists() else run_dir / "final.pt"
        table = evaluation_table(ckpt, rules, cfg.final_eval_opponents, cfg.final_eval_games,
                                 seed=cfg.seed + 1, progress=bars)
        print(table)
        write_text_atomic(run_dir / "evaluation.md", table + "\n")
    return run_dir


# ------------------------------------------------------------------------------ the PPO update
def ppo_update(policy, critic, optimizer, params: list, batch: dict, cfg: TrainConfig,
               value_only: bool = False, belief=None) -> dict:
    """``cfg.update_epochs`` epochs of clipped PPO over ``batch`` in ``cfg.num_minibatches``
    minibatches; the action mask is re-applied inside the network's forward. Decisions with an
    expert label (``batch["expert"] >= 0``, :attr:`TrainConfig.expert_every`) add
    ``cfg.expert_coef`` x the cross-entropy of the label; a ``belief`` head adds
    ``cfg.belief_coef`` x its cross-entropy on the hidden tiles (``batch["priv"]``,
    :attr:`TrainConfig.belief_coef`). ``value_only`` (the critic's warm-up,
    :attr:`TrainConfig.critic_warmup_updates`) keeps only the value loss and steps only the
    value function's own weights (the value head, or the privileged critic), so the policy's
    outputs do not move. Returns the last minibatch's losses, the mean clip fraction, the
    values' explained variance, the mean expert loss and the belief head's mean loss and
    accuracy (nan where there were none)."""
    b_obs = torch.from_numpy(batch["obs"])
    b_masks = torch.from_numpy(batch["masks"])
    # The legal actions of each row, padded to the batch's widest row: the loss only
    # ever looks at these few logits (every other one is masked to the minimum).
    b_legal, b_valid, b_pos = legal_index(b_masks, torch.from_numpy(batch["actions"]))
    b_logprobs = torch.from_numpy(batch["logprobs"])
    b_adv = torch.from_numpy(batch["advantages"])
    b_returns = torch.from_numpy(batch["returns"])
    b_values = torch.from_numpy(batch["values"])
    b_priv = torch.from_numpy(batch["priv"])
    # expert iteration: the position of each labelled decision's search choice among its legal
    # actions (-1 where the decision has no label)
    b_expert = torch.from_numpy(batch["expert"])
    b_epos = torch.where(b_expert >= 0, (b_legal == b_expert[:, None]).logical_and(b_valid).float().argmax(1), -1)
    columns = (b_obs, b_masks, b_legal, b_valid, b_pos, b_logprobs, b_adv, b_returns, b_values, b_priv, b_epos)
    own = {id(p) for p in (critic if critic is not None else policy.critic).parameters()}
    frozen = [p for p in params if id(p) not in own] if value_only else []  # the trunk is shared
    clipfracs, expert_losses, belief_stats = [], [], []
    policy.train()
    for _ in range(cfg.update_epochs):
        for mb in torch.randperm(len(b_obs)).tensor_split(cfg.num_minibatches):
            mb = mb.sort().values  # the same rows in memory order: gathered ~2.5x faster
            obs, masks, legal, valid, pos, old_logp, mb_adv, returns, values, priv, epos = (
                col.index_select(0, mb) for col in columns
            )
            h = policy.embed(obs)  # one trunk pass for the heads and the belief loss
            logits, newvalue = policy(obs, masks, h)  # mask re-applied
            if critic is not None:
                newvalue = critic(policy.trunk_input(obs), priv)
            legal_logp = legal_log_probs(logits, legal, valid)
            newlogprob = legal_logp.gather(1, pos[:, None]).squeeze(1)
            entropy = -(legal_logp.exp() * legal_logp.masked_fill(~valid, 0.0)).sum(-1)
            logratio = newlogprob - old_logp
            ratio = logratio.exp()
            with torch.no_grad():
                approx_kl = ((ratio - 1) - logratio).mean()
                clipfracs.append(((ratio - 1.0).abs() > cfg.clip_coef).float().mean().item())
            if cfg.norm_adv and len(mb) > 1:
                mb_adv = (mb_adv - mb_adv.mean()) / (mb_adv.std() + 1e-8)
            pg_loss = torch.max(
                -mb_adv * ratio, -mb_adv * ratio.clamp(1 - cfg.clip_coef, 1 + cfg.clip_coef)
            ).mean()
            if cfg.clip_vloss:
                v_clipped = values + (newvalue - values).clamp(-cfg.clip_coef, cfg.clip_coef)
                v_loss = 0.5 * torch.max((newvalue - returns) ** 2, (v_clipped - returns) ** 2).mean()
            else:
                v_loss = 0.5 * ((newvalue - returns) ** 2).mean()
            ent = entropy.mean()
            loss = cfg.vf_coef * v_loss
            if not value_only:
                loss = loss + pg_loss - cfg.ent_coef * ent
            labelled = epos >= 0
            if labelled.any() and not value_only:  # expert iteration: toward the search's choices
                e_loss = -legal_logp[labelled].gather(1, epos[labelled, None]).mean()
                loss = loss + cfg.expert_coef * e_loss
                expert_losses.append(e_loss.item())
            if belief is not None and not value_only:  # the trunk learns where hidden tiles are
                b_loss, b_acc = belief.loss(h, priv)
                loss = loss + cfg.belief_coef * b_loss
                belief_stats.append((b_loss.item(), b_acc.item()))
            optimizer.zero_grad()
            loss.backward()
            for p in frozen:
                p.grad = None  # Adam leaves a parameter without a gradient as it is
            torch.nn.utils.clip_grad_norm_(params, cfg.max_grad_norm)
            optimizer.step()
    policy.eval()
    var_y = b_returns.var()
    belief_mean = np.mean(belief_stats, 0) if belief_stats else (float("nan"), float("nan"))
    return {  # in log.csv's column order (the last three are logged apart)
        "policy_loss": pg_loss.item(),
        "value_loss": v_loss.item(),
        "entropy": ent.item(),
        "approx_kl": approx_kl.item(),
        "clipfrac": float(np.mean(clipfracs)),
        "explained_variance": (
            float("nan") if var_y == 0 else 1 - (b_returns - b_values).var().item() / var_y.item()
        ),
        "expert_loss": float(np.mean(expert_losses)) if expert_losses else float("nan"),
        "belief_loss": float(belief_mean[0]),
        "belief_accuracy": float(belief_mean[1]),
    }


def cli(argv: list[str] | None = None) -> None:
    """The ``mt-train`` command: :func:`main` on the command line's arguments. Errors are
    one line on stderr, no traceback; the exit code says how the run ended (see the top)."""
    try:
        main(argv)
    except (OptionError, CheckpointError) as err:  # nothing was written
        print(f"mt-train: error: {err}", file=sys.stderr)
        raise SystemExit(2) from None
    except TrainingFailed as err:
        print(f"mt-train: {err}", file=sys.stderr)
        raise SystemExit(1) from None
    except KeyboardInterrupt as err:  # SIGINT or SIGTERM: saved, then 128 + the signal
        raise SystemExit(getattr(err, "exit_code", 130)) from None


if __name__ == "__main__":
    cli()
