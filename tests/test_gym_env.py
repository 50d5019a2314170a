"""The single-agent Gymnasium wrapper (mt_env.MexicanTrainGymEnv)."""

from __future__ import annotations

import random

import gymnasium
import numpy as np
import pytest
from conftest import game_steps, make_deal
from gymnasium.utils.env_checker import check_env

from mt_env import IllegalMoveError, MexicanTrainGymEnv, RulesConfig
from mt_env.rewards import REWARD_MODES, match_rewards, round_rewards
from mt_env.tiles import tile_set

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


def first_legal(obs):
    return int(np.flatnonzero(obs["action_mask"])[0])


def test_gymnasium_check_env_passes_on_the_default_wrapper():
    """check_env steps with unmasked ``action_space.sample()`` — once sampled *before* a
    seeded reset — and the default illegal_action="terminate" handles it; no check is
    skipped (render modes are checked through gymnasium.make, which gives a spec)."""
    check_env(MexicanTrainGymEnv())
    check_env(gymnasium.make("mt_env/MexicanTrain-v1", num_seats=2, render_mode="ansi").unwrapped)


def test_the_v0_ids_of_observation_layout_1_say_to_use_v1():
    """v1 changed the observation (the voids piece): code asking for v0 gets Gymnasium's
    deprecation error naming the id to use, not an env of another shape."""
    for env_id in ("mt_env/MexicanTrain", "mt_env/MexicanTrainFeatures"):
        with pytest.warns(DeprecationWarning), pytest.raises(
            gymnasium.error.DeprecatedEnv, match=f"Please use `{env_id}-v1`"
        ):
            gymnasium.make(f"{env_id}-v0")


@pytest.mark.parametrize(
    "options",
    [
        dict(num_seats=2, num_rounds=2, learner_seat="random", first_turn="single"),
        dict(num_seats=3, num_rounds=1, render_mode="ansi", reward="rank"),
        dict(num_seats=3, num_rounds=1, illegal_action="penalize"),
    ],
)
def test_gymnasium_check_env_passes_with_options(options):
    check_env(MexicanTrainGymEnv(**options))


def _illegal(obs):
    legal = np.flatnonzero(obs["action_mask"]).tolist()
    return legal, next(a for a in range(len(obs["action_mask"])) if a not in legal)


def test_illegal_learner_action_terminates_by_default_and_never_plays():
    env = MexicanTrainGymEnv(num_seats=4)
    obs, _ = env.reset(seed=0)
    legal, illegal = _illegal(obs)
    out, reward, terminated, truncated, info = env.step(illegal)
    assert (reward, terminated, truncated) == (-1.0, True, False)
    assert info["illegal_action"] is True and not info["to_act"]
    assert not info["action_mask"].any() and not out["action_mask"].any()
    assert f"action {illegal} " in env.last_illegal_error and "not legal" in env.last_illegal_error
    assert np.array_equal(out["observation"], obs["observation"])  # nothing was played
    with pytest.raises(RuntimeError):
        env.step(legal[0])
    for bad in (env.action_space.n, -1, 2.0):  # outside the action space: always an error
        env.reset(seed=0)
        with pytest.raises(ValueError, match="not in the action space"):
            env.step(bad)


def test_illegal_learner_action_penalize_and_raise():
    env = MexicanTrainGymEnv(num_seats=4, illegal_action="penalize", illegal_reward=-2.0)
    obs, _ = env.reset(seed=0)
    legal, illegal = _illegal(obs)
    out, reward, terminated, truncated, info = env.step(illegal)
    assert (reward, terminated, truncated) == (-2.0, False, False)
    assert info["illegal_action"] and info["to_act"]
    assert np.array_equal(out["observation"], obs["observation"])
    assert np.array_equal(out["action_mask"], obs["action_mask"])  # same position, same mask
    out, reward, terminated, truncated, info = env.step(legal[0])  # the episode goes on
    assert not info["illegal_action"]

    env = MexicanTrainGymEnv(num_seats=4, illegal_action="raise")
    obs, _ = env.reset(seed=0)
    with pytest.raises(ValueError) as err:
        env.step(illegal)
    assert isinstance(err.value, IllegalMoveError) and f"action {illegal} " in str(err.value)
    assert np.array_equal(env._observe()["observation"], obs["observation"])
    env.step(legal[0])  # the episode goes on


def test_invalid_arguments():
    for kwargs in [
        dict(learner_seat=4),
        dict(learner_seat="first"),
        dict(opponents=[None] * 4),
        dict(opponents="random"),
        dict(illegal_action="ignore"),
        dict(render_mode="video"),
        dict(reward="money"),
        dict(num_seats=99),
    ]:
        with pytest.raises(ValueError):
            MexicanTrainGymEnv(**kwargs)


def test_full_matches_with_given_opponents_only_show_the_learner():
    n = 4
    calls = {r: 0 for r in range(1, n)}
    env = None

    def opponent(r):
        rng = random.Random(r)

        def policy(observation, action_mask):
            # each policy plays its own seat: r places clockwise of the learner
            assert env.match.state.seat == (env.seat + r) % n
            assert observation[env.encoder.pieces["phase"]][0] == 1.0  # it is to act
            calls[r] += 1
            legal = np.flatnonzero(action_mask)
            return int(legal[rng.randrange(len(legal))])

        return policy

    env = MexicanTrainGymEnv(
        learner_seat=2, opponents=[opponent(r) for r in range(1, n)], num_seats=n, num_rounds=2
    )
    rng = random.Random(0)
    for episode in range(2):
        obs, info = env.reset(seed=episode)
        assert info["seat"] == 2
        steps, terminated = 0, False
        for _ in game_steps():
            if terminated:
                break
            # the learner's own observation, and it is to act
            assert env.match.state.seat == 2
            assert np.array_equal(obs["observation"], env.encoder.encode(env.match, 2))
            assert np.array_equal(obs["action_mask"].astype(bool), env.action_masks())
            legal = np.flatnonzero(obs["action_mask"])
            obs, reward, terminated, truncated, info = env.step(
                int(legal[rng.randrange(len(legal))])
            )
            assert not truncated and info["seat"] == 2
            steps += 1
        assert env.match.is_over and len(env.match.results) == 2
        assert not obs["action_mask"].any()
        assert info["places"].tolist() == env.match.places()
    assert all(c > 0 for c in calls.values())


@pytest.mark.parametrize("mode", REWARD_MODES)
def test_learner_reward_is_its_seat_reward(mode):
    """Summed over a match, the learner's rewards are its seat's rewards for every round
    and for the match (rounds ended by opponents included)."""
    env = MexicanTrainGymEnv(learner_seat="random", reward=mode, num_seats=3, num_rounds=3)
    for seed in range(3):
        obs, info = env.reset(seed=seed)
        seat = info["seat"]
        total, terminated = 0.0, False
        for _ in game_steps():
            if terminated:
                break
            obs, reward, terminated, _, info = env.step(first_legal(obs))
            total += reward
        config = env.config
        expected, totals = 0.0, [0, 0, 0]
        for r in env.match.results:
            totals = [t + s for t, s in zip(totals, r.scores, strict=True)]
            expected += (round_rewards(mode, config, r, env.aec.reward_scale, totals) or [0.0] * 3)[seat]
        expected += (match_rewards(mode, env.match.places()) or [0.0] * 3)[seat]
        assert total == pytest.approx(expected)


def test_reset_seed_reproducible_and_random_learner_seat():
    def run(env, seed):
        obs, info = env.reset(seed=seed)
        out = [(info["seat"], obs["observation"].tobytes())]
        for _ in range(15):
            obs, reward, terminated, _, info = env.step(first_legal(obs))
            out.append((reward, obs["observation"].tobytes()))
            if terminated:
                break
        return out

    a = MexicanTrainGymEnv(learner_seat="random", num_seats=4, num_rounds=1)
    b = MexicanTrainGymEnv(learner_seat="random", num_seats=4, num_rounds=1)
    assert run(a, 11) == run(b, 11)
    assert run(a, 11) != run(a, 12)
    seats = {a.reset(seed=s)[1]["seat"] for s in range(20)}
    assert seats == {0, 1, 2, 3}
    assert a.reset(options={"learner_seat": 1})[1]["seat"] == 1


def test_explicit_deal_scripted_opponents_and_render():
    """Opponents play their first legal action: seat 0 plays 6|1, 1|2 and is out in its
    free first turn; the learner (seat 1) plays 6|3 and passes (0|0 left: 50); seat 2
    cannot join 6 and passes (15); the round and the one-round match end (R24)."""
    config = RulesConfig(num_seats=3, max_pip=6, hand_size=2, num_rounds=1)
    deal = make_deal(6, [[(6, 1), (1, 2)], [(6, 3), (0, 0)], [(2, 5), (4, 4)]])
    env = MexicanTrainGymEnv(
        config=config,
        learner_seat=1,
        render_mode="ansi",
        opponents=lambda o, m: first_legal({"action_mask": m}),
    )
    obs, _ = env.reset(options={"deal": deal})
    assert env.match.state.seat == 1 and env.match.state.hand(0) == []
    assert "Seat 1's hand (2): 0|0 3|6" in env.render()
    play_63 = tile_set(6).id_of((6, 3)) * 4  # own train: relative train 0
    obs, reward, terminated, _, info = env.step(play_63)
    assert (reward, terminated) == (0.0, False) and env.match.state.seat == 1  # R11 goes on
    obs, reward, terminated, _, info = env.step(env.codec.pass_)
    assert terminated and info["round_ended"] and info["round_scores"].tolist() == [0, 50, 15]
    assert reward == pytest.approx(-0.5 - (0.0 - 0.15) / 2)  # score_zero_sum, scale 0.01
    assert info["places"].tolist() == [1, 3, 2] and info["totals"].tolist() == [0, 50, 15]
    assert "Match over" in env.render()
