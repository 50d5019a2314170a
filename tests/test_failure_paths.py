"""Failure paths around the rules core (issue 12): a failed opponent in the Gymnasium
wrapper, steps after the end of the AEC and parallel envs, and the tournament's output
folder (checked before any game, written all or nothing).

Every probe is tallied in :mod:`probes` (``.venv/bin/python tests/probes.py``).
"""

from __future__ import annotations

import errno
import json
import os
from pathlib import Path

import numpy as np
import pytest
from probes import OPPONENT_IN_RESET, OPPONENT_IN_STEP, record

import mt_env.agents.evaluation.tournament as tournament
from mt_env import IllegalMoveError, MexicanTrainGymEnv, RulesConfig
from mt_env.aec import env, parallel_env, raw_env

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

MAX_STEPS = 5_000  # every game loop here ends far sooner
MID_SAVE = "tournament: write failure or interrupt mid-save"
OUTPUTS = ["agents.csv", "head_to_head.csv", "ratings.png", "summary.json", "summary.md"]


def first_legal(mask) -> int:
    return int(np.flatnonzero(mask)[0])


def gym_snapshot(g: MexicanTrainGymEnv) -> tuple:
    m = g.match
    return (
        tuple(m.state.public(k) for k in range(g.config.num_seats)),
        g.aec.state().tobytes(),
        len(m.results),
        g.aec.agent_selection,
        tuple(g.aec._cumulative_rewards.items()),
        g.seat,
        g._pending,
        repr(g.np_random.bit_generator.state),
    )


# ====================================================================== Gymnasium wrapper
class FlakyOpponent:
    """Plays its first legal action; on call number ``fail_at`` it misbehaves once."""

    def __init__(self, fail_at: int, how: str) -> None:
        self.calls, self.fail_at, self.how = 0, fail_at, how

    def __call__(self, observation, action_mask):
        self.calls += 1
        if self.calls == self.fail_at:
            if self.how == "raise":
                raise KeyError("the opponent's lookup table has no such key")
            if self.how == "illegal":
                return int(np.flatnonzero(action_mask == 0)[0])
            return "pass"  # ill-typed
        return first_legal(action_mask)


@pytest.mark.parametrize("how", ["raise", "illegal", "ill-typed"])
def test_gym_failed_opponent_refuses_every_step_until_reset(how):
    """Regression: after an opponent raised, the wrapper stayed live with the opponent's
    seat to act, and the learner's next step() was played for that seat."""
    n = 3
    opponent = FlakyOpponent(fail_at=10**9, how=how)
    g = MexicanTrainGymEnv(num_seats=n, num_rounds=2, learner_seat=0, opponents=opponent)
    obs, _ = g.reset(seed=3)
    opponent.fail_at = opponent.calls + 4  # in the middle of a learner step
    err = None
    for _ in range(MAX_STEPS):
        try:
            obs, *_ = g.step(first_legal(obs["action_mask"]))
        except (KeyError, IllegalMoveError) as e:
            err = e
            break
    assert err is not None and opponent.calls == opponent.fail_at
    notes = " ".join(getattr(err, "__notes__", []))
    clear = "opponent policy at seat" in str(err) + notes
    assert clear
    assert g.match.state.seat != g.seat  # an opponent's turn: the learner must not move
    assert g.failed is not None and type(err).__name__ in g.failed
    before = gym_snapshot(g)
    refusals = 0
    for action in (0, first_legal(g.encoder.action_mask(g.match, g.match.state.seat))):
        with pytest.raises(RuntimeError, match=r"state is undefined .*call reset\(\)") as refusal:
            g.step(action)
        refusals += type(err).__name__ in str(refusal.value)
    lost = gym_snapshot(g) != before
    record(OPPONENT_IN_STEP, clear and refusals == 2, lost)
    assert refusals == 2 and not lost
    assert not g.action_masks().any()
    # reset() makes the env whole: a full match plays out (the opponent is fine again)
    obs, info = g.reset(seed=4)
    assert g.failed is None and info["to_act"] and g.match.state.seat == g.seat
    for _ in range(MAX_STEPS):
        obs, reward, terminated, truncated, info = g.step(first_legal(obs["action_mask"]))
        if terminated:
            break
    assert g.match.is_over and len(g.match.results) == 2


def test_gym_failed_reset_refuses_steps():
    """An opponent failing inside reset() (it moves before the learner) leaves no
    half-made episode to step: before, the previous episode's flags stayed live and the
    learner's step was played for the opponent's seat."""
    opponent = FlakyOpponent(fail_at=10**9, how="raise")
    g = MexicanTrainGymEnv(num_seats=2, num_rounds=1, learner_seat=1, opponents=opponent)
    seed = next(s for s in range(100) if g.reset(seed=s) and opponent.calls > 0)
    g.step(first_legal(g.action_masks()))  # an episode in progress
    opponent.fail_at = opponent.calls + 1
    with pytest.raises(KeyError):
        g.reset(seed=seed)  # the opponent moves first, and fails
    with pytest.raises(RuntimeError, match=r"reset\(\) raised KeyError.*call reset\(\)"):
        g.step(first_legal(g.encoder.action_mask(g.match, g.match.state.seat)))
    record(OPPONENT_IN_RESET, True)
    g.reset(seed=seed)
    assert g.failed is None and g.match.state.seat == 1


def test_gym_refused_learner_action_leaves_everything_as_before():
    """The other documented outcome: an action refused before any move (outside the
    action space; illegal under "raise") leaves the env exactly as it was, and usable."""
    g = MexicanTrainGymEnv(num_seats=4, num_rounds=1, illegal_action="raise",
                           learner_seat="random")
    obs, _ = g.reset(seed=7)
    before = gym_snapshot(g)
    illegal = int(np.flatnonzero(obs["action_mask"] == 0)[0])
    for bad, kind in [(illegal, IllegalMoveError), (-1, ValueError), (True, ValueError),
                      (np.bool_(True), ValueError), ("3", ValueError)]:
        with pytest.raises(kind):
            g.step(bad)
        lost = gym_snapshot(g) != before
        record("Gymnasium, raise mode: illegal action" if kind is IllegalMoveError
               else "Gymnasium: out-of-space or ill-typed action", True, lost)
        assert not lost and g.failed is None
    g.step(first_legal(obs["action_mask"]))  # the episode goes on


# ====================================================================== AEC and parallel
def _play_out(e) -> None:
    for _ in range(MAX_STEPS):
        if not e.agents:
            return
        obs, _, term, trunc, _ = e.last()
        e.step(None if term or trunc else first_legal(obs["action_mask"]))
    raise AssertionError("the game did not end")


@pytest.mark.parametrize("make", [raw_env, env], ids=["raw_env", "env"])
def test_aec_step_after_every_agent_left_is_a_clear_error(make):
    """Regression: raw_env raised a bare KeyError; env() only logged a warning and
    dropped the action."""
    e = make(num_seats=3, num_rounds=1)
    e.reset(seed=1)
    _play_out(e)
    assert e.agents == []
    state = e.state().tobytes()
    for action in (None, 0, 10**9):
        with pytest.raises(RuntimeError, match=r"episode ended.*call reset\(\)"):
            e.step(action)
        lost = e.state().tobytes() != state
        record("AEC / parallel env: step after every agent left", True, lost)
        assert not lost
    e.reset(seed=2)  # and the env is usable again
    assert len(e.agents) == 3
    _play_out(e)


def test_raw_env_step_before_reset_and_by_done_agents():
    e = raw_env(num_seats=2, num_rounds=1)
    with pytest.raises(RuntimeError, match=r"before reset\(\)"):
        e.step(0)
    e.reset(seed=0)
    for _ in range(MAX_STEPS):
        if all(e.terminations.values()):
            break
        e.step(first_legal(e.observe(e.agent_selection)["action_mask"]))
    with pytest.raises(ValueError, match=r"terminated .* only valid action is None"):
        e.step(0)
    record("AEC env: step by a done agent (not None)", True)


def test_parallel_env_after_the_end_and_malformed_actions():
    p = parallel_env(num_seats=2, num_rounds=1)
    with pytest.raises(RuntimeError, match=r"before reset\(\)"):
        p.step({})
    obs, _ = p.reset(seed=0)
    actor = p.aec.agent_selection
    for bad in ([actor], 0, None):
        with pytest.raises(ValueError, match="expected a dict"):
            p.step(bad)
        record("parallel env: malformed actions (not a dict, actor missing)", True)
    for _ in range(MAX_STEPS):
        if not p.agents:
            break
        actor = p.aec.agent_selection
        obs, *_ = p.step({actor: first_legal(obs[actor]["action_mask"])})
    with pytest.raises(RuntimeError, match=r"episode ended.*call reset\(\)"):
        p.step({"player_0": 0})
    record("AEC / parallel env: step after every agent left", True)


# ====================================================================== tournament outputs
FAST = RulesConfig(num_seats=2, num_rounds=1)
CLI = ["--agents", "greedy", "random", "--seats", "2", "--games", "2", "--rules", "num_rounds=1",
       "--workers", "1", "--no-progress"]


def _files(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


@pytest.fixture(scope="module")
def result():
    return tournament.run_tournament(["greedy", "random"], FAST, 2, seed=0, workers=1,
                                     progress=False)


@pytest.fixture
def no_games(monkeypatch):
    """Fails the test if a single game starts."""
    def refuse(*args, **kwargs):
        raise AssertionError("a game was played before the output folder was checked")
    monkeypatch.setattr(tournament, "run_tournament", refuse)


def test_cli_blocked_out_folder_fails_before_any_game(tmp_path, capsys, no_games):
    """Regression: --out was first used after every game, and a bad one ended in a
    traceback with the results lost. A path under a file, and a file, are refused first."""
    blocker = tmp_path / "results"
    blocker.write_text("not a folder")
    for out, reason in [
        (blocker / "run", "'.*results' is a file, not a folder"),
        (blocker, "exists and is not a folder"),
    ]:
        with pytest.raises(SystemExit) as exit_:
            tournament.main([*CLI, "--out", str(out)])
        err = capsys.readouterr().err
        clear = exit_.value.code == 2 and "--out: output folder" in err
        assert clear, err
        assert __import__("re").search(reason, err), err
        lost = blocker.read_text() != "not a folder"
        record("tournament: unusable --out folder (before any game)", clear, lost)
        assert not lost


def test_cli_unwritable_out_folder_fails_before_any_game(tmp_path, capsys, monkeypatch,
                                                        no_games):
    """An existing folder where no file can be created (simulated: the tests run as root,
    who may write anywhere) is refused before any game."""
    def no_permission(folder, name):
        raise PermissionError(errno.EACCES, "Permission denied")
    monkeypatch.setattr(tournament, "_create_temp", no_permission)
    with pytest.raises(SystemExit) as exit_:
        tournament.main([*CLI, "--out", str(tmp_path)])
    err = capsys.readouterr().err
    clear = exit_.value.code == 2 and "is not writable: Permission denied" in err
    record("tournament: unusable --out folder (before any game)", clear, any(tmp_path.iterdir()))
    assert clear, err
    assert not any(tmp_path.iterdir())


@pytest.mark.parametrize("fail_in", ["summary.json", "head_to_head.csv", "summary.md",
                                     "ratings.png", "fsync"])
def test_save_failure_leaves_previous_files_intact(tmp_path, monkeypatch, result, fail_in):
    """A full disk at any point of save(): the previous run's five files stay byte for
    byte, no temporary file is left, and the error names the folder."""
    out = tmp_path / "run"
    result.save(out)
    previous = _files(out)
    assert sorted(previous) == OUTPUTS

    def full_disk(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    if fail_in == "ratings.png":  # half a picture written, then the disk is full
        def plot(res, fh):
            fh.write(b"\x89PNG half")
            full_disk()
        monkeypatch.setattr(tournament, "plot_ratings", plot)
    elif fail_in == "fsync":
        monkeypatch.setattr(tournament.os, "fsync", full_disk)
    elif fail_in.endswith(".csv"):
        real = tournament._write_csv
        calls = []

        def csv_then_fail(fh, rows):
            calls.append(1)
            real(fh, rows)
            if len(calls) == 2:  # head_to_head.csv, once written
                full_disk()
        monkeypatch.setattr(tournament, "_write_csv", csv_then_fail)
    else:
        real_text = tournament._write_text
        target = {"summary.json": 1, "summary.md": 2}[fail_in]
        calls = []

        def text_then_fail(fh, text):
            calls.append(1)
            if len(calls) == target:
                fh.write(text[:10].encode())
                full_disk()
            real_text(fh, text)
        monkeypatch.setattr(tournament, "_write_text", text_then_fail)
    with pytest.raises(OSError, match="could not write the results into .*run.*No space left"):
        result.save(out)
    after = _files(out)
    lost = after != previous
    record(MID_SAVE, True, lost)
    assert not lost, sorted(after)


def test_save_interrupted_and_save_into_a_new_folder(tmp_path, monkeypatch, result):
    """Ctrl-C in the middle of save() cleans up too; a failed first save into a new
    folder leaves it empty (no 0-byte summary.md)."""
    out = tmp_path / "fresh"

    def interrupted(res, fh):
        fh.write(b"\x89PNG")
        raise KeyboardInterrupt

    monkeypatch.setattr(tournament, "plot_ratings", interrupted)
    with pytest.raises(KeyboardInterrupt):
        result.save(out)
    lost = list(out.iterdir()) != []
    record(MID_SAVE, True, lost)
    assert not lost


def test_cli_save_failure_is_a_clear_error(tmp_path, capsys, monkeypatch):
    out = tmp_path / "run"
    assert tournament.main([*CLI, "--out", str(out)]) == 0
    previous = _files(out)
    monkeypatch.setattr(tournament, "plot_ratings",
                        lambda res, fh: (_ for _ in ()).throw(OSError(errno.EIO, "I/O error")))
    capsys.readouterr()
    assert tournament.main([*CLI, "--seed", "5", "--out", str(out)]) == 1
    captured = capsys.readouterr()
    clear = "error: could not write the results" in captured.err and "unchanged" in captured.err
    assert "| greedy" in captured.out  # the tables were printed before saving
    lost = _files(out) != previous
    record(MID_SAVE, clear, lost)
    assert clear and not lost


def test_save_writes_complete_files_with_ordinary_permissions(tmp_path, result):
    out = tmp_path / "run"
    paths = result.save(out)
    assert sorted(p.name for p in paths) == OUTPUTS == sorted(_files(out))
    assert json.loads((out / "summary.json").read_text())["games"] == result.games
    assert (out / "ratings.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    umask = os.umask(0)
    os.umask(umask)
    assert all((out / name).stat().st_mode & 0o777 == 0o666 & ~umask for name in OUTPUTS)
