"""Evaluating agents against each other (no torch here; a ``ckpt:`` agent loads it lazily).

| module | what |
|---|---|
| :mod:`mt_env.agents.evaluation.tournament` | duplicate tournaments, tables, ratings; the CLI ``python -m mt_env.agents.evaluation.tournament`` (``mt-tournament``) |
| :mod:`mt_env.agents.evaluation.stats` | cluster-robust intervals, Wilson intervals, OpenSkill ratings |
| :mod:`mt_env.agents.evaluation.report` | the trainer's evaluations of a checkpoint against baselines |
| :mod:`mt_env.agents.evaluation.play` | the terminal game (``mt-play``): people against agents, game records, replay |
| :mod:`mt_env.agents.evaluation.replay_page` | a saved game as pictures (one PNG per position) and one self-contained HTML replay page (``mt-play --replay … --pictures/--html``) |
"""
