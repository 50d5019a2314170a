"""Longest chain of a hand from an open end: the depth-first search behind ``longest-train``.

A hand is a multigraph on pips (each tile ``a|b`` an edge, a double a loop); a chain
from open end ``e`` is a trail starting at ``e`` that uses each tile at most once. The
longest one is found by depth-first search over the non-double tiles, memoized on
``(tiles left, current end)``; doubles need no branching — a double is always worth
taking the first time the chain reaches its pip, so it is inserted there. Among chains
of equal length the heavier one (more pips) wins, so the chain sheds the most points;
among chains equal in both, the first found (the search tries the tiles joining an end
in ascending id order).

**Search cap.** A search expands at most :data:`DEFAULT_NODE_BUDGET` nodes (one node =
one distinct ``(tiles left, end)`` pair). Hands of the sizes dealt (≤ 16 tiles) never
come near it (a 15-tile double-12 hand needs a few hundred nodes at worst in practice);
a hand swollen by many draws can. When the budget runs out the search stops branching
and finishes each open path greedily (heaviest tile first), so the answer is still a
valid chain, just possibly not the longest.

**Memo.** The subproblems of searches that finished within the budget are kept (up to
8,192, then the memo restarts; :meth:`ChainPlanner.clear` empties it), and a search that
starts at one returns it at once. The answer is always a function of ``(hand, end)``
alone, never of what was searched before (a subproblem of an uncapped search is itself
uncapped, and running searches read only their own memo).

**Kernel.** The search is one numba-compiled function, :func:`_longest`. It holds a hand
as three 64-bit words (the double-18 set has 190 tiles) and each memo as an
open-addressing hash table in a numpy array (about 1.3 MB per planner), and it expands
the same nodes in the same order, counts them the same way and finishes capped searches
with the same greedy walk as the pure-Python search it replaced (commit 7067e5b): it
returns that search's chain for every ``(hand, end)``, capped or not.
``tests/test_chains.py`` checks this on ~20,000 recorded queries of real games;
``benchmarks/chain_speed.py`` measures the gain and records the queries. Each process
pays once for importing numba (~0.2 s of CPU) and for the kernel: compiled on the first
search (~1.5 s) and cached on disk (``cache=True``: next to this file, or where that is
read-only in numba's user cache or ``NUMBA_CACHE_DIR``), a later process loads it in
~0.1 s.
"""

from __future__ import annotations

import numba
import numpy as np

from mt_env.tiles import TileSet

DEFAULT_NODE_BUDGET = 4000
_KEPT_SLOTS = 1 << 14  # the kept memo's hash table
_MEMO_LIMIT = _KEPT_SLOTS // 2  # entries kept before the memo restarts
_SEARCH_SLOTS = 1 << 15  # the most a search's table starts with (it doubles when half full)
_WORD = (1 << 64) - 1

# _longest's status
_EXACT, _CAPPED, _KEPT, _GROW = 0, 1, 2, 3

# A hash table is a (slots, 5) uint64 array of rows (word 0, word 1, word 2, end | stamp
# << 8, value): a row is live iff its stamp is the table's current one (emptying a table
# is one increment). value = length | pips << 8 | (first non-double tile + 1) << 24 |
# (1 if the node was finished greedily) << 40. Linear probing; never more than half full.
_M0 = np.uint64(0x9E3779B97F4A7C15)
_M1 = np.uint64(0xC2B2AE3D27D4EB4F)
_M2 = np.uint64(0x165667B19E3779F9)
_M3 = np.uint64(0xD6E8FEB86659FD93)
_ONE = np.uint64(1)
_LOW6 = np.uint64(63)
_EIGHT = np.uint64(8)
_BYTE = np.uint64(255)
# index of a word's lowest set bit b: _DEBRUIJN_INDEX[(b * _DEBRUIJN) >> 58] (a de Bruijn
# sequence: the top 6 bits of the product differ for each of the 64 powers of two)
_DEBRUIJN = np.uint64(0x03F79D71B4CB0A89)
_DEBRUIJN_INDEX = np.zeros(64, dtype=np.int64)
_DEBRUIJN_INDEX[[((1 << i) * 0x03F79D71B4CB0A89 & _WORD) >> 58 for i in range(64)]] = range(64)


class ChainPlanner:
    """Longest chains through hands of one tile set (see the module docstring)."""

    def __init__(self, tiles: TileSet, node_budget: int = DEFAULT_NODE_BUDGET) -> None:
        if isinstance(node_budget, bool) or not isinstance(node_budget, int) or node_budget < 1:
            raise ValueError(f"node_budget={node_budget!r}: expected an int >= 1")
        self.tiles = tiles
        self.node_budget = node_budget
        self.pips = tiles.pips
        self.double_bit = [tiles.bit[tiles.double_of[p]] for p in range(tiles.max_pip + 1)]
        self.double_id = list(tiles.double_of)
        doubles = sum(self.double_bit)
        self.plain_pip_mask = [m & ~doubles for m in tiles.pip_mask]
        # other[t][p]: the pip a tile leaves open when it joins an end p
        self.other = [{a: b, b: a} for a, b in tiles.tiles]
        self.searches = 0
        self.nodes = 0
        self._full = tiles.full_mask
        self._max_pip = tiles.max_pip
        # the kernel's tables: tile_table[t] = (low pip, high pip, pips); double_of[p];
        # pip_words[p] = the non-double tiles bearing pip p, as three words
        self._tables = (
            np.array([(a, b, a + b) for a, b in tiles.tiles], dtype=np.int64),
            np.array(tiles.double_of, dtype=np.int64),
            np.array(
                [[(m >> (64 * w)) & _WORD for w in range(3)] for m in self.plain_pip_mask],
                dtype=np.uint64,
            ),
        )
        # state = (hand words 0-2, stamp of the search's table, stamp of the kept table,
        # entries in the kept table)
        self._state = np.array([0, 0, 0, 1, 1, 0], dtype=np.uint64)
        # The search's memo, big enough for the budget's nodes plus the greedy ends of
        # every open path (each level of the search has at most max_pip of them), and the
        # order its rows were filled in, to copy them into the kept memo. The kept memo:
        # subproblems of searches that finished within the budget. A later search
        # *starting* at one of them returns it at once; searches never read it while
        # running, so an answer never depends on what was searched before.
        most = node_budget + tiles.num_tiles * tiles.max_pip
        self._memo = _table(min(_SEARCH_SLOTS, 1 << (2 * most).bit_length()))
        self._order = np.zeros(len(self._memo) // 2 + 1, dtype=np.int64)
        self._kept = _table(_KEPT_SLOTS)
        self._stack_masks = np.zeros((tiles.num_tiles + 1, 9), dtype=np.uint64)
        self._stack = np.zeros((tiles.num_tiles + 1, 7), dtype=np.int64)
        self._out = np.zeros(tiles.num_tiles, dtype=np.int64)

    def __reduce__(self):
        """Pickled as its settings: the memos are caches (and a megabyte of tables)."""
        return type(self), (self.tiles, self.node_budget)

    def clear(self) -> None:
        """Forget the kept subproblems (answers do not change, only how long they take)."""
        self._state[4] += 1
        self._state[5] = 0

    def longest(self, hand: int, end: int) -> tuple[int, ...]:
        """Tile ids of the longest (then heaviest) chain from ``end``, in play order."""
        if not 0 <= end <= self._max_pip:
            raise ValueError(f"end={end!r}: expected a pip in 0..{self._max_pip}")
        hand = int(hand) & self._full
        state = self._state
        state[0] = hand & _WORD
        state[1] = (hand >> 64) & _WORD
        state[2] = hand >> 128
        while True:
            status, length, nodes = _longest(
                state,
                int(end),
                self.node_budget,
                self._tables,
                self._memo,
                self._order,
                self._kept,
                self._stack_masks,
                self._stack,
                self._out,
            )
            if status != _GROW:
                break
            # the search outgrew its table (a node budget in the tens of thousands): again,
            # with twice the room
            self._memo = _table(2 * len(self._memo))
            self._order = np.zeros(len(self._memo) // 2 + 1, dtype=np.int64)
        if status != _KEPT:
            self.searches += 1
            self.nodes += nodes
        return tuple(self._out[:length].tolist())


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


def _table(slots: int) -> np.ndarray:
    return np.zeros((slots, 5), dtype=np.uint64)


@numba.njit
def _slot(table, k0, k1, k2, tag):
    """Row of key ``(k0, k1, k2)`` with ``tag`` = end | stamp << 8 in ``table``: its own if
    present, else the free one it would take."""
    mask = table.shape[0] - 1
    h = k0 * _M0 ^ k1 * _M1 ^ k2 * _M2 ^ tag * _M3
    i = np.int64((h ^ (h >> np.uint64(29))) & np.uint64(mask))
    stamp = tag >> _EIGHT
    while True:
        if table[i, 3] >> _EIGHT != stamp:
            return i
        if table[i, 3] == tag and table[i, 0] == k0 and table[i, 1] == k1 and table[i, 2] == k2:
            return i
        i = (i + 1) & mask


@numba.njit
def _has(k0, k1, k2, t):
    w = k0 if t < 64 else (k1 if t < 128 else k2)
    return (w >> (np.uint64(t) & _LOW6)) & _ONE


@numba.njit
def _without(k0, k1, k2, t):
    """The words without tile ``t`` (which they hold)."""
    b = _ONE << (np.uint64(t) & _LOW6)
    if t < 64:
        return k0 ^ b, k1, k2
    if t < 128:
        return k0, k1 ^ b, k2
    return k0, k1, k2 ^ b


@numba.njit
def _pack(length, pips, first, greedy):
    return np.uint64(length | pips << 8 | (first + 1) << 24 | greedy << 40)


@numba.njit
def _lowest(w):
    """Index of the lowest set bit of a nonzero word, and the word without it."""
    low = w & (~w + _ONE)
    return _DEBRUIJN_INDEX[(low * _DEBRUIJN) >> np.uint64(58)], w ^ low


@numba.njit
def _greedy(k0, k1, k2, e, tables, out, n):
    """Heaviest-first walk from end ``e`` (once the node budget is spent; the tiles joining
    an end all differ in pips): writes its tiles to ``out[n:]``; returns (tiles written,
    their pips)."""
    tile_table, double_of, pip_words = tables
    weight = 0
    start = n
    while True:
        d = double_of[e]
        if _has(k0, k1, k2, d):
            k0, k1, k2 = _without(k0, k1, k2, d)
            out[n] = d
            n += 1
            weight += tile_table[d, 2]
        best = -1
        for w, k in ((0, k0), (1, k1), (2, k2)):
            cand = k & pip_words[e, w]
            while cand:
                b, cand = _lowest(cand)
                t = 64 * w + b
                if best < 0 or tile_table[t, 2] > tile_table[best, 2]:
                    best = t
        if best < 0:
            return n - start, weight
        k0, k1, k2 = _without(k0, k1, k2, best)
        out[n] = best
        n += 1
        weight += tile_table[best, 2]
        e = tile_table[best, 0] + tile_table[best, 1] - e


@numba.njit
def _write(table, stamp, k0, k1, k2, e, tables, out):
    """Write the chain of subproblem ``(k0, k1, k2, e)``, which ``table`` holds, to ``out``
    (each node's best first tile leads to the next node); returns its length."""
    tile_table, double_of, _ = tables
    n = 0
    while True:
        value = table[_slot(table, k0, k1, k2, np.uint64(e) | stamp << _EIGHT), 4]
        d = double_of[e]
        if _has(k0, k1, k2, d):
            k0, k1, k2 = _without(k0, k1, k2, d)
            out[n] = d
            n += 1
        if value >> np.uint64(40):
            return n + _greedy(k0, k1, k2, e, tables, out, n)[0]
        t = np.int64((value >> np.uint64(24)) & _BYTE) - 1
        if t < 0:
            return n
        k0, k1, k2 = _without(k0, k1, k2, t)
        out[n] = t
        n += 1
        e = tile_table[t, 0] + tile_table[t, 1] - e


@numba.njit(cache=True)  # the helpers above are compiled into it
def _longest(state, end, budget, tables, memo, order, kept, stack_masks, stack, out):
    """One :meth:`ChainPlanner.longest`: writes the chain to ``out`` and returns (status,
    chain length, nodes expanded).

    ``state`` = (the hand's words, the stamps of ``memo`` and ``kept``, the rows live in
    ``kept``); ``order`` lists the rows of ``memo`` the search fills. The search runs on an
    explicit stack: ``stack_masks[d]`` = (the node's key words, the words left once its
    double is taken, the tiles joining its end not tried yet), ``stack[d]`` = (end, 1 if
    the double was there, its pips, best length, best pips, best first tile, tile being
    tried)."""
    tile_table, double_of, pip_words = tables
    k0, k1, k2 = state[0], state[1], state[2]
    kept_stamp = state[4]
    i = _slot(kept, k0, k1, k2, np.uint64(end) | kept_stamp << _EIGHT)
    if kept[i, 3] >> _EIGHT == kept_stamp:
        return _KEPT, _write(kept, kept_stamp, k0, k1, k2, end, tables, out), 0
    state[3] += 1
    stamp = state[3]
    limit = memo.shape[0] // 2
    left = budget
    nodes = count = 0
    sp = -1
    c0, c1, c2, ce = k0, k1, k2, end  # the node to visit next
    visit = True
    have = False  # a result (length, pips) waits to be offered to the top frame
    length = weight = 0
    while True:
        if visit:
            visit = False
            tag = np.uint64(ce) | stamp << _EIGHT
            i = _slot(memo, c0, c1, c2, tag)
            if memo[i, 3] == tag:  # met before in this search
                length = np.int64(memo[i, 4] & _BYTE)
                weight = np.int64((memo[i, 4] >> _EIGHT) & np.uint64(0xFFFF))
                have = True
            else:
                left -= 1
                nodes += 1
                m0, m1, m2 = c0, c1, c2
                plen = ppip = 0
                d = double_of[ce]
                if _has(m0, m1, m2, d):
                    m0, m1, m2 = _without(m0, m1, m2, d)
                    plen, ppip = 1, tile_table[d, 2]
                if left <= 0:  # budget spent: finish greedily
                    if count >= limit:
                        return _GROW, 0, nodes
                    length, weight = _greedy(m0, m1, m2, ce, tables, out, 0)
                    length += plen
                    weight += ppip
                    memo[i, 0], memo[i, 1], memo[i, 2], memo[i, 3] = c0, c1, c2, tag
                    memo[i, 4] = _pack(length, weight, -1, 1)
                    order[count] = i
                    count += 1
                    have = True
                else:
                    sp += 1
                    stack_masks[sp, 0], stack_masks[sp, 1], stack_masks[sp, 2] = c0, c1, c2
                    stack_masks[sp, 3], stack_masks[sp, 4], stack_masks[sp, 5] = m0, m1, m2
                    stack_masks[sp, 6] = m0 & pip_words[ce, 0]
                    stack_masks[sp, 7] = m1 & pip_words[ce, 1]
                    stack_masks[sp, 8] = m2 & pip_words[ce, 2]
                    stack[sp, 0], stack[sp, 1], stack[sp, 2] = ce, plen, ppip
                    stack[sp, 3], stack[sp, 4], stack[sp, 5], stack[sp, 6] = 0, 0, -1, -1
        if have:
            have = False
            if sp < 0:
                break
            t = stack[sp, 6]
            length += 1
            weight += tile_table[t, 2]
            if length > stack[sp, 3] or (length == stack[sp, 3] and weight > stack[sp, 4]):
                stack[sp, 3], stack[sp, 4], stack[sp, 5] = length, weight, t
        # the top frame: try its next tile (ascending id), or finish it
        e = stack[sp, 0]
        t = -1
        for w in range(3):
            if stack_masks[sp, 6 + w]:
                b, stack_masks[sp, 6 + w] = _lowest(stack_masks[sp, 6 + w])
                t = 64 * w + b
                break
        if t >= 0:
            stack[sp, 6] = t
            c0, c1, c2 = _without(stack_masks[sp, 3], stack_masks[sp, 4], stack_masks[sp, 5], t)
            ce = tile_table[t, 0] + tile_table[t, 1] - e
            visit = True
            continue
        if count >= limit:
            return _GROW, 0, nodes
        c0, c1, c2 = stack_masks[sp, 0], stack_masks[sp, 1], stack_masks[sp, 2]
        tag = np.uint64(e) | stamp << _EIGHT
        i = _slot(memo, c0, c1, c2, tag)
        length = stack[sp, 3] + stack[sp, 1]
        weight = stack[sp, 4] + stack[sp, 2]
        memo[i, 0], memo[i, 1], memo[i, 2], memo[i, 3] = c0, c1, c2, tag
        memo[i, 4] = _pack(length, weight, stack[sp, 5], 0)
        order[count] = i
        count += 1
        sp -= 1
        have = True
    n = _write(memo, stamp, k0, k1, k2, end, tables, out)
    if left <= 0:
        return _CAPPED, n, nodes
    # keep the search's rows (the kept memo restarts when it would pass _MEMO_LIMIT)
    if count <= _MEMO_LIMIT:
        if state[5] + count > _MEMO_LIMIT:
            state[4] += 1
            state[5] = 0
            kept_stamp = state[4]
        for j in range(count):
            r = order[j]
            tag = (memo[r, 3] & _BYTE) | kept_stamp << _EIGHT
            i = _slot(kept, memo[r, 0], memo[r, 1], memo[r, 2], tag)
            if kept[i, 3] != tag:
                kept[i, 0], kept[i, 1], kept[i, 2] = memo[r, 0], memo[r, 1], memo[r, 2]
                kept[i, 3], kept[i, 4] = tag, memo[r, 4]
                state[5] += 1
    return _EXACT, n, nodes
