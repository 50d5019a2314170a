"""Regenerate ``checkpoint_positions_{2,4}seat.npz``: what the shipped checkpoints do on
fixed positions, recorded once so that later code can be checked against it
(``tests/test_checkpoints.py``).

Made by ``python tests/data/make_checkpoint_positions.py [2seat] [4seat]`` (both when none
is named); each file's ``meta`` names the commit it was made at. Regenerating a file only
makes sense when a change of the policy's behaviour is intended: a new shipped checkpoint. Each file holds, per position: the observation vector and action mask of
the seat to act (decisions with at least two legal actions, sampled from seeded matches
between scripted agents), the checkpoint's probabilities over all actions and its value,
and its deterministic (argmax) action; plus where the position came from (match index,
move number within the match) so the positions can be replayed.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

import numpy as np
import torch

from mt_env import Match, RulesConfig
from mt_env.agents import make_agent
from mt_env.observation import ObservationEncoder

ROOT = Path(__file__).resolve().parents[2]
OUT = Path(__file__).resolve().parent
POSITIONS = 60
# Per checkpoint: the scripted lineup (seat k plays LINEUP[k]), the seed of match m
# (MATCH_SEED + m, agents seeded MATCH_SEED + 100 * m + seat), and the chance that a
# decision with a choice is recorded.
SETUPS = {
    "2seat": {"lineup": ["longest-train", "greedy"], "match_seed": 2024, "rate": 0.08},
    "4seat": {
        "lineup": ["longest-train", "greedy", "random", "longest-train-reserve"],
        "match_seed": 4048,
        "rate": 0.03,
    },
}


def positions(rules: RulesConfig, lineup: list[str], match_seed: int, rate: float, count: int):
    """Yield (match index, move number, observation, mask) of sampled decisions."""
    enc = ObservationEncoder(rules)
    pick = random.Random(match_seed)
    found = 0
    m_index = 0
    while found < count:
        agents = [
            make_agent(name, rules, seed=match_seed + 100 * m_index + seat)
            for seat, name in enumerate(lineup)
        ]
        for a in agents:
            a.reset()
        match = Match(rules, seed=match_seed + m_index)
        move = 0
        while not match.is_over and found < count:
            seat = match.state.seat
            obs, mask = enc.encode(match, seat), enc.action_mask(match, seat)
            if mask.sum() > 1 and pick.random() < rate:
                yield m_index, move, obs, mask
                found += 1
            action = int(agents[seat].act(obs, mask))
            match.apply(match.state.codec.to_move(action, seat))
            move += 1
        m_index += 1


def main(names: list[str]) -> None:
    unknown = set(names) - set(SETUPS)
    if unknown:
        raise SystemExit(f"unknown fixture(s) {sorted(unknown)}: expected some of {list(SETUPS)}")
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True
    ).stdout.strip()
    for name, setup in SETUPS.items():
        if names and name not in names:
            continue
        ckpt = ROOT / "checkpoints" / f"default-{name}.pt"
        data = torch.load(ckpt, map_location="cpu", weights_only=True)
        rules = RulesConfig.from_dict(data["rules"])
        agent = make_agent(f"ckpt:{ckpt}", rules)
        rows = list(
            positions(rules, setup["lineup"], setup["match_seed"], setup["rate"], POSITIONS)
        )
        obs = np.stack([r[2] for r in rows]).astype(np.float32)
        masks = np.stack([r[3] for r in rows]).astype(bool)
        with torch.no_grad():
            x = torch.as_tensor(agent._featurize(obs))
            logits, values = agent.net(x, torch.as_tensor(masks))
            probs = torch.softmax(logits, -1).numpy()
        actions = agent.act_batch(obs, masks)
        assert (actions == probs.argmax(1)).all()
        meta = {
            "checkpoint": f"checkpoints/default-{name}.pt",
            "rules": rules.to_dict(),
            **setup,
            "made_with": f"commit {commit or 'unknown'} (PPOAgent.act_batch)",
        }
        path = OUT / f"checkpoint_positions_{name}.npz"
        np.savez_compressed(
            path,
            obs=obs,
            masks=np.packbits(masks, axis=1),
            num_actions=np.int64(masks.shape[1]),
            probs=probs.astype(np.float32),
            values=values.numpy().astype(np.float32),
            actions=actions.astype(np.int64),
            match_index=np.array([r[0] for r in rows], dtype=np.int64),
            move=np.array([r[1] for r in rows], dtype=np.int64),
            meta=np.array(json.dumps(meta)),
        )
        legal = masks.sum(1)
        print(f"{path.name}: {len(rows)} positions from {rows[-1][0] + 1} matches, "
              f"{legal.min()}-{legal.max()} legal actions, {path.stat().st_size} bytes",
              file=sys.stderr)


if __name__ == "__main__":
    main(sys.argv[1:])
