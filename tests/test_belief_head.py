"""``belief_coef > 0``: a training-only head on the policy trunk that guesses where hidden tiles are.

What must hold: its targets are each hidden tile's true place (another seat's hand, in
seat order from the observer's left, or the boneyard), and tiles the observer can see
count for nothing; the collectors record the hidden tiles for it without the privileged
critic, and never otherwise; its loss reaches the policy's trunk in the update; the
trainer keeps the head in resumable checkpoints, not in policy exports, and refuses to
resume with or without it against the checkpoint.
"""

from __future__ import annotations

import dataclasses
import math
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
    make_belief_head,
    make_policy,
    privileged_features,
    privileged_size,
)

RULES3 = RulesConfig(num_seats=3, max_pip=6, hand_size=3)
HANDS3 = [[(6, 5), (5, 4), (0, 0)], [(6, 1), (1, 2), (3, 3)], [(2, 2), (4, 0), (5, 5)]]


def test_the_loss_is_the_true_places_cross_entropy_over_the_hidden_tiles_only():
    m = Match(RULES3, deals=[make_deal(6, HANDS3)])
    n, t = 3, RULES3.num_tiles
    priv = torch.from_numpy(np.stack([privileged_features(m.state, s) for s in range(n)]))
    head = make_belief_head(RULES3, (8,))
    h = torch.zeros(n, 8)  # the logits are then the bias alone, the same for every row
    places = priv.view(n, n, t)
    hidden = places.sum(1) > 0
    assert hidden.sum(1).tolist() == [t - 3 - 1] * n  # all but the own hand and the engine
    with torch.no_grad():
        head.net.bias.zero_()
        loss, accuracy = head.loss(h, priv)
        assert loss.item() == pytest.approx(math.log(n), rel=1e-6)  # uniform over the n places
        # Seat 0's truth as logits: right for seat 0, and for the others wherever their
        # places agree with seat 0's (the boneyard is the same boneyard for every seat).
        head.net.bias.copy_(20.0 * places[0].reshape(-1))
        loss, accuracy = head.loss(h, priv)
        expected = (places.argmax(1) == places[0].argmax(0))[hidden].float().mean()
        assert accuracy.item() == pytest.approx(expected.item())
        assert 0 < expected < 1
        seat0, _ = head.loss(h[:1], priv[:1])
        assert seat0.item() < 1e-6
        # A visible tile's logits do not count: rewriting them changes nothing.
        seen = (~hidden[0]).nonzero().flatten()
        bias = head.net.bias.view(n, t)
        bias[:, seen] = torch.randn(n, len(seen)) * 50
        again, _ = head.loss(h[:1], priv[:1])
        assert again.item() == seat0.item()


def _spec(**extra) -> RolloutSpec:
    return RolloutSpec(
        rules=RulesConfig(num_seats=3), num_games=4, seed=3, reward="score_zero_sum", reward_scale=0.01,
        round_is_episode=True, learner_seats=1, opponent_mix={"self": 1.0}, features="pairs",
        hidden_sizes=(16,), gamma=1.0, gae_lambda=0.95, **extra,
    )


def test_collectors_record_the_hidden_tiles_only_for_the_head():
    rules = RulesConfig(num_seats=3)
    torch.manual_seed(0)
    policy = make_policy(rules, "pairs", (16,))
    plain = Collector(_spec()).collect(policy.state_dict(), 100)
    assert plain["priv"].shape == (len(plain["actions"]), 0)
    batch = Collector(_spec(hidden_tiles=True)).collect(policy.state_dict(), 100)
    n = len(batch["actions"])
    assert batch["priv"].shape == (n, privileged_size(rules))
    places = batch["priv"].reshape(n, 3, rules.num_tiles)
    assert places.sum(1).max() == 1.0 and places.sum() > 0  # each hidden tile in one place
    # the values still come from the policy's own value head (no privileged critic)
    with torch.no_grad():
        own = policy(torch.from_numpy(batch["obs"]), torch.from_numpy(batch["masks"]))[1].numpy()
    np.testing.assert_allclose(batch["values"], own, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("coef", [0.0, 1.0])
def test_the_update_trains_the_trunk_toward_the_hidden_places(coef):
    """With no advantage, entropy or value term, the belief loss is the update's only
    gradient: with ``belief_coef`` 1 it falls and the trunk moves, with 0 nothing moves."""
    rules = RulesConfig(num_seats=3)
    torch.manual_seed(1)
    policy = make_policy(rules, "pairs", (16,))
    batch = Collector(_spec(hidden_tiles=True)).collect(policy.state_dict(), 300)
    batch.pop("stats")
    batch["advantages"] = np.zeros_like(batch["advantages"])
    head = make_belief_head(rules, (16,))
    x, priv = torch.from_numpy(batch["obs"]), torch.from_numpy(batch["priv"])
    with torch.no_grad():
        before, _ = head.loss(policy.embed(x), priv)
    trunk = policy.trunk[0].weight.clone()
    cfg = dataclasses.replace(train.TrainConfig(), ent_coef=0.0, vf_coef=0.0, belief_coef=coef,
                              norm_adv=False, update_epochs=4)
    params = [*policy.parameters(), *head.parameters()]
    losses = train.ppo_update(policy, None, torch.optim.Adam(params, lr=3e-3), params, batch, cfg,
                              belief=head if coef else None)
    with torch.no_grad():
        after, _ = head.loss(policy.embed(x), priv)
    if coef:
        assert after < before - 0.05 and 0 < losses["belief_accuracy"] <= 1
        assert not torch.equal(policy.trunk[0].weight, trunk)
    else:
        assert math.isnan(losses["belief_loss"]) and torch.equal(policy.trunk[0].weight, trunk)


def test_trainer_keeps_the_head_for_resume_only(tmp_path: Path, smoke_args: list[str]):
    run = train.main([*smoke_args, "--run-dir", str(tmp_path), "--belief-coef", "0.5"])
    rules = RulesConfig(num_seats=2)
    ckpt = load_checkpoint(run / "checkpoint.pt", rules)
    assert ckpt["belief"] is not None and ckpt["train_config"]["belief_coef"] == 0.5
    head = make_belief_head(rules, (128, 128))
    fresh = {k: v.clone() for k, v in head.state_dict().items()}
    head.load_state_dict(ckpt["belief"])  # the saved weights are the head's, trained
    assert any(not torch.equal(fresh[k], ckpt["belief"][k]) for k in fresh)
    assert "belief" not in load_checkpoint(run / "final.pt", rules)  # agents never need it
    with pytest.raises(CheckpointError, match="trained with a belief head: resume it with a --belief-coef above 0"):
        train.main(["--resume", str(run / "checkpoint.pt"), "--belief-coef", "0"])
    before = {k: v.clone() for k, v in ckpt["belief"].items()}
    train.main(["--resume", str(run / "checkpoint.pt"), "--total-steps", "900"])
    after = load_checkpoint(run / "checkpoint.pt", rules)
    assert after["iteration"] == 3
    assert any(not torch.equal(before[k], after["belief"][k]) for k in before)  # it trained on

    plain = train.main([*smoke_args, "--run-dir", str(tmp_path / "plain")])
    assert load_checkpoint(plain / "checkpoint.pt", rules)["belief"] is None
    with pytest.raises(CheckpointError, match="trained without a belief head: resume it with --belief-coef 0"):
        train.main(["--resume", str(plain / "checkpoint.pt"), "--belief-coef", "1"])
