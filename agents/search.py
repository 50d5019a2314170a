"""``search``: determinized Monte-Carlo search on top of the ``longest-train`` plan.

:class:`SearchAgent` is a *search* agent (it says so in its name): besides the observation it plays the
round on in imagined worlds: the observation becomes a :class:`mt_env.rules.PublicPosition`
(:meth:`mt_env.observation.ObservationEncoder.position`), and
:func:`mt_env.rules.determinize` completes it with *guessed* hidden tiles into a real
:class:`mt_env.rules.RoundState`, so the rollouts follow the rules core itself — there is
no second model of the game. It never sees another seat's hand or the boneyard's order.

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
  round is finished by a fast scripted policy for every seat (:func:`rollout`). The value of a finished rollout is its lead in match
  totals over the best other seat after this round (``utility="match"``), which is what
  decides a match and ignores seats far behind. It leaves the ``longest-train`` choice
  only for a play whose mean gain over it exceeds ``margin`` (default 1) standard errors
  of the paired differences, so rollout noise does not make it worse than the plan.
- **Inference (public information only):** the guessed hands keep out the pips each seat
  is publicly known to lack: the rules core's known voids (``SeatView.voids``, from
  :attr:`mt_env.rules.RoundState.voids`: a seat that drew or passed held nothing for the
  open ends it was checked against, R15, R17, R18), so search infers from the same one
  model it plays on. ``infer=False`` ignores them.

Strength (full default matches, ``results/``; measured before it used the core's voids,
which made it stronger: docs/experiments.md §3.23): it finished ahead of ``longest-train`` in
55.0% [53.5, 56.4] of 4,000 4-seat games (won 54.1% of them, ``longest-train`` 44.1%) and
in 69.9% [67.2, 72.5] of 1,000 2-seat meetings. Cost: only decisions with a real choice
are searched (about one in eight at 2 seats), each by ``top_k x samples`` rollouts; on
recorded 4-seat decisions it made 204 decisions/s against 4,831 for ``longest-train``
(``benchmarks/tournament_speed.py``; ``benchmarks/search_speed.py`` measures it in play).
Defaults: ``samples=32``, ``top_k=4``, ``reserve=1``, ``margin=1``, ``utility="match"``.
"""

from __future__ import annotations

import math

from mt_env.observation import SeatView
from mt_env.rules import PublicPosition, RoundState, determinize

from .chains import ChainPlanner, chain_alternatives
from .longest_train import LongestTrainAgent

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
        self.samples = samples
        self.top_k = top_k
        self.infer = infer
        self.rollout_planner = ChainPlanner(self.decoder.tiles, node_budget=ROLLOUT_CHAIN_BUDGET)
        self.searches = 0

    def reset(self) -> None:
        super().reset()
        if hasattr(self, "rollout_planner"):
            self.rollout_planner.clear()
        self._plan: tuple[int, ...] = ()

    # ------------------------------------------------------------------ acting
    def act_view(self, v: SeatView) -> int:
        codec = self.decoder.codec
        if not v.plays:
            return codec.draw if v.can_draw else codec.pass_
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
                return codec.pass_
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

        codec = self.decoder.codec

        def apply(s: RoundState, plan: tuple[int, ...]) -> None:
            for t in plan:
                s.apply(codec.play(t, 0))
                if s.is_over or s.seat != 0:
                    return
            if codec.pass_ in s.legal_moves():  # else (V-first-turn-draw) the rollout draws
                s.apply(codec.pass_)

        return plans[self._best_option(v, plans, apply)]

    def rank(self, v: SeatView) -> list[tuple[int, int, int]]:
        """The legal plays, best first: the candidates to search (``top_k`` of them) and the
        default (the first). Here the ``longest-train`` ranking; ``search-ppo`` ranks by a
        learned policy's probabilities (:class:`mt_env.agents.ppo.policy.PolicySearchAgent`)."""
        return sorted(v.plays, key=lambda p: self.score(v, p), reverse=True)

    def search(self, v: SeatView) -> int:
        """The best of the top-ranked plays by determinized rollouts."""
        ranked = self.rank(v)[: self.top_k]
        if len(ranked) == 1:
            return ranked[0][0]
        # the observer is seat 0 of a determinized world, so its actions are moves there
        best = self._best_option(v, ranked, lambda s, play: s.apply(play[0]))
        return ranked[best][0]

    def _best_option(self, v: SeatView, options: list, apply) -> int:
        """Index of the option to take: each is applied by ``apply(world, option)`` in the
        same ``samples`` guessed worlds and rolled out; option 0 (the top-ranked one, the
        ``longest-train`` choice here) is left only for one whose mean gain over it exceeds ``margin`` standard
        errors of the paired difference."""
        values = self.option_values(v, options, apply)
        best, best_gain = 0, 0.0
        for i in range(1, len(options)):
            diffs = [a - b for a, b in zip(values[i], values[0], strict=True)]
            mean = sum(diffs) / len(diffs)
            var = sum((d - mean) ** 2 for d in diffs) / max(1, len(diffs) - 1)
            if mean > self.margin * math.sqrt(var / len(diffs)) and mean > best_gain:
                best, best_gain = i, mean
        return best

    def option_values(self, v: SeatView, options: list, apply) -> list[list[float]]:
        """``values[i][j]``: the :meth:`utility` of option ``i`` applied in guessed world
        ``j`` (the same ``samples`` worlds for every option) and played out by
        :meth:`finish_rounds`."""
        self.searches += 1
        position = self.decoder.position(v)
        unknown = self.decoder.tiles.ids_in(position.unseen)
        worlds = [self._world(position, v, unknown) for _ in range(self.samples)]
        states = []  # option i in world j at i * samples + j
        for option in options:
            for world in worlds:
                s = world.copy()
                apply(s, option)
                states.append(s)
        self.finish_rounds(v, states)
        return [
            [self.utility(v, s) for s in states[i * self.samples : (i + 1) * self.samples]]
            for i in range(len(options))
        ]

    def finish_rounds(self, v: SeatView, states: list[RoundState]) -> None:
        """Play each imagined world to the end of the round: here by the fast scripted
        :func:`rollout` for every seat; ``search-ppo`` plays them with its policy."""
        for s in states:
            rollout(s, self.rollout_planner)

    def utility(self, v: SeatView, s: RoundState) -> float:
        """Value of a finished rollout for the observer (seat 0).

        ``match``: my lead over the best other seat in match totals after this round
        (penalty scoring: its total minus mine; V-positive-score: mine minus its), the
        quantity that decides the match; ``mean``: the other seats' mean round score
        minus mine (round scores only)."""
        pips = s.scores()  # R26 pip totals, whatever the scoring variant
        if self.utility_name == "mean":
            return sum(pips[1:]) / (len(pips) - 1) - pips[0]
        totals = v.totals
        if self.config.scoring == "positive":  # V-positive-score: going out collects
            gain, out = sum(pips), s.out_seats
            final = [totals[k] + (gain if k in out else 0) for k in range(len(pips))]
            return final[0] - max(final[1:])
        final = [totals[k] + pips[k] for k in range(len(pips))]
        return min(final[1:]) - final[0]

    # ------------------------------------------------------------------ beliefs
    def _world(self, position: PublicPosition, v: SeatView, unknown: list[int]) -> RoundState:
        """One guessed world: :meth:`_sample`'s hands and boneyard, determinized."""
        hands, pool = self._sample(v, unknown)
        # _sample's pool is drawn from its end; determinize takes the draw order
        return determinize(position, [None, *hands], pool[::-1])

    def _sample(self, v: SeatView, unknown: list[int]) -> tuple[list[int], list[int]]:
        """Deal the unknown tiles: other seats' hands (avoiding pips they are known to
        lack (``v.voids``, unless ``infer=False``), when enough tiles allow it), the rest to
        the boneyard in random order (the last tile drawn first)."""
        pool = unknown[:]
        self.rng.shuffle(pool)
        n = self.config.num_seats
        bit, pip_mask = self.decoder.tiles.bit, self._pip_mask
        hands = [0] * (n - 1)
        voids = v.voids if self.infer else [0] * n
        # the most constrained seats first, so they still find tiles that fit
        for k in sorted(range(1, n), key=lambda k: -voids[k].bit_count()):
            size, lacks = v.hand_sizes[k], voids[k]
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


def rollout(s: RoundState, planner: ChainPlanner | None = None) -> None:
    """Play ``s`` to the end of the round with a fast scripted policy for every seat.

    The policy: in a free first turn, lay a chain on the own train (the planner's if one
    is given, else heaviest-first); in ordinary turns, satisfy a double just played if
    possible, else prefer a double that can be followed up, then tiles that cannot extend
    the own train played elsewhere, then the own train, heaviest tile first; draw or pass
    only when nothing is legal. Every move goes through :meth:`RoundState.apply`.
    """
    ts = s.tiles
    pm, bit, is_double, pips, low, high = ts.pip_mask, ts.bit, ts.is_double, ts.pips, ts.low, ts.high
    codec = s.codec
    move_of, tile_of, train_of = codec.move_of, codec.tile_of, codec.train_of
    draw, pass_ = codec.draw, codec.pass_
    legal_moves, apply = s.legal_moves, s.apply
    while True:
        legal = legal_moves()
        if not legal:
            return  # the round is over (C3)
        if len(legal) == 1 or legal[0] >= draw:  # forced, or nothing to play: draw or pass
            apply(legal[0])
            continue
        if legal[-1] == pass_:  # plays and a pass: only in a free first turn (R11)
            if planner is not None and not s.tiles_played_this_turn:
                seat = s.seat
                for t in planner.longest(s.hand_mask(seat), s.open_end(seat)):
                    apply(move_of[t][seat])
                    if s.is_over or s.seat != seat or not s.in_free_first_turn:
                        break
            else:
                apply(max(legal[:-1], key=lambda m: pips[tile_of[m]]))
            continue
        seat = s.seat
        hand = s.hand_mask(seat)
        follow = s.follow_up_train
        own = pm[s.open_end(seat)]
        best, choice = -1e9, legal[0]
        for m in legal:
            t, tr = tile_of[m], train_of[m]
            if tr == follow:
                key = 1000 + pips[t]
            elif is_double[t]:
                end = s.open_end(tr)
                after = high[t] if low[t] == end else low[t]
                key = 500 + pips[t] if (hand ^ bit[t]) & pm[after] else pips[t] - 500
            elif tr == seat:
                key = 100 + pips[t]  # the own train is kept for when nothing else fits
            elif bit[t] & own:
                key = pips[t]  # a tile that could extend the own train, played elsewhere
            else:
                key = 200 + pips[t]
            if key > best:
                best, choice = key, m
        apply(choice)
