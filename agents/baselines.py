"""The two simplest baselines: ``random`` and ``greedy``.

- :class:`RandomAgent` (``random``) picks uniformly among the legal actions (in its free
  first turn that includes passing early). It is the floor: in full default matches it
  won 0.0% at a 4-seat table with ``greedy``, ``longest-train`` and ``search`` and 0.3%
  in a 2-seat round robin (``results/``).
- :class:`GreedyAgent` (``greedy``) plays the heaviest legal tile, doubles first (to get
  rid of them while it can), on its own train when that tile joins it, else on the
  Mexican train, else on the nearest marked train; in its free first turn it keeps
  playing while a tile joins (R11). It sheds points fast but builds no plan: it beats
  ``random`` in 99–100% of full matches, and ``longest-train`` beats it in 88–91%.
"""

from __future__ import annotations

import numpy as np

from mt_env.observation import ObservationEncoder, SeatView

from .base import Agent, ViewAgent, legal_actions


class RandomAgent(Agent):
    """Uniform over the legal actions."""

    name = "random"

    def act(self, observation: np.ndarray, action_mask: np.ndarray) -> int:
        return self.rng.choice(legal_actions(action_mask))


class GreedyAgent(ViewAgent):
    """Heaviest legal tile first, doubles before the rest."""

    name = "greedy"

    def __init__(self, config, seed: int | None = None) -> None:
        super().__init__(config, seed)
        self.decoder = ObservationEncoder(config)
        ts = self.decoder.tiles
        n = config.num_seats
        # Train preference for the same tile: own (0), Mexican (n), then clockwise.
        self._train_rank = [0] + list(range(2, n + 1)) + [1]
        self._key = [(ts.is_double[t], ts.pips[t]) for t in range(ts.num_tiles)]

    def act_view(self, v: SeatView) -> int:
        if not v.plays:
            return self.decoder.codec.draw if v.can_draw else self.decoder.codec.pass_
        key, rank = self._key, self._train_rank
        best = max(v.plays, key=lambda p: (key[p[1]], -rank[p[2]]))
        return best[0]
