"""Gymnasium and PettingZoo conventions: one info structure, reproducible resets with
any opponents, the parallel API, ``state()``, pictures, ``gymnasium.make`` ids, vector
envs and the policy-features wrapper.

Whole games are played at 2 and 4 seats with small or one-round matches so the file runs
in seconds.
"""

from __future__ import annotations

import random
import subprocess
import sys
from pathlib import Path

import gymnasium
import numpy as np
import pytest
from conftest import game_steps
from gymnasium.utils.env_checker import check_env
from pettingzoo.test import api_test, parallel_api_test, parallel_seed_test, render_test

from mt_env import MexicanTrainGymEnv, RulesConfig
from mt_env.aec import INFO_KEYS, env, parallel_env, raw_env
from mt_env.agents import make_agent
from mt_env.gym_env import ENV_ID, FEATURES_ENV_ID
from mt_env.picture import frame_size
from mt_env.wrappers import PolicyFeatures

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

SEATS = {
    2: dict(num_seats=2, num_rounds=2),
    4: dict(num_seats=4, num_rounds=2, max_pip=9, hand_size=8),
}


def pick(mask, rng) -> int:
    legal = np.flatnonzero(mask)
    return int(legal[rng.randrange(len(legal))]) if len(legal) else 0


def structure(info: dict) -> dict:
    """What must not change between steps: keys, and each value's type, shape, dtype."""
    return {
        k: (type(v).__name__, getattr(v, "shape", None), str(getattr(v, "dtype", "")))
        for k, v in info.items()
    }


# ============================================================================ infos
@pytest.mark.parametrize("seats", list(SEATS))
def test_aec_and_parallel_infos_have_one_structure_every_step(seats):
    n = seats
    e = raw_env(**SEATS[seats])
    rng = random.Random(seats)
    shapes = {"round_scores": (n,), "round_out_seats": (n,), "totals": (n,), "places": (n,)}
    shapes["action_mask"] = (e.encoder.num_actions,)
    expected = None
    ends = steps = 0
    for game in range(2):
        e.reset(seed=game)
        while e.agents:
            agent = e.agent_selection
            for a, info in e.infos.items():
                assert tuple(info) == INFO_KEYS
                s = structure(info)
                expected = expected or s
                assert s == expected, (a, s)
                for k, shape in shapes.items():
                    assert info[k].shape == shape and info[k].ndim == 1
                assert info["to_act"] == (a == agent and not e.terminations[a])
                assert info["to_act"] or not info["action_mask"].any()
                for k, v in e.infos[agent].items():  # the round's part: the same for all
                    if k not in ("to_act", "action_mask"):
                        assert np.array_equal(info[k], v), (a, k)
            # every agent its own dict (the env rebuilds only those that change per move)
            assert len({id(i) for i in e.infos.values()}) == len(e.infos)
            obs, _, term, trunc, info = e.last()
            assert np.array_equal(info["action_mask"], obs["action_mask"])
            ends += info["round_ended"]
            if info["round_ended"]:
                result = e.match.results[info["round_index"]]
                assert info["round_scores"].tolist() == list(result.scores)
                assert np.flatnonzero(info["round_out_seats"]).tolist() == sorted(result.out_seats)
            assert info["totals"].sum() == sum(sum(r.scores) for r in e.match.results)
            e.step(None if term or trunc else pick(obs["action_mask"], rng))
            steps += 1
    assert ends >= 2 and steps > 50
    assert expected["round_ended"][0] == "bool" and expected["round_index"][0] == "int"
    assert expected["round_scores"][2] == "int64" and expected["action_mask"][2] == "int8"

    p = parallel_env(**SEATS[seats])
    obs, infos = p.reset(seed=0)
    while p.agents:
        for info in infos.values():
            assert structure(info) == expected
        actor = next(a for a, i in infos.items() if i["to_act"])
        obs, _, _, _, infos = p.step({actor: pick(obs[actor]["action_mask"], rng)})


@pytest.mark.parametrize("seats", list(SEATS))
def test_gym_infos_have_one_structure_every_step(seats):
    n = seats
    rng = random.Random(seats)
    expected = None
    ended = 0
    for mode in ("terminate", "penalize"):
        g = MexicanTrainGymEnv(learner_seat="random", illegal_action=mode, **SEATS[seats])
        for game in range(2):
            obs, info = g.reset(seed=game)
            infos = [info]
            terminated = False
            step = 0
            for _ in game_steps():
                if terminated:
                    break
                if game == 1 and step == 3:  # an illegal action on the way
                    action = int(np.flatnonzero(obs["action_mask"] == 0)[0])
                else:
                    action = pick(obs["action_mask"], rng)
                obs, _, terminated, _, info = g.step(action)
                assert np.array_equal(info["action_mask"], obs["action_mask"])
                assert info["action_mask"] is not obs["action_mask"]
                infos.append(info)
                step += 1
            for info in infos:
                assert tuple(info) == (*INFO_KEYS, "seat")
                s = structure(info)
                expected = expected or s
                assert s == expected
                assert info["round_scores"].shape == (n,) and info["totals"].shape == (n,)
            ended += sum(i["round_ended"] for i in infos)
            assert infos[-1]["illegal_action"] == (game == 1 and mode == "terminate")
    assert ended >= 3


# ============================================================================ seeding
@pytest.mark.parametrize("seats", [2, 4])
def test_reset_seed_replays_the_episode_with_agent_opponents(seats):
    """Two resets with one seed give the same observations and rewards for the same
    learner actions, though the opponents (which draw from their own generators) played
    another episode in between: each reset reseeds and resets them."""
    config = RulesConfig(**SEATS[seats])
    specs = ["search", "longest-train", "random"][: seats - 1]
    opponents = [make_agent(spec, config, seed=100 + i) for i, spec in enumerate(specs)]
    g = MexicanTrainGymEnv(config=config, opponents=opponents)

    def episode(seed):
        obs, info = g.reset(seed=seed)
        out = [obs["observation"].tobytes()]
        terminated = False
        for _ in game_steps():
            if terminated:
                break
            obs, reward, terminated, _, info = g.step(int(np.flatnonzero(obs["action_mask"])[-1]))
            out.append((obs["observation"].tobytes(), reward, info["totals"].tolist()))
        return out

    first = episode(7)
    other = episode(8)
    assert episode(7) == first != other
    # a plain callable is left alone (documented): only Agent-like objects are reseeded
    calls = []
    g = MexicanTrainGymEnv(opponents=lambda o, m: calls.append(1) or pick(m, random), num_seats=2)
    g.reset(seed=0)
    assert not hasattr(g._policies[0], "seed")


def test_opponent_agents_get_distinct_seeds_and_are_reset():
    class Spy:
        def __init__(self):
            self.seeds, self.resets = [], 0

        def seed(self, s):
            self.seeds.append(s)

        def reset(self):
            self.resets += 1

        def __call__(self, observation, action_mask):
            return int(np.flatnonzero(action_mask)[0])

    spies = [Spy(), Spy(), Spy()]
    g = MexicanTrainGymEnv(opponents=spies, num_seats=4, num_rounds=1)
    g.reset(seed=3)
    g.reset(seed=3)
    g.reset()
    firsts = [s.seeds[0] for s in spies]
    assert len(set(firsts)) == 3 and all(isinstance(x, int) for x in firsts)
    assert all(s.seeds[0] == s.seeds[1] != s.seeds[2] for s in spies)
    assert all(s.resets == 3 for s in spies)
    shared = Spy()  # one object for every seat: seeded and reset once per reset
    MexicanTrainGymEnv(opponents=shared, num_seats=4).reset(seed=0)
    assert len(shared.seeds) == 1 and shared.resets == 1


# ============================================================================ parallel API
@pytest.mark.parametrize("seats", list(SEATS))
def test_parallel_api(seats):
    parallel_api_test(parallel_env(**SEATS[seats]), num_cycles=1000)


def test_parallel_env_plays_the_aec_game_and_only_the_actor_moves():
    kwargs = dict(num_seats=3, num_rounds=2)
    a, p = raw_env(**kwargs), parallel_env(**kwargs)
    a.reset(seed=5)
    obs, infos = p.reset(seed=5)
    rng = random.Random(5)
    while p.agents:
        actor = a.agent_selection
        assert infos[actor]["to_act"] and sum(i["to_act"] for i in infos.values()) == 1
        for agent in p.agents:
            assert np.array_equal(obs[agent]["observation"], a.observe(agent)["observation"])
        action = pick(obs[actor]["action_mask"], rng)
        others = {x: 0 for x in p.agents if x != actor}  # ignored
        obs, rewards, terms, truncs, infos = p.step({**others, actor: action})
        a.step(action)
        assert rewards == {x: a.rewards[x] for x in rewards}
        assert set(terms) == set(truncs) == set(a.possible_agents)
    assert a.match.is_over and all(a.terminations.values())
    assert np.array_equal(p.state(), a.state())
    with pytest.raises(RuntimeError):
        p.step({})
    p.reset(seed=0)
    with pytest.raises(ValueError, match="is to act"):
        p.step({x: 0 for x in p.agents if x != p.aec.agent_selection})


def test_illegal_action_terminate_mode_aec_and_parallel():
    e = env(num_seats=3, num_rounds=1, illegal_action="terminate", illegal_reward=-2.0)
    e.reset(seed=1)
    obs, *_ = e.last()
    actor = e.agent_selection
    illegal = int(np.flatnonzero(obs["action_mask"] == 0)[0])
    e.step(illegal)
    assert all(e.terminations.values())
    assert e.rewards[actor] == -2.0 and sum(e.rewards.values()) == -2.0
    for info in e.infos.values():
        assert info["illegal_action"] and not info["to_act"] and not info["action_mask"].any()
    assert e.unwrapped.match.state.turns_completed == 0  # nothing was played
    while e.agents:
        e.step(None)
    api_test(env(num_seats=3, num_rounds=1, illegal_action="terminate"), num_cycles=300)
    # unmasked random actions, as PettingZoo's parallel seed test samples them
    parallel_seed_test(lambda: parallel_env(num_seats=3, illegal_action="terminate"))


# ============================================================================ state
@pytest.mark.parametrize("seats", list(SEATS))
def test_state_holds_the_true_hidden_tiles(seats):
    n = seats
    e = env(**SEATS[seats])
    u = e.unwrapped
    space, enc = e.state_space, u.state_encoder
    assert isinstance(space, gymnasium.spaces.Box) and space.shape == (enc.size,)
    assert (space.low == 0).all() and (space.high >= 1).all()
    rng = random.Random(seats)
    t = u.config.num_tiles
    checked = 0
    for game in range(2):
        e.reset(seed=game)
        while e.agents:
            state_vec = e.state()
            assert state_vec.dtype == np.float32 and space.contains(state_vec)
            v = enc.unpack(state_vec)
            st, match = u.match.state, u.match
            for k in range(n):
                assert np.flatnonzero(v["hands"][k]).tolist() == st.tiles.ids_in(st.hand_mask(k))
                assert v["hand_values"][k] == pytest.approx(st.hand_value(k) / 100)
            bone = list(st.boneyard_ids)
            assert np.flatnonzero(v["boneyard"]).tolist() == sorted(bone)
            order = np.argsort(-v["boneyard_order"])[: len(bone)].tolist()
            assert order == bone  # the draw order, next tile first
            assert np.flatnonzero(v["table"]).tolist() == st.tiles.ids_in(st.table_mask)
            drawn = st.drawn_tile
            expect_drawn = [] if drawn is None or match.is_over else [st.tiles.id_of(drawn)]
            assert np.flatnonzero(v["drawn_tile"]).tolist() == expect_drawn
            acting = [] if match.is_over else [st.seat]
            assert np.flatnonzero(v["seat_to_act"]).tolist() == acting
            assert v["match_over"][0] == match.is_over
            for tr in range(n + 1):
                assert v["train_end"][tr].argmax() == st.open_end(tr)
            assert np.rint(v["scores"] * 100).tolist() == match.totals
            # every tile is in exactly one place: a hand, the boneyard or the table
            assert (v["hands"].sum(0) + v["boneyard"] + v["table"] == 1).all()
            assert v["hands"].shape == (n, t)
            checked += 1
            obs, _, term, trunc, _ = e.last()
            e.step(None if term or trunc else pick(obs["action_mask"], rng))
    assert checked > 50
    p = parallel_env(**SEATS[seats])
    p.reset(seed=0)
    assert p.state_space is p.aec.state_space and p.state_space.contains(p.state())


# ============================================================================ pictures
def test_render_test_and_pictures():
    render_test(lambda render_mode=None: env(num_seats=3, num_rounds=1, render_mode=render_mode))
    e = raw_env(num_seats=4, num_rounds=1, render_mode="rgb_array")
    blank = e.render()  # before reset: an empty table of the same size
    h, w = frame_size(e.config)
    assert blank.shape == (h, w, 3) and blank.dtype == np.uint8
    e.reset(seed=2)
    rng = random.Random(2)
    frames = [e.render()]
    for _ in game_steps():
        if e.match.is_over:
            break
        e.step(pick(e.observe(e.agent_selection)["action_mask"], rng))
        if e.match.state.turns_completed % 12 == 0 or e.match.is_over:
            frames.append(e.render())
    assert all(f.shape == (h, w, 3) and f.dtype == np.uint8 for f in frames)
    assert len({f.tobytes() for f in frames}) == len(frames) >= 3
    assert frames[-1].std() > 20  # a real picture, not a flat canvas
    # a double-18 set draws numbers; a Gym picture shows the learner's hand
    big = raw_env(num_seats=14, num_rounds=1, render_mode="rgb_array")
    big.reset(seed=0)
    assert big.render().shape == (*frame_size(big.config), 3)
    g = MexicanTrainGymEnv(num_seats=2, learner_seat=1, render_mode="rgb_array")
    g.reset(seed=0)
    assert g.render().shape == (*frame_size(g.config), 3)


# ============================================================================ gymnasium.make
def test_gymnasium_make_in_a_fresh_interpreter():
    """After only ``import gymnasium`` the "module:id" form imports and registers the env;
    then the plain id works, with seats as kwargs; ``import mt_env`` alone registers
    nothing and loads no gymnasium; ``from mt_env import env`` still builds an env after
    the env modules were imported."""
    code = """
import sys
import mt_env
assert "gymnasium" not in sys.modules
import gymnasium
assert "mt_env/MexicanTrain-v1" not in gymnasium.registry
e = gymnasium.make("mt_env.gym_env:mt_env/MexicanTrain-v1", num_seats=2)
obs, info = e.reset(seed=0)
obs, reward, terminated, truncated, info = e.step(int(obs["action_mask"].argmax()))
assert e.unwrapped.config.num_seats == 2 and not info["illegal_action"]
e = gymnasium.make("mt_env/MexicanTrain-v1", num_seats=3, render_mode="ansi")
e.reset(seed=1)
assert e.unwrapped.config.num_seats == 3 and "Seat" in e.render()
from mt_env import env  # the factory, even after mt_env.aec and mt_env.gym_env were imported
e = env(num_seats=2)
e.reset(seed=0)
assert type(e.unwrapped).__name__ == "raw_env"
print("ok")
"""
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr


def test_sync_vector_env_with_masks_from_infos():
    vec = gymnasium.make_vec(
        ENV_ID, num_envs=3, vectorization_mode="sync", num_seats=2, num_rounds=1
    )
    obs, infos = vec.reset(seed=0)
    rng = random.Random(0)
    dones = 0
    for _ in range(80):
        masks = infos["action_mask"]
        assert masks.shape == (3, vec.single_action_space.n) and masks.dtype == np.int8
        assert np.array_equal(masks, obs["action_mask"])
        obs, rewards, terms, truncs, infos = vec.step([pick(m, rng) for m in masks])
        assert infos["round_scores"].shape == (3, 2) and not truncs.any()
        dones += terms.sum()
    assert dones >= 1  # autoreset went through a terminated episode
    vec.close()
    direct = gymnasium.vector.SyncVectorEnv(
        [lambda: MexicanTrainGymEnv(num_seats=4, num_rounds=1) for _ in range(2)]
    )
    obs, _ = direct.reset(seed=1)
    for _ in range(5):
        obs, *_ = direct.step([pick(m, rng) for m in obs["action_mask"]])
    direct.close()


# ============================================================================ features
def test_policy_features_wrapper():
    from mt_env.agents.features import layout, make_featurizer

    for features in ("pairs", "planning"):
        g = PolicyFeatures(MexicanTrainGymEnv(num_seats=2, num_rounds=2), features=features)
        space = g.observation_space["observation"]
        assert space.shape == (layout(g.unwrapped.config, features)["input_size"],)
        featurizer = make_featurizer(g.unwrapped.config, features)
        draw = g.unwrapped.codec.draw
        for seed in range(2):
            obs, info = g.reset(seed=seed)
            terminated = False
            for _ in game_steps():
                if terminated:
                    break
                assert g.observation_space.contains(obs), features
                raw = g.unwrapped.aec.observe(g.unwrapped._agent)["observation"]
                assert np.array_equal(obs["observation"], featurizer(raw[None])[0])
                mask = obs["action_mask"]
                # prefer drawing: hands grow past the deal, pushing the counted features
                action = draw if mask[draw] else int(np.flatnonzero(mask)[0])
                obs, _, terminated, _, info = g.step(action)
    check_env(PolicyFeatures(MexicanTrainGymEnv(num_seats=2)))
    made = gymnasium.make(FEATURES_ENV_ID, num_seats=2, features="planning")
    obs, _ = made.reset(seed=0)
    assert made.observation_space.contains(obs)
