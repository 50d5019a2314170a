"""Adapters for other libraries' trainers, and Ray for scale-out.

Each module imports its library at the top, so import only the one you use; the library
comes with the project's extra of the same name (``pip install 'mt_env[sb3]'``).

| module | library | what it adds |
|---|---|---|
| :mod:`mt_env.integrations.sb3` | sb3-contrib | the Gymnasium env for ``MaskablePPO`` (``make_env``); ``agent`` for tournaments |
| :mod:`mt_env.integrations.rllib` | ray[rllib] | a turn-based ``MultiAgentEnv`` with ``observations``/``action_mask`` dicts; action-masking self-play PPO (``ppo_config``); ``agent`` for tournaments |
| :mod:`mt_env.integrations.tianshou` | tianshou | the Gymnasium env with Tianshou's ``obs``/``mask`` keys; masked DQN; ``agent`` for tournaments (the raw PettingZoo env works as is with ``tianshou.env.PettingZooEnv``) |
| :mod:`mt_env.integrations.torchrl` | torchrl | the Gymnasium env as a TorchRL env (``GymWrapper`` + ``ActionMask``), a ``MaskedCategorical`` actor; ``agent`` for tournaments |
| :mod:`mt_env.integrations.ray` | ray | ``backend="ray"``: tournaments (``mt-tournament --backend ray``) and the trainer's rollout collection (``train.py --backend ray``) on a Ray cluster, same results as local |

A model trained with any of them plays in our tournaments and terminal games through a
``py:`` agent spec (:func:`mt_env.agents.make_agent`), e.g.
``mt-tournament --agents py:mt_env.integrations.sb3:agent:model.zip longest-train``.

The single-seat adapters (SB3, Tianshou, TorchRL) start from one env, :func:`learner_env`.
"""

from __future__ import annotations

from collections.abc import Sequence

import gymnasium

from mt_env.agents import make_opponents
from mt_env.config import RulesConfig
from mt_env.gym_env import FEATURES_ENV_ID


def learner_env(
    num_seats: int = 2,
    opponents: str | Sequence[str] = "longest-train",
    seed: int | None = None,
    *,
    features: str = "pairs",
    learner_seat: int | str = "random",
    reward: str = "score_zero_sum",
    **rules,
) -> gymnasium.Env:
    """``gymnasium.make("mt_env/MexicanTrainFeatures-v1", ...)``: one learning seat, the
    policy input of :class:`mt_env.wrappers.PolicyFeatures` with the mask, against
    :func:`mt_env.agents.make_opponents` ``(opponents, config, seed)``, which the env
    reseeds at every reset; ``env.unwrapped.config`` is its rules.

    Args:
        num_seats, **rules: the rules (:class:`mt_env.config.RulesConfig` fields).
        opponents: a :func:`mt_env.agents.make_agent` spec for every other seat, or one
            spec per other seat (clockwise from the learner); each seat gets its own agent.
        seed: the opponents' first seed (the env is not reset here: the adapters seed it
            the way their library expects).
        features, learner_seat, reward: as for :class:`mt_env.wrappers.PolicyFeatures`
            and :class:`mt_env.MexicanTrainGymEnv`.
    """
    config = RulesConfig(num_seats=num_seats, **rules)
    return gymnasium.make(
        FEATURES_ENV_ID,
        features=features,
        config=config,
        opponents=make_opponents(opponents, config, seed),
        learner_seat=learner_seat,
        reward=reward,
    )
