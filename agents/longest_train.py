"""``longest-train``: plan the own train as the longest chain through the hand.

:class:`LongestTrainAgent` keeps a plan: the longest (then heaviest) chain of its hand
from its own train's open end, found by depth-first search (:mod:`mt_env.agents.chains`).

- **Free first turn (R11):** it lays the whole planned chain, tile after tile, then passes.
- **Ordinary turns:** every legal play is scored by the planned own-train length it leaves
  (1 + the new longest chain for a play on its own train; the longest chain of the hand
  without the tile otherwise), so tiles off the chain go first; among plays that keep the
  plan intact it prefers the Mexican train and marked trains to its own train — saving its
  chain for turns when nothing else fits — then a double it can follow up (R16), then the
  heaviest tile. A double it could not follow up comes after the other tiles.
- **Doubles:** when a double must be satisfied (R20) it uses the tile that costs the plan
  least; when it owes a follow-up it prefers to satisfy its own double.

``longest-train-reserve`` (:class:`LongestTrainReserveAgent`) is the same player except
that in its free first turn it keeps the chain's last tile in hand (unless the chain is its
whole hand), as ``search`` does: only it can play on its own train while that train is
unmarked, so the kept tile later turns "nothing fits: draw and be marked" into a play. At
2 seats that alone wins 57.5% [54.8, 60.2] of 1,000 games against ``longest-train``; at 4
seats 26.1% [23.9, 28.4] (fair share 25%). The trainer can clone it before PPO
(``--pretrain-teacher``).

``longest-train`` is the public "LongestPath" baseline. In full default matches (``results/``) it won
44.1% [42.7, 45.5] at a 4-seat table with ``random``, ``greedy`` and ``search`` (the public
LongestPath wins about 45% against RandomPath, Greedy and Random), finishing ahead of
``greedy`` in 91% of games (4 seats) and 88% (2 seats); ``search`` beats it.
"""

from __future__ import annotations

from mt_env.observation import ObservationEncoder, SeatView

from .base import ViewAgent
from .chains import ChainPlanner


class LongestTrainAgent(ViewAgent):
    """Plans its own train as the longest chain through its hand (module docstring)."""

    name = "longest-train"
    reserve = 0
    """chain tiles kept in hand at the end of the free first turn (R11)"""

    def __init__(self, config, seed: int | None = None) -> None:
        self.decoder = ObservationEncoder(config)
        self.planner = ChainPlanner(self.decoder.tiles)
        ts = self.decoder.tiles
        self._pips = ts.pips
        self._is_double = ts.is_double
        self._bit = ts.bit
        self._pip_mask = ts.pip_mask
        self._other = self.planner.other
        super().__init__(config, seed)

    def reset(self) -> None:
        self.planner.clear()

    def act_view(self, v: SeatView) -> int:
        if not v.plays:
            return self.decoder.codec.draw if v.can_draw else self.decoder.codec.pass_
        chain = self.planner.longest(v.hand, v.ends[0])
        if v.free_first:
            keep = self.reserve and len(chain) <= self.reserve and len(chain) < v.hand.bit_count()
            if keep and v.can_pass:
                return self.decoder.codec.pass_
            for a, t, tr in v.plays:
                if chain and t == chain[0] and tr == 0:
                    return a
            if v.can_pass:
                return self.decoder.codec.pass_
        return max(v.plays, key=lambda p: self.score(v, p))[0]

    # ------------------------------------------------------------------ scoring
    def plan_after(self, v: SeatView, tile: int, train: int) -> int:
        """Planned own-train tiles after playing ``tile`` on relative ``train``."""
        hand = v.hand ^ self._bit[tile]
        if train == 0:
            return 1 + len(self.planner.longest(hand, self._other[tile][v.ends[0]]))
        return len(self.planner.longest(hand, v.ends[0]))

    def can_follow(self, v: SeatView, tile: int, train: int) -> bool:
        """After playing double ``tile`` on ``train``, could the hand play again (R16)?"""
        hand = v.hand ^ self._bit[tile]
        pm = self._pip_mask
        if hand & pm[self._other[tile][v.ends[train]]]:
            return True
        ends = [v.ends[0], v.ends[-1]] + [v.ends[k] for k in range(1, len(v.marked)) if v.marked[k]]
        return any(hand & pm[e] for e in ends)

    def score(self, v: SeatView, play: tuple[int, int, int]) -> tuple:
        _, tile, train = play
        double = self._is_double[tile]
        if double and not v.free_first:
            follow = 1 if self.can_follow(v, tile, train) else -1
        else:
            follow = 0
        return (
            self.plan_after(v, tile, train),
            v.follow_up and train == v.follow_up_train,
            train != 0,
            follow,
            self._pips[tile],
        )


class LongestTrainReserveAgent(LongestTrainAgent):
    """``longest-train`` that keeps its chain's last tile back in the free first turn."""

    name = "longest-train-reserve"
    reserve = 1
