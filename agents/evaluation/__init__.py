"""Evaluating agents against each other (no torch here; a ``ckpt:`` agent loads it lazily).

| module | what |
|---|---|
| :mod:`agents.evaluation.tournament` | duplicate tournaments, tables, ratings; the CLI ``python -m agents.evaluation.tournament`` (``mt-tournament``) |
| :mod:`agents.evaluation.stats` | cluster-robust intervals, Wilson intervals, OpenSkill ratings |
| :mod:`agents.evaluation.report` | the trainer's evaluations of a checkpoint against baselines |
"""
