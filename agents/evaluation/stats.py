"""Statistics for tournaments: cluster-robust confidence intervals and ratings.

**Why clusters.** In the duplicate format one deal is replayed under every seat
arrangement, so the games of one deal are not independent (a deal that is easy for the
start seat is easy for whoever sits there). Every interval here treats the games of one
deal as one *cluster*: the estimate is a ratio ``sum(values) / sum(counts)`` over clusters
and its variance is the cluster-robust (sandwich) variance

    var = G / (G - 1) * sum_g (y_g - p * m_g)^2 / (sum_g m_g)^2

over ``G`` clusters with totals ``y_g`` and counts ``m_g``. Means (scores, places) get the
normal interval ``p ± 1.96 sqrt(var)``. Rates in [0, 1] (win rates, head-to-head rates)
get a Wilson interval on the *effective* sample size ``p(1 - p) / var`` (the count
divided by the design effect), which stays inside [0, 1] near 0% and 100%.

**Ratings.** :func:`openskill_ratings` rates every game in order with OpenSkill's
Plackett–Luce model (the ``openskill`` library), one team per seat, ranked by place.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

Z95 = 1.959963984540054


def cluster_ratio(clusters: Iterable[tuple[float, float]]) -> tuple[float, float, int]:
    """``(estimate, variance, n_clusters)`` of ``sum(y) / sum(m)`` over ``(y_g, m_g)``."""
    ys, ms = [], []
    for y, m in clusters:
        if m > 0:
            ys.append(float(y))
            ms.append(float(m))
    g = len(ys)
    total_m = sum(ms)
    if g == 0 or total_m == 0:
        return math.nan, math.nan, 0
    p = sum(ys) / total_m
    if g < 2:
        return p, math.nan, g
    ss = sum((y - p * m) ** 2 for y, m in zip(ys, ms, strict=True))
    return p, g / (g - 1) * ss / total_m**2, g


def mean_interval(clusters: Iterable[tuple[float, float]]) -> tuple[float, float, float]:
    """Cluster-robust normal 95% interval of a mean: ``(mean, low, high)``."""
    p, var, _ = cluster_ratio(clusters)
    if math.isnan(var):
        return p, math.nan, math.nan
    half = Z95 * math.sqrt(var)
    return p, p - half, p + half


def wilson(p: float, n_eff: float) -> tuple[float, float]:
    """Wilson score 95% interval for a proportion ``p`` observed on ``n_eff`` trials."""
    if n_eff <= 0 or math.isnan(p):
        return math.nan, math.nan
    z2 = Z95 * Z95
    denom = 1 + z2 / n_eff
    centre = (p + z2 / (2 * n_eff)) / denom
    half = Z95 * math.sqrt(p * (1 - p) / n_eff + z2 / (4 * n_eff * n_eff)) / denom
    lo = 0.0 if p <= 0 else max(0.0, centre - half)
    hi = 1.0 if p >= 1 else min(1.0, centre + half)
    return lo, hi


def rate_interval(clusters: Iterable[tuple[float, float]]) -> tuple[float, float, float]:
    """Cluster-robust Wilson 95% interval of a rate in [0, 1]: ``(rate, low, high)``."""
    clusters = list(clusters)
    p, var, g = cluster_ratio(clusters)
    if g < 2:
        return p, math.nan, math.nan
    n = sum(m for _, m in clusters)
    if var > 0 and 0 < p < 1:
        n_eff = p * (1 - p) / var
    else:
        n_eff = n  # no spread at all (every game won or lost): fall back to the raw count
    lo, hi = wilson(p, n_eff)
    return p, lo, hi


def openskill_ratings(
    names: Sequence[str], games: Iterable[tuple[Sequence[int], Sequence[int]]]
) -> dict[str, dict[str, float]]:
    """OpenSkill Plackett–Luce ratings after rating ``games`` in order.

    Each game is ``(entry index per seat, place per seat)``. Every seat is a team of one;
    when an entry holds several seats of one game, its new rating is the mean of its
    seats' updated ratings. Returns ``{name: {"mu", "sigma", "ordinal"}}`` with
    ``ordinal = mu - 3 sigma`` (the library's conservative estimate).
    """
    from openskill.models import PlackettLuce

    model = PlackettLuce()
    ratings = [model.rating(name=name) for name in names]
    for seats, places in games:
        teams = [[model.rating(mu=ratings[e].mu, sigma=ratings[e].sigma)] for e in seats]
        new = model.rate(teams, ranks=list(places))
        acc: dict[int, list[tuple[float, float]]] = {}
        for e, team in zip(seats, new, strict=True):
            acc.setdefault(e, []).append((team[0].mu, team[0].sigma))
        for e, vals in acc.items():
            ratings[e] = model.rating(
                mu=sum(m for m, _ in vals) / len(vals),
                sigma=sum(s for _, s in vals) / len(vals),
                name=names[e],
            )
    return {
        name: {"mu": r.mu, "sigma": r.sigma, "ordinal": r.mu - 3 * r.sigma}
        for name, r in zip(names, ratings, strict=True)
    }
