"""RLlib (Ray 2.x, new API stack): the game as a ``MultiAgentEnv``, action-masking PPO
self-play, and saved RLlib checkpoints as agents.

:class:`MexicanTrainMultiAgentEnv` is the PettingZoo AEC env (:class:`mt_env.aec.raw_env`)
in RLlib's turn-based multi-agent convention:

- each step returns an observation for the seat to act only (at ``reset`` too), as
  ``{"observations": policy input, "action_mask": mask}`` — the policy input of
  :mod:`mt_env.agents.features` (what :class:`mt_env.wrappers.PolicyFeatures` gives a
  Gymnasium env, ``"pairs"`` by default) and the mask as float32: the layout RLlib's
  action-masking RLModule reads;
- rewards are returned for **every** seat on the step that earns them (a round end pays
  every seat, whoever moved): RLlib keeps a reward for a seat that got no observation
  and adds it to that seat's last action, so each round's score reaches the seat waiting
  for its turn too (``MultiAgentEpisode``'s "hanging" rewards);
- when the match ends every seat gets its last observation, and ``terminateds`` is True
  for every seat and ``"__all__"`` (there is no truncation);
- ``illegal_action="terminate"`` (the default here): RLlib's env check steps a random,
  unmasked action; it ends the episode (the actor gets ``illegal_reward``, the infos say
  ``illegal_action``) instead of raising. Trained with the masking RLModule, no sampled
  action is ever illegal.

:func:`ppo_config` is a :class:`~ray.rllib.algorithms.ppo.PPOConfig` for self-play: every
seat is played by one shared RLModule (``"shared"``), RLlib's
:class:`~ray.rllib.examples.rl_modules.classes.action_masking_rlm.ActionMaskingTorchRLModule`
with a small MLP, sampling in this process (``num_env_runners=0``). :func:`agent` loads a
checkpoint saved by ``algo.save(path)`` as a :class:`mt_env.agents.base.PolicyAgent`
playing the greedy masked action, for tournaments and terminal games::

    import ray
    from mt_env.config import RulesConfig
    from mt_env.integrations.rllib import ppo_config

    ray.init(num_cpus=2, include_dashboard=False)
    algo = ppo_config(RulesConfig(num_seats=2), seed=0).build_algo()
    for _ in range(20):
        algo.train()
    algo.save("rllib_ckpt")
    ray.shutdown()

    mt-tournament --agents py:mt_env.integrations.rllib:agent:rllib_ckpt longest-train --seats 2

``examples/rllib_ppo.py`` trains and evaluates one end to end.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import torch
from gymnasium import spaces
from ray.rllib.algorithms.ppo import PPOConfig
from ray.rllib.core import COMPONENT_LEARNER, COMPONENT_LEARNER_GROUP, COMPONENT_RL_MODULE
from ray.rllib.core.columns import Columns
from ray.rllib.core.rl_module.multi_rl_module import MultiRLModuleSpec
from ray.rllib.core.rl_module.rl_module import RLModule, RLModuleSpec
from ray.rllib.env.multi_agent_env import MultiAgentEnv
from ray.rllib.examples.rl_modules.classes.action_masking_rlm import (
    ActionMaskingTorchRLModule,
)

from mt_env.aec import raw_env
from mt_env.agents import PolicyAgent
from mt_env.agents.features import FEATURE_SETS, layout, make_featurizer
from mt_env.config import RulesConfig
from mt_env.wrappers import feature_bounds

SHARED = "shared"  # the one RLModule (policy) every seat plays in self-play


class MexicanTrainMultiAgentEnv(MultiAgentEnv):
    """The AEC env as an RLlib turn-based ``MultiAgentEnv`` (see the module docstring).

    ``config`` (RLlib's ``env_config``, a dict): ``features`` (``"pairs"``, ``"planning"``
    or ``"none"``; default ``"pairs"``), and anything :class:`mt_env.aec.raw_env` takes —
    the :class:`mt_env.config.RulesConfig` fields (``num_seats``, ``num_rounds``, ...),
    ``reward``, ``reward_scale``, ``illegal_action`` (default ``"terminate"`` here) and
    ``illegal_reward``. A bad option raises ``ValueError`` naming what was expected.
    ``self.aec`` is the underlying :class:`~mt_env.aec.raw_env`.
    """

    def __init__(self, config: dict[str, Any] | None = None) -> None:
        super().__init__()
        options = dict(config or {})
        features = options.pop("features", "pairs")
        options.setdefault("illegal_action", "terminate")
        self.aec = raw_env(**options)
        self.config: RulesConfig = self.aec.config
        self.features = features
        self.featurizer = make_featurizer(self.config, features)  # ValueError on a bad name
        base = self.aec.observation_space(self.aec.possible_agents[0])["observation"]
        high = np.concatenate([base.high, feature_bounds(self.config, features)])
        high = high.astype(np.float32)
        observation_space = spaces.Dict(
            {
                "observations": spaces.Box(np.zeros_like(high), high, dtype=np.float32),
                "action_mask": spaces.Box(
                    0.0, 1.0, (self.aec.encoder.num_actions,), dtype=np.float32
                ),
            }
        )
        self.possible_agents = list(self.aec.possible_agents)
        self.agents = list(self.possible_agents)
        self.observation_spaces = dict.fromkeys(self.possible_agents, observation_space)
        self.action_spaces = {a: self.aec.action_space(a) for a in self.possible_agents}

    def _observe(self, agent: str) -> dict[str, np.ndarray]:
        obs = self.aec.observe(agent)
        return {
            "observations": self.featurizer(obs["observation"][None])[0],
            "action_mask": obs["action_mask"].astype(np.float32),
        }

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        """A new match (``seed`` and ``options`` as for :meth:`mt_env.aec.raw_env.reset`);
        the observation and info of the seat to act."""
        self.aec.reset(seed=seed, options=options)
        self.agents = list(self.possible_agents)
        actor = self.aec.agent_selection
        return {actor: self._observe(actor)}, {actor: dict(self.aec.infos[actor])}

    def step(self, action_dict: dict[str, Any]):
        """One move, by the seat to act (the one agent in the last observations); the
        entries of other agents are ignored."""
        aec = self.aec
        if aec.match is None:
            raise RuntimeError("step() before reset(): call reset() first")
        actor = aec.agent_selection
        if actor not in action_dict:
            raise ValueError(
                f"{actor} is to act: action_dict must hold its action (got one for "
                f"{sorted(action_dict)})"
            )
        aec.step(action_dict[actor])
        over = all(aec.terminations.values())
        to_observe = self.possible_agents if over else [aec.agent_selection]
        observations = {a: self._observe(a) for a in to_observe}
        rewards = {a: float(aec.rewards[a]) for a in self.possible_agents}
        terminateds = dict.fromkeys(self.possible_agents, over)
        terminateds["__all__"] = over
        truncateds = dict.fromkeys(self.possible_agents, False)
        truncateds["__all__"] = False
        infos = {a: dict(aec.infos[a]) for a in to_observe}
        return observations, rewards, terminateds, truncateds, infos

    def render(self):
        return self.aec.render()

    def close(self) -> None:
        self.aec.close()


def shared_policy(agent_id: str, episode: Any = None, **kwargs) -> str:
    """The policy mapping of self-play: every seat plays the shared module."""
    return SHARED


def ppo_config(
    config: RulesConfig,
    *,
    features: str = "pairs",
    hidden_sizes: tuple[int, ...] = (256, 256),
    train_batch_size: int = 4000,
    minibatch_size: int = 500,
    num_epochs: int = 4,
    lr: float = 3e-4,
    gae_lambda: float = 0.95,
    entropy_coeff: float = 0.01,
    num_env_runners: int = 0,
    seed: int | None = None,
    **env_options,
) -> PPOConfig:
    """A ``PPOConfig`` for self-play on :class:`MexicanTrainMultiAgentEnv` with ``config``'s
    rules: one shared ``ActionMaskingTorchRLModule`` (an MLP of ``hidden_sizes``, ReLU,
    separate value network) for every seat, RLlib's env check left on. ``env_options``
    go to the env (``reward``, ``reward_scale``, ...); ``num_env_runners=0`` samples in the
    driver process, 1 in one Ray actor. ``config.build_algo()`` needs ``ray.init()`` first
    (or starts Ray itself).
    """
    if not isinstance(config, RulesConfig):
        raise ValueError(f"config={config!r}: expected a mt_env.config.RulesConfig")
    env_config = {**config.to_dict(), **env_options, "features": features}
    module = RLModuleSpec(
        module_class=ActionMaskingTorchRLModule,
        model_config={
            "fcnet_hiddens": list(hidden_sizes),
            "fcnet_activation": "relu",
            "head_fcnet_hiddens": [],
            "vf_share_layers": False,
        },
    )
    return (
        PPOConfig()
        .environment(MexicanTrainMultiAgentEnv, env_config=env_config)
        .env_runners(num_env_runners=num_env_runners, num_envs_per_env_runner=1)
        .learners(num_learners=0)
        .multi_agent(policies={SHARED}, policy_mapping_fn=shared_policy)
        .rl_module(rl_module_spec=MultiRLModuleSpec(rl_module_specs={SHARED: module}))
        .training(
            train_batch_size_per_learner=train_batch_size,
            minibatch_size=minibatch_size,
            num_epochs=num_epochs,
            lr=lr,
            lambda_=gae_lambda,
            entropy_coeff=entropy_coeff,
        )
        .debugging(seed=seed)
    )


def module_path(path: str | Path) -> Path:
    """Where ``algo.save(path)`` keeps the shared RLModule; ValueError if it is not there."""
    parts = (COMPONENT_LEARNER_GROUP, COMPONENT_LEARNER, COMPONENT_RL_MODULE, SHARED)
    where = Path(path).resolve().joinpath(*parts)  # RLlib reads absolute paths only
    if not where.is_dir():
        raise ValueError(
            f"{path}: expected an RLlib checkpoint folder written by algo.save() for a "
            f"ppo_config() algorithm (with {'/'.join(parts)})"
        )
    return where


def agent(config: RulesConfig, seed: int | None, path: str) -> PolicyAgent:
    """The shared RLModule of the checkpoint at ``path`` as a greedy masked
    :class:`~mt_env.agents.base.PolicyAgent` (the factory of
    ``py:mt_env.integrations.rllib:agent:PATH``). The feature set is the one whose input
    width matches the module's; a module trained for other rules raises ``ValueError``."""
    module = RLModule.from_checkpoint(module_path(path))
    module.eval()
    width = module.observation_space["observations"].shape[0]
    num_actions = module.action_space.n
    widths = {f: layout(config, f)["input_size"] for f in FEATURE_SETS}
    matches = [f for f, w in widths.items() if w == width]
    expected_actions = layout(config, "none")["num_actions"]
    if not matches or num_actions != expected_actions:
        raise ValueError(
            f"{path}: the module takes {width} inputs and {num_actions} actions, which fits "
            f"no feature set of {config} (inputs {widths}, {expected_actions} actions): "
            f"it was trained for other rules"
        )
    featurizer = make_featurizer(config, matches[0])

    def policy(observation: np.ndarray, action_mask: np.ndarray) -> int:
        obs = featurizer(np.asarray(observation, dtype=np.float32)[None])
        batch = {
            Columns.OBS: {
                "observations": torch.from_numpy(obs),
                "action_mask": torch.from_numpy(np.asarray(action_mask, np.float32)[None]),
            }
        }
        with torch.no_grad():
            logits = module.forward_inference(batch)[Columns.ACTION_DIST_INPUTS]
        return int(logits[0].argmax())

    return PolicyAgent(config, policy, name="rllib-ppo", seed=seed)
