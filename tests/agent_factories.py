"""Agent factories for the ``py:MODULE:FACTORY[:ARG]`` spec tests (tests/test_agents.py)."""

from __future__ import annotations

import numpy as np

from mt_env.agents import PolicyAgent


def lowest(config, seed):
    """The lowest legal action, as a plain policy function."""
    return PolicyAgent(config, lambda obs, mask: int(np.flatnonzero(mask)[0]), "lowest", seed)


def nth(config, seed, arg):
    """The ``arg``-th legal action (wrapping), to check that ARG reaches the factory."""
    k = int(arg)
    return PolicyAgent(config, lambda obs, mask: np.flatnonzero(mask)[k % mask.sum()], "nth")


def illegal(config, seed):
    """Always action 0, legal or not."""
    return PolicyAgent(config, lambda obs, mask: 0, "illegal", seed)


def fractional(config, seed):
    """A float where an action belongs."""
    return PolicyAgent(config, lambda obs, mask: 1.5, "fractional", seed)


def not_an_agent(config, seed):
    return object()
