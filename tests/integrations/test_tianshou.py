"""Tianshou 2.x on our envs: its collectors on the raw PettingZoo env (the issue's crash) and on
:func:`mt_env.integrations.tianshou.make_env`, a few DQN training steps, the mask, and a saved
policy as a ``py:`` agent in our tournament (run in ``.venv-tianshou``:
``scripts/integrations.sh tianshou``)."""

from __future__ import annotations

import re

import numpy as np
import pytest
import torch
from tianshou.algorithm import DQN
from tianshou.algorithm.multiagent.marl import MultiAgentOffPolicyAlgorithm
from tianshou.algorithm.optim import AdamOptimizerFactory
from tianshou.algorithm.random import MARLRandomDiscreteMaskedOffPolicyAlgorithm
from tianshou.data import Collector, CollectStats, VectorReplayBuffer
from tianshou.env import DummyVectorEnv, PettingZooEnv
from tianshou.trainer import OffPolicyTrainerParams
from tianshou.utils.torch_utils import policy_within_training_step

import mt_env
from mt_env.agents import PolicyAgent, make_agent
from mt_env.agents.evaluation.tournament import run_tournament
from mt_env.config import RulesConfig
from mt_env.integrations.tianshou import (
    agent,
    greedy_action,
    load_policy,
    make_env,
    make_policy,
    save_policy,
)

RULES = dict(num_rounds=1)  # one-round matches: short episodes, so many end
CONFIG = RulesConfig(num_seats=2, **RULES)
SPEC = "py:mt_env.integrations.tianshou:agent:"
INFO_KEYS = {"round_ended", "round_scores", "round_out_seats", "totals", "places", "to_act"}


def stored(buffer: VectorReplayBuffer):
    """Every transition in ``buffer``."""
    return buffer[buffer.sample_indices(0)]


def assert_actions_legal(batch) -> None:
    acts = np.asarray(batch.act)
    assert batch.obs.mask[np.arange(len(acts)), acts].all(), "an action outside the mask"


@pytest.fixture(autouse=True)
def seeded():
    """One thread (tiny networks: a second one only contends for the core) and seeded
    generators: Tianshou explores and samples replays with numpy's global one."""
    torch.set_num_threads(1)
    torch.manual_seed(0)
    np.random.seed(0)


@pytest.mark.parametrize("num_seats", [2, 4])
def test_collector_survives_raw_pettingzoo_env_over_seeds(num_seats):
    # The issue: Tianshou's collector stacks each step's infos, and crashed in 3 of 4 seeds
    # while infos were {} on most steps and a nested round_result at round ends.
    # Two-round matches: round ends both mid-match and at the match's end.
    def make():
        return PettingZooEnv(mt_env.env(num_seats=num_seats, num_rounds=2))

    env = make()
    random_seats = MultiAgentOffPolicyAlgorithm(
        algorithms=[
            MARLRandomDiscreteMaskedOffPolicyAlgorithm(env.action_space) for _ in env.agents
        ],
        env=env,
    )
    for seed in range(8):
        envs = DummyVectorEnv([make, make])
        envs.seed(seed)
        buffer = VectorReplayBuffer(20_000, 2)
        stats = Collector[CollectStats](random_seats.policy, envs, buffer).collect(
            n_episode=2, reset_before_collect=True
        )
        assert stats.n_collected_episodes == 2
        batch = stored(buffer)
        assert len(batch) == stats.n_collected_steps
        assert INFO_KEYS <= set(batch.info.get_keys())
        assert batch.info.round_out_seats.shape == (len(batch), num_seats)
        assert batch.info.round_ended.sum() >= 2  # each match ended a round mid-match and last
        assert batch.terminated.sum() == 2
        assert_actions_legal(batch)


def test_collector_on_adapter_env_stays_legal_over_seeds():
    policy = make_policy(CONFIG, hidden_sizes=[16], eps_training=1.0)  # random legal moves
    seats = set()
    for seed in range(4):
        seeds = [2 * seed, 2 * seed + 1]
        envs = DummyVectorEnv([lambda s=s: make_env(2, seed=s, **RULES) for s in seeds])
        buffer = VectorReplayBuffer(5_000, 2)
        collector = Collector[CollectStats](policy, envs, buffer, exploration_noise=True)
        with policy_within_training_step(policy):  # explore with eps_training, as in training
            stats = collector.collect(n_episode=4, reset_before_collect=True)
        assert stats.n_collected_episodes == 4
        batch = stored(buffer)
        assert_actions_legal(batch)
        assert not batch.info.illegal_action.any()
        assert batch.terminated.sum() == 4
        seats |= set(batch.info.seat.tolist())
    assert seats == {0, 1}  # the learner's seat is drawn each match


def test_mask_overrides_the_highest_q_value():
    policy = make_policy(CONFIG, hidden_sizes=[8])
    last = policy.model.model.model[-1]  # the output layer: make action 0 the best by far
    with torch.no_grad():
        last.bias.zero_()
        last.bias[0] = 1e3
    obs = np.zeros(policy.mt_env_layout["input_size"], dtype=np.float32)
    mask = np.zeros(policy.mt_env_layout["num_actions"], dtype=bool)
    assert greedy_action(policy, obs, ~mask) == 0
    mask[[5, 7]] = True
    assert greedy_action(policy, obs, mask) in {5, 7}


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """A DQN trained a few hundred steps on the adapter env, its buffer and saved path."""
    envs = DummyVectorEnv([lambda i=i: make_env(2, seed=i, **RULES) for i in range(2)])
    policy = make_policy(CONFIG, hidden_sizes=[32], eps_training=0.2)
    before = [p.detach().clone() for p in policy.parameters()]
    dqn = DQN(policy=policy, optim=AdamOptimizerFactory(lr=1e-3), target_update_freq=10)
    buffer = VectorReplayBuffer(2_000, 2)
    collector = Collector[CollectStats](dqn, envs, buffer, exploration_noise=True)
    result = dqn.run_training(
        OffPolicyTrainerParams(
            training_collector=collector,
            max_epochs=1,
            epoch_num_steps=384,
            collection_step_num_env_steps=32,
            update_step_num_gradient_steps_per_sample=0.25,
            batch_size=32,
            test_in_training=False,
            show_progress=False,
            verbose=False,
        )
    )
    path = save_policy(policy, tmp_path_factory.mktemp("tianshou") / "dqn.pt")
    return policy, before, buffer, result, path


def test_training_steps_update_the_network_with_legal_actions(trained):
    policy, before, buffer, result, _ = trained
    assert result.train_step >= 384 and result.update_step >= 12
    assert any(not torch.equal(b, a) for b, a in zip(before, policy.parameters(), strict=True))
    batch = stored(buffer)
    assert_actions_legal(batch)
    assert not batch.info.illegal_action.any()


def test_agent_acts_as_the_trained_policy(trained):
    # the agent rebuilds the policy input from the raw observation: same action as the
    # policy on the adapter env's (featurized) observation, in many positions
    policy, _, _, _, path = trained
    player = make_agent(SPEC + str(path), CONFIG, seed=0)
    assert isinstance(player, PolicyAgent)
    env = make_env(2, seed=3, **RULES)
    rng = np.random.default_rng(0)
    obs, info = env.reset(seed=3)
    checked = 0
    for _ in range(60):
        raw = env.unwrapped.aec.observe(f"player_{info['seat']}")  # the learner's raw view
        action = greedy_action(policy, obs["obs"], obs["mask"])
        assert obs["mask"][action]
        assert player.act(raw["observation"], raw["action_mask"]) == action
        checked += 1
        obs, _, terminated, _, info = env.step(int(rng.choice(np.flatnonzero(obs["mask"]))))
        if terminated:
            obs, info = env.reset()
    assert checked == 60


def test_saved_policy_plays_legal_moves_in_a_tournament(trained):
    spec = SPEC + str(trained[-1])
    result = run_tournament(
        agents=[spec, "random"], config=CONFIG, games=6, seed=0, workers=1, progress=False
    )
    row = result.agent_row(spec)
    assert row["seat_games"] == 6  # PolicyAgent raises on an illegal action: none was taken
    assert 0.0 <= row["win_rate"] <= 1.0


def test_agent_and_loader_reject_bad_input(trained, tmp_path):
    path = trained[-1]
    with pytest.raises(ValueError, match="needs a policy file"):
        agent(CONFIG, 0)
    with pytest.raises(ValueError, match="no policy file"):
        agent(CONFIG, 0, str(tmp_path / "missing.pt"))
    foreign = tmp_path / "foreign.pt"
    torch.save({"weights": torch.zeros(2)}, foreign)
    with pytest.raises(ValueError, match="not a policy saved by"):
        load_policy(foreign, CONFIG)
    with pytest.raises(ValueError, match=re.escape("trained for other rules: {'num_seats': 2}")):
        load_policy(path, RulesConfig(num_seats=3, **RULES))
    with pytest.raises(ValueError, match="expected one agent spec, or 1 specs"):
        make_env(2, opponents=["random", "random"])
