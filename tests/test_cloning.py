"""Behaviour cloning's data path (agents/ppo/cloning.py): the teacher's decisions streamed from
the collectors in parts and stored compactly, read back exactly, and fitted as before."""

from __future__ import annotations

import dataclasses
import math
import os
import tracemalloc

import numpy as np
import pytest
import torch

from mt_env import RulesConfig
from mt_env.agents.features import make_featurizer
from mt_env.agents.ppo import cloning
from mt_env.agents.ppo.cloning import Demonstrations, behaviour_clone
from mt_env.agents.ppo.policy import legal_index, legal_log_probs, make_critic, make_policy
from mt_env.agents.ppo.rollout import DEMO_PART, Collectors, RolloutSpec

RULES = RulesConfig(num_seats=3)


def spec(seed: int, critic: str = "observation") -> RolloutSpec:
    return RolloutSpec(
        rules=RULES,
        num_games=4,
        seed=seed,
        reward="score_zero_sum",
        reward_scale=0.01,
        round_is_episode=False,
        learner_seats=2,
        opponent_mix={"greedy": 1.0},
        features="pairs",
        hidden_sizes=(16,),
        gamma=1.0,
        gae_lambda=1.0,
        teacher="longest-train",
        critic=critic,
    )


def stored(specs: list[RolloutSpec], decisions: int, processes: bool) -> Demonstrations:
    store = Demonstrations(RULES, "pairs", parts=len(specs))
    collectors = Collectors(specs, processes)
    try:
        store.stats = collectors.demonstrate(decisions, sink=store.add)["stats"]
    finally:
        collectors.close()
    return store


def test_stored_decisions_read_back_as_the_batch_in_collector_order():
    """Streamed into the store from two worker processes (parts interleaved), the decisions
    read back bit for bit as the one batch of the same collectors in this process: policy
    inputs (featurized raw observations), masks, the privileged critic's input, actions,
    returns, counters; in any row order asked."""
    specs = [spec(1, "privileged"), spec(2, "privileged")]
    batch = Collectors(specs, processes=False).demonstrate(700)
    store = stored(specs, 700, processes=True)
    assert len(store) == len(batch["actions"]) >= 700
    np.testing.assert_array_equal(store.actions, batch["actions"])
    np.testing.assert_array_equal(store.returns, batch["returns"])
    assert store.stats == pytest.approx(batch["stats"], nan_ok=True)
    rows = np.random.default_rng(0).permutation(len(store))
    x, masks, priv = store.rows(rows)
    np.testing.assert_array_equal(x, make_featurizer(RULES, "pairs")(batch["obs"])[rows])
    np.testing.assert_array_equal(masks, batch["masks"][rows])
    np.testing.assert_array_equal(priv, batch["priv"][rows])
    assert priv.shape[1] > 0 and priv.any()


def test_workers_stream_small_parts_and_the_store_is_compact():
    """A worker sends its decisions in parts as it records them (several, none over
    DEMO_PART); the store keeps a decision in a fraction of its float32 policy input."""
    parts: list[int] = []
    collectors = Collectors([spec(3)], processes=True)
    try:
        collectors.demonstrate(600, sink=lambda k, part: parts.append(len(part["actions"])))
    finally:
        collectors.close()
    assert len(parts) > 2 and max(parts) <= DEMO_PART and sum(parts) >= 600
    store = stored([spec(3)], 600, processes=False)
    width = make_featurizer(RULES, "pairs")(np.zeros((1, store.obs_size), np.float32)).shape[1]
    assert store.nbytes < 0.2 * len(store) * width * 4


def test_the_store_holds_its_decisions_on_disk_not_in_memory(tmp_path):
    """The memory the store holds does not grow with its decisions (tracemalloc sees numpy's
    buffers): 20 more copies of a batch cost under 8 bytes a decision while the bytes stored
    grow by the batch's compact size each time; the last copy reads back exactly; closing
    the store releases its files."""
    batch = Collectors([spec(7)], processes=False).demonstrate(200)
    n = len(batch["actions"])
    fds = len(os.listdir("/proc/self/fd"))
    store = Demonstrations(RULES, "pairs", directory=tmp_path)
    store.add(0, batch)
    once = store.nbytes
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        for _ in range(20):
            store.add(0, batch)
        grown = tracemalloc.get_traced_memory()[0] - base
    finally:
        tracemalloc.stop()
    assert len(store) == 21 * n and store.nbytes == 21 * once
    assert once > n * store.obs_size  # the 16-bit codes alone
    assert grown < 20 * n * 8
    x, masks, _ = store.rows(np.arange(20 * n, 21 * n))
    np.testing.assert_array_equal(x, make_featurizer(RULES, "pairs")(batch["obs"]))
    np.testing.assert_array_equal(masks, batch["masks"])
    np.testing.assert_array_equal(store.actions[-n:], batch["actions"])
    assert len(os.listdir("/proc/self/fd")) > fds
    store.close()
    assert len(os.listdir("/proc/self/fd")) == fds and len(store) == 0


def test_fit_equals_the_full_batch_fit():
    """Fitting from the store (inputs made per minibatch) gives the weights of the same fit
    over the whole batch as full tensors (the former implementation), for the same seed."""
    specs = [spec(4, "privileged")]
    store = stored(specs, 300, processes=False)
    batch = Collectors(specs, processes=False).demonstrate(300)
    x = torch.from_numpy(make_featurizer(RULES, "pairs")(batch["obs"]))
    masks, priv = torch.from_numpy(batch["masks"]), torch.from_numpy(batch["priv"])
    actions, returns = torch.from_numpy(batch["actions"]), torch.from_numpy(batch["returns"])

    def nets():
        torch.manual_seed(0)
        policy, critic = make_policy(RULES, "pairs", (16,)), make_critic(RULES, "pairs", (16,))
        opt = torch.optim.Adam([*policy.parameters(), *critic.parameters()], lr=1e-3)
        return policy, critic, opt

    policy, critic, opt = nets()
    fit = behaviour_clone(
        policy, critic, opt, store, epochs=2, vf_coef=0.5, max_grad_norm=0.5, batch=64
    )
    ref_policy, ref_critic, ref_opt = nets()  # and the RNG where behaviour_clone found it
    order = torch.randperm(len(actions))
    n_test = max(1, int(len(order) * 0.05))
    legal, valid, pos = legal_index(masks, actions)
    for _ in range(2):
        for mb in order[n_test:][torch.randperm(len(order) - n_test)].split(64):
            logits, _ = ref_policy(x[mb], masks[mb])
            value = ref_critic(ref_policy.trunk_input(x[mb]), priv[mb])
            ce = -legal_log_probs(logits, legal[mb], valid[mb]).gather(1, pos[mb, None]).squeeze(1)
            loss = ce.mean() + 0.5 * 0.5 * ((value - returns[mb]) ** 2).mean()
            ref_opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(
                [*ref_policy.parameters(), *ref_critic.parameters()], 0.5
            )
            ref_opt.step()
    for a, b in zip(
        [*policy.parameters(), *critic.parameters()],
        [*ref_policy.parameters(), *ref_critic.parameters()],
        strict=True,
    ):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)
    assert 0 <= fit["accuracy"] <= 1 and math.isfinite(fit["cross_entropy"])


def test_demonstrations_fill_a_store_with_the_teachers_decisions():
    """cloning.demonstrations: the trainer's entry point; at least the decisions asked for,
    in the spec's feature set, with the collectors' counters."""
    store = cloning.demonstrations(
        [dataclasses.replace(spec(5), teacher="")], "greedy", 150, processes=False
    )
    assert len(store) >= 150 and store.stats["env_steps"] > len(store)
    x, masks, _ = store.rows(np.arange(len(store)))
    assert x.shape[1] > store.obs_size and (masks.sum(1) > 1).all()  # real choices only


def test_the_store_refuses_data_of_other_rules():
    store = Demonstrations(RULES, "pairs")
    other = Collectors(
        [dataclasses.replace(spec(6), rules=RulesConfig(num_seats=2))], processes=False
    ).demonstrate(10)
    with pytest.raises(ValueError, match="expected raw observations"):
        store.add(0, other)
