"""Checkpoints cannot be silently wrong: corrupt bytes, non-finite weights and damaged
structure are a CheckpointError naming the problem, on every loading path
(``load_checkpoint``, ``PPOAgent.from_checkpoint``, ``ckpt:`` specs, ``--resume``)."""

from __future__ import annotations

import os
import random
import shutil
from pathlib import Path

import pytest
import torch

from mt_env import RulesConfig
from mt_env.agents import make_agent
from mt_env.agents.ppo import PPOAgent
from mt_env.agents.ppo.checkpoint import (
    CheckpointError,
    content_digest,
    load_checkpoint,
    resumable_config,
    save_checkpoint,
)

ROOT = Path(__file__).resolve().parents[1]
SHIPPED = ROOT / "checkpoints" / "default-2seat.pt"
RULES = RulesConfig(num_seats=2)


def loaders(path: Path):
    """Every public way to load a checkpoint file."""
    return [
        lambda: load_checkpoint(path, RULES),
        lambda: PPOAgent.from_checkpoint(path, RULES),
        lambda: make_agent(f"ckpt:{path}", RULES),
    ]


def test_the_shipped_checkpoints_carry_a_valid_checksum():
    for name in ("default-2seat", "default-4seat"):
        data = load_checkpoint(ROOT / "checkpoints" / f"{name}.pt")
        assert data["format_version"] == 2
        assert data["sha256"] == content_digest({k: v for k, v in data.items() if k != "sha256"})


def test_every_flipped_bit_is_caught(tmp_path):
    """Bit flips anywhere in the file (zip structure, pickled metadata, weights): each is
    a CheckpointError, or lands in bytes the loader never reads (zip padding, timestamps)
    so that exactly the verified content loads — never a silently different policy."""
    raw = bytearray(SHIPPED.read_bytes())
    original = load_checkpoint(SHIPPED)["sha256"]
    rng = random.Random(0)
    target = tmp_path / "flipped.pt"
    caught = 0
    for _ in range(100):
        bad = bytearray(raw)
        i = rng.randrange(len(bad))
        bad[i] ^= 1 << rng.randrange(8)
        target.write_bytes(bad)
        try:
            data = load_checkpoint(target, RULES)
        except CheckpointError:
            caught += 1
            continue
        body = {k: v for k, v in data.items() if k != "sha256"}
        assert content_digest(body) == original  # the flip changed nothing that loads
    assert caught >= 90


def test_a_weight_changed_after_saving_fails_the_checksum(tmp_path):
    data = load_checkpoint(SHIPPED)
    name = next(iter(data["model"]))
    data["model"][name] = data["model"][name] + 1e-3  # keep the stored sha256
    target = tmp_path / "edited.pt"
    torch.save(data, target)
    for load in loaders(target):
        with pytest.raises(ValueError, match="checksum"):
            load()


def test_non_finite_weights_are_refused_at_save_and_at_load(tmp_path):
    data = load_checkpoint(SHIPPED)
    name = next(iter(data["model"]))
    data["model"][name] = data["model"][name].clone()
    data["model"][name].view(-1)[0] = float("nan")
    with pytest.raises(CheckpointError, match="NaN or infinite"):
        save_checkpoint(tmp_path / "nan.pt", data)
    assert not list(tmp_path.iterdir())  # nothing written
    body = {k: v for k, v in data.items() if k != "sha256"}
    torch.save({**body, "sha256": content_digest(body)}, tmp_path / "nan.pt")  # forged
    for load in loaders(tmp_path / "nan.pt"):
        with pytest.raises(ValueError, match="NaN or infinite"):
            load()


def damaged(tmp_path: Path, change) -> Path:
    """The shipped checkpoint with ``change(data)`` applied, re-checksummed (so only the
    structure check can find it)."""
    data = load_checkpoint(SHIPPED)
    data.pop("sha256")
    change(data)
    data["sha256"] = content_digest(data)
    path = tmp_path / "damaged.pt"
    torch.save(data, path)
    return path


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda d: d.pop("model"), "lacks the key"),
        (lambda d: d.pop("rules"), "lacks the key"),
        (lambda d: d.update(obs_size="12"), "obs_size is a str"),
        (lambda d: d.update(global_step=True), "global_step is a bool"),
        (lambda d: d.update(hidden_sizes=[6000, 6000]), "hidden_sizes"),
        (lambda d: d.update(hidden_sizes=[64, 64]), "trunk's weights have widths"),
        (lambda d: d.update(model={"trunk.0.weight": 3}), "model must map names to tensors"),
        (lambda d: d["rules"].update(num_seats=99), "invalid rules"),
        (lambda d: d.update(format_version=7), "format version 7"),
        (lambda d: d.update(num_actions=5), "num_actions=5"),
        (lambda d: d.update(features="pairz"), "features"),
    ],
)
def test_damaged_structure_is_named_on_every_path(tmp_path, change, message):
    path = damaged(tmp_path, change)
    for load in loaders(path):
        with pytest.raises(ValueError, match=message):
            load()


def test_resume_refuses_damaged_and_policy_only_files(tmp_path):
    with pytest.raises(CheckpointError, match="policy-only export"):
        resumable_config(SHIPPED)
    truncated = tmp_path / "cut.pt"
    truncated.write_bytes(SHIPPED.read_bytes()[:1000])
    with pytest.raises(CheckpointError, match="corrupt or truncated"):
        resumable_config(truncated)
    shutil.copy(SHIPPED, tmp_path / "ok.pt")
    assert load_checkpoint(tmp_path / "ok.pt", RULES)["features"] == "pairs"


def test_a_checkpoint_cannot_run_code_when_loaded(tmp_path):
    """Checkpoints are read with torch's weights_only unpickler: a file whose pickle calls
    a function (here os.makedirs) is refused before anything runs."""

    class Payload:
        def __reduce__(self):
            return (os.makedirs, (str(tmp_path / "ran"),))

    path = tmp_path / "evil.pt"
    torch.save({"format": "mt_env-ppo", "format_version": 2, "x": Payload()}, path)
    for load in loaders(path):
        with pytest.raises(ValueError, match="corrupt or truncated"):
            load()
    assert not (tmp_path / "ran").exists()


def _as_layout_1(data: dict) -> dict:
    """A layout-2 policy dict as the layout-1 file it would have been: without the trunk
    inputs of the ``voids`` piece and the pair block's fourth column."""
    rules = RulesConfig.from_dict(data["rules"])
    added = rules.num_seats * (rules.max_pip + 1)
    cut = data["obs_size"] - added
    model = dict(data["model"])
    w = model["trunk.0.weight"]
    model["trunk.0.weight"] = torch.cat([w[:, :cut], w[:, cut + added :]], 1).clone()
    model["pair_in.weight"] = model["pair_in.weight"][:, :3].clone()
    return {**data, "model": model, "observation_version": 1, "obs_size": cut}


@pytest.mark.parametrize("name", ["default-2seat", "default-4seat"])
def test_a_layout_1_policy_loads_widened_and_acts_exactly_as_before(tmp_path, name):
    """Observation layout 2 appended ``voids``: a layout-1 file loads with zero weights on
    the new inputs, every old weight in place, so the new entries cannot move its output."""
    import numpy as np

    from mt_env.observation import ObservationEncoder

    shipped = load_checkpoint(ROOT / "checkpoints" / f"{name}.pt")
    old = tmp_path / "layout1.pt"
    save_checkpoint(old, _as_layout_1(shipped))
    rules = RulesConfig.from_dict(shipped["rules"])
    widened = load_checkpoint(old, rules)
    assert widened["observation_version"] == 2 and widened["obs_size"] == shipped["obs_size"]
    assert widened["sha256"] == content_digest({k: v for k, v in widened.items() if k != "sha256"})
    voids = ObservationEncoder(rules).pieces["voids"]
    for key, w in widened["model"].items():
        original = shipped["model"][key]
        if key == "trunk.0.weight":
            assert (w[:, voids] == 0).all()
            keep = torch.ones(w.shape[1], dtype=torch.bool)
            keep[voids] = False
            assert torch.equal(w[:, keep], original[:, keep])
        elif key == "pair_in.weight":
            assert (w[:, 3] == 0).all() and torch.equal(w[:, :3], original[:, :3])
        else:
            assert torch.equal(w, original), key
    # the new inputs cannot change what it does: any voids give the same probabilities
    with np.load(ROOT / "tests" / "data" / f"checkpoint_positions_{name[8:]}.npz") as f:
        obs = f["obs"].copy()
        masks = np.unpackbits(f["masks"], axis=1, count=int(f["num_actions"])).astype(bool)
    agent = PPOAgent.from_checkpoint(old, rules)
    before = agent.probabilities(obs, masks)
    assert obs[:, voids].any()  # the recorded positions do carry voids
    obs[:, voids] = 1.0 - obs[:, voids]
    np.testing.assert_array_equal(agent.probabilities(obs, masks), before)


def test_a_layout_1_trainer_checkpoint_or_a_wrong_size_is_refused(tmp_path):
    shipped = load_checkpoint(SHIPPED)
    old = _as_layout_1(shipped)
    trainer = {**old, "optimizer": {}, "best_eval": 0.5, "pool": [], "pretrained": True,
               "torch_rng": torch.get_rng_state(), "critic": None}
    save_checkpoint(tmp_path / "trainer.pt", trainer)
    with pytest.raises(CheckpointError, match="cannot resume it.*--init-policy"):
        load_checkpoint(tmp_path / "trainer.pt", RULES)
    save_checkpoint(tmp_path / "short.pt", {**old, "obs_size": old["obs_size"] - 1})
    with pytest.raises(CheckpointError, match="observation layout 1 of its rules has 192"):
        load_checkpoint(tmp_path / "short.pt", RULES)
