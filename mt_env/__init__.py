"""mt_env — Mexican Train for reinforcement learning."""
from .config import RulesConfig
from .match import Match, RoundResult, places, score_round
from .rules import Deal, DealError, IllegalMoveError, RoundState, random_deal
from .actions import MoveCodec
