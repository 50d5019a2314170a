"""What a player's choice gains over the policy's, one decision at a time, in true worlds.

Reads decisions labelled in the game's own hidden tiles (``python -m
mt_env.agents.ppo.improve --worlds true --data FILE``: each candidate play valued once, in
the real deal and draw order, the policy playing the round out) and prints, for the
policy's argmax, for ``search-ppo`` on the same positions and for each checkpoint given,
the mean advantage of its choice over the labelling policy's expected play, in pips, with
its standard error. A choice outside the searched plays counts as the worst searched one
(:func:`mt_env.agents.ppo.improve.advantages`). Label the test set with a seed no fit saw.
``search-ppo`` acts on each bare observation, which carries the known voids (observation
layout 2), so it keeps the same pips out of its guessed hands as in play. Labels of the
free first turn (``improve --phase first``) are scored the same way; there ``search-ppo``
plays the policy's own move, so give ``--search-ppo 0``.
docs/experiments.md sections 3.16 and 3.17.

    .venv/bin/python benchmarks/decision_gain.py test.npz --decisions 15000 \\
        --policy checkpoints/default-2seat.pt --candidates /tmp/fitted.pt
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch

from mt_env.agents.features import make_featurizer
from mt_env.agents.ppo import PPOAgent, build_policy, load_checkpoint
from mt_env.agents.ppo.improve import advantages, read_data, true_world_meta
from mt_env.agents.ppo.policy import PolicySearchAgent
from mt_env.config import RulesConfig


def summary(name: str, picks: np.ndarray, adv: np.ndarray, argmax: np.ndarray) -> str:
    gain = adv[np.arange(len(picks)), picks]
    se = gain.std(ddof=1) / np.sqrt(len(gain))
    departs = (picks != argmax).mean()
    return f"{name}: gain {gain.mean():+.3f} pips (standard error {se:.3f}), departs {departs:.1%}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("data", help="an .npz written by improve --worlds true --data")
    parser.add_argument("--policy", default="checkpoints/default-2seat.pt",
                        help="the policy the decisions were labelled with")  # fmt: skip
    parser.add_argument("--candidates", nargs="*", default=[], help="checkpoints to score")
    parser.add_argument("--decisions", type=int, default=15_000, help="labelled decisions used")
    parser.add_argument("--search-ppo", type=int, default=None, metavar="N",
                        help="score search-ppo on the first N of them (default all; 0: skip)")  # fmt: skip
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    torch.set_num_threads(1)
    payload = load_checkpoint(args.policy)
    config = RulesConfig.from_dict(payload["rules"])
    data = read_data(args.data, config)
    try:
        meta = true_world_meta(data, args.data)
    except ValueError as err:
        parser.error(str(err))
    labelled = np.flatnonzero(data["actions"][:, 0] >= 0)
    n = min(args.decisions, len(labelled))
    rows = np.sort(np.random.default_rng(args.seed).choice(labelled, n, replace=False))
    obs, masks = data["obs"][rows], data["mask"][rows].astype(bool)
    x = torch.as_tensor(make_featurizer(config, payload["features"])(obs))
    m = torch.as_tensor(masks)
    with torch.no_grad():
        old = build_policy(payload)(x, m)[0]
    adv = advantages(old, m, torch.as_tensor(data["actions"][rows]), torch.as_tensor(data["q"][rows]))
    adv, argmax = adv.numpy(), old.argmax(1).numpy()
    expected = (torch.softmax(old, -1).numpy() * adv).sum(1).mean()
    print(f"{args.data}: {n} of {len(labelled)} labelled decisions (labels: {meta})")
    print(f"the policy's expected play: {expected:+.3f} pips")
    print(summary("the policy's argmax", argmax, adv, argmax))
    for path in args.candidates:
        net = build_policy(load_checkpoint(path, config))
        with torch.no_grad():
            picks = net(x, m)[0].argmax(1).numpy()
        print(summary(path, picks, adv, argmax))
    k = n if args.search_ppo is None else min(args.search_ppo, n)
    if k:
        policy = PPOAgent.from_checkpoint(args.policy, config)
        start, picks = time.perf_counter(), []
        for i in range(k):
            agent = PolicySearchAgent(config, args.seed * 1_000_003 + i, policy=policy)
            agent.reset()
            picks.append(agent.act(obs[i], masks[i].astype(np.int8)))
        seconds = time.perf_counter() - start
        print(summary(f"search-ppo ({k} decisions, {seconds:.0f} s)", np.array(picks), adv[:k], argmax[:k]))


if __name__ == "__main__":
    main()
