"""The compiled chain search gives the answers of the pure-Python search it replaced.

``data/chain_queries.json.gz`` holds ~20,000 distinct ``(hand, end)`` queries of real games
(2, 4 and 8 seats, a trainer-like 2-seat table whose random seats draw large hands, and a
double-18 table whose tile ids fill all three words of a hand) with the chain, the node
count and the capped flag that the search of commit 7067e5b returned, at the default node
budget and at the ``search`` agent's rollout budget (200) — recorded by
``benchmarks/chain_speed.py record``. The kernel follows the same node order and cap, so
every answer must be the same, capped ones included, with the same number of nodes.
"""

from __future__ import annotations

import gzip
import json
import pickle
import random
from pathlib import Path

import pytest

from mt_env.agents import chains
from mt_env.agents.chains import DEFAULT_NODE_BUDGET, ChainPlanner
from mt_env.tiles import tile_set

DATA = Path(__file__).resolve().parent / "data" / "chain_queries.json.gz"


@pytest.fixture(scope="module")
def recorded() -> dict[int, list[tuple[int, int, int, tuple[int, ...], int, bool]]]:
    """node budget -> rows (max_pip, hand, end, chain, nodes, capped)."""
    with gzip.open(DATA, "rt") as f:
        data = json.load(f)
    return {
        block["node_budget"]: [
            (mp, int(h, 16), e, tuple(c), n, capped) for mp, h, e, c, n, capped, _ in block["rows"]
        ]
        for block in data["sets"]
    }


def test_the_recorded_set_covers_the_cap_and_every_word(recorded):
    rows = recorded[DEFAULT_NODE_BUDGET]
    assert len(rows) > 20_000
    assert sum(r[5] for r in rows) > 500  # capped by the recorded search
    assert sum(r[4] > 1000 and not r[5] for r in rows) > 100  # large, uncapped searches
    assert {r[0] for r in rows} == {9, 12, 18}
    assert any(r[1] >> 128 for r in rows)  # tiles 128..189 of the double-18 set
    assert len(recorded[200]) > 1000 and all(r[5] for r in recorded[200])


@pytest.mark.parametrize("budget", [DEFAULT_NODE_BUDGET, 200])
def test_same_chains_and_nodes_as_the_recorded_search(recorded, budget):
    planners = {mp: ChainPlanner(tile_set(mp), node_budget=budget) for mp in (9, 12, 18)}
    wrong = []
    for mp, hand, end, chain, nodes, capped in recorded[budget]:
        planner = planners[mp]
        planner.clear()
        before = planner.nodes
        got = planner.longest(hand, end)
        if got != chain or planner.nodes - before != nodes:
            wrong.append((mp, hex(hand), end, chain, got, nodes, planner.nodes - before, capped))
    assert not wrong, f"{len(wrong)} differ, e.g. {wrong[:3]}"


def test_recorded_chains_are_valid_with_doubles_taken_on_first_visit(recorded):
    for mp, hand, end, chain, _, _ in recorded[DEFAULT_NODE_BUDGET][::7]:
        ts = tile_set(mp)
        e, reached = end, {end}
        for t in chain:
            a, b = ts.tiles[t]
            assert hand >> t & 1 and e in (a, b)
            e = b if e == a else a
            reached.add(e)
            hand ^= ts.bit[t]
        for p in reached:  # the double of every pip the chain reached went into it
            assert not hand >> ts.double_of[p] & 1


@pytest.mark.parametrize("budget", [DEFAULT_NODE_BUDGET, 200])
def test_answers_do_not_depend_on_history_or_table_sizes(recorded, budget, monkeypatch):
    """One planner answers a shuffled half of the queries, each twice and after its plan's
    first tile, with the kept memo on (restarting when full) and hash tables that start
    tiny and grow: every answer is the recorded one (or, after a tile, a fresh planner's)."""
    monkeypatch.setattr(chains, "_SEARCH_SLOTS", 4)
    rows = random.Random(budget).sample(recorded[budget], len(recorded[budget]) // 2)
    planners = {mp: ChainPlanner(tile_set(mp), node_budget=budget) for mp in (9, 12, 18)}
    fresh = {mp: ChainPlanner(tile_set(mp), node_budget=budget) for mp in (9, 12, 18)}
    for mp, hand, end, chain, _, capped in rows:
        planner = planners[mp]
        assert planner.longest(hand, end) == chain
        searches = planner.searches
        assert planner.longest(hand, end) == chain
        assert planner.searches == searches + capped  # an exact answer was kept
        if chain:
            ts, t = tile_set(mp), chain[0]
            rest, e = hand ^ ts.bit[t], planner.other[t][end]
            fresh[mp].clear()
            assert planner.longest(rest, e) == fresh[mp].longest(rest, e)


def test_bad_input_is_refused():
    ts = tile_set(12)
    with pytest.raises(ValueError, match="end=13: expected a pip in 0..12"):
        ChainPlanner(ts).longest(5, 13)
    with pytest.raises(ValueError, match="node_budget=0: expected an int >= 1"):
        ChainPlanner(ts, node_budget=0)


def test_a_pickled_planner_is_small_and_answers_the_same(recorded):
    ts = tile_set(12)
    planner = ChainPlanner(ts, node_budget=200)
    rows = [r for r in recorded[DEFAULT_NODE_BUDGET] if r[0] == 12][:50]
    for _, hand, end, *_ in rows:
        planner.longest(hand, end)
    data = pickle.dumps(planner)
    assert len(data) < 20_000  # the memos stay behind
    copy = pickle.loads(data)
    assert copy.node_budget == 200 and copy.tiles.max_pip == 12
    for _, hand, end, *_ in rows:
        assert copy.longest(hand, end) == ChainPlanner(ts, node_budget=200).longest(hand, end)
