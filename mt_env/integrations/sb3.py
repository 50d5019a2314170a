"""Stable-Baselines3: sb3-contrib's ``MaskablePPO`` on the Gymnasium env, and its models as agents.

:func:`make_env` is the environment ``MaskablePPO`` trains on unmodified: one learning
seat (a random seat each match) against :mod:`mt_env.agents` opponents, the observation
being :class:`mt_env.wrappers.PolicyFeatures`' ``Dict(observation=policy input,
action_mask=mask)``, in a ``Monitor`` (episode returns and lengths for SB3's logs, and
the ``places`` and learner ``seat`` of each match).
Use ``"MultiInputPolicy"``: it reads both entries (the mask is an honest input — the
legal moves are part of what the seat knows). ``MaskablePPO`` finds the env's
``action_masks()`` through the wrappers by itself, so it never picks an illegal action
(an illegal one would end the episode with ``info["illegal_action"]`` True).

:func:`agent` loads a saved model as a :class:`mt_env.agents.base.PolicyAgent` playing
greedily within the mask, for tournaments and terminal games through a ``py:`` spec::

    from sb3_contrib import MaskablePPO
    from mt_env.integrations.sb3 import make_env

    model = MaskablePPO("MultiInputPolicy", make_env(num_seats=2, seed=0), seed=0)
    model.learn(100_000)
    model.save("model.zip")

    mt-tournament --agents py:mt_env.integrations.sb3:agent:model.zip longest-train --seats 2
    mt-play --agents human py:mt_env.integrations.sb3:agent:model.zip

``examples/sb3_maskable_ppo.py`` trains and evaluates one end to end.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import gymnasium
import numpy as np
from sb3_contrib import MaskablePPO
from stable_baselines3.common.monitor import Monitor

from mt_env.agents import PolicyAgent
from mt_env.agents.features import FEATURE_SETS, layout
from mt_env.config import RulesConfig
from mt_env.integrations import learner_env
from mt_env.wrappers import PolicyFeatures, features_env


def make_env(
    num_seats: int = 2,
    opponents: str | Sequence[str] = "longest-train",
    seed: int | None = None,
    *,
    features: str = "pairs",
    learner_seat: int | str = "random",
    reward: str = "score_zero_sum",
    **rules,
) -> gymnasium.Env:
    """``Monitor(gymnasium.make("mt_env/MexicanTrainFeatures-v1", ...))`` for ``MaskablePPO``.

    The arguments are :func:`mt_env.integrations.learner_env`'s; ``seed`` also seeds the
    env's first ``reset`` (deals, learner seat), later resets continue from it, and
    ``MaskablePPO(seed=...)`` reseeds the env again.
    """
    env = learner_env(
        num_seats,
        opponents,
        seed,
        features=features,
        learner_seat=learner_seat,
        reward=reward,
        **rules,
    )
    env = Monitor(env, info_keywords=("places", "seat"))  # who won each match, in ep_info
    if seed is not None:
        env.reset(seed=seed)
    return env


def agent(config: RulesConfig, seed: int | None = None, path: str | None = None) -> PolicyAgent:
    """A saved ``MaskablePPO`` model as an agent: its greedy action among the legal ones.

    The factory of the ``py:mt_env.integrations.sb3:agent:PATH`` spec. The model's input
    is rebuilt from each raw observation by :class:`mt_env.wrappers.PolicyFeatures` (the
    transform it was trained with); the feature set is the one whose input width matches
    the model's. ``ValueError`` for a missing or unreadable file, or a model made
    for other rules.
    """
    if not path:
        raise ValueError(
            "the sb3 agent needs a model file: py:mt_env.integrations.sb3:agent:PATH.zip"
        )
    file = Path(path)
    if not file.is_file() and file.suffix != ".zip" and file.with_suffix(".zip").is_file():
        file = file.with_suffix(".zip")  # as MaskablePPO.save names it
    if not file.is_file():
        raise ValueError(f"sb3 agent: no model file at {path!r}")
    try:
        model = MaskablePPO.load(file, device="cpu")
    except Exception as err:
        raise ValueError(
            f"sb3 agent: cannot load {path!r} as a MaskablePPO model: {type(err).__name__}: {err}"
        ) from err
    wrapper = _matching_features(model, config, path)

    def policy(observation: np.ndarray, action_mask: np.ndarray) -> int:
        obs = wrapper.observation({"observation": observation, "action_mask": action_mask})
        action, _ = model.predict(obs, action_masks=action_mask.astype(bool), deterministic=True)
        return int(action)

    return PolicyAgent(config, policy, name=f"sb3:{file.name}", seed=seed)


def _matching_features(model: MaskablePPO, config: RulesConfig, path: str) -> PolicyFeatures:
    """The :class:`PolicyFeatures` (around an idle env of ``config``) of the feature set whose
    :func:`~mt_env.agents.features.layout` (input width, actions) is the model's, or
    ``ValueError``. Only the layout must match (the seats, set and number of rounds), as for
    our own checkpoints: a variant that keeps it (e.g. ``double_blank_value``) is fine."""
    space = model.observation_space
    is_dict = isinstance(space, gymnasium.spaces.Dict) and "observation" in space.spaces
    width = space["observation"].shape if is_dict else None
    actions = getattr(model.action_space, "n", None)
    for features in FEATURE_SETS:
        expected = layout(config, features)
        if width == (expected["input_size"],) and actions == expected["num_actions"]:
            return features_env(features, config=config)
    widths = {f: layout(config, f)["input_size"] for f in FEATURE_SETS}
    raise ValueError(
        f"sb3 agent: the model {path!r} takes observations of shape {width} and {actions} "
        f"actions; these rules ({config.num_seats} seats, double-{config.max_pip}, "
        f"{config.num_rounds} rounds) have "
        f"{layout(config, 'none')['num_actions']} actions and input widths {widths}: it was "
        f"trained for other rules"
    )
