"""TorchRL: the Gymnasium env as a TorchRL env with an action mask, a masked actor, and agents.

:func:`make_env` is the environment TorchRL's components (collectors, ``GAE``,
``ClipPPOLoss``) train on unmodified: one learning seat (a random seat each match) against
:mod:`mt_env.agents` opponents, the observation being :class:`mt_env.wrappers.PolicyFeatures`'
policy input, wrapped by TorchRL's ``GymWrapper``. Its tensordicts hold ``"observation"``
(float32) and ``"action_mask"`` (bool), the action is a ``Categorical`` index, and the
``ActionMask`` transform keeps the action spec's mask up to date, so ``env.rand_step()``
and ``check_env_specs(env)`` play only legal moves. At match end the mask is all False:
collectors and ``rollout`` reset before acting again, but ``check_env_specs``, which samples
one action after its 3-step rollout, fails if a match ends within it (one-round matches).

:func:`make_actor` is the policy: an MLP from ``"observation"`` to ``"logits"`` and a
``MaskedCategorical`` over ``"action_mask"`` (it never samples an illegal action; with
``ExplorationType.DETERMINISTIC`` it plays the most likely legal one).
:func:`save_actor` writes it with its rules and layout; :func:`agent` loads it as a
:class:`mt_env.agents.base.PolicyAgent` playing greedily within the mask, for tournaments
and terminal games through a ``py:`` spec::

    from torchrl.envs.utils import check_env_specs
    from mt_env.integrations.torchrl import make_actor, make_env, save_actor

    env = make_env(num_seats=2, seed=0)
    check_env_specs(env)
    actor = make_actor(env.config)
    ...  # train: examples/torchrl_ppo.py (collector, GAE, ClipPPOLoss)
    save_actor(actor, "policy.pt", env.config)

    mt-tournament --agents py:mt_env.integrations.torchrl:agent:policy.pt longest-train --seats 2

Why the single-seat Gymnasium env and not TorchRL's ``PettingZooWrapper`` on
``mt_env.env()``: the PPO pieces above work on it as they are (one agent, one reward), and
``PettingZooWrapper(mt_env.env(), use_mask=True)`` fails at its first ``reset`` in
TorchRL 0.14 (``TypeError`` in ``_reset``: our AEC infos carry ``action_mask`` as well as
the observation, and the wrapper drops it from the info spec but not from the infos).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import torch
from tensordict import TensorDict
from tensordict.nn import TensorDictModule
from torch import nn
from torchrl.data import Categorical
from torchrl.envs import ActionMask, DTypeCastTransform, GymWrapper, TransformedEnv
from torchrl.envs.utils import ExplorationType, set_exploration_type
from torchrl.modules import MLP, MaskedCategorical, ProbabilisticActor

from mt_env.agents import PolicyAgent
from mt_env.agents.features import layout, make_featurizer
from mt_env.agents.ppo.checkpoint import check_layout
from mt_env.config import RulesConfig
from mt_env.integrations import learner_env

HIDDEN = (256, 256)
SAVE_FORMAT = "mt_env-torchrl-actor"
SAVE_VERSION = 1


def make_env(
    num_seats: int = 2,
    opponents: str | Sequence[str] = "longest-train",
    seed: int | None = None,
    *,
    features: str = "pairs",
    learner_seat: int | str = "random",
    reward: str = "score_zero_sum",
    **rules,
) -> TransformedEnv:
    """``GymWrapper(gymnasium.make("mt_env/MexicanTrainFeatures-v1", ...))`` with the mask
    cast to bool and TorchRL's ``ActionMask`` transform; ``env.config`` is its rules.

    The arguments are :func:`mt_env.integrations.learner_env`'s; ``seed`` is also passed
    to ``env.set_seed(seed)``, which seeds the deals and the learner's seat.
    """
    gym_env = learner_env(
        num_seats,
        opponents,
        seed,
        features=features,
        learner_seat=learner_seat,
        reward=reward,
        **rules,
    )
    env = TransformedEnv(
        GymWrapper(gym_env, categorical_action_encoding=True),
        DTypeCastTransform(torch.int8, torch.bool, in_keys=["action_mask"]),
    )
    env.append_transform(ActionMask())
    env.config = gym_env.unwrapped.config
    env.features = features
    if seed is not None:
        env.set_seed(seed)
    return env


def policy_network(config: RulesConfig, features: str = "pairs", hidden=HIDDEN) -> nn.Module:
    """The actor's MLP: policy input (:func:`mt_env.agents.features.layout`) -> logits."""
    lay = layout(config, features)
    return MLP(
        in_features=lay["input_size"],
        out_features=lay["num_actions"],
        num_cells=list(hidden),
        activation_class=nn.Tanh,
    )


def make_actor(
    config: RulesConfig, features: str = "pairs", hidden: Sequence[int] = HIDDEN
) -> ProbabilisticActor:
    """A ``ProbabilisticActor``: :func:`policy_network` writes ``"logits"``, and a
    ``MaskedCategorical`` over ``"action_mask"`` samples ``"action"`` (with its log-prob,
    as ``ClipPPOLoss`` needs)."""
    hidden = tuple(int(h) for h in hidden)
    if not hidden or min(hidden) < 1:
        raise ValueError(f"hidden={hidden!r}: expected one or more positive layer widths")
    module = TensorDictModule(
        policy_network(config, features, hidden), in_keys=["observation"], out_keys=["logits"]
    )
    actor = ProbabilisticActor(
        module,
        in_keys={"logits": "logits", "mask": "action_mask"},
        out_keys=["action"],
        spec=Categorical(layout(config, features)["num_actions"]),
        distribution_class=MaskedCategorical,
        return_log_prob=True,
    )
    actor.mt_env_layout = {"features": features, "hidden_sizes": list(hidden)}
    return actor


def save_actor(actor: ProbabilisticActor, path: str | Path, config: RulesConfig) -> Path:
    """``torch.save`` the actor of :func:`make_actor` with its rules and layout (what
    :func:`load_actor` checks); returns the path."""
    meta = getattr(actor, "mt_env_layout", None)
    if meta is None:
        raise ValueError("save_actor: expected an actor made by make_actor()")
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    data = {
        "format": SAVE_FORMAT,
        "format_version": SAVE_VERSION,
        "rules": config.to_dict(),
        **layout(config, meta["features"]),
        "hidden_sizes": meta["hidden_sizes"],
        "actor": actor.state_dict(),
    }
    torch.save(data, path)
    return path


def load_actor(path: str | Path, config: RulesConfig) -> ProbabilisticActor:
    """The actor :func:`save_actor` wrote, for ``config``'s rules (``ValueError`` for a
    missing or foreign file, or one saved for other rules)."""
    if not Path(path).is_file():
        raise ValueError(f"torchrl actor: no file at {str(path)!r}")
    try:
        data = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as err:
        raise ValueError(
            f"torchrl actor: cannot read {str(path)!r}: {type(err).__name__}: {err}"
        ) from err
    if not isinstance(data, dict) or data.get("format") != SAVE_FORMAT:
        raise ValueError(
            f"torchrl actor: {str(path)!r} is not a file written by "
            "mt_env.integrations.torchrl.save_actor"
        )
    check_layout(data, config, path)
    actor = make_actor(config, data["features"], data["hidden_sizes"])
    actor.load_state_dict(data["actor"])
    return actor.eval()


def agent(config: RulesConfig, seed: int | None = None, path: str | None = None) -> PolicyAgent:
    """A saved actor (:func:`save_actor`) as an agent: its most likely legal action.

    The factory of the ``py:mt_env.integrations.torchrl:agent:PATH`` spec. The actor's
    input is rebuilt from each raw observation by :mod:`mt_env.agents.features` (the
    features :class:`mt_env.wrappers.PolicyFeatures` gave it in training).
    """
    if not path:
        raise ValueError(
            "the torchrl agent needs an actor file: py:mt_env.integrations.torchrl:agent:PATH"
        )
    actor = load_actor(path, config)
    featurizer = make_featurizer(config, actor.mt_env_layout["features"])

    def policy(observation: np.ndarray, action_mask: np.ndarray) -> int:
        obs = featurizer(np.asarray(observation, dtype=np.float32)[None])
        td = TensorDict(
            observation=torch.from_numpy(obs),
            action_mask=torch.from_numpy(np.asarray(action_mask, dtype=bool)[None]),
            batch_size=[1],
        )
        with torch.no_grad(), set_exploration_type(ExplorationType.DETERMINISTIC):
            return int(actor(td)["action"][0])

    return PolicyAgent(config, policy, name=f"torchrl:{Path(path).name}", seed=seed)
