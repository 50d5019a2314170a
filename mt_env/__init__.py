"""mt_env — Mexican Train for reinforcement learning.

The rules core (:mod:`mt_env.tiles`, :mod:`mt_env.config`, :mod:`mt_env.rules`,
:mod:`mt_env.match`, :mod:`mt_env.actions`, :mod:`mt_env.rewards`) is pure Python and
imports no RL library. The observation codec (:mod:`mt_env.observation`, numpy) and the
environments — ``env()``/``raw_env`` (PettingZoo AEC) and :class:`MexicanTrainGymEnv`
(Gymnasium) — are loaded on first use, so ``import mt_env.rules`` never loads gymnasium,
pettingzoo or torch.
"""

from __future__ import annotations

import importlib
import importlib.metadata

from .actions import MoveCodec, move_codec
from .config import RulesConfig
from .match import Match, RoundResult, places, score_round
from .rewards import REWARD_MODES, match_rewards, round_rewards
from .rules import (
    Deal,
    DealError,
    IllegalMoveError,
    PublicPosition,
    RoundState,
    deal_from_order,
    determinize,
    random_deal,
)

try:
    __version__ = importlib.metadata.version("mt_env")  # the installed distribution's, from pyproject.toml
except importlib.metadata.PackageNotFoundError:  # a source tree that was never installed
    __version__ = "0+unknown"

# Names whose modules import gymnasium/pettingzoo/numpy: imported on first access (PEP 562).
_LAZY = {
    "env": ".aec",
    "raw_env": ".aec",
    "parallel_env": ".aec",
    "MexicanTrainGymEnv": ".gym_env",
    "ObservationEncoder": ".observation",
    "StateEncoder": ".state",
    "PolicyFeatures": ".wrappers",
}


def __getattr__(name: str):
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'mt_env' has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value


__all__ = [
    "REWARD_MODES",
    "Deal",
    "DealError",
    "IllegalMoveError",
    "Match",
    "MexicanTrainGymEnv",
    "MoveCodec",
    "move_codec",
    "ObservationEncoder",
    "PolicyFeatures",
    "PublicPosition",
    "RoundResult",
    "RoundState",
    "RulesConfig",
    "StateEncoder",
    "deal_from_order",
    "determinize",
    "env",
    "match_rewards",
    "parallel_env",
    "places",
    "random_deal",
    "raw_env",
    "round_rewards",
    "score_round",
]
