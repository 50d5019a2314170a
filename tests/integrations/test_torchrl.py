"""TorchRL on :func:`mt_env.integrations.torchrl.make_env`: specs, masked rollouts, PPO updates
with ``examples/torchrl_ppo.py``'s loop, and the saved actor as a ``py:`` agent in our
tournament (run in ``.venv-torchrl``: ``scripts/integrations.sh torchrl``)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest
import torch
from torchrl.envs import RewardSum
from torchrl.envs.utils import ExplorationType, check_env_specs, set_exploration_type

from mt_env.agents import PolicyAgent, make_agent
from mt_env.agents.evaluation.tournament import run_tournament
from mt_env.config import RulesConfig
from mt_env.integrations.torchrl import load_actor, make_actor, make_env, save_actor

RULES = dict(num_rounds=1)  # one-round matches: short episodes, so several end
CONFIG = RulesConfig(num_seats=2, **RULES)
SPEC = "py:mt_env.integrations.torchrl:agent:"
EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "torchrl_ppo.py"


def load_example():
    spec = importlib.util.spec_from_file_location("torchrl_ppo_example", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def assert_only_legal(rollout) -> None:
    """Every action of a rollout is allowed by the mask the env gave for that step."""
    actions, masks = rollout["action"], rollout["action_mask"]
    assert masks.dtype == torch.bool
    assert masks.any(-1).all()  # the learner is always to act where an action is taken
    assert masks.gather(-1, actions.unsqueeze(-1)).all()


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """An actor after two PPO updates of the example's loop, its weights before, its file."""
    torch.set_num_threads(1)  # tiny networks: a second thread only contends for the core
    torch.manual_seed(0)
    example = load_example()
    env = make_env(num_seats=2, seed=0, **RULES)
    env.append_transform(RewardSum())
    actor = make_actor(env.config, hidden=(32,))
    critic = example.make_critic(env)
    before = [p.detach().clone() for p in actor.parameters()]
    frames = example.train(env, actor, critic, frames=256, batch=128)
    path = save_actor(actor, tmp_path_factory.mktemp("torchrl") / "actor.pt", env.config)
    return actor, before, frames, path


@pytest.mark.parametrize("seats", [2, 3])
def test_check_env_specs_passes(seats):
    # full-length matches: check_env_specs samples one more action after its 3-step rollout,
    # and a finished match (a one-round match can end in 3 steps) has no legal action
    env = make_env(num_seats=seats, seed=0)
    check_env_specs(env)
    assert env.action_spec.space.n == env.observation_spec["action_mask"].shape[-1]


def test_random_masked_rollout_plays_only_legal_actions_across_matches():
    env = make_env(num_seats=2, seed=1, **RULES)
    rollout = env.rollout(300, break_when_any_done=False)  # the action spec's masked sampler
    assert rollout.numel() == 300
    assert_only_legal(rollout)
    ended = rollout["next", "done"].squeeze(-1)
    assert ended.sum() >= 3  # several matches ended, and play went on after each reset
    assert not rollout["next", "action_mask"][ended].any()  # no move left at match end


def test_masked_actor_samples_and_plays_greedily_only_legal_actions():
    torch.manual_seed(0)
    env = make_env(num_seats=2, seed=2, **RULES)
    actor = make_actor(env.config, hidden=(32,))
    with torch.no_grad():
        assert_only_legal(env.rollout(100, actor, break_when_any_done=False))
        with set_exploration_type(ExplorationType.DETERMINISTIC):
            rollout = env.rollout(100, actor, break_when_any_done=False)
    assert_only_legal(rollout)
    masked = rollout["logits"].masked_fill(~rollout["action_mask"], -torch.inf)
    assert torch.equal(rollout["action"], masked.argmax(-1))


def test_ppo_updates_change_the_actor(trained):
    actor, before, frames, _ = trained
    assert frames == 256
    after = list(actor.parameters())
    assert any(not torch.equal(a, b) for a, b in zip(before, after, strict=True))
    assert all(torch.isfinite(p).all() for p in after)


def test_saved_actor_is_the_trained_one_and_plays_the_actors_move(trained):
    actor, _, _, path = trained
    agent = make_agent(SPEC + str(path), CONFIG, seed=0)
    assert isinstance(agent, PolicyAgent)
    loaded = load_actor(path, CONFIG)
    for a, b in zip(actor.parameters(), loaded.parameters(), strict=True):
        assert torch.equal(a, b)
    env = make_env(num_seats=2, seed=3, **RULES)
    gym_env = env.unwrapped  # the MexicanTrainGymEnv inside (TorchRL forwards the name)
    td = env.reset()
    for _ in range(40):
        raw = gym_env.aec.observe(gym_env.aec.possible_agents[gym_env.seat])  # what a seat sees
        with torch.no_grad(), set_exploration_type(ExplorationType.DETERMINISTIC):
            expected = int(actor(td.clone())["action"])
        action = agent.act(raw["observation"], raw["action_mask"])
        assert action == expected
        assert raw["action_mask"][action] == 1
        td["action"] = torch.tensor(action)
        td = env.step_and_maybe_reset(td)[1]


def test_saved_actor_plays_a_tournament(trained):
    _, _, _, path = trained
    spec = SPEC + str(path)
    result = run_tournament(
        [spec, "longest-train"], CONFIG, games=4, seed=0, workers=1, progress=False
    )
    assert result.games == 4
    assert result.agent_row(spec)["seat_games"] == 4
    assert len(result.records) == 4


def test_bad_actor_paths_raise_clear_value_errors(trained, tmp_path):
    _, _, _, path = trained
    with pytest.raises(ValueError, match="no file at"):
        make_agent(SPEC + str(tmp_path / "missing.pt"), CONFIG)
    with pytest.raises(ValueError, match="needs an actor file"):
        make_agent(SPEC.rstrip(":"), CONFIG)
    junk = tmp_path / "junk.pt"
    junk.write_text("not an actor")
    with pytest.raises(ValueError, match="cannot read"):
        make_agent(SPEC + str(junk), CONFIG)
    foreign = tmp_path / "foreign.pt"
    torch.save({"weights": np.zeros(3).tolist()}, foreign)
    with pytest.raises(ValueError, match="not a file written by"):
        make_agent(SPEC + str(foreign), CONFIG)
    with pytest.raises(ValueError, match="trained for other rules"):
        make_agent(SPEC + str(path), RulesConfig(num_seats=2))
    with pytest.raises(ValueError, match="opponents="):
        make_env(num_seats=3, opponents=["random"])
    with pytest.raises(ValueError, match="hidden="):
        make_actor(CONFIG, hidden=())
