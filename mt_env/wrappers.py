"""Gymnasium wrappers: the PPO policy's input features for any library.

:class:`PolicyFeatures` turns the observation of :class:`mt_env.MexicanTrainGymEnv` (or
anything with the same ``Dict(observation, action_mask)`` space, e.g. a ``gymnasium.make``
of it) into ``{"observation": policy input, "action_mask": mask}``, the policy input
being :mod:`mt_env.agents.features`'s: the observation followed by features derived
from it alone (the longest chain of the hand, per-tile, per-train and per-(tile, train)
blocks — what makes the project's PPO strong). They leak nothing: they are computed from
the observation.

    env = PolicyFeatures(MexicanTrainGymEnv(num_seats=2), features="pairs")
    env = gymnasium.make("mt_env/MexicanTrainFeatures-v1", num_seats=2)  # the same

The features code (numpy) is imported when a wrapper is built, never by importing this
module; it needs no torch.
The ``Box`` bounds are exact for the counted features (see :func:`feature_bounds`).
"""

from __future__ import annotations

from typing import Any

import gymnasium
import numpy as np
from gymnasium import spaces

from .config import RulesConfig


def _features_module():
    # the features are the scripted layer's (numpy): imported when a wrapper is built, so
    # that importing this module stays at the environments' layer
    from mt_env.agents import features

    return features


def feature_bounds(config: RulesConfig, features: str) -> np.ndarray:
    """Upper bounds of the features a featurizer appends (the lower bound is 0).

    Entries are 0/1 flags or fractions ≤ 1, except: ``planning``'s chain length (a chain
    holds at most T−1 tiles) / hand_size, chain pips / 100 (at most the set's pip total)
    and per-train matching tiles (at most N+1 tiles bear a pip) / hand_size; ``pairs``'
    train length / (N+1) (≤ (T−1)/(N+1)), matching hand tiles / hand_size (≤
    (N+1)/hand_size) and the two hand sizes of the global block (≤ (T−1)/hand_size).
    """
    mod = _features_module()
    t, n1, npip, hand = config.num_tiles, config.num_trains, config.max_pip + 1, config.hand_size
    longest_hand = (t - 1) / hand
    matching = npip / hand
    if features == "none":
        high = np.zeros(0)
    elif features == "planning":
        pips_total = sum(a + b for a in range(npip) for b in range(a, npip))
        high = np.concatenate(
            [np.ones(t), [longest_hand, pips_total / 100.0], np.full(n1, matching)]
        )
    elif features == "pairs":
        tile = np.ones((t, mod.TILE_COLS))
        train = np.ones((n1, mod.TRAIN_COLS))
        train[:, 7] = (t - 1) / npip
        pair = np.ones((t, n1, mod.PAIR_COLS))
        pair[:, :, 1] = matching
        glob = np.ones(mod.GLOBAL_COLS)
        glob[:2] = longest_hand
        high = np.concatenate([tile.ravel(), train.ravel(), pair.ravel(), glob])
    else:
        raise ValueError(f"features={features!r}: expected one of {mod.FEATURE_SETS}")
    if high.size != mod.feature_size(config, features):  # pragma: no cover - layout drift
        raise AssertionError("mt_env.wrappers.feature_bounds no longer matches the features")
    return np.maximum(high, 1.0) * (1.0 + 1e-6)  # float32 headroom; flags stay ≤ 1


class PolicyFeatures(gymnasium.ObservationWrapper, gymnasium.utils.RecordConstructorArgs):
    """``{"observation": obs, "action_mask": m}`` → ``{"observation": policy input,
    "action_mask": m}`` with :mod:`mt_env.agents.features`' ``features`` set
    (``"pairs"`` by default, ``"planning"`` or ``"none"``); the space is a float32 ``Box``
    of width :func:`mt_env.agents.features.layout` ``["input_size"]``."""

    def __init__(self, env: gymnasium.Env, features: str = "pairs") -> None:
        gymnasium.utils.RecordConstructorArgs.__init__(self, features=features)
        gymnasium.ObservationWrapper.__init__(self, env)
        config = env.unwrapped.config
        mod = _features_module()
        self.features = features
        self.featurizer = mod.make_featurizer(config, features)
        self.layout = mod.layout(config, features)
        base = env.observation_space["observation"]
        high = np.concatenate([base.high, feature_bounds(config, features)]).astype(np.float32)
        if high.shape != (self.layout["input_size"],):  # pragma: no cover - layout drift
            raise AssertionError("PolicyFeatures: bounds and policy input differ in size")
        self.observation_space = spaces.Dict(
            {
                "observation": spaces.Box(np.zeros_like(high), high, dtype=np.float32),
                "action_mask": env.observation_space["action_mask"],
            }
        )

    def observation(self, observation: dict[str, Any]) -> dict[str, np.ndarray]:
        obs = np.asarray(observation["observation"], dtype=np.float32)
        return {
            "observation": self.featurizer(obs[None])[0],
            "action_mask": observation["action_mask"],
        }


def features_env(features: str = "pairs", **kwargs) -> PolicyFeatures:
    """``PolicyFeatures(MexicanTrainGymEnv(**kwargs), features)``: the entry point of the
    ``mt_env/MexicanTrainFeatures-v1`` Gymnasium id."""
    from .gym_env import MexicanTrainGymEnv

    return PolicyFeatures(MexicanTrainGymEnv(**kwargs), features)


features_env.metadata = {"render_modes": ["ansi", "human", "rgb_array"], "render_fps": 1}
