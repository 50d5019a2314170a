"""RLlib's PPO on :class:`mt_env.integrations.rllib.MexicanTrainMultiAgentEnv`, and its saved
checkpoint as a ``py:`` agent in our tournament (run in ``.venv-ray``:
``scripts/integrations.sh ray``). One Ray session and one trained algorithm serve every test."""

from __future__ import annotations

import numpy as np
import pytest
import ray
import torch
from ray.rllib.utils.pre_checks.env import check_multiagent_environments

from mt_env.agents import PolicyAgent, make_agent
from mt_env.agents.evaluation.tournament import run_tournament
from mt_env.config import RulesConfig
from mt_env.gym_env import MexicanTrainGymEnv
from mt_env.integrations.rllib import SHARED, MexicanTrainMultiAgentEnv, agent, ppo_config
from mt_env.wrappers import PolicyFeatures

CONFIG = RulesConfig(num_seats=2, num_rounds=1)  # one-round matches: short episodes
SPEC = "py:mt_env.integrations.rllib:agent:"


@pytest.fixture(scope="module")
def algo():
    """A PPO self-play algorithm (tiny network and batch) after one training iteration,
    with its result; Ray runs for this module only."""
    torch.set_num_threads(1)  # tiny networks: a second thread only contends for the core
    ray.init(num_cpus=1, include_dashboard=False, log_to_driver=False)
    try:
        config = ppo_config(
            CONFIG,
            hidden_sizes=(32,),
            train_batch_size=256,
            minibatch_size=128,
            num_epochs=1,
            seed=0,
        )
        algorithm = config.build_algo()  # runs RLlib's env check: it must pass
        result = algorithm.train()
        yield algorithm, result
        algorithm.stop()
    finally:
        ray.shutdown()


def test_rllib_env_check_passes_and_an_unmasked_action_ends_the_episode():
    env = MexicanTrainMultiAgentEnv({"num_seats": 2, "num_rounds": 1})
    check_multiagent_environments(env)  # steps a random action: may well be illegal
    obs, _ = env.reset(seed=0)
    ((actor, o),) = obs.items()
    illegal = int(np.flatnonzero(o["action_mask"] == 0)[0])
    obs, rewards, terminateds, truncateds, infos = env.step({actor: illegal})
    assert terminateds["__all__"] and not truncateds["__all__"]
    assert rewards[actor] == -1.0 and sum(rewards.values()) == -1.0
    assert set(obs) == set(env.possible_agents) and infos[actor]["illegal_action"]


def test_observations_are_the_policy_features_and_the_float_mask():
    env = MexicanTrainMultiAgentEnv({"num_seats": 2, "num_rounds": 1})
    gym_space = PolicyFeatures(MexicanTrainGymEnv(config=CONFIG)).observation_space
    space = env.observation_spaces["player_0"]
    assert set(space) == {"observations", "action_mask"}
    assert space["observations"] == gym_space["observation"]
    assert space["action_mask"].shape == gym_space["action_mask"].shape
    assert space["action_mask"].dtype == np.float32


def test_turn_based_steps_and_every_seats_reward_is_handed_out():
    """Only the seat to act observes; the rewards summed over a match are each seat's
    zero-sum score: -(own total - other total) / 100 in two seats (penalty scoring)."""
    env = MexicanTrainMultiAgentEnv({"num_seats": 2, "num_rounds": 2})
    rng = np.random.default_rng(0)
    obs, _ = env.reset(seed=3)
    returns = dict.fromkeys(env.possible_agents, 0.0)
    round_ends = 0
    while True:
        assert list(obs) == [env.aec.agent_selection]
        ((actor, o),) = obs.items()
        assert env.observation_spaces[actor].contains(o)
        action = rng.choice(np.flatnonzero(o["action_mask"]))
        obs, rewards, terminateds, _, infos = env.step({actor: action})
        assert set(rewards) == set(env.possible_agents)
        for a, r in rewards.items():
            returns[a] += r
        round_ends += next(iter(infos.values()))["round_ended"]
        if terminateds["__all__"]:
            break
    assert set(obs) == set(env.possible_agents)  # everyone sees the end
    assert all(terminateds.values())
    totals = infos["player_0"]["totals"]
    assert round_ends == 2 and totals.sum() > 0
    assert returns["player_0"] == pytest.approx(-(totals[0] - totals[1]) / 100)
    assert returns["player_1"] == pytest.approx(-(totals[1] - totals[0]) / 100)


def test_one_ppo_iteration_trains_the_shared_module(algo):
    _, result = algo
    assert result["env_runners"]["num_env_steps_sampled_lifetime"] >= 256
    learner = result["learners"][SHARED]
    assert np.isfinite(learner["total_loss"]) and learner["num_module_steps_trained"] > 0
    # both seats fed the one shared module
    assert set(result["env_runners"]["num_agent_steps_sampled"]) == {"player_0", "player_1"}


def test_sampled_actions_honour_the_mask(algo):
    algorithm, _ = algo
    episodes = algorithm.env_runner.sample(num_episodes=2, explore=True)
    steps = choices = 0
    for episode in episodes:
        for sa in episode.agent_episodes.values():
            for t in range(len(sa)):
                mask = sa.get_observations(t)["action_mask"]
                assert mask[sa.get_actions(t)] == 1
                steps += 1
                choices += int(mask.sum() > 1)  # a choice among several legal moves
            assert not any(info["illegal_action"] for info in sa.get_infos())
    # with 167 actions, exploring without the mask would have picked an illegal one
    assert steps > 20 and choices > 10


def test_checkpoint_plays_legal_moves_in_a_tournament(algo, tmp_path, monkeypatch):
    algorithm, _ = algo
    algorithm.save(str(tmp_path / "ckpt"))
    monkeypatch.chdir(tmp_path)
    spec = SPEC + "ckpt"  # a relative path, as on a command line
    assert isinstance(make_agent(spec, CONFIG, seed=0), PolicyAgent)
    result = run_tournament([spec, "random"], CONFIG, games=4, seed=0, workers=1, progress=False)
    assert result.agent_row(spec)["seat_games"] == 4  # PolicyAgent raises on an illegal move
    with pytest.raises(ValueError, match="other rules"):
        agent(RulesConfig(num_seats=3, num_rounds=1), 0, "ckpt")
    with pytest.raises(ValueError, match="algo.save"):
        agent(CONFIG, 0, "missing")
