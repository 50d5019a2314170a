"""Reward schemes shared by the environments and the trainer, so both credit seats alike.

| ``reward`` | when | what each seat gets |
|---|---|---|
| ``"score"`` | every round end | ``-scale * round score`` (penalty scoring) or ``+scale * round score`` (V-positive-score) |
| ``"score_zero_sum"`` | every round end | the ``"score"`` reward minus the mean of the other seats' — rewards of a round sum to 0 |
| ``"lead"`` | every round end | ``scale *`` the change over the round of the seat's lead in match totals over the best other seat; a seat's rewards sum to ``scale *`` its final lead, the quantity ``search``'s rollouts value; at 2 seats it equals ``"score_zero_sum"`` |
| ``"win_prob"`` | every round end | the change over the round of the seat's chance to win the match, estimated from the match totals and the rounds left (:func:`win_chances`); a seat's rewards sum to its ``"win"`` reward minus ``1/n`` (ties in totals shared) |
| ``"rank"`` | match end | ``1 - 2 (r - 1) / (n - 1)`` with ``r`` the fractional rank of the seat's place (tied seats share the average of their positions): +1 first, -1 last, sums to 0 |
| ``"win"`` | match end | 1 to the outright winner, ``1/k`` each to ``k`` seats tied for first, 0 otherwise |

``scale`` (``reward_scale``) multiplies only the score-based rewards (``"score"``,
``"score_zero_sum"``, ``"lead"``); the others are chances or places.

``"win_prob"`` is ``"win"`` spread over the rounds: before each round every seat has a
chance ``W`` of winning the match, and the round pays each seat the change of its chance.
``W`` is a model, not a search: each seat's future round scores are independent normal
draws with the same mean and a standard deviation :func:`round_sd` per round, so
with ``k`` rounds left seat ``i`` wins if ``g_i + s Z_i > g_j + s Z_j`` for every other
seat ``j`` (``g`` the totals, negated under penalty scoring; ``s = round_sd * sqrt(k)``),
``W_i = E_z[prod_j Phi((g_i - g_j) / s + z)]`` (the trapezoid rule on a grid of ``z``,
exact to about 1e-9 for this smooth integrand). After the last
round ``W`` is the ``"win"`` reward (seats tied on totals share it; R28's later keys need
the whole match and are left to ``"win"``), so a seat's rewards over a match add up to
``win - 1/n`` whatever the model's error: the model only decides how the
outcome is credited to the rounds. Within a round the reward values a lead by what it does
to the chance of winning: a pip is worth more when the match is close and few rounds are
left, little when it is decided.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from .config import RulesConfig
from .match import RoundResult

REWARD_MODES = ("score", "score_zero_sum", "lead", "win_prob", "rank", "win")

# The model's standard deviation of a seat's round score, as a fraction of a hand's mean
# pips at the deal (hand_size x max_pip). Measured under longest-train play in 400 default
# matches (benchmarks/round_sd.py): sd(s_0 - s_1) / sqrt(2) is 0.194 of them at 2 seats
# (double-9) and 0.204 at 4 (double-12); docs/experiments.md section 3.29.
ROUND_SD_FRACTION = 0.2
# E_z over a standard normal z: the trapezoid rule on [-8, 8] in steps of 1/4.
_NODES = [k / 4 for k in range(-32, 33)]
_WEIGHTS = [math.exp(-z * z / 2) for z in _NODES]
_WEIGHTS = [w / sum(_WEIGHTS) for w in _WEIGHTS]
_SQRT_HALF = math.sqrt(0.5)


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

    ``totals`` are the match totals *after* this round (``Match.totals``); ``"lead"`` and
    ``"win_prob"`` need them (ValueError without them)."""
    if reward not in ("score", "score_zero_sum", "lead", "win_prob"):
        return None
    n = len(result.scores)
    if reward in ("lead", "win_prob") and (totals is None or len(totals) != n):
        raise ValueError(f"reward={reward!r} needs the {n} match totals after the round, got {totals!r}")
    if reward == "win_prob":
        left = config.num_rounds - result.round_index - 1
        before = [t - s for t, s in zip(totals, result.scores, strict=True)]
        after = win_chances(config, totals, left)
        return [a - b for a, b in zip(after, win_chances(config, before, left + 1), strict=True)]
    sign = _sign(config)
    raw = [sign * scale * s for s in result.scores]
    if reward == "score":
        return raw
    if reward == "lead":
        after = [sign * scale * t for t in totals]
        before = [a - r for a, r in zip(after, raw, strict=True)]
        return [_lead(after, k) - _lead(before, k) for k in range(n)]
    total = sum(raw)
    return [r - (total - r) / (n - 1) for r in raw]


def _sign(config: RulesConfig) -> float:
    """+1 where a higher score is better (V-positive-score), -1 under penalty scoring (R26)."""
    return 1.0 if config.scoring == "positive" else -1.0


def round_sd(config: RulesConfig) -> float:
    """The model's standard deviation of one seat's round score, in pips (``"win_prob"``)."""
    return ROUND_SD_FRACTION * config.hand_size * config.max_pip


def win_chances(config: RulesConfig, totals: Sequence[int], rounds_left: int) -> list[float]:
    """Each seat's chance to win a match standing at ``totals`` with ``rounds_left`` rounds
    to play, under the model of ``"win_prob"`` (module docstring); with no round left, the
    ``"win"`` reward itself (1, or 1/k to each of k seats tied for the best total, R28's
    first key). The chances sum to 1."""
    sign = _sign(config)
    g = [sign * t for t in totals]
    if rounds_left <= 0:
        best = max(g)
        return [1.0 / g.count(best) if x == best else 0.0 for x in g]
    s = round_sd(config) * math.sqrt(rounds_left)
    chances = []
    for i, gi in enumerate(g):
        gaps = [(gi - gj) / s for j, gj in enumerate(g) if j != i]
        chance = 0.0
        for z, w in zip(_NODES, _WEIGHTS, strict=True):
            p = w
            for d in gaps:  # Phi(d + z): seat i stays ahead of seat j
                p *= 0.5 * math.erfc(-(d + z) * _SQRT_HALF)
            chance += p
        chances.append(chance)
    return chances


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
