"""The repository's top level, installed as the package ``mt_env.cli``.

``train.py`` is ``mt_env.cli.train`` once installed (the ``mt-train`` command) and its
presets ``configs/*.toml`` ship beside it as package data; from a checkout,
``python train.py`` runs the same file. Nothing else here is installed (pyproject.toml).
This file exists because an editable install can only map a folder that has one.
"""
