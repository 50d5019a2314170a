"""Ray scale-out (mt_env.integrations.ray) on a local Ray: the same tournament table and the
same rollout batches as the local backend for the same seed, and a short training run.

Run in the Ray venv: ``.venv-ray/bin/python -m pytest tests/integrations/test_ray.py``.
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import numpy as np
import pytest
import ray
import torch

import mt_env.integrations.ray as ray_backend
from mt_env.agents.evaluation.tournament import main as tournament_main
from mt_env.agents.evaluation.tournament import run_tournament
from mt_env.agents.ppo.policy import make_policy
from mt_env.agents.ppo.rollout import Collectors, RolloutSpec, parse_opponent_mix
from mt_env.config import RulesConfig

ROOT = Path(__file__).resolve().parents[2]
CHECKPOINT = "ckpt:checkpoints/default-2seat.pt"
TWO_SEATS = RulesConfig(num_seats=2, num_rounds=1)
FULL_GAMES = RulesConfig(num_seats=2)  # the checkpoint's rules


@pytest.fixture(scope="module", autouse=True)
def local_ray():
    """A Ray of its own for this module (address="local": never another one on this host);
    its workers import py: agents from tests/ as a cluster's would from an installed module."""
    path = os.pathsep.join(filter(None, [str(ROOT / "tests"), os.environ.get("PYTHONPATH")]))
    runtime_env = {"env_vars": {"PYTHONPATH": path}}
    ray.init(address="local", num_cpus=2, include_dashboard=False, runtime_env=runtime_env)
    yield
    ray.shutdown()


@pytest.fixture
def one_torch_thread():
    """This process's torch on one thread, as in the actors and the local worker processes:
    the same float sums, hence the same sampled actions."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture
def ray_calls(monkeypatch) -> list[str]:
    """The names of mt_env.integrations.ray's entry points called (the proof that the work
    went to Ray, since the results are the same either way)."""
    calls: list[str] = []
    for name in ("play_deals", "collectors"):
        real = getattr(ray_backend, name)

        def spy(*args, real=real, **kwargs):
            calls.append(real.__name__)
            return real(*args, **kwargs)

        monkeypatch.setattr(ray_backend, name, spy)
    return calls


def table(result) -> list[str]:
    """The markdown without its first line (which holds the elapsed time)."""
    return result.to_markdown().split("\n")[1:]


def test_ray_tournament_equals_the_local_one(monkeypatch, one_torch_thread, ray_calls):
    monkeypatch.chdir(ROOT)  # the checkpoint's relative path (made absolute for the actors)
    lineup = [CHECKPOINT, "longest-train"]
    local = run_tournament(lineup, FULL_GAMES, 6, seed=3, workers=1, progress=False)
    assert ray_calls == []
    on_ray = run_tournament(lineup, FULL_GAMES, 6, seed=3, workers=2, progress=False, backend="ray")
    assert ray_calls == ["play_deals"]
    assert local.games == on_ray.games == 6 and len(on_ray.records) == 6
    assert [r.deal for r in on_ray.records] == [0, 0, 1, 1, 2, 2]
    assert on_ray.records == local.records
    assert table(on_ray) == table(local)
    assert on_ray.agents == local.agents and on_ray.head_to_head == local.head_to_head


def test_the_tournament_command_runs_on_ray(capsys, ray_calls):
    argv = ["--agents", "greedy", "random", "--seats", "2", "--games", "4", "--seed", "1"]
    argv += ["--rules", "num_rounds=1", "--no-progress", "--workers", "1"]
    assert tournament_main([*argv, "--backend", "ray"]) == 0
    on_ray = capsys.readouterr().out
    assert ray_calls == ["play_deals"]
    assert tournament_main(argv) == 0
    local = capsys.readouterr().out
    assert "| greedy" in on_ray
    assert on_ray.split("\n")[1:] == local.split("\n")[1:]


def test_an_error_in_an_actor_reaches_the_caller():
    with pytest.raises(ValueError, match="'illegal' returned the illegal action"):
        run_tournament(
            ["py:agent_factories:illegal", "greedy"],
            TWO_SEATS,
            2,
            seed=0,
            workers=1,
            progress=False,
            backend="ray",
        )


def rollout_spec(k: int) -> RolloutSpec:
    return RolloutSpec(
        rules=RulesConfig(num_seats=2),
        num_games=4,
        seed=100 + k,
        reward="score_zero_sum",
        reward_scale=0.01,
        round_is_episode=True,
        learner_seats=1,
        opponent_mix=parse_opponent_mix("self=0.5,past=0.2,longest-train=0.3"),
        features="pairs",
        hidden_sizes=(32,),
        gamma=1.0,
        gae_lambda=0.95,
    )


def collect_twice(collectors: Collectors, weights: dict) -> list[dict]:
    try:
        collectors.set_pool([weights])
        return [collectors.collect(weights, 100), collectors.collect(weights, 100)]
    finally:
        collectors.close()


def test_rollouts_on_ray_equal_local_collection(one_torch_thread, ray_calls):
    """Two collectors, two batches each (streams carried over between batches)."""
    torch.manual_seed(0)
    weights = make_policy(RulesConfig(num_seats=2), "pairs", (32,)).state_dict()
    specs = [rollout_spec(0), rollout_spec(1)]
    local = collect_twice(Collectors(specs, processes=False), weights)
    assert ray_calls == []
    on_ray = collect_twice(Collectors(specs, processes=True, backend="ray"), weights)
    assert ray_calls == ["collectors"]
    for a, b in zip(local, on_ray, strict=True):
        assert len(b["actions"]) >= 100
        assert a.keys() == b.keys()
        for key in a:
            if key == "stats":
                assert a[key] == pytest.approx(b[key], nan_ok=True)
            else:
                np.testing.assert_array_equal(a[key], b[key], err_msg=key)
    assert not np.array_equal(on_ray[0]["actions"][:50], on_ray[1]["actions"][:50])


def test_demonstrations_on_ray_equal_local_ones(ray_calls):
    """Behaviour cloning's recording (a scripted teacher in the learner seats), with its
    progress counts."""
    specs = [dataclasses.replace(rollout_spec(0), teacher="longest-train", gae_lambda=1.0)]
    counts: dict[str, list[int]] = {"local": [], "ray": []}
    local = Collectors(specs, processes=False).demonstrate(60, counts["local"].append)
    on_ray = Collectors(specs, processes=True, backend="ray")
    try:
        demo = on_ray.demonstrate(60, counts["ray"].append)
    finally:
        on_ray.close()
    assert ray_calls == ["collectors"]
    assert len(demo["actions"]) >= 60 and sum(counts["ray"]) == sum(counts["local"]) == 60
    for key in ("obs", "masks", "actions", "returns"):
        np.testing.assert_array_equal(local[key], demo[key], err_msg=key)


def test_training_with_ray_rollouts_writes_a_checkpoint(
    tmp_path: Path, smoke_args: list[str], ray_calls
):
    import train

    # cloning first, then PPO, with as many actors as the local Ray has CPUs: the cloning
    # actors must not wait for CPUs held by idle PPO actors (they once did: a hang)
    args = [*smoke_args, "--total-steps", "300", "--num-workers", "2", "--backend", "ray"]
    args += ["--pretrain-teacher", "longest-train", "--pretrain-decisions", "200"]
    run_dir = train.main([*args, "--run-dir", str(tmp_path), "--pretrain-epochs", "1"])
    assert ray_calls == ["collectors", "collectors"]
    checkpoint = torch.load(run_dir / "checkpoint.pt", weights_only=False)
    assert checkpoint["global_step"] >= 300
    assert checkpoint["train_config"]["backend"] == "ray"
    assert (run_dir / "final.pt").is_file()
    assert len((run_dir / "log.csv").read_text().splitlines()) == 1 + checkpoint["iteration"]
