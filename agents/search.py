"""``search``: determinized Monte-Carlo search on top of the ``longest-train`` plan.

:class:`SearchAgent` is a *search* agent (STYLE.md): besides the observation it runs a
model of the round (:mod:`agents.simulator`) on *guessed* hidden tiles. It never sees
another seat's hand or the boneyard's order.

- **Free first turn (R11):** it lays the ``longest-train`` chain but keeps its last
  ``reserve`` tile(s) (default 1) in hand, unless the chain is the whole hand: a tile
  that only it can play (its own train is closed to others while unmarked) turns a later
  turn with nothing else to play from "draw and be marked" into a play. Optionally
  (``first_k > 1``) it also searches over alternative chains; measured no better, so off.
- **A forced move** (one legal action) is made at once.
- **Otherwise** it takes the ``top_k`` plays that ``longest-train`` ranks highest and
  scores each by ``samples`` determinized rollouts: the unknown tiles (neither in its hand
  nor on the table) are dealt at random to the other seats (their hand sizes are public)
  and to the boneyard, respecting what it has inferred (below); each candidate is played
  in the same guessed world (common random numbers, so comparisons are paired) and the
  round is finished by a fast scripted policy for every seat
  (:func:`agents.simulator.rollout`). The value of a finished rollout is its lead in match
  totals over the best other seat after this round (``utility="match"``), which is what
  decides a match and ignores seats far behind. It leaves the ``longest-train`` choice
  only for a play whose mean gain over it exceeds ``margin`` (default 1) standard errors
  of the paired differences, so rollout noise does not make it worse than the plan.
- **Inference (public information only):** between two of its turns it compares what it
  saw; a seat that drew and was marked while no double was played had no tile for any
  train whose end stayed the same and that it could play on (its own, the Mexican train,
  trains marked throughout). Those pips are kept out of that seat's guessed hand until it
  draws again (``tests/test_agents.py`` checks these inferences against the true hands).

Strength (full default matches, ``results/``): it finished ahead of ``longest-train`` in
55.0% [53.5, 56.4] of 4,000 4-seat games (won 54.1% of them, ``longest-train`` 44.1%) and
in 69.9% [67.2, 72.5] of 1,000 2-seat meetings. Cost: about 3 decisions per round are
searched, each ``top_k x samples`` rollouts of ~0.1–0.2 ms, so it makes ~500 decisions/s
against ~14,000 for ``longest-train``. Defaults: ``samples=32``, ``top_k=4``,
``reserve=1``, ``margin=1``, ``utility="match"``.
"""

from __future__ import annotations

import math

import numpy as np

from .chains import ChainPlanner, chain_alternatives
from .longest_train import LongestTrainAgent
from .simulator import SimRules, rollout
from .view import SeatView

DEFAULT_SAMPLES = 32
DEFAULT_TOP_K = 4
# Node budget of the chain search used for other seats' free first turns inside rollouts.
ROLLOUT_CHAIN_BUDGET = 200
UTILITIES = ("match", "mean")
DEFAULT_MARGIN = 1.0
DEFAULT_RESERVE = 1
DEFAULT_FIRST_K = 1


class SearchAgent(LongestTrainAgent):
    """Determinized search over the legal plays (see the module docstring)."""

    name = "search"

    def __init__(
        self,
        config,
        seed: int | None = None,
        samples: int = DEFAULT_SAMPLES,
        top_k: int = DEFAULT_TOP_K,
        infer: bool = True,
        utility: str = "match",
        margin: float = DEFAULT_MARGIN,
        reserve: int = DEFAULT_RESERVE,
        first_k: int = DEFAULT_FIRST_K,
    ) -> None:
        self.first_k = first_k
        self.margin = margin
        self.reserve = reserve
        if utility not in UTILITIES:
            raise ValueError(f"utility={utility!r}: expected one of {UTILITIES}")
        self.utility_name = utility
        super().__init__(config, seed)
        self.sim = SimRules(config)
        self.samples = samples
        self.top_k = top_k
        self.infer = infer
        self.rollout_planner = ChainPlanner(self.decoder.tiles, node_budget=ROLLOUT_CHAIN_BUDGET)
        self._full = self.decoder.tiles.full_mask
        self.searches = 0

    def reset(self) -> None:
        super().reset()
        if hasattr(self, "rollout_planner"):
            self.rollout_planner.clear()
        n = self.config.num_seats
        self._lacks = [0] * n  # per relative seat: bitmask of pips it is known to lack
        self._snapshot: tuple | None = None  # the table right after my last turn
        self._turn_double = False
        self._round: tuple[int, int] | None = None
        self._plan: tuple[int, ...] = ()

    # ------------------------------------------------------------------ acting
    def act(self, observation: np.ndarray, action_mask: np.ndarray) -> int:
        v = self.decoder.decode(observation, action_mask)
        if (v.round_index, v.engine) != self._round:  # a new round: forget the last one
            self._round = (v.round_index, v.engine)
            self._lacks = [0] * self.config.num_seats
            self._snapshot = None
            self._turn_double = False
        if self.infer and not v.free_first and not v.follow_up and not v.drawn:
            self._update_beliefs(v)
        action = self._choose(v)
        if self.infer:
            self._after(v, action)
        return action

    def _choose(self, v: SeatView) -> int:
        if not v.plays:
            return self.decoder.draw_action if v.can_draw else self.decoder.pass_action
        if v.free_first:
            if v.lengths[0] == 0 and not v.drawn:  # the first move of my free first turn
                self._plan = self.first_turn_plan(v)
            plan = self._plan
            if plan:
                for a, t, tr in v.plays:
                    if t == plan[0] and tr == 0:
                        self._plan = plan[1:]
                        return a
            if v.can_pass:
                return self.decoder.pass_action
        if len(v.plays) == 1:
            return v.plays[0][0]
        return self.search(v)

    def first_turn_plan(self, v: SeatView) -> tuple[int, ...]:
        """The tiles to lay in the free first turn (R11): the longest chain, or an
        alternative chain that search finds clearly better; `reserve` tiles kept back."""
        hand_size = v.hand.bit_count()

        def keep_back(chain: tuple[int, ...]) -> tuple[int, ...]:
            if len(chain) == hand_size:  # laying the whole hand goes out (R24)
                return chain
            return chain[: max(0, len(chain) - self.reserve)]

        plans = list(
            dict.fromkeys(
                keep_back(c)
                for c in chain_alternatives(self.planner, v.hand, v.ends[0], limit=self.first_k)
            )
        )
        if len(plans) == 1:
            return plans[0]

        def apply(s, plan):
            for t in plan:
                self.sim.play(s, t, 0)
                if s.over or s.seat != 0:
                    return
            self.sim.end_turn(s, passed=True)

        return plans[self._best_option(v, plans, apply, turn_plays=0, drawn=-1)]

    def search(self, v: SeatView) -> int:
        """The best of the top-ranked plays by determinized rollouts."""
        ranked = sorted(v.plays, key=lambda p: self.score(v, p), reverse=True)[: self.top_k]
        if len(ranked) == 1:
            return ranked[0][0]
        best = self._best_option(
            v,
            ranked,
            lambda s, play: self.sim.play(s, play[1], play[2]),
            turn_plays=1 if v.follow_up else 0,
            drawn=v.plays[0][1] if v.drawn else -1,
        )
        return ranked[best][0]

    def _best_option(self, v: SeatView, options: list, apply, turn_plays: int, drawn: int) -> int:
        """Index of the option to take: each is applied by ``apply(world, option)`` in the
        same ``samples`` guessed worlds and rolled out; option 0 (the ``longest-train``
        choice) is left only for one whose mean gain over it exceeds ``margin`` standard
        errors of the paired difference."""
        self.searches += 1
        sim, rng = self.sim, self.rng
        unknown = self.decoder.tiles.ids_in(self._full & ~v.hand & ~v.table)
        values = [[0.0] * self.samples for _ in options]
        for j in range(self.samples):
            hands, bone = self._sample(v, unknown)
            world = sim.from_view(v, hands, bone, turn_plays, drawn)
            for i, option in enumerate(options):
                s = world.copy()
                apply(s, option)
                rollout(sim, s, rng, self.rollout_planner)
                values[i][j] = self.utility(v, s)
        best, best_gain = 0, 0.0
        for i in range(1, len(options)):
            diffs = [a - b for a, b in zip(values[i], values[0], strict=True)]
            mean = sum(diffs) / len(diffs)
            var = sum((d - mean) ** 2 for d in diffs) / max(1, len(diffs) - 1)
            if mean > self.margin * math.sqrt(var / len(diffs)) and mean > best_gain:
                best, best_gain = i, mean
        return best

    def utility(self, v: SeatView, s) -> float:
        """Value of a finished rollout for the observer (seat 0).

        ``match``: my lead over the best other seat in match totals after this round
        (penalty scoring: its total minus mine; V-positive-score: mine minus its), the
        quantity that decides the match; ``mean``: the other seats' mean round score
        minus mine (round scores only)."""
        pips = self.sim.scores(s)
        if self.utility_name == "mean":
            return sum(pips[1:]) / (len(pips) - 1) - pips[0]
        totals = v.totals
        if self.config.scoring == "positive":  # V-positive-score: going out collects
            gain = sum(pips)
            final = [totals[k] + (gain if k in s.out else 0) for k in range(len(pips))]
            return final[0] - max(final[1:])
        final = [totals[k] + pips[k] for k in range(len(pips))]
        return min(final[1:]) - final[0]

    # ------------------------------------------------------------------ beliefs
    def _sample(self, v: SeatView, unknown: list[int]) -> tuple[list[int], list[int]]:
        """Deal the unknown tiles: other seats' hands (avoiding pips they are known to
        lack, when enough tiles allow it), the rest to the boneyard in random order."""
        pool = unknown[:]
        self.rng.shuffle(pool)
        n = self.config.num_seats
        bit, pip_mask = self.decoder.tiles.bit, self._pip_mask
        hands = [0] * (n - 1)
        # the most constrained seats first, so they still find tiles that fit
        for k in sorted(range(1, n), key=lambda k: -self._lacks[k].bit_count()):
            size, lacks = v.hand_sizes[k], self._lacks[k]
            banned = 0
            for p in range(lacks.bit_length()):
                if lacks >> p & 1:
                    banned |= pip_mask[p]
            chosen = [t for t in pool if not banned & bit[t]][:size]
            if len(chosen) < size:  # too few tiles avoid those pips: top up with the rest
                chosen += [t for t in pool if banned & bit[t]][: size - len(chosen)]
            m = 0
            for t in chosen:
                m |= bit[t]
            hands[k - 1] = m
            pool = [t for t in pool if not m & bit[t]]
        return hands, pool

    def _after(self, v: SeatView, action: int) -> None:
        """Remember the table as my turn leaves it (for :meth:`_update_beliefs`)."""
        dec = self.decoder
        if action == dec.draw_action:
            return
        ends, lengths, marked = v.ends[:], v.lengths[:], v.marked[:]
        if action == dec.pass_action:
            if not v.free_first:
                marked[0] = True
        else:
            tile, train = divmod(action, dec.num_trains)
            if v.hand == self._bit[tile]:  # my last tile: the round is over
                self._snapshot = None
                return
            if v.free_first:
                return
            if self._is_double[tile]:
                self._turn_double = True
                return  # a follow-up is owed: my turn goes on
            ends[train] = self._other[tile][ends[train]]
            lengths[train] += 1
            if train == 0:
                marked[0] = False
        if v.free_first:
            self._snapshot = None
            return
        clean = not self._turn_double and not v.open_order
        self._turn_double = False
        self._snapshot = (
            ends,
            lengths,
            marked,
            v.hand_sizes[:],
            v.boneyard,
            v.table,
            v.first_pending[:],
            clean,
        )

    def _update_beliefs(self, v: SeatView) -> None:
        snap, self._snapshot = self._snapshot, None
        if snap is None:
            return
        n = self.config.num_seats
        ends, lengths, marked, sizes, bone, table, pending, clean = snap
        new_tiles = v.table & ~table
        doubles_played = any(self._is_double[t] for t in self.decoder.tiles.ids_in(new_tiles))
        stable = [lengths[t] == v.lengths[t] for t in range(n + 1)]
        for k in range(1, n):
            if v.hand_sizes[k] > sizes[k] or doubles_played:
                self._lacks[k] = 0  # it drew: what it lacked may have changed
            if not clean or doubles_played or pending[k] or not v.marked[k]:
                continue
            passed = v.hand_sizes[k] == sizes[k] + 1 or (bone == 0 and v.hand_sizes[k] == sizes[k])
            if not passed:
                continue
            trains = [k, n] + [t for t in range(1, n) if t != k and marked[t] and v.marked[t]]
            if marked[0] and v.marked[0]:
                trains.append(0)
            lacks = 0
            for t in trains:
                if stable[t]:
                    lacks |= 1 << ends[t]
            self._lacks[k] |= lacks
