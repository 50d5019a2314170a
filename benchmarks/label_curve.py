"""How much of a decision's value a network learns from true-world labels, by their number,
next to what ``search-ppo`` estimates on the same decisions.

Reads two files of decisions labelled in the game's own hidden tiles (``python -m
mt_env.agents.ppo.improve --worlds true --data FILE``, two seeds). For each size ``n`` in
``--sizes`` it fits a fresh regressor (an MLP of three ``--width`` layers on the policy's
input, mean squared error on each searched play's advantage) to the first ``n`` labelled
decisions of TRAIN (whole matches, in the file's order), keeps the epoch best on a fixed
validation block (TRAIN's last 10%; it stops three epochs after the best), and scores it on
TEST:

- ``corr``: the correlation, over the plays other than the policy's argmax, of the predicted
  difference (the play less the argmax) with the labelled one;
- ``mN``: the mean gain, in pips over the policy's expected play, of playing the predicted
  best wherever it beats the argmax by more than N pips, its standard error, and how often
  it departs from the argmax.

Then, on ``--search-rows`` decisions of TEST, the same readouts for ``search-ppo``'s own
estimates (each candidate's mean value over ``--worlds`` guessed worlds, the policy playing
them out, from the bare observation) and for the last fit of ``--sizes``. docs/experiments.md
§3.19.

    .venv/bin/python benchmarks/label_curve.py train.npz test.npz \\
        --policy checkpoints/default-2seat.pt --sizes 25000 100000 400000 --worlds 16 64
"""

from __future__ import annotations

import argparse
import copy
import math
import time
from itertools import pairwise

import numpy as np
import torch
from torch import nn

from mt_env.agents.features import make_featurizer
from mt_env.agents.ppo import PPOAgent, build_policy, load_checkpoint
from mt_env.agents.ppo.improve import advantages, read_data, true_world_meta
from mt_env.agents.ppo.policy import PolicySearchAgent
from mt_env.config import RulesConfig


class Decisions:
    """The labelled decisions of one file: the policy's input ``x``, the searched plays
    ``searched`` (N, A), the policy's argmax and each play's advantage (N, A), in pips."""

    def __init__(self, path: str, payload: dict, config: RulesConfig) -> None:
        data = read_data(path, config)
        try:
            meta = true_world_meta(data, path)
        except ValueError as err:
            raise SystemExit(str(err)) from None
        if meta.get("phase", "later") != "later":
            raise SystemExit(f"{path}: expected labels of the later decisions (improve --phase "
                             f"later, what search-ppo searches), got phase {meta['phase']!r}")  # fmt: skip
        rows = np.flatnonzero(data["actions"][:, 0] >= 0)
        self.obs, self.masks = data["obs"][rows], data["mask"][rows].astype(bool)
        self.actions = data["actions"][rows]
        self.x = torch.as_tensor(make_featurizer(config, payload["features"])(self.obs))
        m, a = torch.as_tensor(self.masks), torch.as_tensor(self.actions)
        net = build_policy(payload)
        with torch.no_grad():
            old = torch.cat(
                [net(self.x[i : i + 8192], m[i : i + 8192])[0] for i in range(0, len(a), 8192)]
            )
        self.adv = advantages(old, m, a, torch.as_tensor(data["q"][rows])).numpy()
        self.argmax = old.argmax(1).numpy()
        self.searched = np.zeros(self.masks.shape, bool)
        ok = self.actions >= 0
        self.searched[np.nonzero(ok)[0], self.actions[ok]] = True

    def take(self, rows: np.ndarray) -> Decisions:
        """These decisions at ``rows`` only."""
        part = copy.copy(self)
        for name in ("obs", "masks", "actions", "x", "adv", "argmax", "searched"):
            setattr(part, name, getattr(self, name)[rows])
        return part


def readout(score: np.ndarray, d: Decisions, rows=slice(None)) -> str:
    """``corr`` and the gains at margins 0, 2, 5, 10 pips of ``score`` (N, A), one value
    per searched play of each of ``d``'s decisions, on the decisions ``rows``."""
    score, adv, o, searched = score[rows], d.adv[rows], d.argmax[rows], d.searched[rows]
    idx = np.arange(len(o))
    score = np.where(searched, score, -np.inf)
    others = searched.copy()
    others[idx, o] = False
    predicted = (score - score[idx, o][:, None])[others]
    labelled = (adv - adv[idx, o][:, None])[others]
    out = [f"corr {np.corrcoef(predicted, labelled)[0, 1]:+.4f}"]
    best = score.argmax(1)
    margin = score[idx, best] - score[idx, o]
    for m in (0, 2, 5, 10):
        pick = np.where(margin > m, best, o)
        gain = adv[idx, pick]
        se = gain.std(ddof=1) / math.sqrt(len(gain))
        out.append(f"m{m} {gain.mean():+.3f} ({se:.3f}) departs {(pick != o).mean():.1%}")
    return "; ".join(out)


def predict(net: nn.Module, x: torch.Tensor) -> np.ndarray:
    with torch.no_grad():
        return torch.cat([net(x[i : i + 8192]) for i in range(0, len(x), 8192)]).numpy()


def fit_regressor(
    train: Decisions, n: int, width: int, seed: int, patience: int = 3, max_epochs: int = 60
) -> tuple[nn.Module, str]:
    """A fresh MLP fitted to the advantages of the first ``n`` decisions of ``train``, at
    the epoch best on its last 10%; it stops ``patience`` epochs after the best."""
    torch.manual_seed(seed)
    x, s = train.x, torch.as_tensor(train.searched)
    adv = torch.as_tensor(train.adv)
    held = len(x) // 10
    if held < 100:
        raise SystemExit(f"{len(x)} labelled decisions to fit: expected at least 1,000")
    n = min(n, len(x) - held)
    sizes = [x.shape[1], width, width, width]
    layers: list[nn.Module] = []
    for a, b in pairwise(sizes):
        layers += [nn.Linear(a, b), nn.ReLU()]
    net = nn.Sequential(*layers, nn.Linear(width, s.shape[1]))
    opt = torch.optim.Adam(net.parameters(), lr=3e-4)
    best, start = (math.inf, None, 0), time.perf_counter()
    for epoch in range(max_epochs):
        for mb in torch.randperm(n).split(512):
            err = (net(x[mb]) - adv[mb]) ** 2 * s[mb]
            loss = err.sum() / s[mb].sum()
            opt.zero_grad()
            loss.backward()
            opt.step()
        p = torch.as_tensor(predict(net, x[-held:]))
        mse = float(((p - adv[-held:]) ** 2 * s[-held:]).sum() / s[-held:].sum())
        if mse < best[0]:
            best = (mse, {k: t.clone() for k, t in net.state_dict().items()}, epoch + 1)
        elif epoch + 1 - best[2] >= patience:
            break
    if best[1] is None:
        raise SystemExit(f"n={n}: the fit diverged (validation error {mse}) in every epoch")
    net.load_state_dict(best[1])
    seconds = time.perf_counter() - start
    return (
        net,
        f"n={n}: epoch {best[2]} of {epoch + 1}, validation mse {best[0]:.2f}, {seconds:.0f} s",
    )


class ValueProbe(PolicySearchAgent):
    """``search-ppo`` that, where it would search, values the given candidates instead of
    its own and keeps their mean values over its guessed worlds (``means``)."""

    candidates: list[int] = []
    means: list[float] | None = None

    def search(self, v) -> int:
        options = [(a,) for a in self.candidates]
        values = self.option_values(v, options, lambda s, option: s.apply(option[0]))
        self.means = [sum(w) / len(w) for w in values]
        return self.candidates[0]


def search_estimates(d: Decisions, policy: PPOAgent, config, worlds: int, seed: int) -> np.ndarray:
    """``search-ppo``'s mean value of each searched play (N, A) in ``worlds`` guessed
    worlds; NaN where it would not search."""
    out = np.full(d.masks.shape, np.nan)
    for i in range(len(d.argmax)):
        agent = ValueProbe(config, seed * 1_000_003 + i, policy=policy, samples=worlds)
        agent.reset()
        agent.candidates = [int(a) for a in d.actions[i] if a >= 0]
        agent.act(d.obs[i], d.masks[i].astype(np.int8))
        if agent.means is not None:
            out[i, agent.candidates] = agent.means
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("train", help="an .npz written by improve --worlds true --data")
    parser.add_argument("test", help="the same, from another seed")
    parser.add_argument("--policy", default="checkpoints/default-2seat.pt",
                        help="the policy the decisions were labelled with")  # fmt: skip
    parser.add_argument("--sizes", type=int, nargs="+", default=[25_000, 100_000, 400_000])
    parser.add_argument("--width", type=int, default=512)
    parser.add_argument("--search-rows", type=int, default=4000, help="0: skip search-ppo")
    parser.add_argument("--worlds", type=int, nargs="+", default=[16])
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    torch.set_num_threads(2)
    payload = load_checkpoint(args.policy)
    config = RulesConfig.from_dict(payload["rules"])
    train = Decisions(args.train, payload, config)
    test = Decisions(args.test, payload, config)
    print(
        f"{len(train.argmax)} labelled decisions to fit (the last 10% validate), {len(test.argmax)} to test"
    )
    idx = np.arange(len(test.argmax))
    print(
        f"the policy's argmax on the test decisions: {test.adv[idx, test.argmax].mean():+.3f} pips"
    )
    net = None
    for n in args.sizes:
        net, line = fit_regressor(train, n, args.width, args.seed)
        print(f"{line} | {readout(predict(net, test.x), test)}", flush=True)
    if not args.search_rows:
        return
    k = min(args.search_rows, len(test.argmax))
    rng = np.random.default_rng(args.seed)
    sample = test.take(np.sort(rng.choice(len(test.argmax), k, replace=False)))
    torch.set_num_threads(1)
    idx = np.arange(k)
    print(f"{k} decisions for search-ppo; the policy's argmax on them: "
          f"{sample.adv[idx, sample.argmax].mean():+.3f} pips")  # fmt: skip
    policy = PPOAgent.from_checkpoint(args.policy, config)
    for worlds in args.worlds:
        start = time.perf_counter()
        est = search_estimates(sample, policy, config, worlds, args.seed)
        rows = np.isfinite(est).any(1) & sample.searched[np.arange(k), sample.argmax]
        seconds = time.perf_counter() - start
        print(f"search-ppo, {worlds} worlds ({rows.sum()} of {k} decisions, {seconds:.0f} s): "
              f"{readout(np.nan_to_num(est, nan=-np.inf), sample, rows)}")  # fmt: skip
    if net is not None:
        print(
            f"the last fit on the same decisions: {readout(predict(net, sample.x), sample, rows)}"
        )


if __name__ == "__main__":
    main()
