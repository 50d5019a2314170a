"""Reward schemes shared by the environments and the trainer, so both credit seats alike.

| ``reward`` | when | what each seat gets |
|---|---|---|
| ``"score"`` | every round end | ``-scale * round score`` (penalty scoring) or ``+scale * round score`` (V-positive-score) |
| ``"score_zero_sum"`` | every round end | the ``"score"`` reward minus the mean of the other seats' — rewards of a round sum to 0 |
| ``"lead"`` | every round end | ``scale *`` the change over the round of the seat's lead in match totals over the best other seat; a seat's rewards sum to ``scale *`` its final lead, the quantity ``search``'s rollouts value; at 2 seats it equals ``"score_zero_sum"`` |
| ``"rank"`` | match end | ``1 - 2 (r - 1) / (n - 1)`` with ``r`` the fractional rank of the seat's place (tied seats share the average of their positions): +1 first, -1 last, sums to 0 |
| ``"win"`` | match end | 1 to the outright winner, ``1/k`` each to ``k`` seats tied for first, 0 otherwise |

``scale`` (``reward_scale``) multiplies only the score-based rewards.
"""

from __future__ import annotations

from collections.abc import Sequence

from .config import RulesConfig
from .match import RoundResult

REWARD_MODES = ("score", "score_zero_sum", "lead", "rank", "win")


def check_reward_mode(reward: str) -> str:
    if reward not in REWARD_MODES:
        raise ValueError(f"reward={reward!r}: expected one of {REWARD_MODES}")
    return reward


def round_rewards(
    reward: str,
    config: RulesConfig,
    result: RoundResult,
    scale: float,
    totals: Sequence[int] | None = None,
) -> list[float] | None:
    """Per-seat rewards for a finished round, or None if the scheme pays only at match end.

    ``totals`` are the match totals *after* this round (``Match.totals``); only ``"lead"``
    needs them (ValueError without them)."""
    if reward not in ("score", "score_zero_sum", "lead"):
        return None
    sign = 1.0 if config.scoring == "positive" else -1.0
    raw = [sign * scale * s for s in result.scores]
    n = len(raw)
    if reward == "score":
        return raw
    if reward == "lead":
        if totals is None or len(totals) != n:
            raise ValueError(f"reward='lead' needs the {n} match totals after the round, got {totals!r}")
        after = [sign * scale * t for t in totals]
        before = [a - r for a, r in zip(after, raw, strict=True)]
        return [_lead(after, k) - _lead(before, k) for k in range(n)]
    total = sum(raw)
    return [r - (total - r) / (n - 1) for r in raw]


def _lead(goodness: list[float], seat: int) -> float:
    """How far ``seat`` is ahead of the best other seat (higher goodness = better)."""
    return goodness[seat] - max(g for k, g in enumerate(goodness) if k != seat)


def match_rewards(reward: str, places: list[int]) -> list[float] | None:
    """Per-seat rewards at match end from the places (1 = best), or None for score schemes."""
    n = len(places)
    if reward == "rank":
        # Fractional rank: seats sharing place p occupy positions p .. p+k-1.
        ranks = [p + (places.count(p) - 1) / 2 for p in places]
        return [1.0 - 2.0 * (r - 1) / (n - 1) for r in ranks]
    if reward == "win":
        k = places.count(1)
        return [1.0 / k if p == 1 else 0.0 for p in places]
    return None
