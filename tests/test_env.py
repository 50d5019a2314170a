"""The PettingZoo AEC env (mt_env.aec, built by mt_env.env()): API conformance, masks, no leaks, seeding, rewards.

Scripted games use a double-6 set with three seats and two-tile hands (conftest's
``make_deal``: the boneyard is every other tile in id order), so a round is a handful of
moves and every reward can be worked out by hand from R24, R26–R28 and the reward table
of ``mt_env.aec``'s docstring.
"""

from __future__ import annotations

import pickle
import random

import numpy as np
import pytest
from conftest import game_steps, make_deal
from gymnasium import spaces
from pettingzoo.test import api_test, seed_test

from mt_env import Deal, IllegalMoveError, RulesConfig, env, raw_env
from mt_env.aec import DiscreteActions
from mt_env.rewards import REWARD_MODES
from mt_env.rules import random_deal
from mt_env.tiles import tile_set

# api_test warns that dict observations "should be" Box for envs it does not know.
pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

CONFIGS = {
    "2 seats": dict(num_seats=2, num_rounds=1),
    "4 seats": dict(num_seats=4, num_rounds=2),
    "8 seats": dict(num_seats=8, num_rounds=1),
    "14 seats": dict(num_seats=14, num_rounds=1),
    "first_turn single": dict(num_seats=4, num_rounds=1, first_turn="single"),
    "first_turn draw": dict(num_seats=4, num_rounds=1, first_turn="draw"),
    "follow_up_on_double": dict(num_seats=4, num_rounds=1, follow_up_on_double=True),
    "doubles_order newest": dict(num_seats=4, num_rounds=1, doubles_order="newest"),
    "dead_doubles off": dict(num_seats=4, num_rounds=1, dead_doubles=False),
    "double_blank_value 0": dict(num_seats=3, num_rounds=2, double_blank_value=0),
    "engine_source aside": dict(num_seats=4, num_rounds=2, engine_source="aside"),
    "scoring positive": dict(num_seats=3, num_rounds=2, scoring="positive"),
}


def random_action(obs, rng):
    legal = np.flatnonzero(obs["action_mask"])
    return int(legal[rng.randrange(len(legal))])


def own(codec, tile):
    """The action "play ``tile`` on my own train" (relative train 0)."""
    return tile_set(codec.tiles.max_pip).id_of(tile) * codec.num_trains


# ============================================================================ API
@pytest.mark.parametrize("name", list(CONFIGS))
def test_pettingzoo_api_and_seed(name):
    api_test(env(**CONFIGS[name]), num_cycles=1000)
    seed_test(lambda: env(**CONFIGS[name]), num_cycles=200)


@pytest.mark.parametrize("reward", REWARD_MODES)
def test_api_every_reward_mode(reward):
    api_test(env(num_seats=3, num_rounds=2, reward=reward), num_cycles=1000)


def test_metadata_agents_and_spaces():
    e = env(num_seats=5)
    u = e.unwrapped
    assert u.metadata == {
        "name": "mexican_train_v1",
        "render_modes": ["ansi", "human", "rgb_array"],
        "is_parallelizable": False,
        "render_fps": 1,
    }
    assert u.possible_agents == [f"player_{k}" for k in range(5)]
    assert u.match is None and u.config == RulesConfig(num_seats=5)
    e.reset(seed=0)
    assert u.match is not None and u.codec.num_seats == 5
    for a in u.possible_agents:
        assert e.action_space(a).n == u.encoder.num_actions == u.codec.num_actions
        box = e.observation_space(a)["observation"]
        assert box.shape == (u.encoder.size,) and box.dtype == np.float32
        mask = e.observation_space(a)["action_mask"]
        assert mask.shape == (u.encoder.num_actions,) and mask.dtype == np.int8
        assert e.observation_space(a) is e.observation_space(a)
    # counted pieces can exceed 1: the bounds must say so
    high = e.observation_space("player_0")["observation"].high
    pieces = u.encoder.pieces
    assert (high[pieces["train_length"]] > 1).all() and (high[pieces["hand_sizes"]] > 1).all()
    assert (high[pieces["scores"]] > 1).all()
    assert (high[pieces["hand"]] == 1).all()


def test_observation_bounds_hold_when_hands_grow_and_trains_lengthen():
    """Play whole matches where seats draw a lot: every observation stays in its Box."""
    rng = random.Random(5)
    e = raw_env(num_seats=2, num_rounds=3, max_pip=9)
    space = e.observation_space("player_0")
    biggest = np.zeros(e.encoder.size, dtype=np.float32)
    for seed in range(3):
        e.reset(seed=seed)
        for _ in game_steps():
            if e.match.is_over:
                break
            obs = e.observe(e.agent_selection)
            assert space.contains(obs)
            biggest = np.maximum(biggest, obs["observation"])
            # prefer drawing: hands grow past the deal (R18)
            draw = e.codec.draw
            a = draw if obs["action_mask"][draw] else random_action(obs, rng)
            e.step(a)
    assert biggest[e.encoder.pieces["hand_sizes"]].max() > 1
    assert (biggest <= space["observation"].high).all()


def test_rules_options_and_invalid_options():
    assert raw_env(config=RulesConfig(num_seats=3)).config.num_seats == 3
    assert raw_env(num_seats=6, first_turn="draw").config.first_turn == "draw"
    bad = [
        dict(num_seats=1),
        dict(num_seats=4, first_turn="sometimes"),
        dict(no_such_option=1),
        dict(config=RulesConfig(num_seats=3), num_seats=3),
        dict(config={"num_seats": 3}),
        dict(reward="money"),
        dict(reward_scale=0),
        dict(reward_scale=float("nan")),
        dict(render_mode="video"),
        dict(illegal_action="ignore"),
    ]
    for kwargs in bad:
        with pytest.raises(ValueError):
            raw_env(**kwargs)


def test_pickle_round_trip():
    e = pickle.loads(pickle.dumps(raw_env(num_seats=3, reward="rank")))
    assert e.config.num_seats == 3 and e.reward_mode == "rank"


def test_discrete_actions_contains_matches_discrete():
    ours, theirs = DiscreteActions(10), spaces.Discrete(10)
    values = [-1, 0, 3, 9, 10, 2**70, True, False, 2.0, None, "3", [4]]
    values += [np.int8(3), np.int64(12), np.uint8(9), np.array(4), np.array([4])]
    for v in values:
        assert ours.contains(v) == theirs.contains(v), v
    assert ours == theirs


# ============================================================================ masks and turns
@pytest.mark.parametrize("name", list(CONFIGS))
def test_mask_equals_core_legal_moves(name):
    """At every step: the acting agent's mask is exactly the core's legal moves through
    codec.to_action, agent_selection follows match.state.seat, other agents see zeros."""
    rng = random.Random(name)
    e = raw_env(**CONFIGS[name])
    codec, n = e.codec, e.config.num_seats
    for game in range(5):
        e.reset(seed=game)
        steps = 0
        for _ in game_steps():
            if e.match.is_over:
                break
            state = e.match.state
            seat = state.seat
            agent = e.agent_selection
            assert agent == f"player_{seat}"
            mask = e.observe(agent)["action_mask"]
            expected = sorted(codec.to_action(m, seat) for m in state.legal_moves())
            assert np.flatnonzero(mask).tolist() == expected
            if steps % 7 == 0:
                other = f"player_{(seat + 1 + steps % (n - 1)) % n}"
                assert not e.observe(other)["action_mask"].any()
            e.step(expected[rng.randrange(len(expected))])
            steps += 1
        assert all(e.terminations.values())
        for a in e.possible_agents:
            assert not e.observe(a)["action_mask"].any()


def test_same_agent_acts_several_times_in_a_row():
    config = RulesConfig(num_seats=3, max_pip=6, hand_size=2, num_rounds=1)
    deal = make_deal(6, [[(6, 1), (1, 2)], [(6, 3), (3, 0)], [(2, 5), (4, 4)]])
    e = raw_env(config=config)
    e.reset(options={"deal": deal})
    e.step(own(e.codec, (6, 1)))
    assert e.agent_selection == "player_0"  # R11: the free first turn goes on
    e.step(own(e.codec, (1, 2)))
    assert e.agent_selection == "player_1"


# ============================================================================ illegal actions
def test_illegal_action_raises_naming_it_and_the_legal_ones():
    for e in (raw_env(num_seats=4), env(num_seats=4)):
        e.reset(seed=1)
        obs = e.observe(e.agent_selection)
        legal = np.flatnonzero(obs["action_mask"]).tolist()
        illegal = next(a for a in range(e.unwrapped.encoder.num_actions) if a not in legal)
        before = obs["observation"].copy()
        with pytest.raises(ValueError) as info:
            e.step(illegal)
        assert isinstance(info.value, IllegalMoveError)
        msg = str(info.value)
        assert f"action {illegal} " in msg and e.agent_selection in msg
        for a in legal:
            assert f"{a} (" in msg
        # nothing happened
        assert np.array_equal(e.observe(e.agent_selection)["observation"], before)
        e.step(legal[0])


def test_non_integer_actions_raise_value_error():
    e = raw_env(num_seats=2)
    e.reset(seed=0)
    for bad in (1.0, True, None, "3", [1], np.array([1])):
        with pytest.raises(ValueError):
            e.step(bad)
    for out_of_range in (-1, e.encoder.num_actions):
        with pytest.raises(ValueError, match="not an action"):
            e.step(out_of_range)
    legal = int(np.flatnonzero(e.observe(e.agent_selection)["action_mask"])[0])
    e.step(np.int32(legal))  # numpy integers are fine
    wrapped = env(num_seats=2)
    wrapped.reset(seed=0)
    with pytest.raises(AssertionError):  # AssertOutOfBoundsWrapper, before the env
        wrapped.step(wrapped.unwrapped.encoder.num_actions)


def test_dead_agents_step_none_and_leave():
    e = env(num_seats=3, num_rounds=1)
    e.reset(seed=2)
    rng = random.Random(2)
    for _ in game_steps():
        if e.terminations[e.agent_selection]:
            break
        e.step(random_action(e.last()[0], rng))
    assert all(e.terminations.values()) and len(e.agents) == 3
    with pytest.raises(ValueError):
        e.step(0)  # a terminated agent may only step None
    left = []
    while e.agents:
        left.append(e.agent_selection)
        e.step(None)
    assert sorted(left) == ["player_0", "player_1", "player_2"]


# ============================================================================ no leak
def _hidden_variant(config, deal, moves, seats, observer, rng):
    """``deal`` with the tiles the observer never sees shuffled among their places.

    Fixed: the observer's hand, every tile played in ``moves``, and the boneyard places
    the observer draws from. Everything else in other hands or the boneyard moves.
    """
    ts = tile_set(config.max_pip)
    n = config.num_seats
    played = set()
    observer_draws = 0
    draws_seen = 0
    observer_draw_slots = set()
    for move, seat in zip(moves, seats, strict=True):
        if move == ts.num_tiles * (n + 1):  # draw: the next boneyard slot
            if seat == observer:
                observer_draw_slots.add(draws_seen)
                observer_draws += 1
            draws_seen += 1
        elif move < ts.num_tiles * (n + 1):
            played.add(ts.tiles[move // (n + 1)])
    slots = []  # (where, index) of every tile that may move
    for k in range(n):
        if k != observer:
            slots += [(k, i) for i, t in enumerate(deal.hands[k]) if t not in played]
    slots += [
        ("b", i)
        for i, t in enumerate(deal.boneyard)
        if t not in played and i not in observer_draw_slots
    ]
    hands = [list(h) for h in deal.hands]
    boneyard = list(deal.boneyard)

    def get(slot):
        return boneyard[slot[1]] if slot[0] == "b" else hands[slot[0]][slot[1]]

    tiles = [get(s) for s in slots]
    rng.shuffle(tiles)
    for (where, i), t in zip(slots, tiles, strict=True):
        if where == "b":
            boneyard[i] = t
        else:
            hands[where][i] = t
    return Deal(hands=hands, boneyard=boneyard, engine=deal.engine, start_seat=deal.start_seat)


@pytest.mark.parametrize(
    "options",
    [
        dict(num_seats=4, num_rounds=1),
        dict(num_seats=3, num_rounds=1, first_turn="single", dead_doubles=False),
        dict(num_seats=2, num_rounds=1, engine_source="aside", first_turn="draw"),
    ],
)
def test_no_leak_hidden_tiles_never_change_an_observation(options):
    """Two deals differing only in what the observer cannot see (other hands, boneyard
    order), played with the same moves: the observer's observation and mask are equal at
    every step both games share (until a move is illegal in one, which public play would
    reveal)."""
    rng = random.Random(repr(options))
    config = RulesConfig(**options)
    compared = differing = 0
    for trial in range(12):
        observer = trial % config.num_seats
        deal_a = random_deal(config, random.Random(trial), config.first_engine)
        a = raw_env(config=config)
        a.reset(seed=0, options={"deal": deal_a})
        moves, seats, obs_a = [], [], []
        for _ in game_steps():
            if a.match.is_over:
                break
            obs_a.append(a.observe(f"player_{observer}"))
            seat = a.match.state.seat
            action = random_action(a.observe(a.agent_selection), rng)
            moves.append(a.codec.to_move(action, seat))
            seats.append(seat)
            a.step(action)
        deal_b = _hidden_variant(config, deal_a, moves, seats, observer, rng)
        assert deal_b.hands[observer] == deal_a.hands[observer]
        differing += deal_b != deal_a
        b = raw_env(config=config)
        b.reset(seed=0, options={"deal": deal_b})
        for step, (move, seat) in enumerate(zip(moves, seats, strict=True)):
            ob = b.observe(f"player_{observer}")
            assert np.array_equal(ob["observation"], obs_a[step]["observation"]), (trial, step)
            assert np.array_equal(ob["action_mask"], obs_a[step]["action_mask"]), (trial, step)
            compared += 1
            if b.match.state.seat != seat or move not in b.match.legal_moves():
                break  # the hidden tiles now change public play: histories part here
            b.step(b.codec.to_action(move, seat))
    assert differing >= 8
    assert compared >= 150


# ============================================================================ seeding, deals
def _trajectory(e, seed, steps=120):
    e.reset(seed=seed)
    rng = random.Random(seed)
    out = []
    for _ in range(steps):
        obs = e.observe(e.agent_selection)
        out.append((e.agent_selection, obs["observation"].tobytes()))
        e.step(random_action(obs, rng))
    return out


def test_reset_seed_is_reproducible():
    e1, e2 = raw_env(num_seats=4), raw_env(num_seats=4)
    assert _trajectory(e1, 7) == _trajectory(e2, 7)
    assert _trajectory(e1, 7) != _trajectory(e1, 8)
    # seed None continues the env's own generator, reproducibly after a seeded reset
    e1.reset(seed=3)
    e2.reset(seed=3)
    e1.reset()
    e2.reset()
    assert [e1.match.state.hand(k) for k in range(4)] == [e2.match.state.hand(k) for k in range(4)]
    e3 = raw_env(num_seats=4)
    e3.reset(seed=3)
    assert e3.match.state.hand(0) != e1.match.state.hand(0)


def test_later_rounds_after_an_explicit_deal_are_reproducible_from_the_seed():
    """reset(seed, options={"deal": d}) fixes round 1; round 2 is dealt from the seed, so
    the same seed gives the same round 2 and another seed (almost surely) another."""
    config = RulesConfig(num_seats=3, max_pip=6, hand_size=2, num_rounds=2)
    deal = make_deal(6, [[(6, 1), (1, 2)], [(6, 3), (0, 0)], [(2, 5), (4, 4)]], start_seat=1)

    def second_round(seed: int) -> list:
        e = raw_env(config=config)
        e.reset(seed=seed, options={"deal": deal})
        for _ in range(1_000):  # round 1 is short: a handful of moves
            if e.match.round_index == 1:
                return [e.match.state.hand(k) for k in range(3)] + [e.match.state.boneyard]
            e.step(sorted(np.flatnonzero(e.observe(e.agent_selection)["action_mask"]))[0])
        raise AssertionError("round 1 did not end")

    assert second_round(4) == second_round(4)
    assert len({str(second_round(s)) for s in range(5)}) > 1


def test_explicit_deal_via_options():
    config = RulesConfig(num_seats=3, max_pip=6, hand_size=2, num_rounds=2)
    deal = make_deal(6, [[(6, 1), (1, 2)], [(6, 3), (0, 0)], [(2, 5), (4, 4)]], start_seat=1)
    e = raw_env(config=config)
    e.reset(options={"deal": deal})
    st = e.match.state
    assert [st.hand(k) for k in range(3)] == [[(1, 2), (1, 6)], [(0, 0), (3, 6)], [(2, 5), (4, 4)]]
    assert st.boneyard == list(deal.boneyard) and e.agent_selection == "player_1"
    # a mapping works too, and "deals" fixes several rounds
    mapping = {"hands": deal.hands, "boneyard": deal.boneyard, "engine": 6, "start_seat": 2}
    e.reset(options={"deal": mapping})
    assert e.agent_selection == "player_2"
    deal2 = make_deal(6, [[(1, 3), (2, 6)], [(0, 4), (4, 6)], [(5, 2), (2, 3)]], engine=5)
    e.reset(options={"deals": [deal, deal2]})
    assert e.match.state.hand(0) == [(1, 2), (1, 6)]
    with pytest.raises(ValueError):
        e.reset(options={"deal": deal, "deals": [deal]})
    with pytest.raises(ValueError):
        e.reset(options={"deal": deal2})  # round 1's engine is 6 (R5)
    with pytest.raises(ValueError):
        e.reset(options={"deal": make_deal(6, [[(6, 1)], [(6, 3)]])})  # two hands for 3 seats
    e.reset(options={"options": 1})  # unknown keys are ignored (api_test passes one)


# ============================================================================ rewards
SCRIPT_CONFIG = dict(num_seats=3, max_pip=6, hand_size=2, num_rounds=2)
ROUND1 = make_deal(6, [[(6, 1), (1, 2)], [(6, 3), (0, 0)], [(2, 5), (4, 4)]])
ROUND2 = make_deal(6, [[(1, 3), (2, 6)], [(0, 4), (4, 6)], [(5, 2), (2, 3)]], engine=5)


def _play_script(e):
    """Round 1 (engine 6): seat 0 plays 6|1, 1|2 and is out in its free first turn; seat 1
    plays 6|3 then passes (0|0 left: 50); seat 2 cannot join and passes (2|5, 4|4: 15);
    the round ends after seat 2's first turn (R24). Round 2 (engine 5): seats 0 and 1
    pass (1|3 2|6 = 12, 0|4 4|6 = 14); seat 2 plays 5|2, 2|3 and is out; match over.

    Returns the rewards dicts seen after each round's last move, and each agent's
    ``last()`` reward just before it next acts / after the match."""
    c = e.codec
    e.reset(options={"deals": [ROUND1, ROUND2]})
    for tile in [(6, 1), (1, 2)]:
        e.step(own(c, tile))
    e.step(own(c, (6, 3)))
    e.step(c.pass_)
    e.step(c.pass_)  # seat 2: the round ends
    round1 = dict(e.rewards)
    infos1 = {a: dict(i) for a, i in e.infos.items()}
    seen = {"player_0": e.last()[1]}  # seat 0 starts round 2
    e.step(c.pass_)
    assert e.rewards == {a: 0.0 for a in e.agents} and not e.infos["player_1"]["round_ended"]
    seen["player_1"] = e.last()[1]
    e.step(c.pass_)
    seen["player_2"] = e.last()[1]
    e.step(own(c, (5, 2)))
    e.step(own(c, (2, 3)))
    assert e.match.is_over and all(e.terminations.values())
    final = dict(e.rewards)
    cumulative = dict(e._cumulative_rewards)
    return round1, infos1, seen, final, cumulative


# seats:                      0       1       2
EXPECTED = {
    "score": (
        [0.0, -0.50, -0.15],  # round 1: -0.01 x (0, 50, 15)
        [-0.12, -0.14, 0.0],  # round 2: -0.01 x (12, 14, 0)
    ),
    "score_zero_sum": (
        [0.325, -0.425, 0.10],  # v - mean(others): 0 - (-0.65/2), -0.5 - (-0.15/2), ...
        [-0.05, -0.08, 0.13],
    ),
    "lead": (  # change of v_k - max over other seats of v_j, v = -match total x 0.01
        [0.15, -0.50, -0.15],  # leads after round 1: 0 - (-0.15), -0.5 - 0, -0.15 - 0
        [-0.12, -0.02, 0.12],  # leads after round 2: 0.03, -0.52, -0.03 (totals 12, 64, 15)
    ),
    "rank": ([0.0, 0.0, 0.0], [1.0, -1.0, 0.0]),  # totals 12, 64, 15: places 1, 3, 2
    "win": ([0.0, 0.0, 0.0], [1.0, 0.0, 0.0]),
}


@pytest.mark.parametrize("mode", list(EXPECTED))
def test_rewards_scripted_match(mode):
    e = raw_env(reward=mode, **SCRIPT_CONFIG)
    round1, infos1, seen, final, cumulative = _play_script(e)
    r1, r2 = EXPECTED[mode]
    agents = e.possible_agents
    assert [round1[a] for a in agents] == pytest.approx(r1)
    assert [final[a] for a in agents] == pytest.approx(r2)
    # the round-1 reward reached seats 0 and 1 although seat 2 made the last move
    assert seen["player_0"] == pytest.approx(r1[0])
    assert seen["player_1"] == pytest.approx(r1[1])
    assert seen["player_2"] == pytest.approx(r1[2])
    # seat 2 acted last in both rounds; seats 0 and 1 still hold their round-2 rewards
    assert [cumulative[a] for a in agents] == pytest.approx(r2)
    if mode in ("score_zero_sum", "rank"):
        assert sum(r1) == pytest.approx(0) and sum(r2) == pytest.approx(0)
    first = infos1["player_0"]
    assert first["round_ended"] and first["round_index"] == 0
    assert first["round_scores"].tolist() == [0, 50, 15]
    assert first["round_out_seats"].tolist() == [True, False, False]  # seat 0 went out
    assert first["totals"].tolist() == [0, 50, 15]
    info = e.infos["player_1"]
    assert info["round_ended"] and info["round_index"] == 1
    assert info["round_scores"].tolist() == [12, 14, 0]
    assert info["totals"].tolist() == [12, 64, 15] and info["places"].tolist() == [1, 3, 2]


def test_rewards_scale_and_positive_scoring():
    e = raw_env(reward="score", reward_scale=1.0, scoring="positive", **SCRIPT_CONFIG)
    round1, _, _, final, _ = _play_script(e)
    # V-positive-score: the seat that went out receives the others' R26 scores
    assert list(round1.values()) == [65.0, 0.0, 0.0]
    assert list(final.values()) == [0.0, 0.0, 26.0]
    e = raw_env(reward="score_zero_sum", scoring="positive", **SCRIPT_CONFIG)
    round1, _, _, final, _ = _play_script(e)
    assert list(round1.values()) == pytest.approx([0.65, -0.325, -0.325])
    assert list(final.values()) == pytest.approx([-0.13, -0.13, 0.26])


@pytest.mark.parametrize("mode,expected", [("rank", [0.5, 0.5, -1.0]), ("win", [0.5, 0.5, 0.0])])
def test_match_rewards_share_tied_places(mode, expected):
    """Seats 0 and 1 both go out in their free first turns (R24): totals 0, 0, 15, tied
    on every R28 key, places 1, 1, 3."""
    config = RulesConfig(num_seats=3, max_pip=6, hand_size=2, num_rounds=1)
    e = raw_env(config=config, reward=mode)
    e.reset(options={"deal": make_deal(6, [[(6, 1), (1, 2)], [(6, 3), (3, 0)], [(2, 5), (4, 4)]])})
    for tile in [(6, 1), (1, 2), (6, 3), (3, 0)]:
        e.step(own(e.codec, tile))
    e.step(e.codec.pass_)
    assert e.match.places() == [1, 1, 3]
    assert list(e.rewards.values()) == pytest.approx(expected)


@pytest.mark.parametrize("mode", ["score_zero_sum", "rank"])
def test_zero_sum_modes_sum_to_zero_in_random_matches(mode):
    rng = random.Random(mode)
    e = raw_env(num_seats=5, num_rounds=3, reward=mode)
    e.reset(seed=4)
    ends = 0
    for _ in game_steps():
        if e.match.is_over:
            break
        e.step(random_action(e.observe(e.agent_selection), rng))
        if any(e.rewards.values()):
            ends += 1
            assert sum(e.rewards.values()) == pytest.approx(0, abs=1e-9)
    assert ends >= 1


# ============================================================================ render
def test_render_ansi_and_human(capsys):
    e = env(render_mode="ansi", **SCRIPT_CONFIG)
    e.reset(options={"deals": [ROUND1, ROUND2]})
    c = e.unwrapped.codec
    text = e.render()
    assert "round 1 of 2" in text and "engine 6|6" in text
    assert "Seat 0 to act (free first turn" in text
    assert "Seat 0's hand (2): 1|2 1|6" in text
    assert "Boneyard: 21 tiles" in text
    for tile in [(6, 1), (1, 2)]:
        e.step(own(c, tile))
    e.step(own(c, (6, 3)))
    text = e.render()
    assert "6|1 1|2" in text  # seat 0's train in chain order from the engine
    assert "6|3" in text and "Seat 1's hand (1): 0|0" in text
    assert "Hands: seat 0 0, seat 1 1, seat 2 2 tiles" in text
    e.step(c.pass_)
    e.step(c.pass_)  # seat 2: round 1 is over and round 2 is dealt at once
    e.step(c.pass_)  # seat 0 passes: marked (R13)
    text = e.render()
    assert "round 2 of 2" in text and "engine 5|5" in text
    assert "Scores so far: seat 0 0, seat 1 50, seat 2 15" in text
    line0 = next(line for line in text.splitlines() if line.strip().startswith("seat 0 "))
    assert "*" in line0 and "(empty)" in line0
    e.step(c.pass_)
    e.step(own(c, (5, 2)))
    e.step(own(c, (2, 3)))
    text = e.render()
    assert "Match over" in text and "Places: seat 0 1, seat 1 3, seat 2 2" in text

    h = env(render_mode="human", num_seats=2)
    h.reset(seed=0)
    h.render()
    assert "Mexican Train - round 1 of 10" in capsys.readouterr().out


def test_render_open_doubles():
    rng = random.Random(9)
    e = raw_env(num_seats=4, render_mode="ansi")
    for seed in range(20):
        e.reset(seed=seed)
        for _ in game_steps():
            if e.match.is_over:
                break
            st = e.match.state
            if st.open_doubles and not st.in_free_first_turn:
                text = e.render()
                for tr in st.open_doubles:
                    end = st.open_end(tr)
                    where = "Mexican" if tr == 4 else f"seat {tr}"
                    assert f"{end}|{end} on {where}" in text
                if st.restricting_train is not None:
                    assert "(restricts" in text
                return
            e.step(random_action(e.observe(e.agent_selection), rng))
    pytest.fail("no open double in 20 random matches")
