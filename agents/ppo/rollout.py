"""Self-play rollouts for PPO in a multi-seat, multi-move-per-turn game.

Why this is its own module: in Mexican Train a seat may act several times in a
row (free first turn, doubles, draw then play) and then wait while others act,
and round rewards arrive after *another* seat's move. So the collector keeps one
**stream** per (game, learner seat) — that seat's own sequence of decisions:

- a decision (a move with more than one legal choice; forced moves are played
  without the network) appends a transition to its seat's stream;
- a reward (round end, match end) is added to the **last decision of each seat it
  belongs to**, whoever moved last;
- a stream ends (``done``) when its episode ends: the match, or the round when
  ``round_is_episode`` (then the score reward of that round is the return);
- GAE runs **per stream**: the next value of a transition is the value of the same
  seat's next decision; at the end of a rollout each open stream keeps its last
  transition (its successor is not known yet) and bootstraps the others from
  its value; that transition is trained in the next batch.

**Expert labels** (``spec.expert_every``, expert iteration): one in ``expert_every`` of the
learner's decisions is also decided by :class:`mt_env.agents.ppo.policy.PolicySearchAgent`
built on the collector's current weights (the policy proposes the candidates, plays the
rollouts and is the default; the search improves on it). Where that search ran, its choice is
the transition's ``expert`` label (else -1); the trainer adds the label's cross-entropy to the
PPO loss. The action played is still the policy's sample.

**Duplicate matches** (``spec.duplicates`` = K > 1, issue 14): the games are played in groups
of K copies of one match: the same deals (hands, engine *and* boneyard order, R4), the same
seats for the learner and the same opponents with the same seeds, as a duplicate tournament
replays a deal at every table. The copies part only where a sampled move differs. A learner
decision's advantage is then its round's return minus the mean return of the *other* K - 1
copies of that round for the same seat (a leave-one-out baseline, as in RLOO or GRPO), in
place of GAE's: the luck of the deal and of the draws, which no critic can see (the value
probe of docs/experiments.md §3.10 explains ~8% of a round's return), is the same in every
copy and cancels. The first decisions that every copy made alike (:func:`common_prefix`)
get advantage 0: their advantages would sum to zero over the copies. A round's transitions
wait until every copy has finished that round (they may be trained in a later batch than
the one they were played in); the value head still learns GAE's λ-returns. Needs
``round_is_episode`` and ``gamma == 1`` (:func:`check_duplicates`).

Values come from the policy's own value head, or with ``spec.critic ==
"privileged"`` from a separate critic that also sees the other hands and the
boneyard (:class:`mt_env.agents.ppo.policy.PrivilegedCritic`): each transition then records that
hidden-information input too, for the update; ``spec.hidden_tiles`` records it without that
critic, as the belief head's targets. The policy's inputs never include it.

Seats are filled per match: ``learner_seats`` seats (random positions) for the
learning policy, the others drawn from ``opponent_mix`` — ``"self"`` (the
learning policy again, its decisions recorded too), ``"past"`` (a frozen
snapshot from the pool, or self if the pool is empty) or a scripted baseline name
(:func:`mt_env.agents.make_agent`). Network seats are batched into one forward pass per
policy. With ``spec.teacher`` set (:meth:`Collector.demonstrations`) a scripted agent
plays every learner seat and its decisions are recorded instead: demonstrations for
behaviour cloning, with Monte-Carlo returns of finished episodes, sent in small parts as
they are recorded (raw observations: the trainer featurizes them when it fits, see
:mod:`mt_env.agents.ppo.cloning`). :class:`Collector`
runs in-process; :class:`CollectorProcess` runs one in a worker process so that
rollouts use every core; :class:`Collectors` drives several as one (the trainer's), in
this machine's processes or, with ``backend="ray"``, in Ray actors on a cluster
(:mod:`mt_env.integrations.ray`): each collector has its own seed, so the batches are the
same wherever it runs.
A worker process dies with the trainer, however the trainer ends (a SIGKILL included:
Linux's parent-death signal, elsewhere a watch on the parent's id), and leaves SIGINT to the
trainer, which stops its workers itself.
"""

from __future__ import annotations

import ctypes
import functools
import math
import multiprocessing as mp
import os
import random
import signal
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from multiprocessing.connection import wait

import numpy as np
import torch

from mt_env.agents import make_agent
from mt_env.agents.base import act_in_match
from mt_env.agents.features import make_featurizer
from mt_env.agents.ppo.checkpoint import PAIR_HIDDEN
from mt_env.agents.ppo.policy import (
    PolicyNet,
    PolicySearchAgent,
    PPOAgent,
    make_critic,
    make_policy,
    privileged_features,
    sample_actions,
)
from mt_env.config import RulesConfig
from mt_env.match import Match
from mt_env.observation import ObservationEncoder
from mt_env.rewards import match_rewards, round_rewards

LEARNER = "self"
PAST = "past"
BACKENDS = ("local", "ray")

# A transition: [policy input, mask, action, logp, value, reward, done, privileged input,
# expert label (-1: none)]
_OBS, _MASK, _ACT, _LOGP, _VAL, _REW, _DONE, _PRIV, _EXPERT = range(9)
_NO_PRIV = np.zeros(0, dtype=np.float32)


@dataclass
class RolloutSpec:
    """What a collector needs besides the policy weights (picklable for worker processes)."""

    rules: RulesConfig
    num_games: int
    seed: int
    reward: str
    reward_scale: float
    round_is_episode: bool
    learner_seats: int
    opponent_mix: dict[str, float]
    features: str
    hidden_sizes: tuple[int, ...]
    gamma: float
    gae_lambda: float
    teacher: str = ""
    """a scripted agent playing the learner seats instead of the policy (demonstrations)"""
    critic: str = "observation"
    """"privileged": values come from :class:`mt_env.agents.ppo.policy.PrivilegedCritic`, and each
    transition also records :func:`mt_env.agents.ppo.policy.privileged_features` for the update"""
    expert_every: int = 0
    """label one in this many learner decisions with search-ppo's choice (0 = none; above)"""
    duplicates: int = 1
    """copies of each match played on the same deals, advantages relative to the other copies
    (1 = off, GAE's advantages; above)"""
    pair_hidden: int = PAIR_HIDDEN
    """width of the policy's pair head (feature set "pairs")"""
    hidden_tiles: bool = False
    """record :func:`mt_env.agents.ppo.policy.privileged_features` with each transition even
    without the privileged critic (the belief head's targets, ``belief_coef > 0``)"""


def check_duplicates(duplicates: int, num_games: int, round_is_episode: bool, gamma: float) -> None:
    """ValueError unless ``duplicates`` copies of each match can be played by a collector of
    ``num_games`` games: a whole number of groups, episodes of one round (the copies' returns
    are compared round by round) and undiscounted returns (every decision of a round has the
    round's return)."""
    if duplicates < 1:
        raise ValueError(f"duplicates={duplicates}: expected >= 1 (1 = off)")
    if duplicates == 1:
        return
    if num_games % duplicates:
        raise ValueError(f"duplicates={duplicates}: expected a divisor of the games per collector "
                         f"({num_games}), so that every game has its copies")
    if not round_is_episode:
        raise ValueError(f"duplicates={duplicates} needs round_is_episode=True (copies are "
                         "compared round by round)")
    if gamma != 1.0:
        raise ValueError(f"duplicates={duplicates} needs gamma=1.0 (got {gamma}): each decision's "
                         "advantage is its round's return against the other copies'")


def common_prefix(copies: list[list[tuple]]) -> int:
    """How many first decisions (batch rows) every copy of a round made alike: the same
    policy input and the same action. Their leave-one-out advantages sum to 0 over the copies,
    so they carry no signal; they get advantage 0 rather than K terms that cancel only over a
    whole epoch (split across minibatches, they would nudge these choices at random)."""
    for t in range(min(len(rows) for rows in copies)):
        x, action = copies[0][t][0], copies[0][t][2]
        if any(rows[t][2] != action or not np.array_equal(rows[t][0], x) for rows in copies[1:]):
            return t
    return min(len(rows) for rows in copies)


def parse_opponent_mix(text: str) -> dict[str, float]:
    """``"self=0.4,past=0.2,longest-train=0.4"`` -> ``{name: weight}`` (the trainer's
    ``opponent_mix``); ValueError if malformed or the weights are all 0."""
    mix: dict[str, float] = {}
    for part in text.split(","):
        name, sep, weight = part.strip().partition("=")
        try:
            mix[name.strip()] = float(weight)
        except ValueError:
            sep = ""
        if not sep or not name.strip() or mix.get(name.strip(), -1) < 0:
            raise ValueError(
                f"opponent_mix={text!r}: expected NAME=WEIGHT,... with "
                f"non-negative weights, e.g. 'self=0.5,longest-train=0.5'"
            )
    if sum(mix.values()) <= 0:
        raise ValueError(f"opponent_mix={text!r}: the weights sum to 0")
    return mix


@dataclass(frozen=True)
class _MatchPlan:
    """Who sits where in a new match, and its seeds: what the copies of a duplicate match share."""

    roles: tuple[str, ...]
    pool_index: dict[int, int]
    agent_seeds: dict[int, int]  # scripted seats (a baseline, or the teacher in a learner seat)
    seed: int  # the match's deals


class _Game:
    __slots__ = ("match", "roles", "agents", "streams", "pool_index", "group", "plays", "plan_key",
                 "returns")

    def __init__(self, group: int = 0) -> None:
        self.match: Match
        self.roles: list[str] = []
        self.agents: dict[int, object] = {}
        self.streams: dict[int, list[list]] = {}
        self.pool_index: dict[int, int] = {}
        self.group = group  # duplicates: the copies of one match share a group
        self.plays = 0  # matches this game has started (its copies' n-th match is the same)
        self.plan_key: tuple[int, int] = (group, 0)
        self.returns: dict[int, float] = {}  # learner seats' rewards in this episode so far


class Collector:
    """Runs ``spec.num_games`` matches at once and returns PPO batches from them."""

    def __init__(self, spec: RolloutSpec) -> None:
        check_duplicates(spec.duplicates, spec.num_games, spec.round_is_episode, spec.gamma)
        self.spec = spec
        self.cfg = spec.rules
        self.enc = ObservationEncoder(spec.rules)
        self.featurize = make_featurizer(spec.rules, spec.features)
        self.rng = random.Random(spec.seed)
        self.torch_gen = torch.Generator().manual_seed(spec.seed)
        self.policy = make_policy(spec.rules, spec.features, spec.hidden_sizes, spec.pair_hidden)
        self.critic = (
            make_critic(spec.rules, spec.features, spec.hidden_sizes)
            if spec.critic == "privileged" else None
        )
        self.pool: list[PolicyNet] = []
        self.expert = None
        if spec.expert_every:  # search-ppo on this collector's own network (its weights follow)
            net = PPOAgent(spec.rules, spec.seed, net=self.policy, features=spec.features)
            self.expert = PolicySearchAgent(spec.rules, spec.seed, policy=net, infer=False)
            self.expert.reset()
        self._decisions = 0  # learner decisions it would search so far (which to label)
        self._free_first = self.enc.pieces["phase"].start + 1  # the observation's R11 bit
        self._draw = self.enc.codec.draw  # the first action that is not a play
        names, weights = zip(*sorted(spec.opponent_mix.items()), strict=True)
        self._mix_names, self._mix_weights = list(names), list(weights)
        self.finished: list[tuple] = []
        self.ready = 0
        self.stats = _Stats()
        # duplicates: each match's plan until all its copies have started it; each round's
        # finished copies (their transitions and returns) until the last copy finishes it
        self._plans: dict[tuple[int, int], list] = {}
        self._held: dict[tuple[int, int, int], list] = {}
        self.games = [_Game(i // spec.duplicates) for i in range(spec.num_games)]
        for g in self.games:
            self._new_match(g)

    # ---------------------------------------------------------------- set-up
    def set_pool(self, state_dicts: list[dict]) -> None:
        self.pool = []
        for sd in state_dicts:
            net = make_policy(self.spec.rules, self.spec.features, self.spec.hidden_sizes, self.spec.pair_hidden)
            net.load_state_dict(sd)
            net.eval()
            self.pool.append(net)

    def _new_match(self, g: _Game) -> None:
        k = self.spec.duplicates
        g.plan_key = (g.group, g.plays)
        g.plays += 1
        if k == 1:
            plan = self._draw_plan()
        else:  # the first copy to get here draws the plan; the others take it
            held = self._plans.setdefault(g.plan_key, [None, k])
            if held[0] is None:
                held[0] = self._draw_plan()
            plan = held[0]
            held[1] -= 1
            if not held[1]:
                del self._plans[g.plan_key]
        g.roles = list(plan.roles)
        g.pool_index = dict(plan.pool_index)
        g.agents = {}
        for seat, agent_seed in plan.agent_seeds.items():
            scripted = self.spec.teacher if g.roles[seat] == LEARNER else g.roles[seat]
            agent = make_agent(scripted, self.cfg, seed=agent_seed)
            agent.reset()
            g.agents[seat] = agent
        g.streams = {seat: [] for seat in range(len(g.roles)) if g.roles[seat] == LEARNER}
        g.returns = dict.fromkeys(g.streams, 0.0)
        g.match = Match(self.cfg, seed=plan.seed)

    def _draw_plan(self) -> _MatchPlan:
        n = self.cfg.num_seats
        seats = list(range(n))
        self.rng.shuffle(seats)
        learners = set(seats[: self.spec.learner_seats])
        roles, pool_index, agent_seeds = [], {}, {}
        for seat in range(n):
            role = LEARNER if seat in learners else self._draw_opponent()
            if role == PAST:
                if self.pool:
                    pool_index[seat] = self.rng.randrange(len(self.pool))
                else:
                    role = LEARNER
            roles.append(role)
            # a baseline seat, or a learner seat played by the teacher (demonstrations)
            scripted = self.spec.teacher if role == LEARNER else role
            if scripted not in ("", LEARNER, PAST):
                agent_seeds[seat] = self.rng.randrange(2**31)
        return _MatchPlan(tuple(roles), pool_index, agent_seeds, self.rng.randrange(2**63))

    def _draw_opponent(self) -> str:
        return self.rng.choices(self._mix_names, self._mix_weights)[0]

    # ---------------------------------------------------------------- stepping
    def step(self, g: _Game, seat: int, action: int) -> None:
        m = g.match
        result = m.apply(m.state.codec.to_move(action, seat))
        self.stats.env_steps += 1
        if result is None:
            return
        spec = self.spec
        rewards = round_rewards(spec.reward, self.cfg, result, spec.reward_scale, m.totals)
        for s, stream in g.streams.items():
            self.stats.round_scores.append(result.scores[s])
            if rewards is not None:
                g.returns[s] = g.returns.get(s, 0.0) + rewards[s]
                if stream:
                    stream[-1][_REW] += rewards[s]  # credited to this seat's last decision
        for s, role in enumerate(g.roles):
            if role != LEARNER:
                self.stats.opponent_scores.append(result.scores[s])
        if m.is_over:
            places = m.places()
            final = match_rewards(spec.reward, places)
            for s, stream in g.streams.items():
                if final is not None:
                    g.returns[s] = g.returns.get(s, 0.0) + final[s]
                    if stream:
                        stream[-1][_REW] += final[s]
                self.stats.record_match(places, s)
            self._end_episode(g, result.round_index)
            self._new_match(g)
        elif spec.round_is_episode:
            self._end_episode(g, result.round_index)

    def _end_episode(self, g: _Game, round_index: int) -> None:
        """Every learner stream of ``g`` ended its episode. Without duplicates its transitions
        are ready (GAE, bootstrap 0); with them they wait for the other copies of the round."""
        k = self.spec.duplicates
        if k == 1:
            for stream in g.streams.values():
                self._close(stream)
            return
        rows = {}
        for s, stream in g.streams.items():
            if stream:
                stream[-1][_DONE] = True
            rows[s] = self._gae(stream, next_value=0.0)
            stream.clear()
        copies = self._held.setdefault((*g.plan_key, round_index), [])
        copies.append((rows, g.returns))
        g.returns = dict.fromkeys(g.streams, 0.0)
        if len(copies) < k:
            return
        del self._held[(*g.plan_key, round_index)]
        for s in copies[0][1]:  # the learner seats, the same in every copy
            total = sum(ret[s] for _, ret in copies)
            alike = common_prefix([rows[s] for rows, _ in copies])
            for rows, ret in copies:
                adv = ret[s] - (total - ret[s]) / (k - 1)  # leave-one-out baseline
                self.finished.extend((*row[:5], 0.0 if t < alike else adv, *row[6:])
                                     for t, row in enumerate(rows[s]))
                self.ready += len(rows[s])

    def _close(self, stream: list[list]) -> None:
        """The stream's episode ended: all its transitions are ready (bootstrap 0)."""
        if not stream:
            return
        stream[-1][_DONE] = True
        self.ready += 1  # its last transition becomes ready too
        self._flush(stream, next_value=0.0, keep_last=False)

    def _flush(self, stream: list[list], next_value: float, keep_last: bool) -> None:
        """GAE over the stream's ready transitions, moved to ``finished``."""
        body = stream[:-1] if keep_last else stream
        self.finished.extend(self._gae(body, next_value))
        del stream[: len(body)]

    def _gae(self, body: list[list], next_value: float) -> list[tuple]:
        """``body``'s transitions as batch rows, in order, with GAE's advantages and returns."""
        gamma, lam = self.spec.gamma, self.spec.gae_lambda
        adv = 0.0
        out = []
        for tr in reversed(body):
            nonterminal = 0.0 if tr[_DONE] else 1.0
            delta = tr[_REW] + gamma * next_value * nonterminal - tr[_VAL]
            adv = delta + gamma * lam * nonterminal * adv
            out.append((tr[_OBS], tr[_MASK], tr[_ACT], tr[_LOGP], tr[_VAL], adv, adv + tr[_VAL],
                        tr[_PRIV], tr[_EXPERT]))
            next_value = tr[_VAL]
        return out[::-1]

    def record(self, g: _Game, seat: int, x, mask, action: int, logp: float, value: float,
               priv: np.ndarray = _NO_PRIV, expert: int = -1) -> None:
        """A learner decision of ``seat``: appended to that seat's own stream."""
        stream = g.streams[seat]
        if stream and self.spec.duplicates == 1:
            self.ready += 1  # the previous decision of this seat now has a successor
        stream.append([x, mask, action, logp, value, 0.0, False, priv, expert])

    def _expert_label(self, obs: np.ndarray, mask: np.ndarray, greedy: int) -> int:
        """search-ppo's choice for one in ``expert_every`` of the learner decisions it would
        search: a choice between plays outside a free first turn (the rest it leaves to the
        policy or the rules); else -1. ``greedy``: the policy's argmax, for the agreement
        counter."""
        if self.expert is None or obs[self._free_first] or mask[: self._draw].sum() < 2:
            return -1
        self._decisions += 1
        if self._decisions % self.spec.expert_every:
            return -1
        t0, before = time.perf_counter(), self.expert.searches
        label = int(self.expert.act(obs, mask))
        self.stats.expert_seconds += time.perf_counter() - t0
        if self.expert.searches == before:  # cannot happen: the decision was searchable
            raise RuntimeError("search-ppo did not search a choice between plays")
        self.stats.expert_labels += 1
        self.stats.expert_agree += label == greedy
        return label

    def _privileged(self, g: _Game, seat: int) -> np.ndarray:
        """The hidden tiles as ``seat``'s privileged input (empty unless the privileged critic or
        the belief head needs them)."""
        if self.critic is None and not self.spec.hidden_tiles:
            return _NO_PRIV
        return privileged_features(g.match.state, seat)

    def _advance_scripted(self, g: _Game) -> None:
        """Play forced moves and scripted seats until a network seat (learner or past)
        has a real choice to make."""
        enc = self.enc
        while True:
            m = g.match
            seat = m.state.seat
            legal = m.state.legal_moves()
            if len(legal) == 1:  # a forced move (C2) is no decision: nothing to learn from it
                self.step(g, seat, m.state.codec.to_action(legal[0], seat))
                continue
            role = g.roles[seat]
            if role in (LEARNER, PAST):
                return
            action = act_in_match(g.agents[seat], enc, m, seat, enc.action_mask(m, seat))
            self.step(g, seat, action)

    @torch.no_grad()
    def collect(self, state_dict: dict, min_steps: int, critic_state: dict | None = None) -> dict:
        """Play until at least ``min_steps`` learner transitions are ready; return the batch.
        ``critic_state``: the privileged critic's weights (``spec.critic == "privileged"``)."""
        self.policy.load_state_dict(state_dict)
        self.policy.eval()
        if self.critic is not None:
            if critic_state is None:
                raise ValueError('collect(): spec.critic == "privileged" needs critic_state')
            self.critic.load_state_dict(critic_state)
            self.critic.eval()
        enc = self.enc
        while self.ready < min_steps:
            for g in self.games:
                self._advance_scripted(g)
            groups: dict[int, list[_Game]] = {}
            for g in self.games:
                seat = g.match.state.seat
                key = -1 if g.roles[seat] == LEARNER else g.pool_index[seat]
                groups.setdefault(key, []).append(g)
            for key, games in groups.items():
                seats = [g.match.state.seat for g in games]
                obs = np.stack([enc.encode(g.match, s) for g, s in zip(games, seats, strict=True)])
                masks = np.stack(
                    [enc.action_mask(g.match, s) for g, s in zip(games, seats, strict=True)]
                ).astype(bool)
                x = self.featurize(obs)
                net = self.policy if key == -1 else self.pool[key]
                xt = torch.from_numpy(x)
                logits, values = net(xt, torch.from_numpy(masks))
                privs = [_NO_PRIV] * len(games)
                if key == -1:  # the learner's rows: the hidden tiles where the critic or the head needs them
                    privs = [self._privileged(g, s) for g, s in zip(games, seats, strict=True)]
                    if self.critic is not None:
                        values = self.critic(net.trunk_input(xt), torch.from_numpy(np.stack(privs)))
                actions = sample_actions(logits, self.torch_gen)
                logps = torch.log_softmax(logits, -1).gather(1, actions[:, None]).squeeze(1).numpy()
                greedy = logits.argmax(-1).numpy()
                actions, values = actions.numpy(), values.numpy()
                for i, (g, seat) in enumerate(zip(games, seats, strict=True)):
                    a = int(actions[i])
                    if key == -1:
                        label = self._expert_label(obs[i], masks[i], int(greedy[i]))
                        self.record(g, seat, x[i], masks[i], a, float(logps[i]), float(values[i]),
                                    privs[i], label)
                    self.step(g, seat, a)
        for g in self.games:
            for stream in g.streams.values():  # (duplicates: a round waits for its copies)
                if len(stream) > 1 and self.spec.duplicates == 1:
                    self._flush(stream, next_value=stream[-1][_VAL], keep_last=True)
        batch = _stack(self.finished)
        batch["stats"] = self.stats.take()
        self.finished = []
        self.ready = 0
        return batch

    def demonstrations(self, min_steps: int) -> Iterator[dict]:
        """With ``spec.teacher``: play until at least ``min_steps`` teacher decisions of
        *finished* episodes are ready, yielding them as they become ready in parts of about
        1% of ``min_steps`` (at most :data:`DEMO_PART` rows; the last part: the rest), each a
        batch like :meth:`collect`'s but with the raw observation as ``obs`` (the policy input
        is ``make_featurizer(rules, spec.features)(obs)``: featurized where it is used, so
        a part stays small). Values are recorded as 0, so with ``spec.gae_lambda == 1`` the
        ``returns`` are Monte-Carlo returns. The counters then wait in ``self.stats``."""
        if not self.spec.teacher:
            raise ValueError("demonstrate() needs RolloutSpec.teacher (a scripted agent name)")
        enc = self.enc
        sent, part = 0, max(1, min(min_steps // 100, DEMO_PART))
        while sent + len(self.finished) < min_steps:
            for g in self.games:
                self._advance_scripted(g)  # up to a teacher seat's real decision
                m = g.match
                seat = m.state.seat
                obs, mask = enc.encode(m, seat), enc.action_mask(m, seat).astype(bool)
                action = int(g.agents[seat].act(obs, mask))
                self.record(g, seat, obs, mask, action, 0.0, 0.0, self._privileged(g, seat))
                self.step(g, seat, action)
            if len(self.finished) >= part:
                sent += len(self.finished)
                rows, self.finished = self.finished, []
                yield _stack(rows)
        self.ready = 0
        if self.finished:
            rows, self.finished = self.finished, []
            yield _stack(rows)

    def demonstrate(self, min_steps: int, report: Callable[[int], None] | None = None) -> dict:
        """:meth:`demonstrations` as one batch (raw observations as ``obs``), with ``stats``.
        ``report(n)``: told of ``n`` more ready decisions part by part (``min_steps`` in all)."""
        parts, reported = [], 0
        for part in self.demonstrations(min_steps):
            parts.append(part)
            n = min(reported + len(part["actions"]), min_steps) - reported
            if report is not None and n > 0:
                report(n)
            reported += n
        batch = {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}
        batch["stats"] = self.stats.take()
        return batch


DEMO_PART = 1024
"""the most decisions a worker sends in one part of its demonstrations (the trainer stores
them as they come: neither side holds them all as full-width arrays)"""


def _stack(rows: list[tuple]) -> dict:
    obs, masks, actions, logps, values, advs, rets, privs, experts = zip(*rows, strict=True)
    return {
        "obs": np.stack(obs).astype(np.float32),
        "masks": np.stack(masks),
        "actions": np.asarray(actions, dtype=np.int64),
        "logprobs": np.asarray(logps, dtype=np.float32),
        "values": np.asarray(values, dtype=np.float32),
        "advantages": np.asarray(advs, dtype=np.float32),
        "returns": np.asarray(rets, dtype=np.float32),
        "priv": np.stack(privs).astype(np.float32),
        "expert": np.asarray(experts, dtype=np.int64),
    }


def _mean(xs: list) -> float:
    return float(np.mean(xs)) if xs else float("nan")


class _Stats:
    """Counters reported with each batch (and reset by ``take``)."""

    def __init__(self) -> None:
        self.env_steps = 0
        self.round_scores: list[int] = []
        self.opponent_scores: list[int] = []
        self.matches = 0
        self.wins = 0.0
        self.places: list[int] = []
        self.expert_labels = 0
        self.expert_agree = 0
        self.expert_seconds = 0.0

    def record_match(self, places: list[int], seat: int) -> None:
        self.matches += 1
        self.places.append(places[seat])
        if places[seat] == 1:
            self.wins += 1.0 / places.count(1)

    def take(self) -> dict:
        out = {
            "env_steps": self.env_steps,
            "learner_matches": self.matches,
            "learner_win_rate": self.wins / self.matches if self.matches else float("nan"),
            "learner_mean_place": _mean(self.places),
            "learner_round_score": _mean(self.round_scores),
            "opponent_round_score": _mean(self.opponent_scores),
            "expert_labels": self.expert_labels,
            "expert_agree": self.expert_agree,
            "expert_seconds": self.expert_seconds,
        }
        self.__init__()
        return out


# -------------------------------------------------------------------- worker processes
def _die_with_parent(parent_pid: int) -> None:
    """End this worker process when the trainer ``parent_pid`` ends, even by SIGKILL: Linux's
    PR_SET_PDEATHSIG, elsewhere a thread watching the parent's id once a second."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        armed = libc.prctl(1, signal.SIGKILL, 0, 0, 0) == 0  # 1 = PR_SET_PDEATHSIG
    except (OSError, AttributeError, TypeError):  # no libc or no prctl (not Linux)
        armed = False
    if os.getppid() != parent_pid:  # the trainer died before the signal was armed
        os._exit(1)
    if not armed:

        def watch() -> None:
            while os.getppid() == parent_pid:
                time.sleep(1.0)
            os._exit(1)

        threading.Thread(target=watch, daemon=True).start()


def _worker(conn, spec: RolloutSpec, parent_pid: int | None = None) -> None:
    if parent_pid is not None:
        _die_with_parent(parent_pid)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the trainer, which stops us
    torch.set_num_threads(1)
    collector = Collector(spec)
    try:
        while True:
            cmd, *args = conn.recv()
            if cmd == "collect":
                conn.send(collector.collect(*args))
            elif cmd == "demonstrate":  # ("part", batch) as they are recorded, then the counters
                for part in collector.demonstrations(*args):
                    conn.send(("part", part))
                conn.send(collector.stats.take())
            elif cmd == "pool":
                collector.set_pool(*args)
            elif cmd == "close":
                conn.close()
                return
    except (EOFError, BrokenPipeError, ConnectionResetError):
        return  # the trainer is gone: nothing to report to


class CollectorProcess:
    """A :class:`Collector` in its own process; same ``collect``/``set_pool`` calls."""

    def __init__(self, spec: RolloutSpec) -> None:
        ctx = mp.get_context("spawn")
        self.conn, child = ctx.Pipe()
        self.proc = ctx.Process(target=_worker, args=(child, spec, os.getpid()), daemon=True)
        self.proc.start()
        child.close()  # the worker's end: this process keeps none, so a dead worker reads as EOF

    def start_collect(self, state_dict: dict, min_steps: int, critic_state: dict | None = None) -> None:
        self.conn.send(("collect", state_dict, min_steps, critic_state))

    def start_demonstrate(self, min_steps: int) -> None:
        """The worker answers with ``("part", batch)`` messages as it records them
        (:meth:`Collector.demonstrations`), then its counters (``stats``)."""
        self.conn.send(("demonstrate", min_steps))

    def result(self) -> dict:
        return self.receive()

    def receive(self):
        """The worker's next message; RuntimeError naming it if the worker died."""
        try:
            return self.conn.recv()
        except (EOFError, ConnectionResetError):
            self.proc.join(timeout=5)
            raise RuntimeError(
                f"rollout worker process {self.proc.pid} died (exit code {self.proc.exitcode})"
            ) from None

    def set_pool(self, state_dicts: list[dict]) -> None:
        self.conn.send(("pool", state_dicts))

    def close(self, timeout: float = 5.0) -> None:
        """Ask the worker to finish, give it ``timeout`` seconds (0: stop it at once: it may
        be busy with a batch nobody will read), then terminate it."""
        if timeout > 0:
            try:
                self.conn.send(("close",))
            except (BrokenPipeError, OSError):
                pass
            self.proc.join(timeout=timeout)
        if self.proc.is_alive():
            self.proc.terminate()
            self.proc.join(timeout=5)
        if self.proc.is_alive():
            self.proc.kill()
            self.proc.join()
        self.conn.close()


def check_backend(backend: str, processes: bool = True) -> None:
    """ValueError unless ``backend`` is one of :data:`BACKENDS` and can hold the collectors
    (``ray`` runs each in an actor: ``processes``); ImportError naming the extra to install
    if it is ``ray`` and Ray is not installed."""
    if backend not in BACKENDS:
        raise ValueError(f"backend={backend!r}: expected one of {BACKENDS}")
    if backend == "ray":
        if not processes:
            raise ValueError(
                "backend='ray' runs each collector in a Ray actor: expected at least one "
                "worker (num_workers >= 1), not collection in this process"
            )
        import importlib.util

        if importlib.util.find_spec("ray") is None:
            raise ImportError("backend='ray' needs Ray, which is not installed: "
                              "pip install 'mt_env[ray]'")


class Collectors:
    """Several collectors used as one: each in its own worker process (``processes``) or
    all in this one; with ``backend="ray"`` each in a Ray actor (``ray_address``: see
    :func:`mt_env.integrations.ray.connect`). Their batches are concatenated and their
    counters merged."""

    def __init__(self, specs: list[RolloutSpec], processes: bool, backend: str = "local",
                 ray_address: str | None = None) -> None:
        check_backend(backend, processes)
        self.processes, self.backend = processes, backend
        if backend == "ray":
            from mt_env.integrations import ray as ray_backend

            self.items = ray_backend.collectors(specs, ray_address)
        else:
            self.items = [(CollectorProcess if processes else Collector)(spec) for spec in specs]
        self._pending: tuple | None = None  # the arguments of a started, unfinished batch

    def collect(self, state_dict: dict, min_steps: int, critic_state: dict | None = None) -> dict:
        """At least ``min_steps`` learner transitions in all (split evenly), as one batch."""
        self.start(state_dict, min_steps, critic_state)
        return self.finish()

    def start(self, state_dict: dict, min_steps: int, critic_state: dict | None = None) -> None:
        """Start :meth:`collect` and return at once: the worker processes play while this
        process does something else (the trainer's ``--async-rollouts``: its PPO update);
        :meth:`finish` returns the batch. In-process collectors play in :meth:`finish`."""
        if self._pending is not None:
            raise RuntimeError("Collectors.start: the previous batch was not finished")
        share = math.ceil(min_steps / len(self.items))
        self._pending = (state_dict, share, critic_state)
        if self.processes:
            for c in self.items:
                c.start_collect(state_dict, share, critic_state)

    def finish(self) -> dict:
        """The batch that :meth:`start` began."""
        if self._pending is None:
            raise RuntimeError("Collectors.finish: no batch was started")
        args, self._pending = self._pending, None
        if self.processes:
            return _merge([c.result() for c in self.items])
        return _merge([c.collect(*args) for c in self.items])

    def demonstrate(self, min_steps: int, report: Callable[[int], None] | None = None,
                    sink: Callable[[int, dict], None] | None = None) -> dict:
        """At least ``min_steps`` teacher decisions in all (split evenly), as one batch
        (:meth:`Collector.demonstrate`'s). ``sink(k, part)``: given each part of collector
        ``k``'s decisions as it comes instead (:meth:`Collector.demonstrations`; in each
        collector's order), and only ``{"stats": ...}`` is returned: nothing here holds them
        all. ``report(n)``: told of ``n`` more decisions as the collectors record them (each
        worker process sends its parts; a Ray actor its whole batch), ``min_steps`` in all."""
        share = math.ceil(min_steps / len(self.items))
        recorded = passed = 0  # decisions the collectors sent, and passed on (<= min_steps)
        kept: list[list[dict]] = [[] for _ in self.items]

        def take(k: int, part: dict) -> None:
            nonlocal recorded, passed
            (kept[k].append if sink is None else functools.partial(sink, k))(part)
            recorded += len(part["actions"])
            if report is not None and min(recorded, min_steps) > passed:
                report(min(recorded, min_steps) - passed)
                passed = min(recorded, min_steps)

        stats = []
        if not self.processes:
            for k, c in enumerate(self.items):
                for part in c.demonstrations(share):
                    take(k, part)
                stats.append(c.stats.take())
        else:
            for c in self.items:
                c.start_demonstrate(share)
            if self.backend == "ray":  # an actor's whole batch at once
                for k, c in enumerate(self.items):
                    part = c.result()
                    stats.append(part.pop("stats"))
                    take(k, part)
            else:
                index = {c.conn: k for k, c in enumerate(self.items)}
                done: dict[int, dict] = {}
                while len(done) < len(self.items):
                    for conn in wait([c.conn for c in self.items if index[c.conn] not in done]):
                        k = index[conn]
                        message = self.items[k].receive()
                        if isinstance(message, tuple):  # ("part", batch)
                            take(k, message[1])
                        else:
                            done[k] = message
                stats = [done[k] for k in range(len(self.items))]
        if sink is not None:
            return {"stats": _merge_stats(stats)}
        parts = [p for ps in kept for p in ps]
        batch = {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}
        batch["stats"] = _merge_stats(stats)
        return batch

    def set_pool(self, state_dicts: list[dict]) -> None:
        for c in self.items:
            c.set_pool(state_dicts)

    def close(self, graceful: bool = True) -> None:
        """Stop the worker processes: asked to finish (``graceful``; a batch still being
        collected is waited for and dropped), or at once (a run that failed or was
        interrupted: their batches would never be read)."""
        if graceful and self._pending is not None and self.processes:
            self.finish()
        if self.backend == "ray":  # nothing to finish: an actor holds no open work
            for c in self.items:
                c.close()
        elif self.processes:
            for c in self.items:
                c.close(timeout=5.0 if graceful else 0.0)


def _merge(parts: list[dict]) -> dict:
    """One batch from several collectors' batches; ``stats`` summed or averaged."""
    batch = {k: np.concatenate([p[k] for p in parts]) for k in parts[0] if k != "stats"}
    batch["stats"] = _merge_stats([p["stats"] for p in parts])
    return batch


def _merge_stats(stats: list[dict]) -> dict:
    """Several collectors' counters as one: summed or averaged."""
    matches = sum(s["learner_matches"] for s in stats)
    wins = sum(s["learner_win_rate"] * s["learner_matches"] for s in stats if s["learner_matches"])
    return {
        "env_steps": sum(s["env_steps"] for s in stats),
        "learner_matches": matches,
        "learner_win_rate": wins / matches if matches else float("nan"),
        "learner_round_score": _nanmean([s["learner_round_score"] for s in stats]),
        "opponent_round_score": _nanmean([s["opponent_round_score"] for s in stats]),
        **{k: sum(s[k] for s in stats) for k in ("expert_labels", "expert_agree", "expert_seconds")},
    }


def _nanmean(xs: list[float]) -> float:
    xs = [x for x in xs if not math.isnan(x)]
    return float(np.mean(xs)) if xs else float("nan")
