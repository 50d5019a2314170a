"""A single-agent Gymnasium view of Mexican Train: one seat learns, policies play the rest.

What lives here: :class:`MexicanTrainGymEnv`, a thin loop over the PettingZoo env
(:class:`mt_env.env.raw_env`), which keeps the rules, rewards and observations. Each
``step`` makes the learner's move, then lets the other seats' policies move until the
learner is to act again or the match is over. The learner only ever sees its own
observations; its reward is everything the AEC env credited to its seat since its
previous decision (its own move's round end, and round ends caused by opponents).

Nothing here is a rule; nothing here reads another seat's hidden tiles except the
default opponent, which picks uniformly among the legal moves (as good as reading the
action mask, and cheaper).
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

import gymnasium
import numpy as np

from .config import RulesConfig
from .env import DEFAULT_REWARD, DEFAULT_REWARD_SCALE, DiscreteActions, raw_env
from .render import render_text
from .rules import IllegalMoveError

Policy = Callable[[np.ndarray, np.ndarray], int]
ILLEGAL_ACTION_MODES = ("raise", "terminate")


class MexicanTrainGymEnv(gymnasium.Env):
    """One learning seat against fixed opponents; an episode is one match.

    Args:
        learner_seat: the learner's seat, or ``"random"`` for a uniformly random seat at
            each reset (from the env's seeded ``np_random``). ``reset(options=
            {"learner_seat": k})`` overrides it for one episode.
        opponents: the other seats' policies, ``policy(observation, action_mask) -> int``
            (the same arrays the learner gets, from that seat's point of view). One
            callable for every other seat, or a sequence of ``num_seats - 1`` (entry ``r``
            plays the seat ``r + 1`` places clockwise of the learner; ``None`` entries
            play randomly). Default: uniformly random legal actions from ``np_random``.
            An opponent's illegal action always raises ``ValueError``.
        illegal_action: what an illegal *learner* action does. ``"raise"`` (default):
            ``ValueError`` naming the action and the legal ones; nothing happens.
            ``"terminate"``: the move is not made either, but the episode ends at once
            with reward ``illegal_reward`` and ``info["illegal_action"]`` — PettingZoo's
            ``TerminateIllegalWrapper`` behaviour, for tools that step with unmasked
            random actions (``gymnasium.utils.env_checker.check_env`` does: it samples
            ``action_space.sample()`` before a seeded ``reset`` and steps with it, so no
            masking can make that action legal). Neither mode ever plays an illegal move
            or replaces it by a legal one.
        illegal_reward: the reward of an illegal action under ``"terminate"``.
        render_mode: ``None``, ``"ansi"`` (``render()`` returns the text) or ``"human"``
            (prints it); the picture shows the learner's hand.
        reward, reward_scale, config, **rules_options: as for :class:`mt_env.env.raw_env`.

    Observation space: the AEC env's ``Dict(observation=Box, action_mask=Box(int8))``;
    :meth:`action_masks` returns the learner's mask as bools (sb3-contrib's
    ``MaskablePPO`` calls it). ``terminated`` is True at match end; ``truncated`` never.
    ``info`` holds ``"seat"`` (the learner's seat) and, after a step in which rounds
    ended, ``"round_results"`` (dicts of :class:`~mt_env.match.RoundResult`) and at match
    end ``"totals"`` and ``"places"``.

    ``reset(seed=s)`` deals as ``raw_env.reset(seed=s)`` does and reseeds ``np_random``;
    ``reset()`` continues both generators. ``options={"deal": ...}`` or
    ``{"deals": [...]}`` start from explicit deals. If a match ends before the learner
    ever acts (only possible in degenerate configurations, e.g. one-tile hands with
    ``first_turn="single"``), a random-deal reset deals a new match; an explicit deal
    raises ``ValueError``.
    """

    metadata = {"render_modes": ["ansi", "human"], "render_fps": 1}

    def __init__(
        self,
        learner_seat: int | str = 0,
        opponents: Policy | Sequence[Policy | None] | None = None,
        render_mode: str | None = None,
        reward: str = DEFAULT_REWARD,
        reward_scale: float = DEFAULT_REWARD_SCALE,
        illegal_action: str = "raise",
        illegal_reward: float = -1.0,
        config: RulesConfig | None = None,
        **rules_options,
    ) -> None:
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(
                f"render_mode={render_mode!r}: expected None or one of "
                f"{self.metadata['render_modes']}"
            )
        if illegal_action not in ILLEGAL_ACTION_MODES:
            raise ValueError(
                f"illegal_action={illegal_action!r}: expected one of {ILLEGAL_ACTION_MODES}"
            )
        self.aec = raw_env(reward=reward, reward_scale=reward_scale, config=config, **rules_options)
        self.config = self.aec.config
        self.encoder = self.aec.encoder
        self.codec = self.aec.codec
        n = self.config.num_seats
        self._learner_option = self._check_seat(learner_seat, "learner_seat", allow_random=True)
        self._policies = self._check_opponents(opponents, n)
        self.render_mode = render_mode
        self.illegal_action = illegal_action
        self.illegal_reward = float(illegal_reward)
        self.observation_space = copy.deepcopy(self.aec.observation_space("player_0"))
        self.action_space = DiscreteActions(self.encoder.num_actions)
        self.seat: int | None = None  # the learner's seat in the current episode
        self._agent: str | None = None
        self._pending = 0.0  # learner reward credited before its first decision
        self._over = True

    # ------------------------------------------------------------------ checks
    def _check_seat(self, seat, name: str, allow_random: bool = False):
        n = self.config.num_seats
        if allow_random and seat == "random":
            return seat
        if isinstance(seat, bool) or not isinstance(seat, (int, np.integer)) or not 0 <= seat < n:
            extra = ' or "random"' if allow_random else ""
            raise ValueError(f"{name}={seat!r}: expected a seat in 0..{n - 1}{extra}")
        return int(seat)

    @staticmethod
    def _check_opponents(opponents, n: int) -> list[Policy | None]:
        if opponents is None or callable(opponents):
            return [opponents] * (n - 1)
        if isinstance(opponents, (str, bytes)) or not isinstance(opponents, Sequence):
            raise ValueError(
                f"opponents={opponents!r}: expected a callable, a sequence of {n - 1} "
                f"callables (or None), or None"
            )
        policies = list(opponents)
        if len(policies) != n - 1 or not all(p is None or callable(p) for p in policies):
            raise ValueError(
                f"opponents: expected {n - 1} policies (callable or None), one per other "
                f"seat clockwise from the learner; got {len(policies)}"
            )
        return policies

    # ------------------------------------------------------------------ API
    @property
    def match(self):
        """The :class:`~mt_env.match.Match` being played (``None`` before the first reset)."""
        return self.aec.match

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        super().reset(seed=seed)
        options = dict(options or {})
        learner = options.pop("learner_seat", self._learner_option)
        learner = self._check_seat(learner, "learner_seat", allow_random=True)
        if learner == "random":
            learner = int(self.np_random.integers(self.config.num_seats))
        self.seat = learner
        self._agent = self.aec.possible_agents[learner]
        explicit = "deal" in options or "deals" in options
        self.aec.reset(seed=seed, options=options)
        for _ in range(1000):
            self._advance()
            if not self.aec.match.is_over:
                break
            if explicit:
                raise ValueError(
                    f"the explicit deal(s) end the match before seat {learner} (the learner) "
                    f"ever acts"
                )
            self.aec.reset()  # degenerate configuration: deal again (see the class docs)
        else:  # pragma: no cover - would need a configuration where the learner never acts
            raise RuntimeError("1000 matches in a row ended before the learner acted")
        self._over = False
        self._pending = self.aec._cumulative_rewards[self._agent]
        return self._observe(), {"seat": learner}

    def step(self, action) -> tuple[dict[str, np.ndarray], float, bool, bool, dict[str, Any]]:
        if self._over:
            raise RuntimeError("the episode is over (or was never started): call reset()")
        aec, match = self.aec, self.aec.match
        seen = len(match.results)
        try:
            aec.step(action)
        except IllegalMoveError as err:
            if self.illegal_action == "raise":
                raise
            self._over = True
            info = {"seat": self.seat, "illegal_action": repr(action), "error": str(err)}
            return self._observe(), self.illegal_reward, True, False, info
        self._advance()
        reward = self._pending + aec._cumulative_rewards[self._agent]
        self._pending = 0.0
        terminated = match.is_over
        info: dict[str, Any] = {"seat": self.seat}
        if len(match.results) > seen:
            info["round_results"] = [dataclasses.asdict(r) for r in match.results[seen:]]
        if terminated:
            self._over = True
            info["totals"] = match.totals
            info["places"] = match.places()
        return self._observe(), float(reward), terminated, False, info

    def action_masks(self) -> np.ndarray:
        """The learner's legal actions as a bool vector (for sb3-contrib's MaskablePPO)."""
        return self.encoder.action_mask(self.aec.match, self.seat).astype(bool)

    def render(self) -> str | None:
        if self.render_mode is None:
            gymnasium.logger.warn("render() called without a render_mode")
            return None
        if self.aec.match is None:
            text = "Mexican Train: no match yet (call reset())"
        else:
            text = render_text(self.aec.match, seat=self.seat)
        if self.render_mode == "human":
            print(text)
            return None
        return text

    def close(self) -> None:
        self.aec.close()

    # ------------------------------------------------------------------ internals
    def _observe(self) -> dict[str, np.ndarray]:
        return self.aec.observe(self._agent)

    def _advance(self) -> None:
        """Let the other seats act until the learner is to act or the match is over."""
        aec, codec = self.aec, self.codec
        match, learner, n = aec.match, self.seat, self.config.num_seats
        while not match.is_over:
            seat = match.state.seat
            if seat == learner:
                return
            policy = self._policies[(seat - learner) % n - 1]
            if policy is None:
                legal = match.legal_moves()
                action = codec.to_action(legal[int(self.np_random.integers(len(legal)))], seat)
            else:
                obs = aec.observe(aec.possible_agents[seat])
                action = policy(obs["observation"], obs["action_mask"])
            try:
                aec.step(action)
            except IllegalMoveError as err:
                raise IllegalMoveError(f"the opponent policy at seat {seat} chose: {err}") from None
