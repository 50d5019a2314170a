"""``critic = "privileged"``: a training-only value network that also sees the hidden tiles.

What must hold: its input is exactly the other seats' hands (in seat order from the
observer's left) and the boneyard; the collector's recorded values are that critic's
values of the recorded inputs; the policy's inputs never change with hidden tiles; the
trainer keeps the critic in resumable checkpoints, not in policy exports, and refuses to
resume with the other kind of critic; a second stage (``--init-policy``) starts it as the
file's own value function.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from conftest import make_deal

import train
from mt_env import Match, RulesConfig
from mt_env.agents.ppo import (
    CheckpointError,
    Collector,
    RolloutSpec,
    load_checkpoint,
    make_critic,
    make_policy,
    privileged_features,
    privileged_size,
    seed_critic,
)
from mt_env.observation import ObservationEncoder
from mt_env.tiles import tile_set

RULES3 = RulesConfig(num_seats=3, max_pip=6, hand_size=3)
HANDS3 = [[(6, 5), (5, 4), (0, 0)], [(6, 1), (1, 2), (3, 3)], [(2, 2), (4, 0), (5, 5)]]


def _vector(tiles) -> np.ndarray:
    ts = tile_set(6)
    v = np.zeros(ts.num_tiles, dtype=np.float32)
    for t in tiles:
        v[ts.id_of(t)] = 1.0
    return v


def test_privileged_features_are_the_other_hands_in_seat_order_then_the_boneyard():
    m = Match(RULES3, deals=[make_deal(6, HANDS3)])
    boneyard = m.state.boneyard
    assert privileged_size(RULES3) == 3 * 28
    for seat in range(3):
        got = privileged_features(m.state, seat).reshape(3, 28)
        left, across = (seat + 1) % 3, (seat + 2) % 3
        np.testing.assert_array_equal(got[0], _vector(HANDS3[left]))
        np.testing.assert_array_equal(got[1], _vector(HANDS3[across]))
        np.testing.assert_array_equal(got[2], _vector(boneyard))
    # A draw moves the boneyard's next tile into the drawer's hand (R17); the vector follows.
    no_six = [[(5, 4), (0, 0), (3, 2)], [(6, 1), (1, 1), (3, 3)], [(2, 2), (4, 0), (5, 5)]]
    m = Match(RULES3, deals=[make_deal(6, no_six)])
    for _ in range(3):  # every seat passes its free first turn (R11/R13)
        m.apply(m.state.codec.pass_)
    top = m.state.boneyard[0]
    assert m.state.seat == 0 and m.state.legal_moves() == [m.state.codec.draw]  # no 6: R17
    m.apply(m.state.codec.draw)
    got = privileged_features(m.state, 1).reshape(3, 28)  # seat 1 sees seat 2, then seat 0
    np.testing.assert_array_equal(got[1], _vector([*no_six[0], top]))
    assert got[2][tile_set(6).id_of(top)] == 0.0


def test_the_policy_input_does_not_see_what_the_critic_sees():
    """Swapping two opponents' hidden tiles changes the critic's input, not the observation."""
    swapped = [HANDS3[0], [(6, 1), (1, 2), (5, 5)], [(2, 2), (4, 0), (3, 3)]]
    a, b = Match(RULES3, deals=[make_deal(6, HANDS3)]), Match(RULES3, deals=[make_deal(6, swapped)])
    enc = ObservationEncoder(RULES3)
    np.testing.assert_array_equal(enc.encode(a, 0), enc.encode(b, 0))
    assert not np.array_equal(privileged_features(a.state, 0), privileged_features(b.state, 0))


def test_collector_values_come_from_the_privileged_critic():
    rules = RulesConfig(num_seats=3)
    spec = RolloutSpec(
        rules=rules, num_games=4, seed=3, reward="score_zero_sum", reward_scale=0.01,
        round_is_episode=True, learner_seats=1, opponent_mix={"self": 1.0}, features="pairs",
        hidden_sizes=(16,), gamma=1.0, gae_lambda=0.95, critic="privileged",
    )
    col = Collector(spec)
    torch.manual_seed(0)
    policy = make_policy(rules, "pairs", (16,))
    critic = make_critic(rules, "pairs", (16,))
    with pytest.raises(ValueError, match="critic_state"):
        col.collect(policy.state_dict(), 10)
    batch = col.collect(policy.state_dict(), 200, critic.state_dict())
    n = len(batch["actions"])
    assert n >= 200 and batch["priv"].shape == (n, privileged_size(rules))
    # Every hidden tile is in exactly one place: other hands + boneyard never overlap.
    per_tile = batch["priv"].reshape(n, 3, rules.num_tiles).sum(1)
    assert per_tile.max() == 1.0
    x = torch.from_numpy(batch["obs"])
    with torch.no_grad():
        expected = critic(policy.trunk_input(x), torch.from_numpy(batch["priv"])).numpy()
        own_head = policy(x, torch.from_numpy(batch["masks"]))[1].numpy()
    np.testing.assert_allclose(batch["values"], expected, rtol=1e-5, atol=1e-6)
    assert not np.allclose(batch["values"], own_head)


def test_trainer_keeps_the_critic_for_resume_only(tmp_path: Path, smoke_args: list[str]):
    run = train.main([*smoke_args, "--run-dir", str(tmp_path), "--critic", "privileged"])
    rules = RulesConfig(num_seats=2)
    ckpt = load_checkpoint(run / "checkpoint.pt", rules)
    assert ckpt["critic"] is not None and ckpt["train_config"]["critic"] == "privileged"
    critic = make_critic(rules, "pairs", (128, 128))
    critic.load_state_dict(ckpt["critic"])  # the saved weights are the critic's
    assert "critic" not in load_checkpoint(run / "final.pt", rules)  # agents never need it
    before = {k: v.clone() for k, v in ckpt["critic"].items()}
    with pytest.raises(CheckpointError, match="critic='privileged'"):
        train.main(["--resume", str(run / "checkpoint.pt"), "--critic", "observation"])
    train.main(["--resume", str(run / "checkpoint.pt"), "--total-steps", "900"])
    after = load_checkpoint(run / "checkpoint.pt", rules)
    assert after["iteration"] == 3
    assert any(not torch.equal(before[k], after["critic"][k]) for k in before)  # it trained on


def test_a_second_stage_seeds_the_privileged_critic_with_the_files_values(tmp_path: Path, smoke_args):
    """``--init-policy`` with ``--critic privileged``: the critic starts as the file's value
    function (hidden tiles read at weight 0, whatever they are), then learns from them."""
    first = train.main([*smoke_args, "--run-dir", str(tmp_path / "a")])
    rules = RulesConfig(num_seats=2)
    policy = make_policy(rules, "pairs", (128, 128))
    policy.load_state_dict(load_checkpoint(first / "final.pt", rules)["model"])
    critic = make_critic(rules, "pairs", (128, 128))
    seed_critic(critic, policy)
    spec = RolloutSpec(rules=rules, num_games=2, seed=3, reward="score_zero_sum", reward_scale=0.05,
                       round_is_episode=True, learner_seats=1, opponent_mix={"self": 1.0},
                       features="pairs", hidden_sizes=(128, 128), gamma=1.0, gae_lambda=0.95,
                       critic="privileged")
    batch = Collector(spec).collect(policy.state_dict(), 200, critic.state_dict())
    x, masks = torch.from_numpy(batch["obs"]), torch.from_numpy(batch["masks"])
    priv = torch.from_numpy(batch["priv"])
    with torch.no_grad():
        own_head = policy(x, masks)[1]
        seeded = critic(policy.trunk_input(x), priv)
        blind = critic(policy.trunk_input(x), torch.rand_like(priv))
    torch.testing.assert_close(seeded, own_head, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(blind, own_head, rtol=1e-5, atol=1e-5)
    assert priv.sum() > 0 and own_head.std() > 0
    with pytest.raises(ValueError, match="do not match the policy's trunk"):
        seed_critic(make_critic(rules, "pairs", (64, 64)), policy)

    second = train.main([*smoke_args, "--run-dir", str(tmp_path / "b"), "--critic", "privileged",
                         "--init-policy", str(first / "final.pt"), "--critic-warmup-updates", "2"])
    ckpt = load_checkpoint(second / "checkpoint.pt", rules)
    trained = make_critic(rules, "pairs", (128, 128))
    trained.load_state_dict(ckpt["critic"])
    k = privileged_size(rules)
    assert trained.net[0].weight[:, -k:].abs().sum() > 0  # the warm-up fitted the hidden tiles
    # it started from the file's trunk: two updates move it far less than a fresh critic is from it
    fresh = make_critic(rules, "pairs", (128, 128))
    assert (trained.net[0].weight[:, :-k] - policy.trunk[0].weight).abs().max() < 0.05
    assert (fresh.net[0].weight[:, :-k] - policy.trunk[0].weight).abs().max() > 0.2
    # the warm-up updates leave the policy as the file has it
    torch.testing.assert_close(ckpt["model"]["pair_out.weight"], policy.state_dict()["pair_out.weight"])
