"""Tianshou 2.x: a masked DQN on the Gymnasium env, and its saved policies as agents.

Tianshou's policies find the legal actions in ``batch.obs.mask`` (a dict observation
``{"obs": ..., "mask": bool array}``), and in Tianshou 2.x only the Q-learning family reads
it: :class:`~tianshou.algorithm.modelfree.dqn.DiscreteQLearningPolicy` masks its greedy
action, its epsilon-greedy exploration and its double-DQN target; the policy-gradient and
actor-critic policies (REINFORCE, A2C, PPO, discrete SAC) ignore the mask. So the supported
route is a DQN learning one seat:

- :func:`make_env`: ``gymnasium.make("mt_env/MexicanTrainFeatures-v1", ...)`` (the
  project's policy features, :class:`mt_env.wrappers.PolicyFeatures`) against
  :mod:`mt_env.agents` opponents, a random learner seat each match, with the observation
  renamed to Tianshou's keys by :class:`TianshouObservation`.
- :func:`make_policy`: the ``DiscreteQLearningPolicy`` on a Tianshou ``Net`` sized for the
  rules; :func:`save_policy` / :func:`load_policy` keep its weights with the layout they
  were trained for.
- :func:`agent`: a saved policy as a :class:`mt_env.agents.base.PolicyAgent` playing its
  greedy legal action, the factory of the ``py:mt_env.integrations.tianshou:agent:PATH``
  spec (tournaments, ``mt-play``).

::

    import tianshou as ts
    from mt_env.integrations.tianshou import make_env, make_policy, save_policy

    envs = ts.env.DummyVectorEnv([lambda i=i: make_env(num_seats=2, seed=i) for i in range(4)])
    config = envs.get_env_attr("config")[0]  # the RulesConfig
    policy = make_policy(config, eps_training=0.1)
    dqn = ts.algorithm.DQN(policy=policy, optim=ts.algorithm.optim.AdamOptimizerFactory())
    ...  # Collector + VectorReplayBuffer + dqn.run_training(OffPolicyTrainerParams(...))
    save_policy(policy, "dqn.pt")

    mt-tournament --agents py:mt_env.integrations.tianshou:agent:dqn.pt longest-train --seats 2

``examples/tianshou_dqn.py`` trains and evaluates one end to end.

**The multi-agent route** needs no adapter: ``tianshou.env.PettingZooEnv(mt_env.env(...))``
is what Tianshou's ``MultiAgentOffPolicyAlgorithm`` and its collectors expect (the AEC
env's observation is ``{"observation", "action_mask"}``, which ``PettingZooEnv`` turns into
``{"agent_id", "obs", "mask"}``, and its infos have one flat, fixed structure on every
step, which Tianshou's collectors stack; ``tests/integrations/test_tianshou.py`` runs it
over many seeds). It is not the trained route here: Tianshou's multi-agent collector stores
one transition per env step, so a seat's ``obs_next`` is the observation of whichever seat
acts next (its view and its mask), and the rewards of a round another seat ends land on that
seat's transition: the Q-learning targets mix seats. The single-seat env gives each
transition the learner's own next decision and every reward since its last one.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import gymnasium
import numpy as np
import tianshou
import torch
from gymnasium import spaces
from tianshou.algorithm.modelfree.dqn import DiscreteQLearningPolicy
from tianshou.data import Batch
from tianshou.utils.net.common import Net

from mt_env.agents import PolicyAgent
from mt_env.agents.features import layout, make_featurizer
from mt_env.config import RulesConfig
from mt_env.integrations import learner_env

FORMAT = "mt_env.integrations.tianshou/dqn-1"  # the saved file's format tag
HIDDEN_SIZES = (256, 256)


class TianshouObservation(gymnasium.ObservationWrapper):
    """``{"observation": x, "action_mask": m}`` → ``{"obs": x, "mask": m.astype(bool)}``:
    the keys Tianshou's policies read (``batch.obs.obs`` goes to the network,
    ``batch.obs.mask`` masks the actions)."""

    def __init__(self, env: gymnasium.Env) -> None:
        super().__init__(env)
        space = env.observation_space
        if not (
            isinstance(space, spaces.Dict) and set(space.spaces) == {"observation", "action_mask"}
        ):
            raise ValueError(
                f"TianshouObservation: expected an env with a Dict(observation, action_mask) "
                f"observation space, got {space}"
            )
        self.config: RulesConfig = env.unwrapped.config
        self.observation_space = spaces.Dict(
            {
                "obs": space["observation"],
                "mask": spaces.Box(0, 1, space["action_mask"].shape, dtype=bool),
            }
        )

    def observation(self, observation: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        return {
            "obs": observation["observation"],
            "mask": np.asarray(observation["action_mask"], dtype=bool),
        }


def make_env(
    num_seats: int = 2,
    opponents: str | Sequence[str] = "longest-train",
    seed: int | None = None,
    *,
    features: str = "pairs",
    learner_seat: int | str = "random",
    reward: str = "score_zero_sum",
    **rules,
) -> TianshouObservation:
    """One learning seat for Tianshou: ``TianshouObservation(gymnasium.make(
    "mt_env/MexicanTrainFeatures-v1", ...))``; wrap several in ``tianshou.env.DummyVectorEnv``.

    The arguments are :func:`mt_env.integrations.learner_env`'s; ``seed`` also seeds the
    env's first ``reset`` (deals, learner seat), and ``DummyVectorEnv.seed(s)`` reseeds the
    envs. An illegal action ends the match with reward -1 and ``info["illegal_action"]``
    True; the masked policy never takes one.

    The env's ``config`` attribute is the :class:`~mt_env.config.RulesConfig` (for
    :func:`make_policy`).
    """
    env = TianshouObservation(
        learner_env(
            num_seats,
            opponents,
            seed,
            features=features,
            learner_seat=learner_seat,
            reward=reward,
            **rules,
        )
    )
    if seed is not None:
        env.reset(seed=seed)
    return env


def make_policy(
    config: RulesConfig,
    features: str = "pairs",
    hidden_sizes: Sequence[int] = HIDDEN_SIZES,
    eps_training: float = 0.0,
) -> DiscreteQLearningPolicy:
    """A masked Q-learning policy for ``config``'s observations with ``features``: a
    Tianshou ``Net`` (an MLP of ``hidden_sizes``) from the policy input to one Q-value per
    action. ``eps_training`` is its epsilon-greedy exploration while collecting for
    training (among the legal actions); inference is greedy."""
    shape = layout(config, features)  # ValueError for an unknown feature set
    hidden_sizes = [int(h) for h in hidden_sizes]
    if not hidden_sizes or min(hidden_sizes) < 1:
        raise ValueError(f"hidden_sizes={hidden_sizes!r}: expected one or more positive sizes")
    net = Net(
        state_shape=shape["input_size"],
        action_shape=shape["num_actions"],
        hidden_sizes=hidden_sizes,
    )
    policy = DiscreteQLearningPolicy(
        model=net,
        action_space=spaces.Discrete(shape["num_actions"]),
        eps_training=eps_training,
        eps_inference=0.0,
    )
    # what save_policy records, for load_policy to check and rebuild
    policy.mt_env_layout = dict(shape, hidden_sizes=hidden_sizes)
    policy.mt_env_rules = config.to_dict()
    return policy


def save_policy(policy: DiscreteQLearningPolicy, path: str | Path) -> Path:
    """Write a :func:`make_policy` policy's weights, with the rules, observation layout and
    net shape it was built for, to ``path`` (a ``torch.save`` file); returns the path."""
    meta = getattr(policy, "mt_env_layout", None)
    if meta is None:
        raise ValueError(f"save_policy: expected a policy made by make_policy, got {policy!r}")
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    torch.save(
        {
            "format": FORMAT,
            "tianshou": tianshou.__version__,
            "rules": policy.mt_env_rules,
            "layout": meta,
            "state_dict": policy.model.state_dict(),
        },
        path,
    )
    return path


def load_policy(path: str | Path, config: RulesConfig) -> DiscreteQLearningPolicy:
    """The policy :func:`save_policy` wrote to ``path``, checked against ``config``'s
    observation layout; ``ValueError`` for a missing or foreign file or other rules."""
    file = Path(path)
    if not file.is_file():
        raise ValueError(f"tianshou agent: no policy file at {str(path)!r}")
    try:
        data = torch.load(file, map_location="cpu", weights_only=True)
    except Exception as err:
        raise ValueError(
            f"tianshou agent: cannot read {str(path)!r}: {type(err).__name__}: {err}"
        ) from err
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise ValueError(
            f"tianshou agent: {str(path)!r} is not a policy saved by "
            f"mt_env.integrations.tianshou.save_policy (format {FORMAT!r})"
        )
    meta = data["layout"]
    expected = dict(layout(config, meta["features"]), hidden_sizes=meta["hidden_sizes"])
    if meta != expected:
        rules = config.to_dict()
        differ = {k: v for k, v in data["rules"].items() if rules.get(k) != v}
        here = {k: rules.get(k) for k in differ}
        why = f"other rules: {differ} (here {here})" if differ else "another observation"
        raise ValueError(
            f"tianshou agent: the policy {str(path)!r} was trained for {why}, which changes "
            f"its input layout {meta} into {expected}"
        )
    policy = make_policy(config, meta["features"], meta["hidden_sizes"])
    policy.model.load_state_dict(data["state_dict"])
    policy.eval()
    return policy


def greedy_action(policy: DiscreteQLearningPolicy, obs: np.ndarray, mask: np.ndarray) -> int:
    """The policy's greedy action for one policy input ``obs`` among ``mask``'s legal ones
    (Tianshou's own masking, ``DiscreteQLearningPolicy.forward``)."""
    batch = Batch(obs=Batch(obs=obs[None], mask=np.asarray(mask, dtype=bool)[None]), info=Batch())
    with torch.no_grad():
        return int(policy(batch).act[0])


def agent(config: RulesConfig, seed: int | None = None, path: str | None = None) -> PolicyAgent:
    """A saved policy (:func:`save_policy`) as an agent playing its greedy legal action.

    The factory of the ``py:mt_env.integrations.tianshou:agent:PATH`` spec. Each raw
    observation is turned into the policy input by the featurizer it was trained with
    (:class:`mt_env.wrappers.PolicyFeatures`' transform). ``ValueError`` for a missing or
    unreadable file, or a policy made for other rules.
    """
    if not path:
        raise ValueError(
            "the tianshou agent needs a policy file: py:mt_env.integrations.tianshou:agent:PATH"
        )
    policy = load_policy(path, config)
    featurize = make_featurizer(config, policy.mt_env_layout["features"])

    def act(observation: np.ndarray, action_mask: np.ndarray) -> int:
        obs = featurize(np.asarray(observation, dtype=np.float32)[None])[0]
        return greedy_action(policy, obs, action_mask)

    return PolicyAgent(config, act, name=f"tianshou:{Path(path).name}", seed=seed)


__all__ = [
    "TianshouObservation",
    "agent",
    "greedy_action",
    "load_policy",
    "make_env",
    "make_policy",
    "save_policy",
]
