"""Agents for Mexican Train: one interface (:class:`mt_env.agents.base.Agent`), the scripted
baselines, and :func:`make_agent`, which builds any of them — or a PPO checkpoint — from a
spec string.

| spec | agent |
|---|---|
| ``random`` | :class:`mt_env.agents.baselines.RandomAgent` |
| ``greedy`` | :class:`mt_env.agents.baselines.GreedyAgent` |
| ``longest-train`` | :class:`mt_env.agents.longest_train.LongestTrainAgent` |
| ``longest-train-reserve`` | :class:`mt_env.agents.longest_train.LongestTrainReserveAgent` (keeps a tile back in the free first turn) |
| ``search`` | :class:`mt_env.agents.search.SearchAgent` (determinized search; the strong agent) |
| ``ckpt:PATH`` | :meth:`mt_env.agents.ppo.policy.PPOAgent.from_checkpoint` ``(PATH, config, seed=seed)`` (imports torch, on first use) |

Tournaments live in :mod:`mt_env.agents.evaluation.tournament`; the learning code (the only code
that imports torch) in :mod:`mt_env.agents.ppo`.
"""

from __future__ import annotations

from mt_env.config import RulesConfig

from .base import Agent
from .baselines import GreedyAgent, RandomAgent
from .longest_train import LongestTrainAgent, LongestTrainReserveAgent
from .search import SearchAgent

AGENTS: dict[str, type[Agent]] = {
    cls.name: cls
    for cls in (RandomAgent, GreedyAgent, LongestTrainAgent, LongestTrainReserveAgent, SearchAgent)
}

CHECKPOINT_PREFIX = "ckpt:"


def make_agent(spec: str, config: RulesConfig, seed: int | None = None) -> Agent:
    """Build the agent named by ``spec``: a baseline name or ``ckpt:PATH``."""
    if not isinstance(spec, str):
        raise ValueError(f"agent spec {spec!r}: expected a string")
    if spec.startswith(CHECKPOINT_PREFIX):
        path = spec[len(CHECKPOINT_PREFIX) :]
        if not path:
            raise ValueError("agent spec 'ckpt:' needs a path: ckpt:PATH/TO/checkpoint.pt")
        try:
            from mt_env.agents.ppo import PPOAgent  # torch: loaded only for checkpoint agents
        except ImportError as err:
            raise ValueError(
                f"agent spec {spec!r}: cannot import mt_env.agents.ppo.PPOAgent ({err})"
            ) from err
        try:
            return PPOAgent.from_checkpoint(path, config, seed=seed)
        except Exception as err:
            raise ValueError(
                f"agent spec {spec!r}: cannot load the checkpoint {path!r}: "
                f"{type(err).__name__}: {err}"
            ) from err
    cls = AGENTS.get(spec)
    if cls is None:
        known = ", ".join(sorted(AGENTS))
        raise ValueError(f"unknown agent {spec!r}: expected one of {known}, or ckpt:PATH")
    return cls(config, seed=seed)


__all__ = ["AGENTS", "Agent", "make_agent"]
