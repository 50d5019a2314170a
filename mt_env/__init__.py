"""mt_env — Mexican Train for reinforcement learning."""
from .config import RulesConfig
from .match import Match, RoundResult, places, score_round
from .rules import Deal, DealError, IllegalMoveError, RoundState, random_deal
from .actions import MoveCodec

from .rewards import REWARD_MODES, match_rewards, round_rewards
from .env import env, raw_env
from .gym_env import MexicanTrainGymEnv
