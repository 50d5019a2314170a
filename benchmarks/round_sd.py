"""The spread of a seat's round score: the calibration of ``reward="win_prob"``.

    .venv/bin/python benchmarks/round_sd.py [--seats 2 4] [--matches 400] [--agent longest-train] [--seed 7]

``mt_env.rewards.win_chances`` models each seat's future round scores as independent
normal draws with one standard deviation per round, ``ROUND_SD_FRACTION x hand_size x
max_pip`` (a hand's mean pips at the deal). A seat wins by beating each other seat, so what
the model must get right is the spread of a *difference* of two seats' round scores: the
standard deviation it implies is ``sd(s_0 - s_1) / sqrt(2)`` (round scores are not
independent: when one seat goes out the others hold their tiles). Plays ``--matches`` full
default matches per seat count with ``--agent`` in every seat and prints, per seat count,
the mean and standard deviation of a seat's round score, that pairwise figure, and both as
a fraction of the hand's mean pips.
"""

from __future__ import annotations

import argparse
import random
import statistics
import time

from mt_env import Match, RulesConfig
from mt_env.agents import make_agent
from mt_env.agents.base import act_in_match
from mt_env.observation import ObservationEncoder
from mt_env.rewards import ROUND_SD_FRACTION


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seats", type=int, nargs="+", default=[2, 4])
    p.add_argument("--matches", type=int, default=400)
    p.add_argument("--agent", default="longest-train")
    p.add_argument("--seed", type=int, default=7)
    args = p.parse_args()
    for n in args.seats:
        config = RulesConfig(num_seats=n)
        enc = ObservationEncoder(config)
        rng = random.Random(args.seed)
        scores, diffs, t0 = [], [], time.time()
        for _ in range(args.matches):
            agents = [make_agent(args.agent, config, seed=rng.randrange(2**31)) for _ in range(n)]
            for a in agents:
                a.reset()
            m = Match(config, seed=rng.randrange(2**63))
            while not m.is_over:
                seat = m.state.seat
                action = act_in_match(agents[seat], enc, m, seat, enc.action_mask(m, seat))
                result = m.apply(m.state.codec.to_move(action, seat))
                if result is not None:
                    scores.extend(result.scores)
                    diffs.append(result.scores[0] - result.scores[1])
        pips = config.hand_size * config.max_pip
        sd, pair = statistics.pstdev(scores), statistics.pstdev(diffs) / 2**0.5
        print(f"{n} seats (double-{config.max_pip}, {config.hand_size} tiles, {config.num_rounds} rounds), "
              f"{args.agent}, {args.matches} matches, {len(diffs)} rounds in {time.time() - t0:.0f} s: "
              f"round score mean {statistics.mean(scores):.1f}, sd {sd:.1f} ({sd / pips:.3f} of {pips} pips); "
              f"sd(s0 - s1)/sqrt(2) {pair:.1f} ({pair / pips:.3f}); the model uses {ROUND_SD_FRACTION}")


if __name__ == "__main__":
    main()
