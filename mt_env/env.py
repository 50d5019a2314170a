"""
# Mexican Train

A PettingZoo AEC environment for Mexican Train dominoes (rules: ``RULES.md``, rule ids
``R…``/``V…``/``C…``). This module is a thin shell: every rule lives in the rules core
(:mod:`mt_env.rules`, :mod:`mt_env.match`), the action encoding in :mod:`mt_env.actions`,
the observation vector in :mod:`mt_env.observation`, the text picture in
:mod:`mt_env.render`. What lives here is the PettingZoo plumbing: agents, spaces,
rewards, terminations, seeding, ``render()``.

| Import             | `from mt_env import env, raw_env`                              |
|--------------------|----------------------------------------------------------------|
| Actions            | Discrete                                                       |
| Parallel API       | No                                                             |
| Manual Control     | No                                                             |
| Agents             | `agents = ['player_0', ..., 'player_{n-1}']`                   |
| Agents             | n = `num_seats`, 2–14 (default 4)                              |
| Action Shape       | (1,)                                                           |
| Action Values      | [0, T·(n+1)+1]: [0, 456] for the default 4 seats (T = 91)      |
| Observation Shape  | (`encoder.size`,): (325,) for the default 4 seats              |
| Observation Values | [0, `observation_space(agent)["observation"].high`], float32   |

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
config=None, **rules_options)`; `env(**kwargs)` wraps it in `AssertOutOfBoundsWrapper`
and `OrderEnforcingWrapper`. The rules options are the fields of
:class:`mt_env.config.RulesConfig` (`num_seats`, `max_pip`, `hand_size`, `first_turn`,
`follow_up_on_double`, `doubles_order`, `dead_doubles`, `double_blank_value`,
`engine_source`, `scoring`, `num_rounds`, `first_engine`); pass either options or a
ready `config=`, not both. An invalid option, reward mode or scale raises `ValueError`.
`env.unwrapped` exposes `match` (the :class:`~mt_env.match.Match`, `None` before the
first reset), `config`, `encoder` (:class:`~mt_env.observation.ObservationEncoder`) and
`codec` (:class:`~mt_env.actions.MoveCodec`).

### Action Space

One integer per move, trains counted **relative to the acting seat** (0 = its own train,
1 = the next seat clockwise, …, n = the Mexican train); :mod:`mt_env.actions` holds the
one formula:

    play(tile, train) = tile * (n + 1) + train      draw = T * (n + 1)      pass = T * (n + 1) + 1

`env.unwrapped.codec.to_move(action, seat)` / `to_action(move, seat)` convert to and
from the core's absolute moves. **An illegal action raises `ValueError`** (the core's
`IllegalMoveError`) naming the action and the legal ones; the state is unchanged and no
reward is given. There is deliberately no `TerminateIllegalWrapper`: the mask is exact,
so an illegal action is a bug in the caller, not a move to be punished. Out-of-range
actions trip `AssertOutOfBoundsWrapper` in `env()` (a `ValueError` in `raw_env`).

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
and every agent once the match is over, sees all zeros. Forced moves are still moves
(C2): a seat whose only legal move is `draw` or `pass` is asked for it, and the same
agent may act several times in a row (a free first turn R11, a draw R18, a follow-up
R16), so always read `env.agent_selection`.

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
| `"rank"` | match end | 1 − 2·(r_k − 1)/(n − 1), r_k the fractional rank: tied seats (`match.places()`, R28) share the mean of their positions, so rewards lie in [−1, 1] and sum to 0 |
| `"win"` | match end | 1 to the outright winner; 1/k to each of k seats tied for first; 0 otherwise |

The default is `"score_zero_sum"`: the match is won by the round scores (R27), so the
per-round signal is aligned with winning yet arrives every round instead of once per
(up to 19-round) match, and being zero-sum it keeps self-play symmetric. `"rank"` and
`"win"` are the sparse, exact match objectives.

### Episode

An episode is one match of `num_rounds` rounds (R5; `num_rounds=1` gives one-round
episodes). When a move ends a round the match deals the next round at once and play
goes on. When the last round ends every agent is terminated (no truncation: rounds end
by R23–R25); each then steps `None` (`_was_dead_step`) and leaves `agents`.
`reset(seed=s)` makes reproducible deals from `random.Random(s)`; `reset()` without a
seed continues from the env's own generator. `reset(options={"deal": deal})` (a
:class:`~mt_env.rules.Deal` or a mapping with keys hands, boneyard, engine, start_seat)
or `options={"deals": [deal, ...]}` fixes the first rounds' starting positions (later
rounds are dealt from the seed); other option keys are ignored. `infos[agent]` is `{}`
except after a move that ended a round: then `{"round_result": {...}}` (the
:class:`~mt_env.match.RoundResult` as a dict, seats absolute) plus, at match end,
`"totals"` and `"places"`; it is cleared at the next move.

`render()` returns :func:`mt_env.render.render_text` for `render_mode="ansi"` and prints
it for `"human"`.

### Version History

* v0: Initial release (observation version 1).
"""

from __future__ import annotations

import dataclasses
import math
import random
from collections.abc import Mapping
from typing import Any

import gymnasium
import numpy as np
from gymnasium import spaces
from gymnasium.utils import EzPickle
from pettingzoo import AECEnv
from pettingzoo.utils import wrappers

from .actions import move_codec
from .config import RulesConfig
from .match import Match, RoundResult
from .observation import ObservationEncoder
from .render import render_text
from .rewards import check_reward_mode, match_rewards, round_rewards
from .rules import IllegalMoveError

DEFAULT_REWARD = "score_zero_sum"
DEFAULT_REWARD_SCALE = 0.01


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


def env(**kwargs) -> AECEnv:
    """`raw_env(**kwargs)` in the standard wrappers (no TerminateIllegalWrapper: illegal
    actions raise ValueError)."""
    e = raw_env(**kwargs)
    e = wrappers.AssertOutOfBoundsWrapper(e)
    e = wrappers.OrderEnforcingWrapper(e)
    return e


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


class raw_env(AECEnv, EzPickle):
    """Mexican Train as a PettingZoo AEC env; the module docstring is its documentation."""

    metadata = {
        "name": "mexican_train_v0",
        "render_modes": ["ansi", "human"],
        "is_parallelizable": False,
        "render_fps": 1,
    }

    def __init__(
        self,
        render_mode: str | None = None,
        reward: str = DEFAULT_REWARD,
        reward_scale: float = DEFAULT_REWARD_SCALE,
        config: RulesConfig | None = None,
        **rules_options,
    ) -> None:
        EzPickle.__init__(
            self,
            render_mode=render_mode,
            reward=reward,
            reward_scale=reward_scale,
            config=config,
            **rules_options,
        )
        super().__init__()
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(
                f"render_mode={render_mode!r}: expected None or one of "
                f"{self.metadata['render_modes']}"
            )
        check_reward_mode(reward)
        if (
            isinstance(reward_scale, bool)
            or not isinstance(reward_scale, (int, float))
            or not math.isfinite(reward_scale)
            or reward_scale <= 0
        ):
            raise ValueError(f"reward_scale={reward_scale!r}: expected a finite number > 0")
        self.render_mode = render_mode
        self.reward_mode = reward
        self.reward_scale = float(reward_scale)
        self.config = make_config(config, **rules_options)
        n = self.config.num_seats
        self.encoder = ObservationEncoder(self.config)
        self.codec = move_codec(n, self.config.max_pip)
        self.match: Match | None = None

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
        self._rng = random.Random()
        # Bound methods looked up once: observe() and step() run per agent-step.
        self._encode = self.encoder.encode
        self._mask = self.encoder.action_mask
        self._to_move = self.codec.to_move
        self._num_actions = num_actions
        self._round_end_pending = False  # rewards/infos of a round end still to clear

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

        self.agents = self.possible_agents[:]
        self.rewards = dict.fromkeys(self.agents, 0.0)
        self._cumulative_rewards = dict.fromkeys(self.agents, 0.0)
        self.terminations = dict.fromkeys(self.agents, False)
        self.truncations = dict.fromkeys(self.agents, False)
        self.infos = {a: {} for a in self.agents}
        self._round_end_pending = False
        self._skip_agent_selection = None
        self.agent_selection = self.possible_agents[self.match.state.seat]

    # ------------------------------------------------------------------ observe
    def observe(self, agent: str) -> dict[str, np.ndarray]:
        seat = self._seat_of[agent]
        match = self.match
        return {"observation": self._encode(match, seat), "action_mask": self._mask(match, seat)}

    # ------------------------------------------------------------------ step
    def step(self, action) -> None:
        agent = self.agent_selection
        if self.terminations[agent] or self.truncations[agent]:
            return self._was_dead_step(action)
        if action.__class__ is not int:
            action = self._as_action(action)
        match = self.match
        seat = match.state.seat
        try:
            result = match.apply(self._to_move(action, seat))
        except IllegalMoveError:
            raise IllegalMoveError(self._illegal_message(action, seat)) from None
        # The move is made: from here on the AEC bookkeeping.
        self._cumulative_rewards[agent] = 0.0
        if self._round_end_pending:
            self._clear_round_end()
        if result is not None:
            self._on_round_end(result)
        self.agent_selection = self.possible_agents[match.state.seat]
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

    def _clear_round_end(self) -> None:
        rewards, infos = self.rewards, self.infos
        for a in rewards:
            rewards[a] = 0.0
            infos[a] = {}
        self._round_end_pending = False

    def _on_round_end(self, result: RoundResult) -> None:
        match, agents = self.match, self.possible_agents
        mode = self.reward_mode
        per_seat = round_rewards(mode, self.config, result, self.reward_scale)
        if per_seat is None:
            per_seat = [0.0] * len(agents)
        summary = dataclasses.asdict(result)
        extra: dict[str, Any] = {}
        if match.is_over:
            places = match.places()
            final = match_rewards(mode, places)
            if final is not None:
                per_seat = [r + f for r, f in zip(per_seat, final, strict=True)]
            extra = {"totals": match.totals, "places": places}
        for k, a in enumerate(agents):
            r = per_seat[k] + 0.0  # + 0.0 turns -0.0 into 0.0
            self.rewards[a] = r
            self._cumulative_rewards[a] += r
            self.infos[a] = {
                "round_result": dict(summary),
                **{x: list(v) for x, v in extra.items()},
            }
        if match.is_over:
            self.terminations = dict.fromkeys(self.agents, True)
        self._round_end_pending = True

    # ------------------------------------------------------------------ render / close
    def render(self) -> str | None:
        if self.render_mode is None:
            gymnasium.logger.warn(
                "You are calling render method without specifying any render mode."
            )
            return None
        if self.match is None:
            text = "Mexican Train: no match yet (call reset())"
        else:
            text = render_text(self.match)
        if self.render_mode == "human":
            print(text)
            return None
        return text

    def close(self) -> None:
        pass
