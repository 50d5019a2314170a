"""Behaviour cloning of a scripted teacher, the trainer's optional start before PPO.

``--pretrain-teacher NAME``: the teacher (e.g. ``longest-train-reserve``) plays every learner
seat of the trainer's rollout set-up and its real decisions (forced moves excluded) are
recorded with their Monte-Carlo returns (:func:`demonstrations`); the policy is then fitted
to its actions and the value function to those returns (:func:`behaviour_clone`).

Both take ``progress``: a tqdm-like bar factory (called with ``total``, ``desc`` and ``unit``;
the trainer's is ``functools.partial(tqdm, disable=not cfg.progress)``), or None for no bar.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable

import torch

from mt_env.agents.ppo.policy import legal_index, legal_log_probs
from mt_env.agents.ppo.rollout import Collectors, RolloutSpec

DEMO_SEED_OFFSET = 104729
"""added to each rollout spec's seed: the demonstrations are played on other deals"""


def demonstrations(
    specs: list[RolloutSpec], teacher: str, decisions: int, processes: bool,
    progress: Callable | None = None, backend: str = "local",
) -> dict:
    """At least ``decisions`` decisions of ``teacher`` in the learner seats of ``specs``'
    matches, as a batch (``obs``, ``masks``, ``actions``, ``returns``, ``priv``, ``stats``).
    ``progress``: a bar over the decisions recorded (the worker processes report counts).
    ``backend``: where the collectors run (:class:`~mt_env.agents.ppo.rollout.Collectors`)."""
    demo_specs = [
        dataclasses.replace(s, teacher=teacher, gae_lambda=1.0, seed=s.seed + DEMO_SEED_OFFSET)
        for s in specs
    ]
    bar = progress(total=decisions, desc=f"cloning: {teacher} decisions recorded",
                   unit="decision") if progress else None
    collectors = Collectors(demo_specs, processes, backend=backend)
    graceful = False  # an error or a signal stops the workers at once
    try:
        batch = collectors.demonstrate(decisions, None if bar is None else bar.update)
        graceful = True
        return batch
    finally:
        collectors.close(graceful)
        if bar is not None:
            bar.close()


def behaviour_clone(
    policy: torch.nn.Module,
    critic: torch.nn.Module | None,
    optimizer: torch.optim.Optimizer,
    demo: dict,
    epochs: int,
    vf_coef: float,
    max_grad_norm: float,
    holdout: float = 0.05,
    batch: int = 512,
    progress: Callable | None = None,
) -> dict:
    """Fit the policy to a teacher's decisions (cross-entropy over the legal actions, as in
    the PPO loss) and the value function (its head, or ``critic``) to their Monte-Carlo
    returns, for ``epochs`` epochs in minibatches of ``batch``, holding out ``holdout`` of the
    decisions; return the held-out action ``accuracy``, ``cross_entropy`` and value
    ``explained_variance``. ``progress``: a bar over the minibatches of all epochs."""
    obs = torch.from_numpy(demo["obs"])
    masks = torch.from_numpy(demo["masks"])
    actions = torch.from_numpy(demo["actions"])
    returns = torch.from_numpy(demo["returns"])
    priv = torch.from_numpy(demo["priv"])
    legal, valid, pos = legal_index(masks, actions)
    order = torch.randperm(len(actions))
    n_test = max(1, int(len(order) * holdout))
    test, train_rows = order[:n_test], order[n_test:]

    def losses(rows: torch.Tensor):
        logits, value = policy(obs[rows], masks[rows])
        if critic is not None:
            value = critic(policy.trunk_input(obs[rows]), priv[rows])
        legal_logp = legal_log_probs(logits, legal[rows], valid[rows])
        ce = -legal_logp.gather(1, pos[rows, None]).squeeze(1)
        hit = legal_logp.argmax(1) == pos[rows]
        return ce, hit, value

    params = [p for group in optimizer.param_groups for p in group["params"]]
    per_epoch = math.ceil(len(train_rows) / batch)
    bar = progress(total=epochs * per_epoch, desc=f"cloning: fitting {epochs} epochs",
                   unit="batch") if progress else None
    policy.train()
    for epoch in range(epochs):
        for mb in train_rows[torch.randperm(len(train_rows))].split(batch):
            ce, _, value = losses(mb)
            loss = ce.mean() + vf_coef * 0.5 * ((value - returns[mb]) ** 2).mean()
            optimizer.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(params, max_grad_norm)
            optimizer.step()
            if bar is not None:
                bar.set_postfix({"epoch": f"{epoch + 1}/{epochs}", "loss": f"{loss.item():.3f}"},
                                refresh=False)
                bar.update()
    if bar is not None:
        bar.close()
    policy.eval()
    with torch.no_grad():
        ce, hit, value = losses(test)
    var = returns[test].var().item()
    return {
        "cross_entropy": ce.mean().item(),
        "accuracy": hit.float().mean().item(),
        "explained_variance": 1 - (returns[test] - value).var().item() / var if var > 0 else float("nan"),
    }
