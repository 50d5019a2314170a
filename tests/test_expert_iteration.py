"""Expert iteration during PPO (``train.py --expert-every N``, issue 14): rollout workers label
some learner decisions with ``search-ppo`` built on their current weights, and the PPO update
adds the labels' cross-entropy."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest
import torch

import train
from mt_env import RulesConfig
from mt_env.agents.ppo import Collector, RolloutSpec, build_policy, load_checkpoint, make_policy
from mt_env.agents.ppo.policy import legal_index, legal_log_probs
from mt_env.observation import ObservationEncoder

CKPT = Path(__file__).resolve().parents[1] / "checkpoints" / "default-2seat.pt"
RULES = RulesConfig(num_seats=2)


def _spec(expert_every: int, **kw) -> RolloutSpec:
    return RolloutSpec(
        rules=RULES, num_games=4, seed=3, reward="score_zero_sum", reward_scale=0.01,
        round_is_episode=True, learner_seats=1, opponent_mix={"longest-train": 1.0},
        features="pairs", hidden_sizes=(128, 128), gamma=1.0, gae_lambda=0.95,
        expert_every=expert_every, **kw,
    )


@pytest.fixture(scope="module")
def trained() -> dict:
    return build_policy(load_checkpoint(CKPT, RULES)).state_dict()


def test_one_in_n_learner_decisions_gets_the_searchs_legal_choice(trained):
    """With ``expert_every=2`` every other decision the search would make (a choice between
    plays outside a free first turn) is labelled, and only those; the labels are legal, the
    counters match them, and the search overrules the policy's argmax on some."""
    batch = Collector(_spec(2)).collect(trained, 400)
    stats, labels, masks = batch["stats"], batch["expert"], batch["masks"]
    enc = ObservationEncoder(RULES)
    free_first = batch["obs"][:, enc.pieces["phase"]][:, 1] > 0.5
    searchable = ~free_first & (masks[:, : enc.codec.draw].sum(1) > 1)
    labelled = np.flatnonzero(labels >= 0)
    # the counter also counts a label on a stream's last decision, which waits for the next
    # batch (its successor is not known yet): at most one per game's learner stream
    assert searchable[labelled].all() and 0 <= stats["expert_labels"] - len(labelled) <= 4
    assert abs(len(labelled) - searchable.sum() / 2) <= 0.1 * searchable.sum() + 2
    assert masks[labelled, labels[labelled]].all()
    assert 0 < stats["expert_agree"] < stats["expert_labels"]
    assert stats["expert_seconds"] > 0


def test_without_it_no_decision_is_labelled(trained):
    batch = Collector(_spec(0)).collect(trained, 200)
    assert (batch["expert"] == -1).all() and batch["stats"]["expert_labels"] == 0


@pytest.mark.parametrize("coef", [0.0, 1.0])
def test_the_update_moves_the_policy_toward_the_labels(trained, coef):
    """With no advantage, entropy or value term, the update's only gradient is the labels'
    cross-entropy: labels on each decision's least probable legal action gain probability
    with ``expert_coef`` 1, and nothing moves with 0."""
    batch = Collector(_spec(0)).collect(trained, 300)
    batch.pop("stats")
    policy = make_policy(RULES, "pairs", (128, 128))
    policy.load_state_dict(trained)
    masks = torch.from_numpy(batch["masks"])
    legal, valid, _ = legal_index(masks, torch.from_numpy(batch["actions"]))

    def legal_logp():
        with torch.no_grad():
            return legal_log_probs(policy(torch.from_numpy(batch["obs"]), masks)[0], legal, valid)

    before = legal_logp()
    worst = before.masked_fill(~valid, np.inf).argmin(1)
    batch["expert"] = legal.gather(1, worst[:, None]).squeeze(1).numpy()
    batch["advantages"] = np.zeros_like(batch["advantages"])
    cfg = dataclasses.replace(train.TrainConfig(), ent_coef=0.0, vf_coef=0.0, expert_coef=coef,
                              norm_adv=False, update_epochs=2)
    params = list(policy.parameters())
    losses = train.ppo_update(policy, None, torch.optim.Adam(params, lr=1e-3), params, batch, cfg)
    gained = (legal_logp() - before).gather(1, worst[:, None]).squeeze(1)
    if coef:
        assert gained.mean() > 0.5 and losses["expert_loss"] > 0
    else:
        assert gained.abs().max() < 1e-6


def test_a_training_run_with_expert_labels_logs_them(tmp_path: Path, smoke_args: list[str]):
    """Through the real script (in-process rollouts, a few hundred steps): the labels reach
    the update and TensorBoard gets their count, the policy's agreement with them and their
    loss, update by update."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    run = train.main([*smoke_args, "--expert-every", "2", "--run-dir", str(tmp_path)])
    events = EventAccumulator(str(run / "tb"))
    events.Reload()
    labels = [e.value for e in events.Scalars("charts/expert_labels")]
    agreement = [e.value for e in events.Scalars("charts/expert_agreement")]
    losses = [e.value for e in events.Scalars("losses/expert_loss")]
    assert len(labels) == len(agreement) == len(losses) == 2 and min(labels) > 0
    assert all(0 <= a <= 1 for a in agreement) and all(np.isfinite(losses))
