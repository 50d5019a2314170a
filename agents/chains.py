"""Longest chain of a hand from an open end: the depth-first search behind ``longest-train``.

A hand is a multigraph on pips (each tile ``a|b`` an edge, a double a loop); a chain
from open end ``e`` is a trail starting at ``e`` that uses each tile at most once. The
longest one is found by depth-first search over the non-double tiles, memoized on
``(tiles left, current end)``; doubles need no branching — a double is always worth
taking the first time the chain reaches its pip, so it is inserted there. Among chains
of equal length the heavier one (more pips) wins, so the chain sheds the most points.

**Search cap.** A search expands at most :data:`DEFAULT_NODE_BUDGET` nodes (one node =
one distinct ``(tiles left, end)`` pair). Hands of the sizes dealt (≤ 16 tiles) never
come near it (a 15-tile double-12 hand needs a few hundred nodes at worst in practice);
a hand swollen by many draws can. When the budget runs out the search stops branching
and finishes each open path greedily (heaviest tile first), so the answer is still a
valid chain, just possibly not the longest.

**Memo.** The subproblems of searches that finished within the budget are kept (up to
50,000, then the memo restarts; :meth:`ChainPlanner.clear` empties it), and a search that
starts at one returns it at once. The answer is always a function of ``(hand, end)``
alone, never of what was searched before (a subproblem of an uncapped search is itself
uncapped, and running searches read only their own memo).
"""

from __future__ import annotations

from mt_env.tiles import TileSet

DEFAULT_NODE_BUDGET = 4000
_MEMO_LIMIT = 50_000


class ChainPlanner:
    """Longest chains through hands of one tile set (see the module docstring)."""

    def __init__(self, tiles: TileSet, node_budget: int = DEFAULT_NODE_BUDGET) -> None:
        self.tiles = tiles
        self.node_budget = node_budget
        self.pips = tiles.pips
        self.double_bit = [tiles.bit[tiles.double_of[p]] for p in range(tiles.max_pip + 1)]
        self.double_id = list(tiles.double_of)
        doubles = sum(self.double_bit)
        self.plain_pip_mask = [m & ~doubles for m in tiles.pip_mask]
        # other[t][p]: the pip a tile leaves open when it joins an end p
        self.other = [{a: b, b: a} for a, b in tiles.tiles]
        # Subproblems (tiles left, end) -> (length, pips, chain) of searches that finished
        # within the budget. A later search *starting* at one of them returns it at once
        # (after a chain tile is played, the rest of the plan is one); searches never read
        # it while running, so an answer never depends on what was searched before.
        self._memo: dict[tuple[int, int], tuple[int, int, tuple[int, ...]]] = {}
        self.searches = 0
        self.nodes = 0

    def clear(self) -> None:
        self._memo.clear()

    def longest(self, hand: int, end: int) -> tuple[int, ...]:
        """Tile ids of the longest (then heaviest) chain from ``end``, in play order."""
        hit = self._memo.get((hand, end))
        if hit is not None:
            return hit[2]
        self.searches += 1
        self._left = self.node_budget
        local: dict[tuple[int, int], tuple[int, int, tuple[int, ...]]] = {}
        chain = self._best(hand, end, local)[2]
        if self._left > 0:  # only exact answers are kept (a capped search may be short)
            if len(self._memo) + len(local) > _MEMO_LIMIT:
                self._memo.clear()
            self._memo.update(local)
        return chain

    def _best(self, mask: int, end: int, memo: dict) -> tuple[int, int, tuple[int, ...]]:
        key = (mask, end)
        hit = memo.get(key)
        if hit is not None:
            return hit
        self._left -= 1
        self.nodes += 1
        prefix: tuple[int, ...] = ()
        plen = ppip = 0
        dbit = self.double_bit[end]
        if mask & dbit:
            mask ^= dbit
            d = self.double_id[end]
            prefix, plen, ppip = (d,), 1, self.pips[d]
        best: tuple[int, int, tuple[int, ...]] = (0, 0, ())
        cand = mask & self.plain_pip_mask[end]
        if self._left <= 0:
            best = self._greedy(mask, end)
        else:
            pips, other = self.pips, self.other
            while cand:
                low = cand & -cand
                cand ^= low
                t = low.bit_length() - 1
                sub = self._best(mask ^ low, other[t][end], memo)
                length, weight = sub[0] + 1, sub[1] + pips[t]
                if length > best[0] or (length == best[0] and weight > best[1]):
                    best = (length, weight, (t,) + sub[2])
        result = (best[0] + plen, best[1] + ppip, prefix + best[2])
        memo[key] = result
        return result

    def _greedy(self, mask: int, end: int) -> tuple[int, int, tuple[int, ...]]:
        """Heaviest-first walk, used once the node budget is spent."""
        chain: list[int] = []
        weight = 0
        pips = self.pips
        while True:
            dbit = self.double_bit[end]
            if mask & dbit:
                mask ^= dbit
                chain.append(self.double_id[end])
                weight += pips[self.double_id[end]]
            cand = mask & self.plain_pip_mask[end]
            if not cand:
                return len(chain), weight, tuple(chain)
            t = max(self.tiles.ids_in(cand), key=pips.__getitem__)
            mask ^= self.tiles.bit[t]
            chain.append(t)
            weight += pips[t]
            end = self.other[t][end]


def chain_alternatives(
    planner: ChainPlanner, hand: int, end: int, limit: int = 6, node_budget: int = 3000
) -> list[tuple[int, ...]]:
    """Up to ``limit`` maximal chains from ``end`` (doubles taken on first visit), longest
    and heaviest first, at most one per final open end; the longest chain is always first."""
    best = planner.longest(hand, end)
    tiles = planner.tiles
    by_end: dict[int, tuple[int, int, tuple[int, ...]]] = {}
    budget = [node_budget]
    pips, other, dbits, dids, plain = (
        planner.pips,
        planner.other,
        planner.double_bit,
        planner.double_id,
        planner.plain_pip_mask,
    )

    def walk(mask: int, e: int, chain: tuple[int, ...], length: int, weight: int) -> None:
        budget[0] -= 1
        if mask & dbits[e]:
            mask ^= dbits[e]
            d = dids[e]
            chain, length, weight = chain + (d,), length + 1, weight + pips[d]
        cand = mask & plain[e]
        if not cand or budget[0] <= 0:
            key = (length, weight)
            old = by_end.get(e)
            if old is None or key > old[:2]:
                by_end[e] = (length, weight, chain)
            return
        while cand:
            low = cand & -cand
            cand ^= low
            t = low.bit_length() - 1
            walk(mask ^ low, other[t][e], chain + (t,), length + 1, weight + pips[t])

    walk(hand, end, (), 0, 0)
    del tiles
    found = sorted(by_end.values(), key=lambda x: (x[0], x[1]), reverse=True)
    out = [best]
    for _, _, chain in found:
        if chain != best and len(out) < limit:
            out.append(chain)
    return out
