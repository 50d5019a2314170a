"""The one interface every agent implements, scripted or learned.

An agent is a policy for one seat: given that seat's observation vector and action
mask (:mod:`mt_env.observation`), it returns one legal action (:mod:`mt_env.actions`:
trains relative to the acting seat). It sees nothing else — never another seat's
hand nor the boneyard's order. Between calls it may remember what it saw earlier in
the match (public information only); :meth:`Agent.reset` forgets it and is called at
the start of every match.

Because ``__call__`` is ``act``, an agent is also a plain policy callable, e.g. an
opponent for the Gymnasium wrapper. The tournament (:mod:`mt_env.agents.evaluation.tournament`) drives
agents the same way.
"""

from __future__ import annotations

import random

import numpy as np

from mt_env.config import RulesConfig


class Agent:
    """Base class: subclasses set ``name`` and implement :meth:`act`.

    ``seed`` seeds ``self.rng`` (a ``random.Random``), the only source of randomness an
    agent may use, so the same seed and the same observations give the same actions.
    """

    name: str = "agent"

    def __init__(self, config: RulesConfig, seed: int | None = None) -> None:
        self.config = config
        self.rng = random.Random(seed)
        self.reset()

    def seed(self, seed: int | None) -> None:
        """Re-seed the agent's random generator."""
        self.rng.seed(seed)

    def reset(self) -> None:
        """Forget per-match memory; called at the start of every match."""

    def act(self, observation: np.ndarray, action_mask: np.ndarray) -> int:
        """Return an action whose ``action_mask`` entry is 1."""
        raise NotImplementedError

    def __call__(self, observation: np.ndarray, action_mask: np.ndarray) -> int:
        return self.act(observation, action_mask)

    def act_batch(self, observations: np.ndarray, action_masks: np.ndarray) -> np.ndarray:
        """Actions for a batch ``(B, D)`` of observations and ``(B, A)`` of masks.

        The default loops over :meth:`act`, so it is only meaningful for agents without
        per-match memory or when the rows are successive decisions of one match; learned
        agents override it with one batched forward pass.
        """
        return np.array(
            [self.act(o, m) for o, m in zip(observations, action_masks, strict=True)],
            dtype=np.int64,
        )

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r})"


class ViewAgent(Agent):
    """An agent that decides from its seat's decoded observation (a
    :class:`~mt_env.observation.SeatView`), as every scripted agent does: :meth:`act`
    decodes the vector with ``self.decoder`` (an :class:`~mt_env.observation.ObservationEncoder`
    the subclass makes) and calls :meth:`act_view`. Code that holds the match — the
    trainer's rollouts, tournaments — calls ``act_view(encoder.view(match, seat, mask))``
    instead: the same view (a test holds them equal) without encoding a vector only to
    decode it again — unless ``needs_vector`` is set (an agent that also feeds the vector
    to a network, e.g. ``search-ppo``)."""

    needs_vector = False

    def act(self, observation: np.ndarray, action_mask: np.ndarray) -> int:
        return self.act_view(self.decoder.decode(observation, action_mask))

    def act_view(self, view) -> int:
        """Return a legal action for the decoded observation ``view``."""
        raise NotImplementedError


def act_in_match(agent: Agent, encoder, match, seat: int, action_mask: np.ndarray) -> int:
    """``agent``'s action for ``seat`` when the caller holds the match (rollouts,
    tournaments): a :class:`ViewAgent` gets its view straight from the match
    (``encoder.view``), any other agent the observation vector."""
    if isinstance(agent, ViewAgent) and not agent.needs_vector:
        return agent.act_view(encoder.view(match, seat, action_mask))
    return agent.act(encoder.encode(match, seat), action_mask)


class PolicyAgent(Agent):
    """Any policy callable ``policy(observation, action_mask) -> action`` as an :class:`Agent`.

    How a model trained elsewhere (SB3, RLlib, Tianshou, TorchRL, ...) enters tournaments
    and terminal games: wrap its greedy action in a function and return a ``PolicyAgent``
    from a factory named by a ``py:`` spec (:func:`mt_env.agents.make_agent`). The action
    is checked against the mask: an illegal one raises ``ValueError`` naming it, never a
    silent substitute. ``policy`` must not keep per-match memory (``reset`` cannot clear it).
    """

    def __init__(
        self,
        config: RulesConfig,
        policy,
        name: str = "policy",
        seed: int | None = None,
    ) -> None:
        if not callable(policy):
            raise ValueError(f"PolicyAgent: policy {policy!r} is not callable")
        self.policy = policy
        self.name = name
        super().__init__(config, seed)

    def act(self, observation: np.ndarray, action_mask: np.ndarray) -> int:
        answer = self.policy(observation, action_mask)
        value = np.asarray(answer)
        if value.size != 1 or not np.issubdtype(value.dtype, np.integer):  # 1.7 is no action
            raise ValueError(
                f"policy {self.name!r} returned {answer!r}: expected one integer action"
            )
        action = int(value.reshape(()))
        if not 0 <= action < action_mask.size or not action_mask[action]:
            raise ValueError(
                f"policy {self.name!r} returned the illegal action {action}: the mask allows "
                f"{legal_actions(action_mask)}"
            )
        return action


def legal_actions(action_mask: np.ndarray) -> list[int]:
    """The actions whose mask entry is nonzero, ascending; ValueError if there are none."""
    legal = np.flatnonzero(action_mask).tolist()
    if not legal:
        raise ValueError("the action mask allows no action: this seat is not to act")
    return legal
