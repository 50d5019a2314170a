"""Behaviour cloning of a scripted teacher, the trainer's optional start before PPO.

``--pretrain-teacher NAME``: the teacher (e.g. ``longest-train-reserve``) plays every learner
seat of the trainer's rollout set-up and its real decisions (forced moves excluded) are
recorded with their Monte-Carlo returns (:func:`demonstrations`); the policy is then fitted
to its actions and the value function to those returns (:func:`behaviour_clone`).

Memory: the decisions are streamed from the rollout workers in parts as they are recorded and
stored compactly (:class:`Demonstrations`: raw observations as 16-bit codes, masks as bits,
~0.7 KB a decision at 4 seats, ~2 KB at 14) instead of as full-width float32 policy inputs
(~8 KB at 4 seats, ~40 KB at 14, copied several times on the way); each minibatch's policy
inputs are computed when it is fitted. ``benchmarks/cloning_memory.py`` measures the peaks.

Both take ``progress``: a tqdm-like bar factory (called with ``total``, ``desc`` and ``unit``;
the trainer's is ``functools.partial(tqdm, disable=not cfg.progress)``), or None for no bar.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable

import numpy as np
import torch

from mt_env.agents.features import make_featurizer
from mt_env.agents.ppo.policy import legal_index, legal_log_probs
from mt_env.agents.ppo.rollout import Collectors, RolloutSpec
from mt_env.config import RulesConfig
from mt_env.observation import ObservationEncoder

DEMO_SEED_OFFSET = 104729
"""added to each rollout spec's seed: the demonstrations are played on other deals"""


class Demonstrations:
    """A teacher's decisions, stored compactly as they come (:meth:`add`) and read back as
    policy inputs minibatch by minibatch (:meth:`rows`): no full-width copy of them exists.

    Per decision: the raw observation as ``uint16`` codes into a table of the distinct
    float32 values seen (the observation holds few: 0/1, one-hots, small counts over fixed
    scales), so it decodes exactly; the action mask and the privileged critic's 0/1 input
    as bits; the action and the return. The policy input (observation + features) is
    computed per minibatch by the featurizer, bit for bit what the rollout workers would
    have sent. ``parts`` segments (one per collector) keep the rows in collector order, as
    :meth:`~mt_env.agents.ppo.rollout.Collectors.demonstrate`'s batch has them; each starts
    with room for ``capacity`` rows and grows by a quarter when full."""

    def __init__(
        self, rules: RulesConfig, features: str, parts: int = 1, capacity: int = 1024
    ) -> None:
        self.featurize = make_featurizer(rules, features)
        enc = ObservationEncoder(rules)
        self.obs_size, self.mask_size = enc.size, enc.num_actions
        self.priv_size = 0
        self._code: dict[float, int] = {}
        self._table = np.zeros(0, dtype=np.float32)
        self._segments = [_Segment(capacity) for _ in range(parts)]
        self.stats: dict = {}

    def add(self, k: int, part: dict) -> None:
        """Store segment ``k``'s next decisions: a batch with raw ``obs``, bool ``masks``,
        ``actions``, ``returns`` and ``priv`` (0/1, or no columns)."""
        obs, masks, priv = part["obs"], part["masks"], part["priv"]
        if (
            obs.ndim != 2
            or obs.shape[1] != self.obs_size
            or masks.shape != (len(obs), self.mask_size)
        ):
            raise ValueError(
                f"Demonstrations.add: expected raw observations ({self.obs_size} wide) "
                f"and masks ({self.mask_size} wide), got {obs.shape} and {masks.shape}"
            )
        if len(self) == 0:
            self.priv_size = priv.shape[1]
        if priv.shape[1] != self.priv_size or not np.isin(priv, (0.0, 1.0)).all():
            raise ValueError(
                f"Demonstrations.add: expected a 0/1 privileged input {self.priv_size} "
                f"wide, got {priv.shape}"
            )
        self._segments[k].append(
            codes=self._encode(obs),
            masks=np.packbits(masks, axis=1),
            priv=np.packbits(priv.astype(bool), axis=1),
            actions=part["actions"],
            returns=part["returns"],
        )

    def _encode(self, obs: np.ndarray) -> np.ndarray:
        values, inverse = np.unique(obs, return_inverse=True)
        ids = np.array(
            [self._code.setdefault(float(v), len(self._code)) for v in values], dtype=np.int64
        )
        if len(self._code) > 1 << 16:
            raise ValueError(f"Demonstrations: more than {1 << 16} distinct observation values")
        if len(self._table) < len(self._code):
            self._table = np.array(list(self._code), dtype=np.float32)
        return ids[inverse.reshape(obs.shape)].astype(np.uint16)

    def __len__(self) -> int:
        return sum(s.n for s in self._segments)

    @property
    def actions(self) -> np.ndarray:
        return np.concatenate([s.arrays["actions"][: s.n] for s in self._segments if s.n])

    @property
    def returns(self) -> np.ndarray:
        return np.concatenate([s.arrays["returns"][: s.n] for s in self._segments if s.n])

    def rows(self, index: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The policy inputs ``(B, obs + features)`` float32, masks ``(B, actions)`` bool and
        privileged inputs ``(B, priv)`` float32 of the decisions ``index`` (in that order)."""
        index = np.asarray(index, dtype=np.int64)
        codes = np.empty((len(index), self.obs_size), dtype=np.uint16)
        masks = np.empty((len(index), (self.mask_size + 7) // 8), dtype=np.uint8)
        priv = np.empty((len(index), (self.priv_size + 7) // 8), dtype=np.uint8)
        start = 0
        for s in self._segments:
            at = np.flatnonzero((index >= start) & (index < start + s.n))
            local = index[at] - start
            codes[at], masks[at], priv[at] = (
                s.arrays[key][local] for key in ("codes", "masks", "priv")
            )
            start += s.n
        x = self.featurize(self._table[codes])
        masks = np.unpackbits(masks, axis=1, count=self.mask_size).astype(bool)
        priv = np.unpackbits(priv, axis=1, count=self.priv_size).astype(np.float32)
        return x, masks, priv

    @property
    def nbytes(self) -> int:
        """Bytes held for the decisions (the room to grow included)."""
        return sum(a.nbytes for s in self._segments for a in s.arrays.values())


class _Segment:
    """Growable arrays of one collector's decisions (rows ``[:n]`` are filled)."""

    def __init__(self, capacity: int) -> None:
        self.capacity, self.n = max(1, capacity), 0
        self.arrays: dict[str, np.ndarray] = {}

    def append(self, **columns: np.ndarray) -> None:
        m = len(columns["actions"])
        if not self.arrays:
            self.arrays = {
                k: np.empty((self.capacity, *v.shape[1:]), v.dtype) for k, v in columns.items()
            }
        if self.n + m > self.capacity:
            self.capacity = max(self.n + m, self.capacity + self.capacity // 4)
            for k, a in self.arrays.items():
                grown = np.empty((self.capacity, *a.shape[1:]), a.dtype)
                grown[: self.n] = a[: self.n]
                self.arrays[k] = grown
        for k, v in columns.items():
            self.arrays[k][self.n : self.n + m] = v
        self.n += m


def demonstrations(
    specs: list[RolloutSpec],
    teacher: str,
    decisions: int,
    processes: bool,
    progress: Callable | None = None,
    backend: str = "local",
) -> Demonstrations:
    """At least ``decisions`` decisions of ``teacher`` in the learner seats of ``specs``'
    matches, stored as they are recorded (:class:`Demonstrations`, its ``stats`` the
    collectors' counters). ``progress``: a bar over the decisions recorded (the worker
    processes send them in parts). ``backend``: where the collectors run
    (:class:`~mt_env.agents.ppo.rollout.Collectors`)."""
    demo_specs = [
        dataclasses.replace(s, teacher=teacher, gae_lambda=1.0, seed=s.seed + DEMO_SEED_OFFSET)
        for s in specs
    ]
    share = math.ceil(decisions / len(specs))
    store = Demonstrations(specs[0].rules, specs[0].features, len(specs), share + share // 50 + 64)
    bar = (
        progress(total=decisions, desc=f"cloning: {teacher} decisions recorded", unit="decision")
        if progress
        else None
    )
    collectors = Collectors(demo_specs, processes, backend=backend)
    graceful = False  # an error or a signal stops the workers at once
    try:
        store.stats = collectors.demonstrate(
            decisions, None if bar is None else bar.update, sink=store.add
        )["stats"]
        graceful = True
        return store
    finally:
        collectors.close(graceful)
        if bar is not None:
            bar.close()


def behaviour_clone(
    policy: torch.nn.Module,
    critic: torch.nn.Module | None,
    optimizer: torch.optim.Optimizer,
    demo: Demonstrations,
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
    ``explained_variance``. ``progress``: a bar over the minibatches of all epochs. The
    minibatches' policy inputs are made as they are used (:meth:`Demonstrations.rows`)."""
    actions = torch.from_numpy(demo.actions)
    returns = torch.from_numpy(demo.returns)
    order = torch.randperm(len(actions))
    n_test = max(1, int(len(order) * holdout))
    test, train_rows = order[:n_test], order[n_test:]

    def losses(rows: torch.Tensor):
        x, masks, priv = (torch.from_numpy(a) for a in demo.rows(rows.numpy()))
        legal, valid, pos = legal_index(masks, actions[rows])
        logits, value = policy(x, masks)
        if critic is not None:
            value = critic(policy.trunk_input(x), priv)
        legal_logp = legal_log_probs(logits, legal, valid)
        ce = -legal_logp.gather(1, pos[:, None]).squeeze(1)
        hit = legal_logp.argmax(1) == pos
        return ce, hit, value

    params = [p for group in optimizer.param_groups for p in group["params"]]
    per_epoch = math.ceil(len(train_rows) / batch)
    bar = (
        progress(total=epochs * per_epoch, desc=f"cloning: fitting {epochs} epochs", unit="batch")
        if progress
        else None
    )
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
                bar.set_postfix(
                    {"epoch": f"{epoch + 1}/{epochs}", "loss": f"{loss.item():.3f}"}, refresh=False
                )
                bar.update()
    if bar is not None:
        bar.close()
    policy.eval()
    with torch.no_grad():  # minibatch by minibatch: the inputs of a few at a time
        ce, hit, value = (
            torch.cat(t) for t in zip(*(losses(rows) for rows in test.split(batch)), strict=True)
        )
    var = returns[test].var().item()
    return {
        "cross_entropy": ce.mean().item(),
        "accuracy": hit.float().mean().item(),
        "explained_variance": 1 - (returns[test] - value).var().item() / var
        if var > 0
        else float("nan"),
    }
