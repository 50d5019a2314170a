"""
# Mexican Train

A PettingZoo AEC environment for Mexican Train dominoes (rules: ``docs/rules.md``, rule ids
``R…``/``V…``/``C…``), and its parallel twin. This module is a thin shell: every rule
lives in the rules core (:mod:`mt_env.rules`, :mod:`mt_env.match`), the action encoding
in :mod:`mt_env.actions`, the observation vector in :mod:`mt_env.observation`, the state
vector in :mod:`mt_env.state`, the pictures in :mod:`mt_env.render` (text) and
:mod:`mt_env.picture` (image). What lives here is the PettingZoo plumbing: agents,
spaces, rewards, terminations, infos, seeding, ``state()``, ``render()``.

| Import             | `from mt_env import env, raw_env, parallel_env`                |
|--------------------|----------------------------------------------------------------|
| Actions            | Discrete                                                       |
| Parallel API       | Yes: `parallel_env()`, turn-based (see below)                  |
| Manual Control     | No                                                             |
| Agents             | `agents = ['player_0', ..., 'player_{n-1}']`                   |
| Agents             | n = `num_seats`, 2–14 (default 4)                              |
| Action Shape       | (1,)                                                           |
| Action Values      | [0, T·(n+1)+1]: [0, 456] for the default 4 seats (T = 91)      |
| Observation Shape  | (`encoder.size`,): (377,) for the default 4 seats              |
| Observation Values | [0, `observation_space(agent)["observation"].high`], float32   |
| State Shape        | (`state_encoder.size`,): (879,) for the default 4 seats        |
| Render modes       | `"ansi"`, `"human"` (text), `"rgb_array"` (a picture)          |

```python
from mt_env import env
e = env(num_seats=4, num_rounds=1)           # any RulesConfig field, or config=RulesConfig(...)
e.reset(seed=0)
for agent in e.agent_iter():
    obs, reward, termination, truncation, info = e.last()
    action = None if termination else policy(obs["observation"], obs["action_mask"])
    e.step(action)
```

Constructor: `raw_env(render_mode=None, reward="score_zero_sum", reward_scale=0.01,
illegal_action="raise", illegal_reward=-1.0, config=None, **rules_options)`;
`env(**kwargs)` wraps it in `AssertOutOfBoundsWrapper` and `OrderEnforcingWrapper`
(PettingZoo's, made strict: see "Episode");
`parallel_env(**kwargs)` builds the parallel env on a `raw_env(**kwargs)`. The rules
options are the fields of :class:`mt_env.config.RulesConfig` (`num_seats`, `max_pip`,
`hand_size`, `first_turn`, `follow_up_on_double`, `doubles_order`, `dead_doubles`,
`double_blank_value`, `engine_source`, `scoring`, `num_rounds`, `first_engine`); pass
either options or a ready `config=`, not both. An invalid option, reward mode, scale or
illegal-action mode raises `ValueError`. `env.unwrapped` exposes `match` (the
:class:`~mt_env.match.Match`, `None` before the first reset), `config`, `encoder`
(:class:`~mt_env.observation.ObservationEncoder`), `state_encoder`
(:class:`~mt_env.state.StateEncoder`) and `codec` (:class:`~mt_env.actions.MoveCodec`).

### Action Space

One integer per move, trains counted **relative to the acting seat** (0 = its own train,
1 = the next seat clockwise, …, n = the Mexican train); :mod:`mt_env.actions` holds the
one formula:

    play(tile, train) = tile * (n + 1) + train      draw = T * (n + 1)      pass = T * (n + 1) + 1

`env.unwrapped.codec.to_move(action, seat)` / `to_action(move, seat)` convert to and
from the core's absolute moves. **An illegal action raises `ValueError`** (the core's
`IllegalMoveError`) naming the action and the legal ones; the state is unchanged and no
reward is given (`illegal_action="raise"`, the default: the mask is exact, so an illegal
action is a bug in the caller, and PettingZoo's tests and multi-agent libraries mask).
For tools that step unmasked random actions (RLlib's env checks, PettingZoo's
`parallel_seed_test`), `illegal_action="terminate"` does what PettingZoo's
`TerminateIllegalWrapper` does, without its wrapper: the move is not made, the agent
that acted gets `illegal_reward` (the others 0), every agent is terminated and
`info["illegal_action"]` is True. No mode ever plays an illegal move or replaces it.
Out-of-range actions trip `AssertOutOfBoundsWrapper` in `env()`.

### Observation Space

`{"observation": Box(float32, (encoder.size,)), "action_mask": Box(int8, (num_actions,))}`.
The observation is :class:`~mt_env.observation.ObservationEncoder`'s vector for the
observing seat: its hand, the table, each train's open end, length, marker and open
double, hand and boneyard sizes, engine, round, the turn phase and the match totals, all
relative to the observer (see that module's index table). It holds no hidden
information: other seats' tiles and the boneyard's order never change it. Most entries
are 0/1; the upper bounds of the space are exact maxima for the counted pieces:
`train_length` ≤ (T−1)/(N+1) (a train can hold every tile but the engine),
`hand_sizes` ≤ (T−1)/hand_size (drawing can grow a hand past its deal), `scores` ≤
num_rounds · (pip total of the set, 0|0 at its configured value) / 100.

#### Legal Actions Mask

`action_mask[a] == 1` exactly when action `a` is one of the core's legal moves
(`match.legal_moves()`, via `codec.to_action`) for the agent to act; every other agent,
and every agent once the match is over, sees all zeros. The same mask is
`info["action_mask"]`. Forced moves are still moves (C2): a seat whose only legal move
is `draw` or `pass` is asked for it, and the same agent may act several times in a row
(a free first turn R11, a draw R18, a follow-up R16), so always read
`env.agent_selection` (or `info["to_act"]`).

### State

`env.state()` is the whole game — every hand, the boneyard and its draw order, the
drawn tile, and the public pieces — as one float32 vector in `env.state_space` (a
`Box`), seats absolute, for centralised critics (MAPPO); :mod:`mt_env.state` has its
index table. It holds hidden information: give it to critics, never to policies.

### Rewards

Chosen with `reward=` and multiplied by `reward_scale` (default 0.01) in the score modes;
the schemes are computed by :mod:`mt_env.rewards`, shared with the trainer.
Round rewards are given at the end of each round to **every** seat, whoever made the
last move (`rewards` / `_cumulative_rewards`, so each agent collects them at its next
`last()`); match rewards are given once, when the match ends.

| `reward` | when | seat k gets |
|---|---|---|
| `"score_zero_sum"` (default) | each round end | v_k − mean of the other seats' v_j, where v = −round score · scale (penalty scoring, R26) or +round score · scale (V-positive-score); per round they sum to 0 |
| `"score"` | each round end | v_k as above |
| `"lead"` | each round end | the change over the round of L_k = V_k − max over j ≠ k of V_j, V the match totals signed and scaled as v; a seat's rewards sum to its final L_k (what `search`'s rollouts value); equal to `"score_zero_sum"` at 2 seats |
| `"win_prob"` | each round end | the change over the round of seat k's chance to win the match, a normal model of the rounds left on the match totals (`mt_env.rewards.win_chances`); a seat's rewards sum to its `"win"` reward (ties on totals shared) minus 1/n; not scaled |
| `"rank"` | match end | 1 − 2·(r_k − 1)/(n − 1), r_k the fractional rank: tied seats (`match.places()`, R28) share the mean of their positions, so rewards lie in [−1, 1] and sum to 0 |
| `"win"` | match end | 1 to the outright winner; 1/k to each of k seats tied for first; 0 otherwise |

The default is `"score_zero_sum"`: the match is won by the round scores (R27), so the
per-round signal is aligned with winning yet arrives every round instead of once per
(up to 19-round) match, and being zero-sum it keeps self-play symmetric. `"rank"` and
`"win"` are the sparse, exact match objectives.

### Infos

`infos[agent]` has **the same keys on every step**, flat, each value of a fixed type
and shape (so collectors that stack infos, e.g. Tianshou's, never see a new structure).
They describe the last move (or the reset); seats are absolute (index k = `player_k`):

| key | value | meaning |
|---|---|---|
| `round_ended` | bool | the last move ended a round |
| `round_index` | int | the round that ended if `round_ended`, else the round being played (0-based) |
| `round_scores` | int64 (n,) | the ended round's scores (R26, or V-positive-score); zeros if no round ended |
| `round_out_seats` | bool (n,) | seats that went out in the ended round (R23/R24); all False if blocked or none ended |
| `totals` | int64 (n,) | match totals after the last move (R27) |
| `places` | int64 (n,) | places after the rounds finished so far (R27/R28; all 1 before the first round ends) |
| `illegal_action` | bool | the last action was illegal and ended the episode (`illegal_action="terminate"`) |
| `to_act` | bool | this agent is the one to act now |
| `action_mask` | int8 (num_actions,) | this agent's legal actions now, as in the observation |

The arrays are read-only (`round_scores`… may be shared between agents and steps while
they do not change); `dataclasses.asdict(env.unwrapped.match.results[-1])` gives the
full :class:`~mt_env.match.RoundResult` of the last round.

### Episode

An episode is one match of `num_rounds` rounds (R5; `num_rounds=1` gives one-round
episodes). When a move ends a round the match deals the next round at once and play
goes on. When the last round ends every agent is terminated (no truncation: rounds end
by R23–R25); each then steps `None` (`_was_dead_step`) and leaves `agents` (a done
agent's non-`None` action raises `ValueError`). A `step()` once `agents` is empty —
or before the first `reset()` — raises `RuntimeError` saying so and asking for
`reset()`, in `raw_env`, in `env()` (PettingZoo's `OrderEnforcingWrapper` would only log
a warning and drop the action; :class:`OrderEnforcingWrapper` here raises) and in
`parallel_env()`; nothing changes.
`reset(seed=s)` makes reproducible deals from `random.Random(s)`; `reset()` without a
seed continues from the env's own generator. `reset(options={"deal": deal})` (a
:class:`~mt_env.rules.Deal` or a mapping with keys hands, boneyard, engine, start_seat)
or `options={"deals": [deal, ...]}` fixes the first rounds' starting positions (later
rounds are dealt from the seed); other option keys are ignored.

### Parallel API

Mexican Train is sequential: exactly one seat acts at a time and a seat may act several
times in a row, so `aec_to_parallel` (which steps every agent once per cycle) would be
wrong and `metadata["is_parallelizable"]` stays False. `parallel_env()` is instead the
faithful turn-based form PettingZoo's `turn_based_aec_to_parallel` describes: each
`step(actions)` makes **one move, by the agent to act** (`info["to_act"]`, the only
non-zero `action_mask`); entries for the other agents are ignored and may be omitted.
It returns every live agent's observation, that move's rewards (round ends pay every
seat), terminations, truncations and infos (the keys above). It has `state()` and
`state_space` too, and plays exactly the AEC env's game.

### Rendering

`render()` returns :func:`mt_env.render.render_text` for `render_mode="ansi"`, prints it
for `"human"`, and returns :func:`mt_env.picture.render_rgb` — an H×W×3 uint8 picture of
the table (trains as rows of dominoes, markers, open doubles, hand sizes, boneyard,
scores and the hand of the seat to act; the size is fixed per configuration, so frames
make a video) — for `"rgb_array"` (needs Pillow, imported only then).

### Version History

* v1: observation version 2: the observation ends with ``voids``, the pips each seat is
  known to hold none of from its draws and passes (:attr:`mt_env.rules.RoundState.voids`).
* v0: Initial release (observation version 1, state version 1).
"""

from __future__ import annotations

import importlib.util
import math
import random
from collections.abc import Mapping
from typing import Any

import gymnasium
import numpy as np
from gymnasium import spaces
from gymnasium.utils import EzPickle
from pettingzoo import AECEnv, ParallelEnv
from pettingzoo.utils import wrappers

from .actions import move_codec
from .config import RulesConfig, check_choice
from .match import Match, RoundResult
from .observation import ObservationEncoder, ObservationTracker
from .render import render_text
from .rewards import check_reward_mode, match_rewards, round_rewards
from .rules import IllegalMoveError
from .state import StateEncoder

DEFAULT_REWARD = "score_zero_sum"
DEFAULT_REWARD_SCALE = 0.01
ILLEGAL_ACTION_MODES = ("raise", "terminate")
RENDER_MODES = ["ansi", "human", "rgb_array"]
# The keys of every agent's info on every step (see "Infos" in the module docstring).
INFO_KEYS = (
    "round_ended",
    "round_index",
    "round_scores",
    "round_out_seats",
    "totals",
    "places",
    "illegal_action",
    "to_act",
    "action_mask",
)


class DiscreteActions(spaces.Discrete):
    """``Discrete(n)`` with an O(1) membership test for plain ints.

    ``AssertOutOfBoundsWrapper`` calls ``contains`` on every step, and
    ``Discrete.contains`` spends microseconds on ``np.iinfo`` and casts for a plain
    ``int``. For an exact ``int`` (not a bool) the answer is ``0 <= x < n``, exactly
    what ``Discrete.contains`` returns; everything else takes the inherited path.
    """

    def contains(self, x: Any) -> bool:
        if x.__class__ is int:
            return 0 <= x < self.n
        return super().contains(x)


def episode_over_message(kind: str) -> str:
    """The error of a step that has no agent to act: ``kind`` is ``"before"`` (no reset
    yet) or ``"after"`` (every agent is done and has left ``agents``)."""
    if kind == "before":
        return "step() before reset(): there is no match yet; call reset() first"
    return (
        "step() after the episode ended: every agent is done and has left env.agents "
        "(each terminated agent already stepped None); call reset() to start a new match"
    )


_PLAIN_INTS = frozenset({int, np.int64, np.int32, np.intp})  # actions the hot path takes


class OrderEnforcingWrapper(wrappers.OrderEnforcingWrapper):
    """PettingZoo's ``OrderEnforcingWrapper``, except that ``step()`` once every agent has
    left ``agents`` raises ``RuntimeError`` (PettingZoo's only logs a warning and drops the
    action, so a caller stepping a finished episode would never notice). Everything else
    — the errors before ``reset()``, ``agent_iter``, the attribute checks — is PettingZoo's;
    ``agent_iter`` never steps an empty env, so ``api_test`` and the other tests pass.

    **Hot path.** After ``reset()``, ``last()`` and a ``step()`` with an in-range ``int`` or numpy integer
    (or ``None`` for a done agent) go straight to the raw env: PettingZoo's wrappers would
    forward each attribute they read (``agent_selection``, ``terminations``, ...) through
    ``__getattr__`` twice, a third of a step's time. Every other call takes the wrappers'
    own path, so their checks and errors (``AssertOutOfBoundsWrapper``'s included) are
    unchanged.
    """

    def __init__(self, env: AECEnv) -> None:
        super().__init__(env)
        self._raw = env.unwrapped
        self._num_actions = self._raw.encoder.num_actions

    def last(self, observe: bool = True):
        if not self._has_reset:
            return super().last(observe)  # PettingZoo's error before reset()
        return self._raw.last(observe)

    def step(self, action) -> None:
        raw = self._raw
        if self._has_reset and raw.agents:
            agent = raw.agent_selection
            done = raw.terminations[agent] or raw.truncations[agent]
            if (action is None and done) or (
                action.__class__ in _PLAIN_INTS and 0 <= action < self._num_actions and not done
            ):
                self._has_updated = True
                raw.step(action)
                return
        elif self._has_reset:
            raise RuntimeError(episode_over_message("after"))
        super().step(action)

    def __str__(self) -> str:
        return str(self.env)


def env(**kwargs) -> AECEnv:
    """`raw_env(**kwargs)` in the standard wrappers (no TerminateIllegalWrapper: illegal
    actions raise ValueError, or end the episode with ``illegal_action="terminate"``);
    the order-enforcing one is :class:`OrderEnforcingWrapper`: a step once every agent has
    left raises ``RuntimeError``."""
    e = raw_env(**kwargs)
    e = wrappers.AssertOutOfBoundsWrapper(e)
    e = OrderEnforcingWrapper(e)
    return e


def parallel_env(**kwargs) -> MexicanTrainParallelEnv:
    """The turn-based parallel env (see "Parallel API" in the module docstring)."""
    return MexicanTrainParallelEnv(**kwargs)


def make_config(config: RulesConfig | None = None, **rules_options) -> RulesConfig:
    """A :class:`RulesConfig` from either a ready ``config`` or its fields (ValueError if both)."""
    if config is not None:
        if rules_options:
            raise ValueError(
                f"pass either config= or rules options, not both (got config and "
                f"{sorted(rules_options)})"
            )
        if not isinstance(config, RulesConfig):
            raise ValueError(f"config={config!r}: expected a RulesConfig")
        return config
    return RulesConfig.from_dict(rules_options)


def check_render_mode(render_mode: str | None, modes: list[str]) -> None:
    if render_mode is not None and render_mode not in modes:
        raise ValueError(f"render_mode={render_mode!r}: expected None or one of {modes}")
    if render_mode == "rgb_array" and importlib.util.find_spec("PIL") is None:
        raise ImportError('render_mode="rgb_array" draws with Pillow: pip install pillow')


def _frozen(array: np.ndarray) -> np.ndarray:
    """``array``, read-only: safe to share between infos."""
    array.flags.writeable = False
    return array


class raw_env(AECEnv, EzPickle):
    """Mexican Train as a PettingZoo AEC env; the module docstring is its documentation."""

    metadata = {
        "name": "mexican_train_v1",
        "render_modes": RENDER_MODES,
        "is_parallelizable": False,
        "render_fps": 1,
    }

    def __init__(
        self,
        render_mode: str | None = None,
        reward: str = DEFAULT_REWARD,
        reward_scale: float = DEFAULT_REWARD_SCALE,
        illegal_action: str = "raise",
        illegal_reward: float = -1.0,
        config: RulesConfig | None = None,
        **rules_options,
    ) -> None:
        EzPickle.__init__(
            self,
            render_mode=render_mode,
            reward=reward,
            reward_scale=reward_scale,
            illegal_action=illegal_action,
            illegal_reward=illegal_reward,
            config=config,
            **rules_options,
        )
        super().__init__()
        check_render_mode(render_mode, self.metadata["render_modes"])
        check_reward_mode(reward)
        if (
            isinstance(reward_scale, bool)
            or not isinstance(reward_scale, (int, float))
            or not math.isfinite(reward_scale)
            or reward_scale <= 0
        ):
            raise ValueError(f"reward_scale={reward_scale!r}: expected a finite number > 0")
        check_choice("illegal_action", illegal_action, ILLEGAL_ACTION_MODES)
        self.render_mode = render_mode
        self.reward_mode = reward
        self.reward_scale = float(reward_scale)
        self.illegal_action = illegal_action
        self.illegal_reward = float(illegal_reward)
        self.config = make_config(config, **rules_options)
        n = self.config.num_seats
        self.encoder = ObservationEncoder(self.config)
        self.state_encoder = StateEncoder(self.config)
        self.codec = move_codec(n, self.config.max_pip)
        self.match: Match | None = None
        self.agents: list[str] = []  # filled by reset(); step() refuses an empty list

        self.possible_agents = [f"player_{k}" for k in range(n)]
        self._seat_of = {a: k for k, a in enumerate(self.possible_agents)}
        high = self.encoder.high
        num_actions = self.encoder.num_actions
        self.action_spaces = {a: DiscreteActions(num_actions) for a in self.possible_agents}
        self.observation_spaces = {
            a: spaces.Dict(
                {
                    "observation": spaces.Box(low=np.zeros_like(high), high=high, dtype=np.float32),
                    "action_mask": spaces.Box(0, 1, (num_actions,), dtype=np.int8),
                }
            )
            for a in self.possible_agents
        }
        state_high = self.state_encoder.high
        self.state_space = spaces.Box(
            low=np.zeros_like(state_high), high=state_high, dtype=np.float32
        )
        self._rng = random.Random()
        # Bound methods looked up once: observe() and step() run per agent-step.
        # the encoder's vectors, kept up to date move by move (observation.ObservationTracker)
        self._encode = ObservationTracker(self.encoder).encode
        self._mask = self.encoder.action_mask
        self._to_move = self.codec.to_move
        self._num_actions = num_actions
        self._round_end_pending = False  # rewards/infos of a round end still to clear
        self._over = True  # the episode is over (match over, or an illegal action ended it)
        # The acting seat's mask, computed once per position (observe() and the infos both
        # need it): valid while no move is made, i.e. while _moves is _mask_at.
        self._moves = 0
        self._mask_at = -1
        self._mask_cache = np.zeros(num_actions, dtype=np.int8)
        self._zero_mask = _frozen(np.zeros(num_actions, dtype=np.int8))
        self._zero_scores = _frozen(np.zeros(n, dtype=np.int64))
        self._zero_out = _frozen(np.zeros(n, dtype=bool))
        self._totals = self._zero_scores
        self._places = _frozen(np.ones(n, dtype=np.int64))
        self._round_info: dict[str, Any] = {}
        self._idle_of: dict[str, Any] | None = None
        self._idle_info: dict[str, Any] = {}
        self._info_actor: str | None = None  # the agent whose info says to_act

    # ------------------------------------------------------------------ spaces
    def observation_space(self, agent: str) -> spaces.Space:
        return self.observation_spaces[agent]

    def action_space(self, agent: str) -> spaces.Space:
        return self.action_spaces[agent]

    # ------------------------------------------------------------------ reset
    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> None:
        if seed is not None:
            self._rng = random.Random(seed)
        deals: list = []
        if options:
            if "deal" in options and "deals" in options:
                raise ValueError('options: give either "deal" or "deals", not both')
            if "deal" in options:
                deals = [options["deal"]]
            elif "deals" in options:
                deals = options["deals"]
                if isinstance(deals, Mapping) or not hasattr(deals, "__len__"):
                    raise ValueError(
                        f'options["deals"]: expected a sequence of deals, got {type(deals).__name__}'
                    )
                deals = list(deals)
        # Draw the match seed even for explicit deals, so later rounds stay reproducible.
        self.match = Match(self.config, seed=self._rng.getrandbits(64), deals=deals)
        self._moves += 1  # a new position: the cached mask is stale

        self.agents = self.possible_agents[:]
        self.rewards = dict.fromkeys(self.agents, 0.0)
        self._cumulative_rewards = dict.fromkeys(self.agents, 0.0)
        self.terminations = dict.fromkeys(self.agents, False)
        self.truncations = dict.fromkeys(self.agents, False)
        self._round_end_pending = False
        self._over = False
        self._skip_agent_selection = None
        self.agent_selection = self.possible_agents[self.match.state.seat]
        self._totals = self._zero_scores
        self._places = _frozen(np.ones(self.config.num_seats, dtype=np.int64))
        self._round_info = self._quiet_round_info()
        self._set_infos()

    # ------------------------------------------------------------------ observe
    def observe(self, agent: str) -> dict[str, np.ndarray]:
        seat = self._seat_of[agent]
        match = self.match
        if self._over or match.state.seat != seat:
            mask = np.zeros(self._num_actions, dtype=np.int8)
        else:
            mask = self._acting_mask().copy()
        return {"observation": self._encode(match, seat), "action_mask": mask}

    def _acting_mask(self) -> np.ndarray:
        """The mask of the seat to act (not a copy: callers copy or freeze it)."""
        if self._mask_at != self._moves:
            self._mask_cache = self._mask(self.match, self.match.state.seat)
            self._mask_at = self._moves
        return self._mask_cache

    def state(self) -> np.ndarray:
        """The whole game state, hidden tiles included (:mod:`mt_env.state`), for critics."""
        if self.match is None:
            raise RuntimeError("state() before reset(): there is no match yet")
        return self.state_encoder.encode(self.match)

    # ------------------------------------------------------------------ step
    def step(self, action) -> None:
        if not self.agents:  # [] before the first reset, and once every agent has left
            raise RuntimeError(episode_over_message("before" if self.match is None else "after"))
        agent = self.agent_selection
        if self.terminations[agent] or self.truncations[agent]:
            if action is not None:
                raise ValueError(
                    f"action {action!r} for {agent}, which is terminated (the episode is "
                    f"over): a done agent's only valid action is None (step(None) for each "
                    f"agent in turn, then reset())"
                )
            return self._was_dead_step(action)
        if action.__class__ is not int:
            action = self._as_action(action)
        match = self.match
        seat = match.state.seat
        try:
            result = match.apply(self._to_move(action, seat))
        except IllegalMoveError:
            if self.illegal_action == "raise":
                raise IllegalMoveError(self._illegal_message(action, seat)) from None
            return self._terminate_illegal(agent)
        # The move is made: from here on the AEC bookkeeping.
        self._moves += 1
        self._cumulative_rewards[agent] = 0.0
        if self._round_end_pending:
            self._clear_round_end()
        if result is not None:
            self._on_round_end(result)
        self.agent_selection = self.possible_agents[match.state.seat]
        self._set_infos()
        if self.render_mode == "human":
            self.render()

    def _as_action(self, action) -> int:
        if isinstance(action, np.ndarray) and action.shape == () and action.dtype.kind in "iu":
            return int(action)  # a 0-d integer array, as some RL libraries pass
        if isinstance(action, (bool, np.bool_)) or not isinstance(action, (int, np.integer)):
            raise IllegalMoveError(
                f"action {action!r} is not an action: expected an int in "
                f"0..{self._num_actions - 1} (or None for a terminated agent)"
            )
        return int(action)

    def _illegal_message(self, action: int, seat: int) -> str:
        agent = self.possible_agents[seat]
        if not 0 <= action < self._num_actions:
            return (
                f"action {action} is not an action of {agent}: expected an int in "
                f"0..{self._num_actions - 1}"
            )
        codec = self.codec
        legal = ", ".join(
            f"{codec.to_action(m, seat)} ({codec.describe(m)})" for m in self.match.legal_moves()
        )
        what = codec.describe(self._to_move(action, seat))
        return f"action {action} ({what}) is not legal for {agent}: legal actions are [{legal}]"

    def _terminate_illegal(self, agent: str) -> None:
        """``illegal_action="terminate"``: no move; ``agent`` gets ``illegal_reward``, the
        others 0, and every agent is terminated."""
        self._cumulative_rewards[agent] = 0.0
        for a in self.agents:
            self.rewards[a] = 0.0
        self.rewards[agent] = self.illegal_reward
        self._cumulative_rewards[agent] += self.illegal_reward
        self.terminations = dict.fromkeys(self.agents, True)
        self._over = True
        self._round_end_pending = True
        self._round_info = {**self._quiet_round_info(), "illegal_action": True}
        self._set_infos()

    # ------------------------------------------------------------------ infos
    def _quiet_round_info(self) -> dict[str, Any]:
        """The round part of the infos after a move that ended no round."""
        return {
            "round_ended": False,
            "round_index": self.match.round_index,
            "round_scores": self._zero_scores,
            "round_out_seats": self._zero_out,
            "totals": self._totals,
            "places": self._places,
            "illegal_action": False,
        }

    def _set_infos(self) -> None:
        """Every agent's info for the position just reached, in a new ``infos`` dict. Within a
        round's quiet moves only two entries change (the agent that acted becomes idle, the
        next one acts): those get new dicts and the others keep theirs, equal to what they
        would be rebuilt as; a new round info (reset, a round's end, the move after it)
        rebuilds them all."""
        base = self._round_info
        if self._idle_of is not base:  # the info of an agent not to act, per round info
            self._idle_info = {**base, "to_act": False, "action_mask": self._zero_mask}
            self._idle_of = base
            infos = {a: self._idle_info.copy() for a in self.agents}
        else:
            infos = self.infos.copy()
            if self._info_actor in infos:
                infos[self._info_actor] = self._idle_info.copy()
        self._info_actor = None
        if not self._over:
            mask = self._acting_mask().copy()  # its own array: no need to freeze it
            self._info_actor = agent = self.agent_selection
            infos[agent] = {**base, "to_act": True, "action_mask": mask}
        self.infos = infos

    def _clear_round_end(self) -> None:
        rewards = self.rewards
        for a in rewards:
            rewards[a] = 0.0
        self._round_info = self._quiet_round_info()
        self._round_end_pending = False

    def _on_round_end(self, result: RoundResult) -> None:
        match, agents = self.match, self.possible_agents
        mode = self.reward_mode
        per_seat = round_rewards(mode, self.config, result, self.reward_scale, match.totals)
        if per_seat is None:
            per_seat = [0.0] * len(agents)
        places = match.places()
        if match.is_over:
            final = match_rewards(mode, places)
            if final is not None:
                per_seat = [r + f for r, f in zip(per_seat, final, strict=True)]
        for k, a in enumerate(agents):
            r = per_seat[k] + 0.0  # + 0.0 turns -0.0 into 0.0
            self.rewards[a] = r
            self._cumulative_rewards[a] += r
        out = np.zeros(len(agents), dtype=bool)
        out[list(result.out_seats)] = True
        self._totals = _frozen(np.array(match.totals, dtype=np.int64))
        self._places = _frozen(np.array(places, dtype=np.int64))
        self._round_info = {
            "round_ended": True,
            "round_index": result.round_index,
            "round_scores": _frozen(np.array(result.scores, dtype=np.int64)),
            "round_out_seats": _frozen(out),
            "totals": self._totals,
            "places": self._places,
            "illegal_action": False,
        }
        if match.is_over:
            self.terminations = dict.fromkeys(self.agents, True)
            self._over = True
        self._round_end_pending = True

    # ------------------------------------------------------------------ render / close
    def render(self) -> str | np.ndarray | None:
        if self.render_mode is None:
            gymnasium.logger.warn(
                "You are calling render method without specifying any render mode."
            )
            return None
        return render_frame(self.render_mode, self.config, self.match, seat=None)

    def close(self) -> None:
        pass


def render_frame(mode: str, config: RulesConfig, match: Match | None, seat: int | None):
    """``render()`` of every env here: text for ``"ansi"``, printed for ``"human"``, a
    picture for ``"rgb_array"``; ``seat`` is the hand shown (None: the seat to act)."""
    if mode == "rgb_array":
        from .picture import render_rgb  # Pillow: imported only for pictures

        return render_rgb(config, match, seat=seat)
    if match is None:
        text = "Mexican Train: no match yet (call reset())"
    else:
        text = render_text(match, seat=seat)
    if mode == "human":
        print(text)
        return None
    return text


class MexicanTrainParallelEnv(ParallelEnv, EzPickle):
    """The turn-based parallel form of :class:`raw_env` (``parallel_env(**kwargs)``).

    Each ``step(actions)`` makes one move, by the agent to act (the one whose
    ``info["to_act"]`` is True and whose ``action_mask`` is not all zero); the other
    agents' entries are ignored and may be left out. Everything else — spaces, rewards,
    infos, ``state()``, rendering, illegal actions — is the AEC env's (the module
    docstring), which it drives: ``env.aec`` is that :class:`raw_env`.
    """

    metadata = {"name": "mexican_train_v1", "render_modes": RENDER_MODES, "render_fps": 1}

    def __init__(self, **kwargs) -> None:
        EzPickle.__init__(self, **kwargs)
        self.aec = raw_env(**kwargs)
        self.possible_agents = self.aec.possible_agents[:]
        self.agents: list[str] = []
        self.render_mode = self.aec.render_mode
        self.config = self.aec.config
        self.encoder = self.aec.encoder
        self.state_encoder = self.aec.state_encoder
        self.codec = self.aec.codec
        self.state_space = self.aec.state_space
        self.observation_spaces = self.aec.observation_spaces
        self.action_spaces = self.aec.action_spaces

    @property
    def match(self) -> Match | None:
        return self.aec.match

    def observation_space(self, agent: str) -> spaces.Space:
        return self.aec.observation_space(agent)

    def action_space(self, agent: str) -> spaces.Space:
        return self.aec.action_space(agent)

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None):
        aec = self.aec
        aec.reset(seed=seed, options=options)
        self.agents = aec.agents[:]
        observations = {a: aec.observe(a) for a in self.agents}
        return observations, {a: dict(aec.infos[a]) for a in self.agents}

    def step(self, actions: dict[str, Any]):
        if not self.agents:
            raise RuntimeError(
                episode_over_message("before" if self.aec.match is None else "after")
            )
        if not isinstance(actions, Mapping):
            raise ValueError(
                f"actions={actions!r}: expected a dict {{agent: action}} holding the action "
                f"of the agent to act ({self.aec.agent_selection})"
            )
        aec = self.aec
        agent = aec.agent_selection
        if agent not in actions:
            raise ValueError(
                f"{agent} is to act: actions must hold its action (given for "
                f"{sorted(actions)}); the other agents' entries are ignored"
            )
        aec.step(actions[agent])
        agents = self.agents
        observations = {a: aec.observe(a) for a in agents}
        rewards = {a: float(aec.rewards[a]) for a in agents}
        terminations = {a: aec.terminations[a] for a in agents}
        truncations = {a: aec.truncations[a] for a in agents}
        infos = {a: dict(aec.infos[a]) for a in agents}
        if aec._over:
            self.agents = []
        return observations, rewards, terminations, truncations, infos

    def state(self) -> np.ndarray:
        return self.aec.state()

    def render(self) -> str | np.ndarray | None:
        return self.aec.render()

    def close(self) -> None:
        self.aec.close()
