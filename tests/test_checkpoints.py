"""The shipped checkpoints still load and play as they did when they were trained.

``tests/data/checkpoint_positions_{2,4}seat.npz`` hold fixed positions (observation vector
and action mask) and what ``checkpoints/default-*.pt`` did there, recorded with the code
the checkpoints were trained with (``tests/data/make_checkpoint_positions.py``): its action
probabilities and its deterministic action. Loaded through the public paths —
``make_agent("ckpt:PATH", rules)`` and ``PPOAgent.from_checkpoint`` — today's code must
give the same actions and the same probabilities.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from mt_env import Match, RulesConfig
from mt_env.agents import make_agent
from mt_env.observation import ObservationEncoder

ROOT = Path(__file__).resolve().parents[1]
DATA = Path(__file__).resolve().parent / "data"
SETS = ("2seat", "4seat")


def _positions(name: str) -> dict:
    with np.load(DATA / f"checkpoint_positions_{name}.npz") as f:
        data = {k: f[k] for k in f.files}
    n = int(data["num_actions"])
    data["masks"] = np.unpackbits(data["masks"], axis=1, count=n).astype(bool)
    data["meta"] = json.loads(str(data["meta"]))
    return data


@pytest.fixture(scope="module", params=SETS)
def recorded(request) -> dict:
    data = _positions(request.param)
    data["rules"] = RulesConfig.from_dict(data["meta"]["rules"])
    data["path"] = ROOT / data["meta"]["checkpoint"]
    return data


def test_fixtures_are_what_the_test_expects(recorded):
    assert len(recorded["obs"]) == 60
    assert recorded["masks"].sum(1).min() >= 2  # every position is a real choice
    assert (recorded["actions"] == recorded["probs"].argmax(1)).all()
    assert recorded["masks"][np.arange(60), recorded["actions"]].all()


def test_shipped_checkpoint_plays_the_recorded_actions_via_make_agent(recorded):
    agent = make_agent(f"ckpt:{recorded['path']}", recorded["rules"])
    obs, masks = recorded["obs"], recorded["masks"]
    np.testing.assert_array_equal(agent.act_batch(obs, masks), recorded["actions"])
    # one decision at a time too, as a tournament asks (float32 obs, int8 masks)
    singles = [agent.act(o, m.astype(np.int8)) for o, m in zip(obs, masks, strict=True)]
    np.testing.assert_array_equal(singles, recorded["actions"])


def test_shipped_checkpoint_gives_the_recorded_probabilities(recorded):
    from mt_env.agents.ppo import PPOAgent

    agent = PPOAgent.from_checkpoint(recorded["path"], recorded["rules"])
    assert agent.deterministic
    probs = agent.probabilities(recorded["obs"], recorded["masks"])
    np.testing.assert_allclose(probs, recorded["probs"], rtol=1e-4, atol=1e-6)
    assert (probs[~recorded["masks"]] == 0).all()  # illegal actions never get mass
    np.testing.assert_array_equal(agent.act_batch(recorded["obs"], recorded["masks"]),
                                  recorded["actions"])


def test_recorded_positions_are_still_what_the_game_produces(recorded):
    """Replaying the recorded matches (same seeds, same scripted players) with today's rules
    core, observation encoder and baselines reaches the same observations and masks: the
    stored positions are positions the checkpoints really meet."""
    meta, rules = recorded["meta"], recorded["rules"]
    enc = ObservationEncoder(rules)
    wanted: dict[tuple[int, int], int] = {
        (int(m), int(k)): i
        for i, (m, k) in enumerate(zip(recorded["match_index"], recorded["move"], strict=True))
    }
    seen = 0
    for m_index in sorted({m for m, _ in wanted}):
        seed = meta["match_seed"]
        players = [
            make_agent(name, rules, seed=seed + 100 * m_index + seat)
            for seat, name in enumerate(meta["lineup"])
        ]
        for p in players:
            p.reset()
        match = Match(rules, seed=seed + m_index)
        last = max(k for m, k in wanted if m == m_index)
        for move in range(last + 1):
            seat = match.state.seat
            obs, mask = enc.encode(match, seat), enc.action_mask(match, seat)
            i = wanted.get((m_index, move))
            if i is not None:
                np.testing.assert_array_equal(obs, recorded["obs"][i], err_msg=f"position {i}")
                np.testing.assert_array_equal(mask.astype(bool), recorded["masks"][i])
                seen += 1
            match.apply(match.state.codec.to_move(int(players[seat].act(obs, mask)), seat))
    assert seen == len(recorded["obs"])
