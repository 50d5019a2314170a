"""The ``backend`` option of tournaments, rollout collectors and the trainer, where it needs
no Ray: unknown names and a missing Ray are clear errors before any work. (Ray itself is
tested in its own venv: tests/integrations/test_ray.py.)"""

from __future__ import annotations

import sys

import pytest

from mt_env import RulesConfig
from mt_env.agents.evaluation.tournament import main, run_tournament

TWO_SEATS = RulesConfig(num_seats=2, num_rounds=1)
INSTALL = "pip install 'mt_env[ray]'"


@pytest.fixture
def no_ray(monkeypatch):
    """Ray cannot be imported, whether or not this venv has it."""
    monkeypatch.setitem(sys.modules, "ray", None)
    monkeypatch.delitem(sys.modules, "mt_env.integrations.ray", raising=False)


def no_bar(**kwargs):
    raise AssertionError("the tournament started before checking its backend")


def test_an_unknown_backend_names_the_choices():
    with pytest.raises(ValueError, match=r"backend='nonsense': expected one of \('local', 'ray'\)"):
        run_tournament(
            ["greedy", "random"], TWO_SEATS, 2, seed=0, progress=no_bar, backend="nonsense"
        )


def test_the_ray_backend_without_ray_says_what_to_install(no_ray):
    with pytest.raises(
        ImportError, match=r"backend='ray' needs Ray.*" + INSTALL.replace("[", r"\[")
    ):
        run_tournament(["greedy", "random"], TWO_SEATS, 2, seed=0, progress=no_bar, backend="ray")


def test_the_tournament_command_checks_the_backend(no_ray, capsys):
    argv = ["--agents", "greedy", "random", "--seats", "2", "--games", "2", "--no-progress"]
    with pytest.raises(SystemExit) as exit_info:
        main([*argv, "--backend", "ray", "--ray-address", "auto"])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert "needs Ray" in err and INSTALL in err and "Traceback" not in err
    with pytest.raises(SystemExit) as exit_info:
        main([*argv, "--backend", "nonsense"])
    assert exit_info.value.code == 2
    assert "invalid choice: 'nonsense'" in capsys.readouterr().err


def test_collectors_check_the_backend(no_ray):
    from mt_env.agents.ppo.rollout import Collectors, check_backend

    check_backend("local", processes=False)
    with pytest.raises(ValueError, match=r"backend='nonsense': expected one of"):
        Collectors([], processes=True, backend="nonsense")
    with pytest.raises(ValueError, match=r"backend='ray' runs each collector in a Ray actor"):
        Collectors([], processes=False, backend="ray")
    with pytest.raises(ImportError, match=r"needs Ray.*" + INSTALL.replace("[", r"\[")):
        Collectors([], processes=True, backend="ray")


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--backend", "nonsense"], r"backend='nonsense': expected one of \('local', 'ray'\)"),
        (["--backend", "ray", "--num-workers", "0"], r"expected at least one worker"),
        (["--backend", "ray", "--num-workers", "1"], r"needs Ray.*mt_env\[ray\]"),
    ],
)
def test_the_trainer_checks_the_backend_before_any_work(no_ray, flags, message):
    import train
    from mt_env.agents.ppo.runs import OptionError

    assert train.parse_args(["--config", "quick"]).backend == "local"
    with pytest.raises(OptionError, match=message):
        train.parse_args(["--config", "quick", *flags])
