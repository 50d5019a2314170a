"""mt_env — Mexican Train for reinforcement learning.

The rules core (:mod:`mt_env.rules`, :mod:`mt_env.match`, :mod:`mt_env.config`), the
codecs (:mod:`mt_env.actions`, :mod:`mt_env.observation`), the reward schemes and the
environments: ``env()``/``raw_env`` (PettingZoo AEC) and :class:`MexicanTrainGymEnv`.
"""

from .actions import MoveCodec
from .config import RulesConfig
from .env import env, raw_env
from .gym_env import MexicanTrainGymEnv
from .match import Match, RoundResult, places, score_round
from .rewards import REWARD_MODES, match_rewards, round_rewards
from .rules import Deal, DealError, IllegalMoveError, RoundState, random_deal

__all__ = [
    "REWARD_MODES",
    "Deal",
    "DealError",
    "IllegalMoveError",
    "Match",
    "MexicanTrainGymEnv",
    "MoveCodec",
    "RoundResult",
    "RoundState",
    "RulesConfig",
    "env",
    "match_rewards",
    "places",
    "random_deal",
    "raw_env",
    "round_rewards",
    "score_round",
]
