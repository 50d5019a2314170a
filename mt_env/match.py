"""A match: rounds in sequence (R5, R6's rotation), match totals and places (R26–R28).

:class:`Match` owns the random generator that deals each round, the current
:class:`~mt_env.rules.RoundState` and the finished rounds' results. When a move
ends a round, the match scores it and, unless it was the last, deals the next
one at once, so ``match.state`` is always the round to play. Places follow R27/R28
(penalty scoring) or V-positive-score.
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from .config import RulesConfig
from .rules import Deal, DealError, RoundState, random_deal


@dataclass(frozen=True)
class RoundResult:
    """A finished round: its engine, start seat, how it ended and what each seat scored."""

    round_index: int
    engine: int
    start_seat: int
    end_reason: str
    out_seats: tuple[int, ...]
    hand_values: tuple[int, ...]  # R26 pip totals left in each hand (0 for a seat that went out)
    scores: tuple[int, ...]  # what each seat adds to its match total under the configured scoring


def score_round(config: RulesConfig, state: RoundState) -> tuple[int, ...]:
    """Round scores under the configured scoring (R26, or V-positive-score)."""
    values = state.scores()
    if config.scoring == "penalty":
        return tuple(values)
    # V-positive-score: each seat that went out receives the others' R26 scores.
    out = set(state.out_seats)
    total = sum(values)
    return tuple(total - values[k] if k in out else 0 for k in range(len(values)))


def places(config: RulesConfig, results: Sequence[RoundResult]) -> list[int]:
    """Each seat's place (1 = best; tied seats share it: 1, 1, 3) after ``results``.

    Penalty scoring (R27/R28): lowest total, then most rounds scored at 0, then the
    lowest single non-zero round score. V-positive-score: highest total, then most
    rounds gone out in.
    """
    n = config.num_seats
    totals = [sum(r.scores[k] for r in results) for k in range(n)]
    if config.scoring == "penalty":
        keys = []
        for k in range(n):
            zeros = sum(1 for r in results if r.scores[k] == 0)
            nonzero = [r.scores[k] for r in results if r.scores[k] != 0]
            keys.append((totals[k], -zeros, min(nonzero) if nonzero else math.inf))
    else:
        keys = [
            (-totals[k], -sum(1 for r in results if k in r.out_seats)) for k in range(n)
        ]
    return [1 + sum(1 for other in keys if other < keys[k]) for k in range(n)]


class Match:
    """A match of ``config.num_rounds`` rounds.

    ``seed`` seeds the deals (``random.Random``); ``deals`` optionally fixes the first
    rounds' starting positions (each deal's engine must be that round's engine, R5).
    """

    def __init__(
        self,
        config: RulesConfig,
        seed: int | None = None,
        deals: Sequence[Deal | Mapping] = (),
    ) -> None:
        if len(deals) > config.num_rounds:
            raise DealError(
                f"{len(deals)} deals given for a match of {config.num_rounds} round(s)"
            )
        self.config = config
        self.rng = random.Random(seed)
        self._deals = [Deal.coerce(d) for d in deals]
        self.results: list[RoundResult] = []
        self._totals = [0] * config.num_seats
        self._over = False
        self.round_index = 0
        self.state = self._deal(0, previous_start=None)

    def _deal(self, round_index: int, previous_start: int | None) -> RoundState:
        cfg = self.config
        engine = cfg.engine_of_round(round_index)
        if round_index < len(self._deals):
            deal = self._deals[round_index]
            if deal.engine != engine:
                raise DealError(
                    f"round {round_index + 1}'s deal has engine {deal.engine}: this configuration "
                    f"plays engine {engine} in that round (R5, first_engine={cfg.first_engine})"
                )
        else:
            if cfg.engine_source == "aside":  # V-engine-aside: seat 0, then one seat clockwise
                first = round_index % cfg.num_seats
            else:  # R6: seat 0 in round 1, then the seat after the previous start seat
                first = 0 if previous_start is None else (previous_start + 1) % cfg.num_seats
            deal = random_deal(cfg, self.rng, engine, first)
        self._start_seat = deal.start_seat
        return RoundState(cfg, deal)

    @property
    def is_over(self) -> bool:
        return self._over

    def legal_moves(self) -> list[int]:
        return [] if self._over else self.state.legal_moves()

    def apply(self, move: int) -> RoundResult | None:
        """Make a move; returns the round's result if it ended the round, else None."""
        if self._over:
            raise ValueError(f"move {move!r}: the match is over, no move is legal (C3)")
        state = self.state
        state.apply(move)
        if not state.is_over:
            return None
        values = state.scores()
        result = RoundResult(
            round_index=self.round_index,
            engine=state.engine,
            start_seat=self._start_seat,
            end_reason=state.end_reason,
            out_seats=state.out_seats,
            hand_values=tuple(values),
            scores=score_round(self.config, state),
        )
        self.results.append(result)
        self._totals = [a + b for a, b in zip(self._totals, result.scores, strict=True)]
        self._over = len(self.results) == self.config.num_rounds
        if not self._over:
            self.round_index += 1
            self.state = self._deal(self.round_index, previous_start=result.start_seat)
        return result

    @property
    def totals(self) -> list[int]:
        """Each seat's match total so far (R27)."""
        return self._totals[:]

    def places(self) -> list[int]:
        """Places after the rounds played so far (R27/R28 or V-positive-score)."""
        return places(self.config, self.results)
