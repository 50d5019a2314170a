"""Scale-out on Ray: tournaments and rollout collection on a Ray cluster (``--backend ray``).

Where one machine is not enough, the two parallel parts of the project run on Ray actors
instead of this machine's worker processes, with the same results for the same seed:

- **tournaments**: ``mt-tournament --agents ckpt:run/model.pt longest-train --backend ray``
  (``--ray-address auto`` for a running cluster), or
  ``run_tournament(..., backend="ray", ray_address=None)``. Each actor holds the tournament's
  own deal player (``_Worker``) and plays whole deals; every game is seeded from its deal,
  arrangement and seat, and the records are put back in deal order, so the records and
  the tables equal the local backend's for the same seed, whatever the number of actors;
- **rollouts**: ``python train.py --backend ray --num-workers N``: each of the trainer's
  ``N`` collectors (:class:`mt_env.agents.ppo.rollout.Collector`, with its own seed) lives
  in a Ray actor; the batches (behaviour cloning's demonstrations included) are the same as
  with local worker processes, and ``num_workers`` is not capped by this machine's cores.

Which Ray: :func:`connect` uses the Ray this process is already connected to if any
(``ray.init`` called by you); otherwise it calls ``ray.init(address)``: ``None`` is Ray's
default (the cluster in ``RAY_ADDRESS``, or one started with ``ray start`` on this machine,
else a new local Ray for this process), ``"auto"`` an existing cluster only, or a
``HOST:PORT`` / ``ray://HOST:PORT`` address. Every node needs this project installed (the
same version), the modules of ``py:`` agent specs importable, and the files the agents read
at the same path (a tournament's ``ckpt:`` paths are made absolute here: a shared file system
or the same checkout). Each actor takes one CPU and runs torch on one thread.

Requires ``pip install 'mt_env[ray]'``; the tournament and the trainer import this module
only when ``backend="ray"`` is asked for.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence

try:
    import ray
except ImportError as err:
    raise ImportError(
        f"backend='ray' needs Ray, which is not installed ({err}): pip install 'mt_env[ray]'"
    ) from None

from mt_env.agents import PATH_PREFIXES
from mt_env.agents.evaluation.tournament import GameRecord, _may_use_torch, _Worker
from mt_env.config import RulesConfig

IN_FLIGHT = 2
"""chunks of deals queued per tournament actor: it starts the next one while the driver
reads the last one's records"""
MAX_CHUNK = 8
"""deals per tournament task at most (fewer when there are few deals per actor)"""


def connect(address: str | None = None) -> None:
    """Connect to Ray unless this process already is (see the module docstring)."""
    if not ray.is_initialized():
        ray.init(address=address, include_dashboard=False)


def cluster_cpus() -> int:
    """The CPUs of the connected cluster (at least 1)."""
    return max(1, int(ray.cluster_resources().get("CPU", 1)))


def _one_torch_thread() -> None:
    """One torch thread per actor: the actors already use every core."""
    import torch

    torch.set_num_threads(1)


def _absolute_checkpoints(specs: Sequence[str]) -> list[str]:
    """``ckpt:PATH`` and ``search-ppo:PATH`` with PATH made absolute (actors may run in
    another folder)."""

    def absolute(spec: str) -> str:
        for prefix in PATH_PREFIXES:
            if spec.startswith(prefix):
                return prefix + os.path.abspath(spec[len(prefix) :])
        return spec

    return [absolute(spec) for spec in specs]


# ---------------------------------------------------------------------- tournaments
@ray.remote(num_cpus=1)
class TournamentActor:
    """The tournament's deal player (``_Worker``) in a Ray actor."""

    def __init__(self, specs: list[str], config: dict, seed: int, seating: str) -> None:
        if _may_use_torch(specs):
            _one_torch_thread()
        self.worker = _Worker(specs, RulesConfig.from_dict(config), seed, seating)

    def play_deals(self, deals: list[int]) -> list[list[GameRecord]]:
        return [self.worker.play_deal(d) for d in deals]


def play_deals(
    specs: Sequence[str],
    config: RulesConfig,
    seed: int,
    seating: str,
    deals: int,
    workers: int | None = None,
    address: str | None = None,
) -> Iterator[list[GameRecord]]:
    """The records of deals ``0..deals-1``, one list per deal in deal order, played by
    ``workers`` actors (``None``: one per CPU of the cluster). The actors are removed when
    the iterator is exhausted or closed."""
    connect(address)
    workers = max(1, min(workers or cluster_cpus(), deals))
    chunk = max(1, min(MAX_CHUNK, deals // (workers * 4)))
    todo = iter([list(range(d, min(d + chunk, deals))) for d in range(0, deals, chunk)])
    args = (_absolute_checkpoints(specs), config.to_dict(), seed, seating)
    actors = [TournamentActor.remote(*args) for _ in range(workers)]
    pending: dict = {}  # task -> (actor, its deals)
    done: dict[int, list[GameRecord]] = {}
    next_deal = 0

    def submit(actor) -> None:
        chunk_deals = next(todo, None)
        if chunk_deals is not None:
            pending[actor.play_deals.remote(chunk_deals)] = (actor, chunk_deals)

    try:
        for actor in actors:
            for _ in range(IN_FLIGHT):
                submit(actor)
        while pending:
            [task], _ = ray.wait(list(pending), num_returns=1)
            actor, chunk_deals = pending.pop(task)
            submit(actor)
            done.update(zip(chunk_deals, ray.get(task), strict=True))
            while next_deal in done:  # in deal order, whichever actor finished first
                yield done.pop(next_deal)
                next_deal += 1
    finally:
        for actor in actors:
            ray.kill(actor)


# ---------------------------------------------------------------------- rollouts
@ray.remote(num_cpus=1)
class CollectorActor:
    """A rollout :class:`~mt_env.agents.ppo.rollout.Collector` in a Ray actor."""

    def __init__(self, spec) -> None:
        from mt_env.agents.ppo.rollout import Collector  # torch: only where collectors run

        _one_torch_thread()
        self.collector = Collector(spec)

    def collect(self, state_dict: dict, min_steps: int, critic_state: dict | None) -> dict:
        return self.collector.collect(state_dict, min_steps, critic_state)

    def demonstrate(self, min_steps: int) -> dict:
        return self.collector.demonstrate(min_steps)

    def set_pool(self, state_dicts: list[dict]) -> None:
        self.collector.set_pool(state_dicts)


class RayCollector:
    """A collector in a Ray actor, driven like
    :class:`~mt_env.agents.ppo.rollout.CollectorProcess`: ``start_collect`` or
    ``start_demonstrate``, then ``result``."""

    def __init__(self, spec) -> None:
        self.actor = CollectorActor.remote(spec)
        self.task = None

    def start_collect(self, state_dict, min_steps: int, critic_state: dict | None = None) -> None:
        self.task = self.actor.collect.remote(state_dict, min_steps, critic_state)

    def start_demonstrate(self, min_steps: int) -> None:
        self.task = self.actor.demonstrate.remote(min_steps)

    def result(self) -> dict:
        task, self.task = self.task, None
        return ray.get(task)

    def set_pool(self, state_dicts) -> None:
        ray.get(self.actor.set_pool.remote(state_dicts))

    def close(self) -> None:
        ray.kill(self.actor)


def collectors(specs: list, address: str | None = None) -> list[RayCollector]:
    """One :class:`RayCollector` per rollout spec, on the Ray of :func:`connect`."""
    connect(address)
    return [RayCollector(spec) for spec in specs]
