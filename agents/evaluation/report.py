"""The trainer's evaluations: a checkpoint against scripted baselines, as a row or a table.

:func:`evaluate` is the periodic evaluation (which keeps ``best.pt``) and :func:`evaluation_table`
the table a training run ends with (``evaluation.md``) — and the one the examples of other
libraries (``examples/``) end with: ``checkpoint`` is a checkpoint path or any agent spec
(``py:...``, a baseline name). Both are duplicate tournaments
(:func:`mt_env.agents.evaluation.tournament.run_tournament`): the checkpoint in one seat, the
opponent in every other, every deal replayed under every rotation of the seats. Both take
``progress``: a tqdm-like bar factory (the trainer's), or None for no bar; each tournament
then shows a bar of games done labelled with its opponent.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Sequence

from mt_env.agents import AGENTS, CHECKPOINT_PREFIX, TORCH_PREFIXES
from mt_env.agents.evaluation.tournament import run_tournament
from mt_env.config import RulesConfig


def agent_spec(checkpoint: str | os.PathLike) -> str:
    """``checkpoint`` as an agent spec: a spec stays itself, a path becomes ``ckpt:PATH``."""
    text = os.fspath(checkpoint)
    if text.startswith(TORCH_PREFIXES) or text in AGENTS:
        return text
    return f"{CHECKPOINT_PREFIX}{text}"


def evaluate(
    checkpoint: str | os.PathLike,
    rules: RulesConfig,
    opponent: str,
    games: int,
    seed: int,
    progress: Callable | None = None,
    label: str = "evaluating",
    workers: int | None = None,
) -> dict:
    """The checkpoint (or agent spec) in one seat, ``opponent`` in every other seat:
    duplicate deals, rotated seats. Returns its result row (``win_rate``, ``win_lo``,
    ``win_hi``, ``round_score``…, ``place``…; see
    :func:`mt_env.agents.evaluation.tournament.summarize`). ``progress``: a bar factory; the
    bar of games is labelled "``label`` vs ``opponent``". ``workers``: as for the tournament."""
    spec = agent_spec(checkpoint)
    lineup = [spec] + [opponent] * (rules.num_seats - 1)
    bar = False if progress is None else functools.partial(progress, desc=f"{label} vs {opponent}")
    result = run_tournament(lineup, rules, games=games, seed=seed, workers=workers, progress=bar)
    return result.agent_row(spec)


def evaluation_table(
    checkpoint: str | os.PathLike,
    rules: RulesConfig,
    opponents: Sequence[str],
    games: int,
    seed: int,
    progress: Callable | None = None,
    workers: int | None = None,
) -> str:
    """A markdown table of :func:`evaluate` against each opponent, with its caption; with
    ``progress``, a bar per opponent ("final evaluation vs NAME", games done/total)."""
    n = rules.num_seats
    lines = [
        f"Evaluation of {checkpoint} ({games} games each, {n} seats: the policy in one "
        f"seat, the opponent in the other {n - 1}; fair share {1.0 / n:.0%})",
        "",
        "| opponent | win rate [95% CI] | mean round score [95% CI] | mean place [95% CI] |",
        "|---|---|---|---|",
    ]
    for opponent in opponents:
        s = evaluate(
            checkpoint, rules, opponent, games, seed, progress, "final evaluation", workers
        )
        lines.append(
            f"| {opponent} | {s['win_rate']:.1%} [{s['win_lo']:.1%}, {s['win_hi']:.1%}] | "
            f"{s['round_score']:.1f} [{s['round_score_lo']:.1f}, {s['round_score_hi']:.1f}] | "
            f"{s['place']:.2f} [{s['place_lo']:.2f}, {s['place_hi']:.2f}] |"
        )
    return "\n".join(lines)
