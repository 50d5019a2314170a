"""A single-agent Gymnasium view of Mexican Train: one seat learns, policies play the rest.

What lives here: :class:`MexicanTrainGymEnv`, a thin loop over the PettingZoo env
(:class:`mt_env.aec.raw_env`), which keeps the rules, rewards and observations. Each
``step`` makes the learner's move, then lets the other seats' policies move until the
learner is to act again or the match is over. The learner only ever sees its own
observations; its reward is everything the AEC env credited to its seat since its
previous decision (its own move's round end, and round ends caused by opponents).

Nothing here is a rule; nothing here reads another seat's hidden tiles except the
default opponent, which picks uniformly among the legal moves (as good as reading the
action mask, and cheaper).

Importing this module registers the Gymnasium ids (:func:`register_envs`):

| id | makes |
|---|---|
| ``mt_env/MexicanTrain-v1`` | ``MexicanTrainGymEnv(**kwargs)`` |
| ``mt_env/MexicanTrainFeatures-v1`` | ``PolicyFeatures(MexicanTrainGymEnv(**kwargs), features)`` (:mod:`mt_env.wrappers`; ``features="pairs"`` by default) |

so ``gymnasium.make("mt_env/MexicanTrain-v1", num_seats=2)`` works once it is imported,
and ``gymnasium.make("mt_env.gym_env:mt_env/MexicanTrain-v1")`` works with nothing but
``import gymnasium`` (Gymnasium imports the module named before the colon).
``import mt_env`` registers nothing: it must not import gymnasium, and Gymnasium 1.x no
longer loads ``gymnasium.envs`` entry-point plugins, so there is no import-free way.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from typing import Any

import gymnasium
import numpy as np
from gymnasium.envs.registration import EnvSpec

from .aec import (
    DEFAULT_REWARD,
    DEFAULT_REWARD_SCALE,
    RENDER_MODES,
    DiscreteActions,
    check_render_mode,
    raw_env,
    render_frame,
)
from .config import RulesConfig, check_choice
from .rules import IllegalMoveError

Policy = Callable[[np.ndarray, np.ndarray], int]
ILLEGAL_ACTION_MODES = ("terminate", "penalize", "raise")
ENV_ID = "mt_env/MexicanTrain-v1"
ENTRY_POINT = "mt_env.gym_env:MexicanTrainGymEnv"
FEATURES_ENV_ID = "mt_env/MexicanTrainFeatures-v1"


def _is_agent(policy) -> bool:
    """An :class:`mt_env.agents.Agent`-like opponent: it can be reseeded and reset."""
    return callable(getattr(policy, "seed", None)) and callable(getattr(policy, "reset", None))


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
            An opponent's illegal action always raises ``ValueError``, after which the
            episode is dead until ``reset()`` (see "Errors inside step()" below).
        illegal_action: what an illegal *learner* action (an action in the action space
            whose mask entry is 0) does. Never is an illegal move played or replaced by a
            legal one, so an agent that masks loses nothing whatever the mode:

            - ``"terminate"`` (default): the move is not made; the episode ends at once
              with reward ``illegal_reward`` and ``info["illegal_action"]`` True —
              PettingZoo's ``TerminateIllegalWrapper`` behaviour. It is the default so
              that tools stepping unmasked random actions work out of the box:
              ``gymnasium.utils.env_checker.check_env`` samples ``action_space.sample()``
              (even before a seeded reset) and steps with it, and RLlib's env check does
              the same; an unmasked learner gets a clear penalty and short episodes.
            - ``"penalize"``: a penalised no-op: nothing is played, the reward is
              ``illegal_reward``, ``info["illegal_action"]`` is True and the learner acts
              again in the same position (add a ``TimeLimit``: an unmasked agent may
              repeat illegal actions forever).
            - ``"raise"``: ``ValueError`` (``IllegalMoveError``) naming the action and the
              legal ones; nothing happens — for debugging a masking agent.

            The message of the last illegal action is kept in ``env.last_illegal_error``.
            An integer outside the action space (or a non-integer) always raises
            ``ValueError``.
        illegal_reward: the reward of an illegal action under ``"terminate"`` and
            ``"penalize"`` (default -1.0).
        render_mode: ``None``, ``"ansi"`` (``render()`` returns the text), ``"human"``
            (prints it, and does so at every reset and step, as Gymnasium's human mode
            does) or ``"rgb_array"`` (an H×W×3 uint8 picture of the table,
            :mod:`mt_env.picture`); the hand shown is the learner's.
        reward, reward_scale, config, **rules_options: as for :class:`mt_env.aec.raw_env`.

    Observation space: the AEC env's ``Dict(observation=Box, action_mask=Box(int8))``;
    :meth:`action_masks` returns the learner's mask as bools (sb3-contrib's
    ``MaskablePPO`` calls it), and ``info["action_mask"]`` holds it too.
    ``terminated`` is True at match end; ``truncated`` never. At termination the mask is
    all zeros.

    ``info`` has the same keys after every ``reset`` and ``step``, flat, with values of
    fixed type and shape (new arrays each call): the AEC env's info keys (module
    :mod:`mt_env.aec`, "Infos") — ``round_ended``, ``round_index``, ``round_scores``,
    ``round_out_seats``, ``totals``, ``places``, ``illegal_action``, ``to_act``,
    ``action_mask`` — plus ``seat`` (the learner's seat). Here they cover everything since
    the learner's previous decision: ``round_ended`` if any round ended meanwhile (the
    learner's move or the opponents'), ``round_scores`` the scores of the round(s) that
    ended (summed, and ``round_out_seats`` joined, in the rare step that ends two), seats
    absolute. ``match.results`` has the full :class:`~mt_env.match.RoundResult` s.

    Seeding: ``reset(seed=s)`` deals as ``raw_env.reset(seed=s)`` does and reseeds
    ``np_random``; ``reset()`` continues both generators. At **every** reset, each
    opponent that is an :class:`mt_env.agents.Agent` (anything with ``seed(int)`` and
    ``reset()`` methods) is reseeded from a seed drawn from ``np_random`` (one per seat,
    so distinct) and reset, so ``reset(seed=s)`` replays the same episode for the same
    learner actions, whatever the opponents did before. Plain callables are left alone:
    a callable with its own random state is the caller's to seed. An agent object given
    for several seats is seeded and reset once (from the first of its seats' seeds).

    ``options={"deal": ...}`` or ``{"deals": [...]}`` start from explicit deals. If a
    match ends before the learner ever acts (only possible in degenerate configurations,
    e.g. one-tile hands with ``first_turn="single"``), a random-deal reset deals a new
    match; an explicit deal raises ``ValueError``.

    **Errors inside step() and reset().** A step either happens whole or, when it raises,
    leaves the env in one of two documented states:

    - *Refused before anything moved — the env is exactly as before and usable*: an action
      outside the action space (``ValueError``), and the learner's illegal action under
      ``illegal_action="raise"`` (``IllegalMoveError``; the rules core refuses a move before
      changing anything). Observation, mask, match, ``state()``, rewards owed, random
      generators and opponents are untouched; step again with a legal action.
    - *Raised after a move was made — the episode is dead until reset()*: anything raised
      once the learner's move is played, above all by an opponent (an illegal or ill-typed
      opponent action raises ``IllegalMoveError`` naming the seat; an exception raised by
      the policy itself propagates, with a note naming the seat), and any exception in
      ``reset()``. The position is then part-way through other seats' turns, so the
      state is undefined: every later ``step()`` raises ``RuntimeError`` quoting the
      original error and asking for ``reset()``, ``action_masks()`` is all zeros, and
      ``reset()`` makes the env whole again. (Before this rule a failed opponent left the
      env live with the opponent's seat to act, and the learner's next action was played
      for that seat.) ``env.failed`` holds the message (``None`` while the env is usable).
    """

    metadata = {"render_modes": RENDER_MODES, "render_fps": 1}

    def __init__(
        self,
        learner_seat: int | str = 0,
        opponents: Policy | Sequence[Policy | None] | None = None,
        render_mode: str | None = None,
        reward: str = DEFAULT_REWARD,
        reward_scale: float = DEFAULT_REWARD_SCALE,
        illegal_action: str = "terminate",
        illegal_reward: float = -1.0,
        config: RulesConfig | None = None,
        **rules_options,
    ) -> None:
        check_render_mode(render_mode, self.metadata["render_modes"])
        # A spec as gymnasium.make would give (make replaces it): tools that remake the
        # env from its spec (check_env's render-mode checks, vector envs) work either way.
        self.spec = EnvSpec(
            id=ENV_ID,
            entry_point=ENTRY_POINT,
            kwargs=dict(
                learner_seat=learner_seat,
                opponents=opponents,
                render_mode=render_mode,
                reward=reward,
                reward_scale=reward_scale,
                illegal_action=illegal_action,
                illegal_reward=illegal_reward,
                config=config,
                **rules_options,
            ),
        )
        check_choice("illegal_action", illegal_action, ILLEGAL_ACTION_MODES)
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
        self.last_illegal_error: str | None = None
        self.observation_space = copy.deepcopy(self.aec.observation_space("player_0"))
        self.action_space = DiscreteActions(self.encoder.num_actions)
        self.seat: int | None = None  # the learner's seat in the current episode
        self._agent: str | None = None
        self._pending = 0.0  # learner reward credited before its first decision
        self._seen = 0  # rounds finished when the learner last decided
        self._over = True
        self.failed: str | None = None  # why the episode died (see the class docstring)

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
        self.failed = None
        try:
            return self._reset(seed, options)
        except BaseException as err:  # no half-made episode to step (the class docstring)
            self._fail("reset()", err)
            raise

    def _reset(
        self, seed: int | None, options: dict[str, Any] | None
    ) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        super().reset(seed=seed)
        options = dict(options or {})
        learner = options.pop("learner_seat", self._learner_option)
        learner = self._check_seat(learner, "learner_seat", allow_random=True)
        if learner == "random":
            learner = int(self.np_random.integers(self.config.num_seats))
        self.seat = learner
        self._agent = self.aec.possible_agents[learner]
        self._reseed_opponents()
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
            self._reset_opponents()
        else:  # pragma: no cover - would need a configuration where the learner never acts
            raise RuntimeError("1000 matches in a row ended before the learner acted")
        self._over = False
        self._seen = 0
        self._pending = self.aec._cumulative_rewards[self._agent]
        if self.render_mode == "human":
            self.render()
        return self._observe(), self._info()

    def step(self, action) -> tuple[dict[str, np.ndarray], float, bool, bool, dict[str, Any]]:
        if self.failed is not None:
            raise RuntimeError(
                f"step() refused: an earlier call raised after moves were made, so the "
                f"episode's state is undefined ({self.failed}); call reset()"
            )
        if self._over:
            raise RuntimeError("the episode is over (or was never started): call reset()")
        # a bool is an int to Discrete.contains, but never an action (the AEC env agrees)
        if isinstance(action, (bool, np.bool_)) or not self.action_space.contains(action):
            raise ValueError(
                f"action {action!r} is not in the action space {self.action_space} "
                f"(an int in 0..{self.action_space.n - 1})"
            )
        aec, match = self.aec, self.aec.match
        try:
            aec.step(action)
        except IllegalMoveError as err:  # refused by the core: nothing has changed
            if self.illegal_action == "raise":
                raise
            self.last_illegal_error = str(err)
            reward = self.illegal_reward + self._pending
            self._pending = 0.0
            terminated = self.illegal_action == "terminate"
            self._over = terminated
            return self._observe(), reward, terminated, False, self._info(illegal=True)
        except BaseException as err:
            self._fail("step()", err)
            raise
        try:
            self._advance()
            reward = self._pending + aec._cumulative_rewards[self._agent]
            self._pending = 0.0
            terminated = match.is_over
            self._over = terminated
            if self.render_mode == "human":
                self.render()
            return self._observe(), float(reward), terminated, False, self._info()
        except BaseException as err:
            self._fail("step()", err)
            raise

    def _fail(self, where: str, err: BaseException) -> None:
        """The episode is dead until reset() (see the class docstring)."""
        self._over = True
        self.failed = f"{where} raised {type(err).__name__}: {err}"

    def action_masks(self) -> np.ndarray:
        """The learner's legal actions as a bool vector (for sb3-contrib's MaskablePPO)."""
        if self._over:
            return np.zeros(self.action_space.n, dtype=bool)
        return self.encoder.action_mask(self.aec.match, self.seat).astype(bool)

    def render(self) -> str | np.ndarray | None:
        if self.render_mode is None:
            gymnasium.logger.warn("render() called without a render_mode")
            return None
        return render_frame(self.render_mode, self.config, self.aec.match, seat=self.seat)

    def close(self) -> None:
        self.aec.close()

    # ------------------------------------------------------------------ internals
    def _observe(self) -> dict[str, np.ndarray]:
        obs = self.aec.observe(self._agent)
        if self._over:
            obs["action_mask"][:] = 0
        return obs

    def _info(self, illegal: bool = False) -> dict[str, Any]:
        """The step's info (see the class docstring): new arrays, one structure."""
        match = self.aec.match
        n = self.config.num_seats
        ended = match.results[self._seen :]
        self._seen = len(match.results)
        scores = np.zeros(n, dtype=np.int64)
        out = np.zeros(n, dtype=bool)
        for result in ended:
            scores += result.scores
            out[list(result.out_seats)] = True
        if self._over:
            mask = np.zeros(self.action_space.n, dtype=np.int8)
        else:
            mask = self.encoder.action_mask(match, self.seat)
        return {
            "round_ended": bool(ended),
            "round_index": ended[-1].round_index if ended else match.round_index,
            "round_scores": scores,
            "round_out_seats": out,
            "totals": np.array(match.totals, dtype=np.int64),
            "places": np.array(match.places(), dtype=np.int64),
            "illegal_action": illegal,
            "to_act": not self._over,
            "action_mask": mask,
            "seat": self.seat,
        }

    def _reseed_opponents(self) -> None:
        """Reseed (one seed per seat, from ``np_random``) and reset the Agent opponents."""
        seeds = self.np_random.integers(2**63 - 1, size=len(self._policies))
        done: set[int] = set()
        for policy, seed in zip(self._policies, seeds, strict=True):
            if _is_agent(policy) and id(policy) not in done:
                done.add(id(policy))
                policy.seed(int(seed))
                policy.reset()

    def _reset_opponents(self) -> None:
        done: set[int] = set()
        for policy in self._policies:
            if _is_agent(policy) and id(policy) not in done:
                done.add(id(policy))
                policy.reset()

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
                try:
                    action = policy(obs["observation"], obs["action_mask"])
                except Exception as err:
                    err.add_note(f"raised by the opponent policy at seat {seat} (mt_env gym env)")
                    raise
            try:
                aec.step(action)
            except IllegalMoveError as err:
                raise IllegalMoveError(f"the opponent policy at seat {seat} chose: {err}") from None


def register_envs() -> None:
    """Register the Gymnasium ids of the module docstring (idempotent; run on import)."""
    for env_id, entry_point in (
        (ENV_ID, ENTRY_POINT),
        (FEATURES_ENV_ID, "mt_env.wrappers:features_env"),
    ):
        if env_id not in gymnasium.registry:
            gymnasium.register(id=env_id, entry_point=entry_point)


register_envs()
