"""How much signal ``search-ppo``'s candidate values carry, decision by decision.

Reads the labelled decisions that ``python -m mt_env.agents.ppo.improve --data FILE`` wrote
and prints, over every (other candidate, policy's choice) pair of a decision, the paired
difference of their values in the decision's guessed worlds: its median size against its
standard error, and how often another candidate beats the policy's choice by one or two
standard errors (for pure noise, with the standard error estimated from 16 worlds: about
16.7% and 3.2%). docs/experiments.md section 3.11.

    .venv/bin/python benchmarks/label_noise.py runs/improve/labels.npz
"""

from __future__ import annotations

import argparse
import warnings

import numpy as np


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("data", help="an .npz written by mt_env.agents.ppo.improve --data")
    args = parser.parse_args()
    with np.load(args.data) as f:
        q, actions = f["q"], f["actions"]
    labelled = actions[:, 0] >= 0
    q = q[labelled]
    worlds = q.shape[2]
    diff = q[:, 1:, :] - q[:, :1, :]  # each other candidate minus the policy's choice
    real = ~np.isnan(diff[:, :, 0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN padding rows
        gain = np.nanmean(diff, 2)[real]
        se = (np.nanstd(diff, 2, ddof=1) / np.sqrt(worlds))[real]
        best_is_policy = (np.nanargmax(np.nanmean(q, 2), 1) == 0).mean()
    print(f"{labelled.sum()} labelled decisions, {real.sum()} pairs, {worlds} worlds each")
    print(
        f"median |mean gain| {np.median(np.abs(gain)):.2f} pips, median standard error "
        f"{np.median(se):.2f}, mean gain {gain.mean():.2f}"
    )
    print(
        f"pairs with gain > 1 SE: {(gain > se).mean():.3f}, > 2 SE: {(gain > 2 * se).mean():.3f}, "
        f"< -1 SE: {(gain < -se).mean():.3f}"
    )
    print(f"the best mean value is the policy's choice in {best_is_policy:.3f} of decisions")


if __name__ == "__main__":
    main()
