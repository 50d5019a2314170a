"""Search as a policy-improvement operator, after training: one step of approximate
policy iteration on a trained checkpoint (issue 14; docs/experiments.md section 3.11).

``search-ppo`` beats the bare policy by 6-8 points at 2 seats (section 3.10). This module
tries to put that gain into the network, with the search's own numbers rather than its
choices:

1. **Labels.** Full matches are played; the policy's seats are :class:`Labeller` agents,
   ``search-ppo`` with an infinite margin, so they play the policy's own argmax and the
   states are the policy's. At a share ``label_prob`` of the decisions ``search-ppo`` would
   search (two or more plays, outside the free first turn; with ``phase`` ``"first"`` or
   ``"all"`` the free first turn's decisions instead or too) it records the values of its
   ``max_actions`` candidates (the policy's most probable plays) in ``futures`` guessed
   worlds common to all candidates (:meth:`mt_env.agents.search.SearchAgent.option_values`:
   guessed hidden tiles with its inference from passes, every seat played out by the
   policy, :meth:`PPOAgent.play_out`; the value is the lead in match totals after the round).
   With ``worlds="true"`` the one world is the game's own: the other hands and the
   boneyard's draw order as they are (TRPO's "vine" rollouts). Its values are then single
   unbiased samples instead of averages over a model of the hidden tiles, so labels cost
   one play-out per candidate and come by the hundred thousand.
2. **Anchors.** A share ``anchor_prob`` of the policy's other decisions with a choice (the
   free first turn's plays and pass, unlabelled searches) is kept with no values: their
   target is the old policy. Without them a fit moves the decisions it never saw: a fit
   on labelled decisions alone changed the argmax on 23% of the free-first-turn and other
   unlabelled decisions and lost 5 points against ``search``.
3. **Targets** (:func:`advantages`, :func:`improved_targets`): each searched play's
   advantage is its mean value less the old policy's mean; the target is
   ``pi_old * exp(A / temperature)`` over the legal actions (the KL-regularised
   improvement step of MPO/AWR). ``objective="linear"`` instead maximises
   ``E_pi[A] - temperature * KL(pi || pi_old)``, which is linear in the values (the noise
   in them averages out over decisions instead of being exponentiated first).
   ``objective="confirmed"`` (:func:`confirmed_targets`) keeps the old policy as the
   target except where a play beats the policy's choice by ``z`` standard errors in each
   half of the worlds, two independent samples; there the target is that play.
4. **Fit** (:func:`fit`): the trunk and the policy head are trained toward the targets (the
   value head's own layer is frozen; its output moves with the shared trunk).
   The policy-only checkpoint written carries an ``improve`` entry: the fit's options and
   figures, and the labelling's options as the labels file recorded them.

Measured (section 3.11): the values are mostly noise at this budget — with 16 worlds the
standard error of a paired difference is 8.6 pips (median) against a median gain of 9.1,
and 5% of the alternatives beat the policy's choice by two standard errors where chance
alone gives 3.2% — and no fit, of 95,000 decisions labelled in 16 worlds or of 41,000 in
64, beat the shipped checkpoint against ``search``. Section 3.15: with 64 worlds about
6% of the labelled decisions hold an override that survives both halves of the worlds
(``objective="confirmed"``, z = 1.5; a sign-flipped placebo passes 0.35%), but the fitted
network predicts 4.5% of the held-out ones and was level with the shipped file on the
screening deals (49.7% against 50.7%). Section 3.16: with ``worlds="true"`` the labels
are unbiased and nine times as many (453,205 in 25 minutes; 49,492 in 20 before), and
still no fit gains on the decisions of new matches (``benchmarks/decision_gain.py``:
−0.25 to +0.07 pips a decision), where ``search-ppo``'s choices gain 0.86. At 4 seats
they gain no more than the policy's own (+0.16 against +0.12). Section 3.17: with
``phase="first"`` the free first turn's decisions (each tile laid, and the stop) are
labelled too, where the shipped policy made its gains over ``search``; there the policy's
second choice loses 1.3 pips to its first on average at 2 seats and 12.6 at 4, and no fit
gains on new matches (at most +0.07 and +0.04 pips, within 1.5 standard errors). The command stays
for what was not tried (several iterations); ``python -m mt_env.agents.ppo.improve
--help`` lists its options.
"""

from __future__ import annotations

import argparse
import io
import itertools
import json
import math
import multiprocessing as mp
import os
import random
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from mt_env.agents import make_agent
from mt_env.agents.base import act_in_match
from mt_env.agents.features import make_featurizer
from mt_env.agents.ppo.checkpoint import (
    CheckpointError,
    load_checkpoint,
    policy_export,
    save_checkpoint,
    write_atomic,
)
from mt_env.agents.ppo.policy import PolicySearchAgent, PPOAgent, build_policy
from mt_env.agents.ppo.rollout import parse_opponent_mix
from mt_env.config import RulesConfig
from mt_env.match import Match
from mt_env.observation import ObservationEncoder
from mt_env.rules import RoundState, determinize

WORLDS = ("guessed", "true")
# the decisions labelled: after the free first turn (search-ppo's searches), in it, or both
PHASES = ("later", "first", "all")


class Labeller(PolicySearchAgent):
    """``search-ppo`` that plays the policy's own choice (``margin`` infinite) and, at a share
    ``label_prob`` of the decisions it would search, records the values of its ``top_k``
    candidates in its ``samples`` guessed worlds: ``(observation, mask, actions, values)``.
    ``phase`` (:data:`PHASES`) says which decisions: those ``search-ppo`` searches
    (``"later"``), the free first turn's (``"first"``: each tile laid and the stop), or both."""

    def __init__(self, config, seed, *, policy, samples, top_k, label_prob, phase="later") -> None:
        if phase not in PHASES:
            raise ValueError(f"phase={phase!r}: expected one of {PHASES}")
        super().__init__(config, seed, policy=policy, samples=samples, top_k=top_k, margin=math.inf)
        self.label_prob = label_prob
        self.phase = phase
        self.records: list[tuple[np.ndarray, np.ndarray, list[int], list[list[float]]]] = []
        # worlds="true": the game's own state and the labeller's seat, set before each of
        # its decisions; its one "guessed" world is then the real one (:meth:`_world`)
        self.truth: tuple[RoundState, int] | None = None

    def _world(self, position, v, unknown) -> RoundState:
        """A guessed world, or with :attr:`truth` set the real one in the observer's frame:
        the other seats' actual hands and the boneyard in its actual draw order. Its values
        are then unbiased samples of each play's value under the real deal's distribution
        (the continuation reads only observations), with every play on the same future
        draws (TRPO's "vine" rollouts with common random numbers)."""
        if self.truth is None:
            return super()._world(position, v, unknown)
        state, seat = self.truth
        n = self.config.num_seats
        hands = [state.hand_mask((seat + k) % n) for k in range(1, n)]
        return determinize(position, [None, *hands], state.boneyard_ids)

    def act_view(self, v) -> int:
        if v.free_first and v.plays and self.phase != "later":
            # R11's free first turn: the candidates are the policy's most probable moves,
            # the stop (pass) among them; the rollouts go on laying the train by its argmax
            options = v.plays + [(self.decoder.codec.pass_, -1, -1)] * v.can_pass
            return self._label(v, self.by_probability(options))
        return super().act_view(v)

    def search(self, v) -> int:
        if self.phase == "first":
            return self.rank(v)[0][0]
        return self._label(v, self.rank(v))

    def _label(self, v, ranked: list[tuple[int, int, int]]) -> int:
        """Record the values of the ``top_k`` first of ``ranked`` (at a share
        ``label_prob`` of the calls) and play the first, the policy's choice."""
        ranked = ranked[: self.top_k]
        if len(ranked) > 1 and self.rng.random() < self.label_prob:
            values = self.option_values(v, ranked, lambda s, play: s.apply(play[0]))
            observation, mask = self.current_input()
            self.records.append((observation, mask, [a for a, _, _ in ranked], values))
        return ranked[0][0]


@dataclass
class Job:
    """One worker's share of the labelling: :func:`collect`'s arguments."""

    checkpoint: str
    config: dict
    seed: int
    matches: int
    label_prob: float
    futures: int
    max_actions: int
    opponents: tuple[tuple[str, float], ...]
    anchor_prob: float = 0.0
    worlds: str = "guessed"
    phase: str = "later"


def collect(job: Job) -> dict:
    """Play ``job.matches`` matches (the policy in one random seat, each other seat drawn
    from ``job.opponents``, ``"self"`` being the policy); return the labelled and anchor
    decisions of the policy's seats: ``obs`` ``(N, D)``, ``mask`` ``(N, A)``, ``actions``
    ``(N, max_actions)`` (-1 pads; all -1 for an anchor) and ``q`` ``(N, max_actions,
    futures)`` (NaN where no action)."""
    torch.set_num_threads(1)
    cfg = RulesConfig.from_dict(job.config)
    policy = PPOAgent.from_checkpoint(job.checkpoint, cfg)
    enc = ObservationEncoder(cfg)
    rng = random.Random(job.seed)
    names = [n for n, _ in job.opponents]
    weights = [w for _, w in job.opponents]
    records = []
    for _ in range(job.matches):
        match = Match(cfg, seed=rng.getrandbits(62))
        learner = rng.randrange(cfg.num_seats)
        players = []
        for seat in range(cfg.num_seats):
            name = "self" if seat == learner else rng.choices(names, weights)[0]
            if name == "self":
                agent = Labeller(
                    cfg,
                    rng.getrandbits(62),
                    policy=policy,
                    samples=job.futures,
                    top_k=job.max_actions,
                    label_prob=job.label_prob,
                    phase=job.phase,
                )
            else:
                agent = make_agent(name, cfg, seed=rng.getrandbits(62))
            agent.reset()
            players.append(agent)
        while not match.is_over:
            seat = match.state.seat
            mask = enc.action_mask(match, seat)
            agent = players[seat]
            labelled = len(agent.records) if isinstance(agent, Labeller) else None
            if labelled is not None and job.worlds == "true":
                agent.truth = (match.state, seat)
            action = int(act_in_match(agent, enc, match, seat, mask))
            if (
                labelled is not None
                and labelled == len(agent.records)
                and mask.sum() > 1
                and rng.random() < job.anchor_prob
            ):  # a decision kept as it is
                agent.records.append((enc.encode(match, seat), mask, [], []))
            match.apply(match.state.codec.to_move(action, seat))
        for agent in players:
            if isinstance(agent, Labeller):
                records += agent.records
    m, k = job.max_actions, job.futures
    actions = np.full((len(records), m), -1, dtype=np.int64)
    q = np.full((len(records), m, k), np.nan, dtype=np.float32)
    for row, (_, _, acts, values) in enumerate(records):
        actions[row, : len(acts)] = acts
        if acts:
            q[row, : len(acts)] = values
    return {
        "obs": np.array([r[0] for r in records], dtype=np.float32).reshape(len(records), -1),
        "mask": np.array([r[1] for r in records], dtype=np.int8).reshape(
            len(records), enc.num_actions
        ),
        "actions": actions,
        "q": q,
    }


def collect_many(
    checkpoint: str,
    config: RulesConfig,
    *,
    seed: int,
    minutes: float,
    workers: int,
    matches_per_job: int,
    label_prob: float,
    anchor_prob: float,
    futures: int,
    max_actions: int,
    opponents: tuple[tuple[str, float], ...],
    out: Path | None = None,
    worlds: str = "guessed",
    phase: str = "later",
) -> dict:
    """Run :func:`collect` jobs on ``workers`` spawned processes until ``minutes`` have
    passed (each job started by then finishes); every job's decisions, concatenated, and
    written to ``out`` (``.npz``, atomically) when given."""
    start = time.monotonic()
    parts: list[dict] = []
    jobs = (
        Job(
            checkpoint,
            config.to_dict(),
            seed * 1_000_003 + i,
            matches_per_job,
            label_prob,
            futures,
            max_actions,
            opponents,
            anchor_prob,
            worlds,
            phase,
        )
        for i in itertools.count()
    )
    with mp.get_context("spawn").Pool(workers) as pool:
        pending = [pool.apply_async(collect, (next(jobs),)) for _ in range(workers)]
        reported = 0.0
        while pending:
            parts.append(pending.pop(0).get())
            elapsed = time.monotonic() - start
            if elapsed < minutes * 60:
                pending.append(pool.apply_async(collect, (next(jobs),)))
            if elapsed - reported >= 30 or not pending:  # a line every half minute, and the last
                reported = elapsed
                labelled = sum(int((p["actions"][:, 0] >= 0).sum()) for p in parts)
                total = sum(len(p["obs"]) for p in parts)
                print(
                    f"improve: {labelled} labelled and {total - labelled} anchor decisions "
                    f"in {elapsed:.0f} s",
                    flush=True,
                )
    data = {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}
    data["meta"] = np.array(
        json.dumps(
            {
                "checkpoint": str(checkpoint),
                "seed": seed,
                "minutes": minutes,
                "workers": workers,
                "matches_per_job": matches_per_job,
                "label_prob": label_prob,
                "anchor_prob": anchor_prob,
                "futures": futures,
                "max_actions": max_actions,
                "opponents": dict(opponents),
                "worlds": worlds,
                "phase": phase,
            }
        )
    )
    if out is not None:
        buf = io.BytesIO()
        np.savez_compressed(buf, **data)
        write_atomic(out, buf.getvalue())
    return data


OBJECTIVES = ("tilt", "linear", "confirmed")
DATA_KEYS = ("obs", "mask", "actions", "q")


def read_data(path: str | os.PathLike, config: RulesConfig) -> dict:
    """Decisions written by :func:`collect_many` for ``config``'s rules; ValueError naming
    what is wrong with a file that is not such a file."""
    try:
        with np.load(path) as f:
            data = {k: f[k] for k in f.files}
    except Exception as err:  # numpy raises many kinds for a truncated or foreign file
        raise ValueError(
            f"--data {path}: not a readable .npz ({type(err).__name__}: {err})"
        ) from None
    missing = [k for k in DATA_KEYS if k not in data]
    enc = ObservationEncoder(config)
    n = len(data.get("obs", ()))
    shapes_ok = not missing and (
        data["obs"].shape == (n, enc.size)
        and data["mask"].shape == (n, enc.num_actions)
        and data["actions"].ndim == 2
        and len(data["actions"]) == n
        and data["q"].shape[:2] == data["actions"].shape
        and data["q"].ndim == 3
    )
    if not shapes_ok:
        raise ValueError(
            f"--data {path}: expected arrays {DATA_KEYS} of shapes (N, {enc.size}), "
            f"(N, {enc.num_actions}), (N, M), (N, M, K) for these rules; got "
            f"{ {k: v.shape for k, v in data.items()} }"
        )
    actions, q, masks = data["actions"], data["q"], data["mask"]
    if not np.issubdtype(actions.dtype, np.integer):
        raise ValueError(f"--data {path}: actions are {actions.dtype}, expected integers")
    searched = actions >= 0
    rows = np.nonzero(searched)[0]
    legal = actions.min(initial=0) >= -1 and actions.max(initial=0) < enc.num_actions
    if not legal or not masks[rows, actions[searched]].all():
        raise ValueError(f"--data {path}: a searched action is not legal in its row's mask")
    if not np.isfinite(q[searched]).all() or not np.isnan(q[~searched]).all():
        raise ValueError(
            f"--data {path}: expected finite values for searched actions and NaN padding"
        )
    data["actions"] = actions.astype(np.int64)
    return data


def labels_meta(data: dict) -> dict:
    """The options a labels file was written with (:func:`collect_many`'s ``meta``); ``{}``
    for files written before it recorded them."""
    return json.loads(str(data["meta"])) if "meta" in data else {}


def true_world_meta(data: dict, path: str | os.PathLike) -> dict:
    """``data``'s :func:`labels_meta`; ValueError naming ``path`` unless each label is one
    play-out in the true world (``--worlds true``), as the yardsticks in ``benchmarks/`` need."""
    meta = labels_meta(data)
    if meta.get("worlds") != "true" or data["q"].shape[2] != 1:
        raise ValueError(f"{path}: expected labels from improve --worlds true (one true world)")
    return meta


def advantages(
    old_logits: torch.Tensor, masks: torch.Tensor, actions: torch.Tensor, q: torch.Tensor
) -> torch.Tensor:
    """Each legal action's advantage ``(N, A)`` in pips: its mean rollout value less the
    old policy's mean over the searched actions. ``actions`` ``(N, M)`` are the searched
    actions (-1 pads), ``q`` ``(N, M, K)`` their values; a legal action that was not
    searched (more than ``M`` legal ones) gets the lowest searched advantage; illegal ones 0."""
    p_old = torch.softmax(old_logits, -1) * masks
    searched = actions >= 0
    qm = torch.nan_to_num(q.nanmean(-1), nan=0.0)
    p_c = p_old.gather(1, actions.clamp(min=0)) * searched
    base = (p_c * qm).sum(1, keepdim=True) / p_c.sum(1, keepdim=True).clamp(min=1e-12)
    adv_c = qm - base
    low = adv_c.masked_fill(~searched, math.inf).min(1, keepdim=True).values
    low = low.masked_fill(~searched.any(1, keepdim=True), 0.0)  # an anchor: nothing searched
    adv = low.expand_as(p_old).clone()
    rows = torch.arange(len(actions))[:, None].expand_as(actions)
    adv[rows[searched], actions[searched]] = adv_c[searched]
    return adv * masks


def improved_targets(
    old_logits: torch.Tensor,
    masks: torch.Tensor,
    actions: torch.Tensor,
    q: torch.Tensor,
    temperature: float,
) -> torch.Tensor:
    """The improved policy ``pi_old * exp(A / temperature)`` over each row's legal actions
    ``(N, A)``, with ``A`` the :func:`advantages`."""
    p_old = torch.softmax(old_logits, -1) * masks
    adv = advantages(old_logits, masks, actions, q)
    logits = torch.log(p_old.clamp(min=1e-30)) + adv / temperature
    return torch.softmax(logits.masked_fill(~masks, -math.inf), -1)


def confirmed_targets(
    old_logits: torch.Tensor,
    masks: torch.Tensor,
    actions: torch.Tensor,
    q: torch.Tensor,
    z: float,
) -> torch.Tensor:
    """Hard labels only where the evidence holds twice (``objective="confirmed"``): the
    old policy ``(N, A)``, except in rows where a searched play beats the old policy's
    argmax by more than ``z`` standard errors of the paired differences in *each* half of
    the guessed worlds, two independent samples; there a one-hot on that play (the one with
    the best mean gain if several). Pure noise passes one half's test about as often as a
    normal tail beyond ``z`` (6.7% at 1.5) and both about that squared (0.45%)."""
    p_old = torch.softmax(old_logits, -1) * masks
    target = p_old / p_old.sum(1, keepdim=True).clamp(min=1e-30)
    k = q.shape[-1]
    if k < 4:
        raise ValueError(f"objective='confirmed' needs at least 4 worlds per decision, got {k}")
    searched = actions >= 0
    mine = old_logits.argmax(1, keepdim=True)
    col = (actions == mine) & searched  # where the old argmax sits among the searched plays
    has = col.any(1)
    base = (q * col[..., None]).nan_to_num(0.0).sum(1, keepdim=True)  # (N, 1, K)
    diff = q - base  # (N, M, K), NaN where not searched
    halves = (diff[..., : k // 2], diff[..., k // 2 :])

    def clears(d: torch.Tensor) -> torch.Tensor:
        n = d.shape[-1]
        mean = d.mean(-1)
        se = d.std(-1, correction=1) / math.sqrt(n)
        return mean > z * se.clamp(min=1e-9)

    ok = clears(halves[0]) & clears(halves[1]) & searched & ~col & has[:, None]
    gain = diff.mean(-1).nan_to_num(-math.inf).masked_fill(~ok, -math.inf)
    best = gain.argmax(1)
    rows = torch.nonzero(ok.any(1)).squeeze(1)
    target[rows] = 0.0
    target[rows, actions[rows, best[rows]]] = 1.0
    return target


def fit(
    net: torch.nn.Module,
    featurize,
    data: dict,
    *,
    temperature: float,
    epochs: int,
    lr: float,
    batch: int,
    seed: int,
    holdout: float = 0.1,
    objective: str = "tilt",
    z: float = 1.5,
    anchor_weight: float = 1.0,
) -> dict:
    """Train ``net``'s trunk and policy head (not the value head's layer) on
    :func:`collect`'s decisions:
    cross-entropy toward :func:`improved_targets` (``objective="tilt"``) or toward
    :func:`confirmed_targets` (``"confirmed"``, with ``z``), or the linear objective of the
    module docstring (``"linear"``). Anchor rows weigh ``anchor_weight`` times a labelled
    row in the loss.

    The held-out rows are the last ``holdout`` share, which :func:`collect` writes match
    by match: whole matches the fit never saw, but one. (A random share of rows would hold
    out decisions of the rounds it trains on; the gain measured there did not carry to new
    matches, section 3.16.) Returns, on them: the mean KL from target to net and how often
    the net's argmax is the target's, before and after; ``gain_before``/``gain_after``, the
    net's mean expected :func:`advantages` over the held-out labelled rows in pips (about 0
    for the old policy; with guessed worlds it carries their model of the hidden tiles);
    ``anchors_moved``, the share of held-out anchors whose argmax the fit changed; and the
    share of rows whose target changes the old policy's argmax."""
    if objective not in OBJECTIVES:
        raise ValueError(f"objective={objective!r}: expected one of {OBJECTIVES}")
    if len(data["obs"]) < 2:
        raise ValueError(f"{len(data['obs'])} decisions to fit: expected at least 2")
    torch.manual_seed(seed)
    x = torch.as_tensor(featurize(data["obs"]))
    masks = torch.as_tensor(data["mask"].astype(bool))
    actions = torch.as_tensor(data["actions"])
    q = torch.as_tensor(data["q"])
    with torch.no_grad():
        old = torch.cat(
            [net(x[i : i + 4096], masks[i : i + 4096])[0] for i in range(0, len(x), 4096)]
        )
    if objective == "confirmed":
        target = confirmed_targets(old, masks, actions, q, z)
    else:
        target = improved_targets(old, masks, actions, q, temperature)
    adv = advantages(old, masks, actions, q)
    old_logp = torch.log_softmax(old, -1)
    n = len(x)
    n_val = max(1, int(n * holdout))
    val, train = torch.arange(n - n_val, n), torch.arange(n - n_val)

    is_label = (actions >= 0).any(1)
    val_is_label = is_label[val]
    weight = torch.where(is_label, 1.0, anchor_weight)

    def held_out() -> tuple[float, float, float, float]:
        """KL, agreement, gain and anchors moved, from one pass of the net over ``val``."""
        with torch.no_grad():
            logits = net(x[val], masks[val])[0]
            logp = torch.log_softmax(logits, -1)
            t = target[val]
            kl = (t * (torch.log(t.clamp(min=1e-30)) - logp)).masked_fill(t == 0, 0).sum(1).mean()
            agree = (logits.argmax(1) == t.argmax(1)).float().mean()
            # the net's expected advantage on held-out labelled decisions, in pips: an
            # estimate, on values the fit never saw, of what one of its decisions gains
            # over the old policy's (its noise averages out over the rows)
            p = logp[val_is_label].exp()
            gain = (p * adv[val][val_is_label]).sum(1).mean() if len(p) else torch.nan
            anchors = ~val_is_label
            moved = logits[anchors].argmax(1) != old[val][anchors].argmax(1)
            share = moved.float().mean() if len(moved) else torch.nan
        return float(kl), float(agree), float(gain), float(share)

    before = held_out()
    changed = float((target.argmax(1) != old.argmax(1)).float().mean())
    params = [p for name, p in net.named_parameters() if not name.startswith("critic")]
    opt = torch.optim.Adam(params, lr=lr, eps=1e-5)
    net.train()
    for _ in range(epochs):
        for mb in train[torch.randperm(len(train))].split(batch):
            logits = net(x[mb], masks[mb])[0]
            logp = torch.log_softmax(logits, -1)
            if objective == "linear":
                # E_pi[A] - temperature * KL(pi || pi_old), linear in the rollout values
                pi, legal = logp.exp() * masks[mb], masks[mb]
                kl = (pi * (logp - old_logp[mb]).masked_fill(~legal, 0)).sum(1)
                per_row = -(pi * adv[mb]).sum(1) + temperature * kl
            else:  # cross-entropy toward the per-decision improved targets
                t = target[mb]
                per_row = -(t * logp).masked_fill(t == 0, 0).sum(1)
            loss = (weight[mb] * per_row).mean()
            opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(params, 0.5)
            opt.step()
    net.eval()
    after = held_out()
    return {
        "decisions": n,
        "target_changes_argmax": changed,
        "kl_before": before[0],
        "kl_after": after[0],
        "agree_before": before[1],
        "agree_after": after[1],
        "gain_before": before[2],
        "gain_after": after[2],
        "anchors_moved": after[3],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m mt_env.agents.ppo.improve",
        description="One rollout policy-improvement step on a trained checkpoint: label the "
        "policy's decisions with search-ppo's candidate values, fit the policy toward the "
        "improved targets, write a policy-only checkpoint (docs/experiments.md 3.11).",
    )
    parser.add_argument("--checkpoint", required=True, help="the policy to improve (final.pt)")
    parser.add_argument("--out", required=True, help="the improved policy's file")
    parser.add_argument("--minutes", type=float, default=18.0, help="labelling time")
    parser.add_argument("--workers", type=int, default=2, help="labelling processes")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--worlds",
        choices=WORLDS,
        default="guessed",
        help="where the candidates are valued: 'guessed' worlds drawn from the observation "
        "(search-ppo's), or the 'true' one, the game's own hidden tiles and draw order "
        "(one world: the policy's argmax plays it out the same way every time)",
    )
    parser.add_argument(
        "--phase",
        choices=PHASES,
        default="later",
        help="the decisions labelled: 'later' ones (after the free first turn, where "
        "search-ppo searches), the 'first' turn's (R11: each tile laid and the stop), or 'all'",
    )
    parser.add_argument(
        "--futures",
        type=int,
        default=None,
        help="worlds per labelled decision, common to its candidates (default 16 guessed; "
        "with --worlds true only 1)",
    )
    parser.add_argument(
        "--max-actions",
        type=int,
        default=4,
        help="the policy's most probable plays valued per decision",
    )
    parser.add_argument(
        "--label-prob", type=float, default=0.5, help="share of the searchable decisions labelled"
    )
    parser.add_argument(
        "--anchor-prob",
        type=float,
        default=0.15,
        help="share of the other decisions with a choice kept as anchors (0.15: about one "
        "anchor per label at the default --label-prob)",
    )
    parser.add_argument(
        "--opponents",
        default="self=0.3,longest-train=0.4,search=0.3",
        help="NAME=WEIGHT,... for the seats other than the policy's",
    )
    parser.add_argument("--matches-per-job", type=int, default=2)
    parser.add_argument("--objective", choices=OBJECTIVES, default="tilt")
    parser.add_argument(
        "--temperature",
        type=float,
        default=2.0,
        help="pips: target = pi_old * exp(advantage / temperature)",
    )
    parser.add_argument(
        "--z",
        type=float,
        default=1.5,
        help="objective confirmed: standard errors a play must beat the policy's choice by "
        "in each half of the worlds",
    )
    parser.add_argument(
        "--anchor-weight",
        type=float,
        default=1.0,
        help="an anchor row's weight in the loss, against 1 for a labelled row: how hard the "
        "fit holds the decisions it has no values for (the free first turn) where they were",
    )
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--learning-rate", type=float, default=1e-4)
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument(
        "--data",
        help="an .npz of labelled decisions: read if it exists "
        "(no labelling), else written after labelling",
    )
    args = parser.parse_args(argv)
    if args.futures is None:
        args.futures = 1 if args.worlds == "true" else 16
    if args.worlds == "true" and args.futures != 1:
        parser.error(
            f"--futures={args.futures} with --worlds true: expected 1 (the true world is "
            "played out the same way every time; copies add nothing)"
        )
    for name, ok, expected in (
        ("--minutes", args.minutes > 0, "> 0"),
        ("--workers", args.workers >= 1, ">= 1"),
        ("--futures", args.futures >= 1, ">= 1"),
        ("--max-actions", args.max_actions >= 2, ">= 2"),
        ("--label-prob", 0 < args.label_prob <= 1, "in (0, 1]"),
        ("--anchor-prob", 0 <= args.anchor_prob <= 1, "in [0, 1]"),
        ("--matches-per-job", args.matches_per_job >= 1, ">= 1"),
        ("--temperature", args.temperature > 0, "> 0"),
        ("--z", args.z >= 0, ">= 0"),
        ("--anchor-weight", args.anchor_weight >= 0, ">= 0"),
        ("--epochs", args.epochs >= 1, ">= 1"),
        ("--learning-rate", args.learning_rate > 0, "> 0"),
        ("--batch", args.batch >= 1, ">= 1"),
    ):
        if not (ok and math.isfinite(getattr(args, name[2:].replace("-", "_")))):
            value = getattr(args, name[2:].replace("-", "_"))
            parser.error(f"{name}={value!r}: expected a finite number {expected}")
    try:
        mix = parse_opponent_mix(args.opponents)
    except ValueError as err:
        parser.error(f"--opponents: {err}")
    try:
        payload = load_checkpoint(args.checkpoint)
    except CheckpointError as err:
        parser.error(f"--checkpoint: {err}")
    config = RulesConfig.from_dict(payload["rules"])
    for name in mix:
        if name != "self":
            try:
                make_agent(name, config)  # an unknown name fails here, before any work
            except ValueError as err:
                parser.error(f"--opponents: {err}")
    started = time.monotonic()
    if args.data and Path(args.data).is_file():
        data = read_data(args.data, config)
        print(f"improve: {len(data['obs'])} decisions read from {args.data}")
    else:
        data = collect_many(
            args.checkpoint,
            config,
            seed=args.seed,
            minutes=args.minutes,
            workers=args.workers,
            matches_per_job=args.matches_per_job,
            label_prob=args.label_prob,
            anchor_prob=args.anchor_prob,
            futures=args.futures,
            max_actions=args.max_actions,
            opponents=tuple(mix.items()),
            out=Path(args.data) if args.data else None,
            worlds=args.worlds,
            phase=args.phase,
        )
    torch.set_num_threads(max(1, args.workers))
    net = build_policy(payload)
    try:
        figures = fit(
            net,
            make_featurizer(config, payload["features"]),
            data,
            temperature=args.temperature,
            epochs=args.epochs,
            lr=args.learning_rate,
            batch=args.batch,
            seed=args.seed,
            objective=args.objective,
            z=args.z,
            anchor_weight=args.anchor_weight,
        )
    except ValueError as err:  # e.g. objective confirmed on one world per decision
        parser.error(f"--objective {args.objective}: {err}")
    figures["seconds"] = round(time.monotonic() - started, 1)
    print("improve: " + json.dumps(figures))
    payload = policy_export(payload)
    payload["model"] = {k: v.detach().clone() for k, v in net.state_dict().items()}
    # provenance: what this step did, next to the trainer's configuration it started from
    fitted = (
        "checkpoint",
        "objective",
        "temperature",
        "z",
        "anchor_weight",
        "epochs",
        "learning_rate",
        "batch",
        "seed",
    )
    labels = labels_meta(data)
    payload["improve"] = {
        **{k: getattr(args, k) for k in fitted},
        "labels": {"file": args.data or "", **labels},
        **figures,
    }
    save_checkpoint(args.out, payload)
    print(f"improve: wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
