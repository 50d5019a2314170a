"""sb3-contrib's MaskablePPO on :func:`mt_env.integrations.sb3.make_env`, and its saved model
as a ``py:`` agent in our tournament (run in ``.venv-sb3``: ``scripts/integrations.sh sb3``)."""

from __future__ import annotations

import warnings

import pytest
import torch
from sb3_contrib import MaskablePPO
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.env_checker import check_env
from stable_baselines3.common.logger import configure

from mt_env.agents import PolicyAgent, make_agent
from mt_env.agents.evaluation.tournament import run_tournament
from mt_env.config import RulesConfig
from mt_env.integrations.sb3 import make_env

RULES = dict(num_rounds=1)  # one-round matches: short episodes, so several end
CONFIG = RulesConfig(num_seats=2, **RULES)
SPEC = "py:mt_env.integrations.sb3:agent:"


class RecordInfos(BaseCallback):
    """Keeps every step's info, to check what the env said about each action."""

    def __init__(self) -> None:
        super().__init__()
        self.infos: list[dict] = []

    def _on_step(self) -> bool:
        self.infos.extend(self.locals["infos"])
        return True


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """A MaskablePPO trained 512 steps, with the infos of its steps and its saved path."""
    torch.set_num_threads(1)  # tiny networks: a second thread only contends for the core
    model = MaskablePPO(
        "MultiInputPolicy",
        make_env(num_seats=2, seed=0, **RULES),
        n_steps=128,
        batch_size=64,
        n_epochs=2,
        policy_kwargs=dict(net_arch=[32]),
        seed=0,
    )
    # SB3 otherwise makes an empty SB3-<time> folder in the system's temporary folder
    model.set_logger(configure(str(tmp_path_factory.mktemp("sb3-log")), []))
    before = [p.detach().clone() for p in model.policy.parameters()]
    record = RecordInfos()
    model.learn(512, callback=record)
    path = tmp_path_factory.mktemp("sb3") / "model.zip"
    model.save(path)
    return model, before, record.infos, path


def test_check_env_passes_without_warnings():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        check_env(make_env(num_seats=2, seed=0, **RULES))
    assert [str(w.message) for w in caught] == []


def test_maskable_ppo_learns_and_never_plays_an_illegal_action(trained):
    model, before, infos, _ = trained
    assert model.num_timesteps == 512
    assert any(
        not torch.equal(a, b) for a, b in zip(before, model.policy.parameters(), strict=True)
    )
    assert len(infos) == 512
    assert not any(info["illegal_action"] for info in infos)
    ends = [info for info in infos if "episode" in info]  # Monitor's, at each match end
    assert len(ends) >= 3
    assert all(info["round_ended"] for info in ends)  # matches ended by the rules
    assert {info["episode"]["seat"] for info in ends} == {0, 1}  # a random seat each match


def test_agent_sees_the_training_features_and_plays_the_models_move(trained):
    model, _, _, path = trained
    agent = make_agent(SPEC + str(path), CONFIG, seed=0)
    assert isinstance(agent, PolicyAgent)
    env = make_env(num_seats=2, seed=3, **RULES)
    obs, _ = env.reset(seed=3)
    inner = env.unwrapped
    for _ in range(40):
        raw = inner.aec.observe(inner.aec.possible_agents[inner.seat])  # what a seat sees
        expected, _ = model.predict(obs, action_masks=inner.action_masks(), deterministic=True)
        action = agent.act(raw["observation"], raw["action_mask"])
        assert action == int(expected)
        assert raw["action_mask"][action] == 1
        obs, _, terminated, _, info = env.step(action)
        assert not info["illegal_action"]
        if terminated:
            obs, _ = env.reset()


def test_saved_model_plays_a_tournament(trained):
    _, _, _, path = trained
    spec = SPEC + str(path)
    result = run_tournament(
        [spec, "longest-train"], CONFIG, games=4, seed=0, workers=1, progress=False
    )
    assert result.games == 4
    assert result.agent_row(spec)["seat_games"] == 4
    assert len(result.records) == 4
    assert all(r.rounds == 1 and sorted(r.places)[0] == 1 for r in result.records)  # finished
    # a rules variant that keeps the observation layout is fine (as for our checkpoints)
    variant = RulesConfig(num_seats=2, double_blank_value=0, **RULES)
    assert isinstance(make_agent(spec, variant), PolicyAgent)


def test_bad_model_paths_raise_clear_value_errors(trained, tmp_path):
    _, _, _, path = trained
    with pytest.raises(ValueError, match="no model file at"):
        make_agent(SPEC + str(tmp_path / "missing.zip"), CONFIG)
    with pytest.raises(ValueError, match="needs a model file"):
        make_agent(SPEC.rstrip(":"), CONFIG)
    junk = tmp_path / "junk.zip"
    junk.write_text("not a model")
    with pytest.raises(ValueError, match="cannot load"):
        make_agent(SPEC + str(junk), CONFIG)
    for other_rules in (RulesConfig(num_seats=4), RulesConfig(num_seats=2, num_rounds=2)):
        with pytest.raises(ValueError, match="trained for other rules"):
            make_agent(SPEC + str(path), other_rules)
