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
| ``search-ppo:PATH`` | :meth:`mt_env.agents.ppo.policy.PolicySearchAgent.from_checkpoint`: ``search`` with that checkpoint's policy ranking its candidates (imports torch) |
| ``py:MODULE:FACTORY[:ARG]`` | whatever ``MODULE.FACTORY(config, seed)`` — or ``(config, seed, ARG)`` — returns: an :class:`Agent`, e.g. a :class:`~mt_env.agents.base.PolicyAgent` around a model trained with another library (``py:mt_env.integrations.sb3:agent:model.zip``). ``MODULE`` must be importable in the tournament's worker processes too |

Tournaments live in :mod:`mt_env.agents.evaluation.tournament`; the learning code (the only code
that imports torch) in :mod:`mt_env.agents.ppo`.
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence

from mt_env.config import RulesConfig

from .base import Agent, PolicyAgent
from .baselines import GreedyAgent, RandomAgent
from .longest_train import LongestTrainAgent, LongestTrainReserveAgent
from .search import SearchAgent

AGENTS: dict[str, type[Agent]] = {
    cls.name: cls
    for cls in (RandomAgent, GreedyAgent, LongestTrainAgent, LongestTrainReserveAgent, SearchAgent)
}

CHECKPOINT_PREFIX = "ckpt:"
POLICY_SEARCH_PREFIX = "search-ppo:"
PYTHON_PREFIX = "py:"
PATH_PREFIXES = (CHECKPOINT_PREFIX, POLICY_SEARCH_PREFIX)
"""spec prefixes followed by a checkpoint path"""
TORCH_PREFIXES = (*PATH_PREFIXES, PYTHON_PREFIX)
"""spec prefixes of agents that may run torch (py: factories wrap other libraries' models)"""


def _from_factory(spec: str, config: RulesConfig, seed: int | None) -> Agent:
    """``py:MODULE:FACTORY[:ARG]`` -> ``MODULE.FACTORY(config, seed[, ARG])`` (an Agent)."""
    module_name, _, rest = spec[len(PYTHON_PREFIX) :].partition(":")
    factory_name, _, arg = rest.partition(":")
    if not module_name or not factory_name:
        raise ValueError(
            f"agent spec {spec!r}: expected py:MODULE:FACTORY or py:MODULE:FACTORY:ARG, "
            "e.g. py:mt_env.integrations.sb3:agent:model.zip"
        )
    try:
        module = importlib.import_module(module_name)
    except ImportError as err:
        raise ValueError(f"agent spec {spec!r}: cannot import {module_name!r} ({err})") from err
    factory = getattr(module, factory_name, None)
    if not callable(factory):
        raise ValueError(f"agent spec {spec!r}: {module_name} has no callable {factory_name!r}")
    agent = factory(config, seed, arg) if arg else factory(config, seed)
    if not isinstance(agent, Agent):
        raise ValueError(
            f"agent spec {spec!r}: {module_name}.{factory_name} returned "
            f"{type(agent).__name__}, expected an mt_env.agents.Agent (e.g. a PolicyAgent)"
        )
    return agent


def make_agent(spec: str, config: RulesConfig, seed: int | None = None) -> Agent:
    """Build the agent named by ``spec`` (the table above)."""
    if not isinstance(spec, str):
        raise ValueError(f"agent spec {spec!r}: expected a string")
    for prefix, cls_name in (
        (CHECKPOINT_PREFIX, "PPOAgent"),
        (POLICY_SEARCH_PREFIX, "PolicySearchAgent"),
    ):
        if not spec.startswith(prefix):
            continue
        path = spec[len(prefix) :]
        if not path:
            raise ValueError(f"agent spec {prefix!r} needs a path: {prefix}PATH/TO/checkpoint.pt")
        try:  # torch: loaded only for checkpoint agents
            cls = getattr(importlib.import_module("mt_env.agents.ppo"), cls_name)
        except ImportError as err:
            raise ValueError(
                f"agent spec {spec!r}: cannot import mt_env.agents.ppo.{cls_name} ({err})"
            ) from err
        try:
            return cls.from_checkpoint(path, config, seed=seed)
        except Exception as err:
            raise ValueError(
                f"agent spec {spec!r}: cannot load the checkpoint {path!r}: "
                f"{type(err).__name__}: {err}"
            ) from err
    if spec.startswith(PYTHON_PREFIX):
        return _from_factory(spec, config, seed)
    cls = AGENTS.get(spec)
    if cls is None:
        known = ", ".join(sorted(AGENTS))
        raise ValueError(
            f"unknown agent {spec!r}: expected one of {known}, ckpt:PATH, search-ppo:PATH "
            "or py:MODULE:FACTORY"
        )
    return cls(config, seed=seed)


def make_opponents(
    opponents: str | Sequence[str], config: RulesConfig, seed: int | None = None
) -> list[Agent]:
    """One agent for every seat but a learner's: ``opponents`` is one spec for all of them
    or one spec per other seat (clockwise from the learner); ValueError otherwise. For the
    Gymnasium env's ``opponents``, which reseeds them at every reset."""
    others = config.num_seats - 1
    specs = [opponents] * others if isinstance(opponents, str) else list(opponents)
    if len(specs) != others or not all(isinstance(s, str) for s in specs):
        raise ValueError(
            f"opponents={opponents!r}: expected one agent spec, or {others} specs "
            "(one per other seat)"
        )
    return [make_agent(spec, config, seed=seed) for spec in specs]


__all__ = ["AGENTS", "Agent", "PolicyAgent", "make_agent", "make_opponents"]
