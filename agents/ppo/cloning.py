"""Behaviour cloning of a scripted teacher, the trainer's optional start before PPO.

``--pretrain-teacher NAME``: the teacher (e.g. ``longest-train-reserve``) plays every learner
seat of the trainer's rollout set-up and its real decisions (forced moves excluded) are
recorded with their Monte-Carlo returns (:func:`demonstrations`); the policy is then fitted
to its actions and the value function to those returns (:func:`behaviour_clone`).

Memory: the decisions are streamed from the rollout workers in parts as they are recorded and
stored compactly on disk (:class:`Demonstrations`: raw observations as 16-bit codes, masks as
bits, ~0.7 KB a decision at 4 seats, ~2 KB at 14, in unnamed temporary files) instead of as
full-width float32 policy inputs in memory (~8 KB at 4 seats, ~40 KB at 14, copied several
times on the way); each minibatch is read back and its policy inputs computed when it is
fitted, so the trainer's memory does not grow with the number of decisions.
``benchmarks/cloning_memory.py`` measures the peaks.

Both take ``progress``: a tqdm-like bar factory (called with ``total``, ``desc`` and ``unit``;
the trainer's is ``functools.partial(tqdm, disable=not cfg.progress)``), or None for no bar.
"""

from __future__ import annotations

import dataclasses
import math
import tempfile
from collections.abc import Callable
from pathlib import Path

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
    """A teacher's decisions, written compactly to disk as they come (:meth:`add`) and read
    back as policy inputs minibatch by minibatch (:meth:`rows`): memory holds neither a
    full-width copy of them nor the compact one, only the minibatch being read.

    Per decision: the raw observation as ``uint16`` codes into a table of the distinct
    float32 values seen (the observation holds few: 0/1, one-hots, small counts over fixed
    scales), so it decodes exactly; the action mask and the privileged critic's 0/1 input
    as bits; the action and the return. The policy input (observation + features) is
    computed per minibatch by the featurizer, bit for bit what the rollout workers would
    have sent. ``parts`` segments (one per collector) keep the rows in collector order, as
    :meth:`~mt_env.agents.ppo.rollout.Collectors.demonstrate`'s batch has them. Each
    segment's columns are unnamed temporary files in ``directory`` (the system's temporary
    folder if None; the trainer uses its run folder, on disk where a RAM-backed ``/tmp``
    would not be): they vanish when the store is closed (:meth:`close`, or ``with``) or
    collected, and leave nothing behind if the process is killed."""

    def __init__(
        self, rules: RulesConfig, features: str, parts: int = 1, directory: str | Path | None = None
    ) -> None:
        self.featurize = make_featurizer(rules, features)
        enc = ObservationEncoder(rules)
        self.obs_size, self.mask_size = enc.size, enc.num_actions
        self.priv_size = 0
        self._code: dict[float, int] = {}
        self._table = np.zeros(0, dtype=np.float32)
        self._segments = [_Segment(directory) for _ in range(parts)]
        self.stats: dict = {}

    def close(self) -> None:
        """Delete the stored decisions (their files)."""
        for s in self._segments:
            s.close()

    def __enter__(self) -> Demonstrations:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

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
        return np.concatenate([s.read("actions") for s in self._segments if s.n])

    @property
    def returns(self) -> np.ndarray:
        return np.concatenate([s.read("returns") for s in self._segments if s.n])

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
            if len(at):
                codes[at], masks[at], priv[at] = (
                    s.read(key, local) for key in ("codes", "masks", "priv")
                )
            start += s.n
        x = self.featurize(self._table[codes])
        masks = np.unpackbits(masks, axis=1, count=self.mask_size).astype(bool)
        priv = np.unpackbits(priv, axis=1, count=self.priv_size).astype(np.float32)
        return x, masks, priv

    @property
    def nbytes(self) -> int:
        """Bytes stored for the decisions (on disk)."""
        return sum(s.nbytes for s in self._segments)


class _Segment:
    """One collector's decisions, each column appended to an unnamed temporary file (rows
    ``[:n]``); rows are read back through a memory map opened for the one read."""

    def __init__(self, directory: str | Path | None) -> None:
        self.directory, self.n = directory, 0
        self.columns: dict[str, tuple] = {}  # name -> (file, dtype, row shape)

    def append(self, **columns: np.ndarray) -> None:
        m = len(columns["actions"])
        if not self.columns:
            self.columns = {
                k: (tempfile.TemporaryFile(dir=self.directory), v.dtype, v.shape[1:])
                for k, v in columns.items()
            }
        for k, v in columns.items():
            file, dtype, shape = self.columns[k]
            if v.dtype != dtype or v.shape != (m, *shape):
                raise ValueError(
                    f"Demonstrations: column {k!r} expected {m} rows of {shape} "
                    f"{dtype}, got {v.shape} {v.dtype}"
                )
            file.write(np.ascontiguousarray(v).tobytes())
        self.n += m

    def read(self, key: str, rows: np.ndarray | None = None) -> np.ndarray:
        """Column ``key``: all its rows, or ``rows`` (in that order), as an array in memory."""
        file, dtype, shape = self.columns[key]
        if self.n == 0 or math.prod(shape) == 0:  # nothing on disk to map
            return np.empty((self.n if rows is None else len(rows), *shape), dtype)
        file.flush()
        stored = np.memmap(file, dtype=dtype, mode="r", shape=(self.n, *shape))
        out = np.array(stored if rows is None else stored[rows])
        del stored  # unmapped: the pages read do not stay with the process
        return out

    @property
    def nbytes(self) -> int:
        return sum(
            self.n * dtype.itemsize * math.prod(shape) for _, dtype, shape in self.columns.values()
        )

    def close(self) -> None:
        for file, _, _ in self.columns.values():
            file.close()
        self.columns, self.n = {}, 0


def demonstrations(
    specs: list[RolloutSpec],
    teacher: str,
    decisions: int,
    processes: bool,
    progress: Callable | None = None,
    backend: str = "local",
    directory: str | Path | None = None,
) -> Demonstrations:
    """At least ``decisions`` decisions of ``teacher`` in the learner seats of ``specs``'
    matches, stored as they are recorded (:class:`Demonstrations`, its ``stats`` the
    collectors' counters). ``progress``: a bar over the decisions recorded (the worker
    processes send them in parts). ``backend``: where the collectors run
    (:class:`~mt_env.agents.ppo.rollout.Collectors`). ``directory``: where the store keeps
    its files (:class:`Demonstrations`)."""
    demo_specs = [
        dataclasses.replace(s, teacher=teacher, gae_lambda=1.0, seed=s.seed + DEMO_SEED_OFFSET,
                            duplicates=1)  # a scripted teacher's copies would play alike
        for s in specs
    ]
    store = Demonstrations(specs[0].rules, specs[0].features, len(specs), directory)
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
        if not graceful:
            store.close()
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
