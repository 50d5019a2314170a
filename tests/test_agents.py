"""Agents: legality over random games at every seat count and variant, seeding, the
chain search, the search agent's use of the known voids and its options, make_agent. (The search agent's
worlds are the rules core's own: tests/test_determinize.py.)"""

from __future__ import annotations

import functools
import itertools
import random

import numpy as np
import pytest
from conftest import game_steps

from mt_env import Match, RulesConfig
from mt_env.agents import AGENTS, Agent, PolicyAgent, make_agent, make_opponents
from mt_env.agents.chains import ChainPlanner
from mt_env.agents.search import SearchAgent
from mt_env.config import VARIANTS as CONFIG_VARIANTS
from mt_env.observation import ObservationEncoder
from mt_env.tiles import tile_set

VARIANTS = [{}, *CONFIG_VARIANTS.values()]  # the default rules, then every alternative


def cheap_search(config: RulesConfig, seed: int) -> SearchAgent:
    """The search agent with tiny settings: the same code paths, a fraction of the time."""
    return SearchAgent(config, seed=seed, samples=2, top_k=2)


def lineup(config: RulesConfig, seed: int) -> list[Agent]:
    makers = [
        lambda c, s: make_agent("random", c, s),
        lambda c, s: make_agent("greedy", c, s),
        lambda c, s: make_agent("longest-train", c, s),
        cheap_search,
        lambda c, s: make_agent("longest-train-reserve", c, s),
    ]
    n = config.num_seats
    return [makers[(k + seed) % len(makers)](config, seed * 100 + k) for k in range(n)]


def play(config: RulesConfig, agents: list[Agent], seed: int, check=None) -> Match:
    """Play one match, asserting every action is legal; ``check(match, seat, action)``
    runs before each move."""
    enc = ObservationEncoder(config)
    match = Match(config, seed=seed)
    for agent in agents:
        agent.reset()
    for _ in game_steps():
        if match.is_over:
            break
        seat = match.state.seat
        mask = enc.action_mask(match, seat)
        action = agents[seat].act(enc.encode(match, seat), mask)
        assert isinstance(action, int), type(action)
        assert mask[action] == 1, (type(agents[seat]).__name__, action)
        if check is not None:
            check(match, seat, action)
        match.apply(match.state.codec.to_move(action, seat))
    return match


@pytest.mark.parametrize("num_seats", range(2, 15))
def test_every_agent_plays_only_legal_actions(num_seats):
    for i, variant in enumerate(VARIANTS):
        config = RulesConfig(num_seats=num_seats, num_rounds=1, **variant)
        for game in range(2):
            play(config, lineup(config, i + game), seed=1000 * num_seats + 10 * i + game)


@pytest.mark.parametrize("num_seats", [2, 3, 4])
def test_legal_on_double_six_and_multi_round_matches(num_seats):
    config = RulesConfig(num_seats=num_seats, max_pip=6, num_rounds=3)
    for game in range(6):
        match = play(config, lineup(config, game), seed=game)
        assert len(match.results) == 3


def test_many_default_games_two_and_four_seats():
    for num_seats in (2, 4):
        config = RulesConfig(num_seats=num_seats, num_rounds=1)
        for game in range(25):
            play(config, lineup(config, game), seed=game)


def test_registry_and_make_agent():
    config = RulesConfig(num_seats=3)
    assert set(AGENTS) == {"random", "greedy", "longest-train", "longest-train-reserve", "search"}
    for name in AGENTS:
        agent = make_agent(name, config, seed=1)
        assert isinstance(agent, Agent) and agent.name == name
    with pytest.raises(ValueError, match="unknown agent 'nope'.*greedy.*longest-train"):
        make_agent("nope", config)
    with pytest.raises(ValueError, match="ckpt:PATH"):
        make_agent("ckpt:", config)
    with pytest.raises(ValueError, match="ckpt:/no/such/file.pt"):
        make_agent("ckpt:/no/such/file.pt", config)
    with pytest.raises(ValueError):
        make_agent(3, config)


def test_make_opponents_gives_every_other_seat_its_own_agent():
    config = RulesConfig(num_seats=4)
    same = make_opponents("greedy", config, seed=1)
    assert [a.name for a in same] == ["greedy"] * 3 and len({id(a) for a in same}) == 3
    mixed = make_opponents(["random", "greedy", "search"], config)
    assert [a.name for a in mixed] == ["random", "greedy", "search"]
    for bad in (["random", "greedy"], ["random"] * 4, ["random", "greedy", 3]):
        with pytest.raises(ValueError, match="expected one agent spec, or 3 specs"):
            make_opponents(bad, config)


def test_py_specs_build_agents_from_factories():
    """``py:MODULE:FACTORY[:ARG]`` is how models from other libraries enter tournaments."""
    config = RulesConfig(num_seats=2)
    agent = make_agent("py:agent_factories:lowest", config, seed=3)
    assert isinstance(agent, PolicyAgent) and agent.name == "lowest"
    enc, match = ObservationEncoder(config), Match(config, seed=0)
    obs, mask = enc.encode(match, match.state.seat), enc.action_mask(match, match.state.seat)
    assert agent.act(obs, mask) == np.flatnonzero(mask)[0]
    second = make_agent("py:agent_factories:nth:1", config)
    assert second.act(obs, mask) == np.flatnonzero(mask)[1 % mask.sum()]
    with pytest.raises(ValueError, match="illegal action 0: the mask allows"):
        make_agent("py:agent_factories:illegal", config).act(obs, np.eye(mask.size)[1])
    with pytest.raises(ValueError, match="returned 1.5: expected one integer action"):
        make_agent("py:agent_factories:fractional", config).act(obs, mask)
    for spec, message in [
        ("py:agent_factories", "expected py:MODULE:FACTORY"),
        ("py::lowest", "expected py:MODULE:FACTORY"),
        ("py:no_such_module_xyz:f", "cannot import 'no_such_module_xyz'"),
        ("py:agent_factories:missing", "has no callable 'missing'"),
        ("py:agent_factories:not_an_agent", "returned object, expected an mt_env.agents.Agent"),
    ]:
        with pytest.raises(ValueError, match=message):
            make_agent(spec, config)
    with pytest.raises(ValueError, match="not callable"):
        PolicyAgent(config, 42)


@pytest.mark.parametrize(
    "name", ["random", "greedy", "longest-train", "longest-train-reserve", "search"]
)
def test_same_seed_same_actions(name):
    config = RulesConfig(num_seats=3, num_rounds=2)

    def trace(seed: int) -> list[int]:
        actions: list[int] = []
        agents = [
            cheap_search(config, seed + k)
            if name == "search"
            else make_agent(name, config, seed + k)
            for k in range(3)
        ]
        play(config, agents, seed=5, check=lambda m, s, a: actions.append(a))
        return actions

    assert trace(7) == trace(7)
    if name == "random":
        assert trace(7) != trace(8)


def test_reseed_and_callable_and_batch():
    config = RulesConfig(num_seats=2, num_rounds=1)
    enc = ObservationEncoder(config)
    match = Match(config, seed=3)
    seat = match.state.seat
    obs, mask = enc.encode(match, seat), enc.action_mask(match, seat)
    agent = make_agent("random", config, seed=1)
    first = [agent(obs, mask) for _ in range(20)]
    agent.seed(1)
    assert [agent.act(obs, mask) for _ in range(20)] == first
    batch = agent.act_batch(np.stack([obs, obs]), np.stack([mask, mask]))
    assert batch.shape == (2,) and all(mask[a] for a in batch)
    with pytest.raises(ValueError, match="allows no action"):
        agent.act(obs, np.zeros_like(mask))


# ---------------------------------------------------------------------- chains
def brute_longest(ts, hand: list[int], end: int) -> tuple[int, int]:
    """(length, pips) of the longest, then heaviest, chain from ``end``: every ordering."""
    for r in range(len(hand), 0, -1):
        best = -1
        for perm in itertools.permutations(hand, r):
            e, ok = end, True
            for t in perm:
                a, b = ts.tiles[t]
                if e == a:
                    e = b
                elif e == b:
                    e = a
                else:
                    ok = False
                    break
            if ok:
                best = max(best, sum(ts.pips[t] for t in perm))
        if best >= 0:
            return r, best
    return 0, 0


def test_chain_is_longest_and_valid():
    ts = tile_set(6)
    planner = ChainPlanner(ts)
    rng = random.Random(4)
    for _ in range(150):
        hand = rng.sample(range(ts.num_tiles), rng.randint(1, 6))
        end = rng.randint(0, 6)
        chain = planner.longest(ts.mask_of(hand), end)
        e = end
        for t in chain:  # a valid chain, from the hand, each tile once
            assert t in hand
            a, b = ts.tiles[t]
            assert e in (a, b)
            e = b if e == a else a
        assert len(set(chain)) == len(chain)
        assert (len(chain), sum(ts.pips[t] for t in chain)) == brute_longest(ts, hand, end)


def test_chain_budget_cap_still_gives_a_valid_chain():
    ts = tile_set(12)
    capped = ChainPlanner(ts, node_budget=5)
    full = ChainPlanner(ts)
    rng = random.Random(1)
    hand = ts.mask_of(rng.sample(range(ts.num_tiles), 40))
    a, b = capped.longest(hand, 12), full.longest(hand, 12)
    assert 0 < len(a) <= len(b)
    e = 12
    for t in a:
        x, y = ts.tiles[t]
        assert e in (x, y) and hand >> t & 1
        e = y if e == x else x


def test_a_capped_search_leaves_no_inexact_answer_behind():
    """A search that hit its node budget is not memoized: every later question, the
    suffixes of its own plan included, gets the answer a fresh planner gives."""
    ts = tile_set(12)
    rng = random.Random(5)
    capped = 0
    for budget in (40, 150):
        used = ChainPlanner(ts, node_budget=budget)
        for _ in range(30):
            hand = ts.mask_of(rng.sample(range(ts.num_tiles), rng.randint(18, 28)))
            end = rng.randint(0, 12)
            nodes = used.nodes
            chain = used.longest(hand, end)
            capped += used.nodes - nodes >= budget
            for k in range(len(chain)):  # the rest of the plan after k tiles
                rest, e = hand, end
                for t in chain[:k]:
                    rest ^= ts.bit[t]
                    e = used.other[t][e]
                fresh = ChainPlanner(ts, node_budget=budget).longest(rest, e)
                assert used.longest(rest, e) == fresh
    assert capped > 5


def test_chain_answer_does_not_depend_on_history():
    ts = tile_set(12)
    rng = random.Random(2)
    hands = [ts.mask_of(rng.sample(range(ts.num_tiles), rng.randint(8, 30))) for _ in range(60)]
    for budget in (30, 4000):
        used = ChainPlanner(ts, node_budget=budget)
        for hand in hands:  # warm the memo, including with the suffixes of each plan
            chain = used.longest(hand, 6)
            if chain:
                used.longest(hand ^ ts.bit[chain[0]], used.other[chain[0]][6])
        for hand in hands:
            for end in (6, 0):
                assert used.longest(hand, end) == ChainPlanner(ts, node_budget=budget).longest(
                    hand, end
                )


# ---------------------------------------------------------------------- search agent
@pytest.mark.parametrize("num_seats, variant", [(2, {}), (4, {"doubles_order": "newest"})])
def test_search_worlds_keep_out_known_voids(num_seats, variant):
    """search's guessed hands avoid the pips the core knows a seat lacks (RoundState.voids,
    R15, R17, R18): the most constrained seat, dealt first from every unknown tile, never
    gets one (its true hand proves enough tiles avoid them); with ``infer=False`` the
    guesses ignore the voids and often break them."""
    config = RulesConfig(num_seats=num_seats, num_rounds=2, **variant)
    agents = [cheap_search(config, k) for k in range(num_seats)]
    blind = SearchAgent(config, seed=9, samples=2, top_k=2, infer=False)
    enc = ObservationEncoder(config)
    counts = {"checked": 0, "blind_broke": 0}

    def banned(pips: int) -> int:
        mask = 0
        for p in range(pips.bit_length()):
            if pips >> p & 1:
                mask |= enc.tiles.pip_mask[p]
        return mask

    def check(match, seat, action):
        v = enc.view(match, seat, enc.action_mask(match, seat))
        if not any(v.voids[1:]):
            return
        first = max(range(1, num_seats), key=lambda k: v.voids[k].bit_count())
        truth = match.state.hand_mask((seat + first) % num_seats)
        assert not truth & banned(v.voids[first])  # the core's voids are sound
        unknown = enc.tiles.ids_in(enc.position(v).unseen)
        for _ in range(4):
            hands, _pool = agents[seat]._sample(v, unknown)
            assert not hands[first - 1] & banned(v.voids[first])
            counts["checked"] += 1
            hands, _pool = blind._sample(v, unknown)
            counts["blind_broke"] += bool(hands[first - 1] & banned(v.voids[first]))

    for game in range(4):
        play(config, agents, seed=game, check=check)
    assert counts["checked"] > 100 and counts["blind_broke"] > counts["checked"] // 10, counts


def test_search_options_stay_legal():
    for variant in ({}, {"scoring": "positive"}):
        config = RulesConfig(num_seats=3, num_rounds=2, **variant)
        agents = [
            SearchAgent(config, seed=0, samples=3, top_k=3, first_k=3, utility="mean", margin=0),
            SearchAgent(config, seed=1, samples=3, reserve=2, infer=False),
            cheap_search(config, 2),
        ]
        for game in range(3):
            play(config, agents, seed=game)
    with pytest.raises(ValueError, match="utility"):
        SearchAgent(config, utility="best")


def first_turns(config: RulesConfig, make, seeds):
    """Play one-round matches, seat ``k`` played by ``make(config, k)``; for each seat's finished free first turn (R11) yield
    ``(planned chain length, hand size, tiles laid on its train)``, the chain being the
    agent's own longest chain when the turn began."""
    enc = ObservationEncoder(config)
    for seed in seeds:
        match = Match(config, seed=seed)
        agents = [make(config, k) for k in range(config.num_seats)]
        st = match.state
        planned: dict[int, tuple[int, int]] = {}
        for _ in game_steps():
            if match.is_over:
                break
            seat = st.seat
            if st.in_free_first_turn and seat not in planned:
                chain = agents[seat].planner.longest(st.hand_mask(seat), st.open_end(seat))
                planned[seat] = (len(chain), st.hand_size(seat))
            mask = enc.action_mask(match, seat)
            action = agents[seat].act(enc.encode(match, seat), mask)
            match.apply(st.codec.to_move(action, seat))
            if seat in planned and not st.first_turn_pending(seat) and planned[seat][0] >= 0:
                length, hand = planned[seat]
                yield length, hand, st.train_length(seat)
                planned[seat] = (-1, hand)
            if st.is_over:
                break


def test_search_keeps_one_chain_tile_back_in_its_free_first_turn():
    config = RulesConfig(num_seats=3, num_rounds=1)
    seen = 0
    for length, hand, laid in first_turns(config, cheap_search, range(12)):
        assert laid == (length if length in (0, hand) else length - 1)
        seen += 1
    assert seen >= 30


@pytest.mark.parametrize(("name", "reserve"), [("longest-train", 0), ("longest-train-reserve", 1)])
def test_longest_train_lays_its_chain_in_the_free_first_turn_less_the_reserve(name, reserve):
    """R11: longest-train lays its whole planned chain; longest-train-reserve keeps the last
    tile back, unless the chain is its whole hand (laying it goes out)."""
    config = RulesConfig(num_seats=2, num_rounds=1)
    seen = kept = 0
    make = functools.partial(make_agent, name)
    for length, hand, laid in first_turns(config, make, range(30)):
        expected = length if length == hand else max(0, length - reserve)
        assert laid == expected
        kept += length != expected
        seen += 1
    assert seen >= 40
    assert (kept > 20) if reserve else (kept == 0)


@pytest.mark.parametrize("name", ["greedy", "longest-train", "longest-train-reserve", "search"])
def test_scripted_agents_act_the_same_on_a_view_as_on_the_observation(name):
    """Rollouts and tournaments hand scripted agents encoder.view(...) instead of the vector:
    the same actions, match memory included (two agents, same seed, one fed each way)."""
    config = RulesConfig(num_seats=3, num_rounds=2)
    enc = ObservationEncoder(config)
    by_obs = [make_agent(name, config, seed=seat) for seat in range(3)]
    by_view = [make_agent(name, config, seed=seat) for seat in range(3)]
    match = Match(config, seed=4)
    for _ in game_steps():
        if match.is_over:
            break
        seat = match.state.seat
        mask = enc.action_mask(match, seat)
        action = by_obs[seat].act(enc.encode(match, seat), mask)
        assert by_view[seat].act_view(enc.view(match, seat, mask)) == action
        match.apply(match.state.codec.to_move(action, seat))
