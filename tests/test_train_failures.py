"""The trainer's failure paths (issue 12): nothing lost, nothing corrupted.

- a failed update (NaN loss or weights, a refused save, an error) never replaces the last
  good checkpoint; the command reports it and exits 1;
- SIGTERM and SIGINT save the last completed update and exit 143 / 130;
- SIGKILL at chosen moments (behaviour cloning, a checkpoint write, between an update's log
  row and its checkpoint, mid-update) always leaves a run that ``--resume`` finishes with
  exact counters, optimizer steps and one log row per update, no temp files and no
  orphaned workers;
- every option is checked (types, ranges, names) and so is the run folder before any work;
  a rejected ``--resume`` changes nothing; ``--resume`` honours ``--run-dir``; the time used
  is counted across resumes; a checkpoint declaring absurd widths is a one-line error.

The subprocess tests pause ``train.py`` at a chosen point (tests/train_driver.py) and
signal it there: no sleeps. Every probe is tallied in :mod:`probes`.
"""

from __future__ import annotations

import csv
import dataclasses
import os
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

import train
from mt_env.agents.ppo import runs
from mt_env.agents.ppo.checkpoint import CheckpointError, content_digest, load_checkpoint

try:
    from probes import record
except ImportError:  # the tally is optional: the assertions below are the tests

    def record(probe_class: str, clear: bool, lost: bool = False) -> None:
        pass


ROOT = Path(__file__).resolve().parents[1]
DRIVER = ROOT / "tests" / "train_driver.py"
TINY = [  # 2 seats, 1 round, 64-step updates, a 16-wide network, cloning of greedy first
    "--config", "quick", "--rules.num-rounds", "1", "--total-steps", "384", "--rollout-steps", "64",
    "--games-per-worker", "2", "--hidden-sizes", "16", "--features", "none", "--no-progress",
    "--time-limit-minutes", "0", "--eval-every", "0", "--final-eval-games", "0",
    "--checkpoint-every", "2", "--pretrain-teacher", "greedy", "--pretrain-decisions", "100",
    "--pretrain-epochs", "1",
]
EPOCHS_X_MINIBATCHES = 4 * 4  # the quick preset's update_epochs x num_minibatches
BOUND_S = 300  # a hung run fails the test instead of hanging it (never reached when all is well)


# ---------------------------------------------------------------- helpers
def log_rows(run: Path) -> list[dict]:
    with (run / "log.csv").open(newline="") as f:
        return list(csv.DictReader(f))


def updates(run: Path) -> list[int]:
    return [int(r["update"]) for r in log_rows(run)]


def temp_files(run: Path) -> list[str]:
    return sorted(p.name for p in run.glob(".*.tmp"))


def snapshot(folder: Path) -> dict:
    return {p.relative_to(folder): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def group_members(pgid: int) -> list[int]:
    """Live (not zombie) processes of the process group ``pgid``."""
    pids = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[2]) == pgid and fields[0] != "Z":
                pids.append(int(entry))
    return pids


def launch(point: str, count: int, args: list[str], err: Path) -> subprocess.Popen:
    """train.py (through the driver) in its own process group, paused at ``point``."""
    return subprocess.Popen(
        [sys.executable, str(DRIVER), point, str(count), "--", *args], cwd=ROOT,
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err.open("w"), start_new_session=True,
    )


def wait_paused(proc: subprocess.Popen) -> str:
    """Its stdout up to the driver's PAUSED line (read as it comes, bounded by BOUND_S)."""
    out, fd, end = b"", proc.stdout.fileno(), time.monotonic() + BOUND_S
    while b"PAUSED" not in out:
        ready, _, _ = select.select([fd], [], [], max(0.0, end - time.monotonic()))
        assert ready, f"no pause point within {BOUND_S} s: {out.decode()}"
        chunk = os.read(fd, 1 << 16)
        assert chunk, f"the run ended (exit {proc.wait()}) before its pause point: {out.decode()}"
        out += chunk
    return out.decode()


def stop(proc: subprocess.Popen, signum: int) -> tuple[int, int]:
    """Send ``signum`` to the trainer alone (not its group), wait for it, then for every
    process it had started: (its exit code, how many others there were). A process that
    outlives it fails the test."""
    others = [p for p in group_members(proc.pid) if p != proc.pid]
    fds = []
    for pid in others:
        try:
            fds.append(os.pidfd_open(pid))
        except ProcessLookupError:
            pass
    os.kill(proc.pid, signum)
    code = proc.wait(timeout=BOUND_S)
    try:
        for fd in fds:
            assert select.select([fd], [], [], BOUND_S)[0], "a worker process outlived the trainer"
    finally:
        for fd in fds:
            os.close(fd)
    assert group_members(proc.pid) == [], "orphaned processes"
    proc.stdout.close()
    proc.stdin.close()
    return code, len(others)


def finish(args: list[str]) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(ROOT / "train.py"), *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=BOUND_S)


# ---------------------------------------------------------------- SIGKILL, then --resume
KILL_PLANS = {  # (point, count): where each run of the plan is killed; the last run finishes
    0: [("cloning", 1), ("replace", 3), ("logged", 3), ("update", 2)],
    2: [("cloning", 1), ("logged", 3)],
}


@pytest.mark.parametrize("workers", sorted(KILL_PLANS))
def test_sigkill_at_any_moment_leaves_a_run_that_resume_finishes_exactly(tmp_path: Path, workers: int):
    """Killed during cloning (with its workers alive), during a checkpoint write (a temp
    file left), after an update's log row but before its checkpoint, and mid-update; each
    time ``--resume`` continues from the checkpoint (cloning redone only if it was not
    checkpointed), and the finished run has one log row per update, exact counters and
    Adam step counts, no temp files and no orphaned worker processes."""
    run = tmp_path / "quick-seed1"
    ckpt = run / "checkpoint.pt"
    args = [*TINY, "--num-workers", str(workers), "--run-dir", str(tmp_path)]
    expected_resume = 0  # the update each resumed run starts from
    for i, (point, count) in enumerate(KILL_PLANS[workers]):
        proc = launch(point, count, args if i == 0 else ["--resume", str(ckpt)], tmp_path / f"err{i}")
        out = wait_paused(proc)
        code, others = stop(proc, signal.SIGKILL)
        state = load_checkpoint(ckpt)  # always there, always loadable
        rows = updates(run)
        resumable = code == -signal.SIGKILL and rows[: state["iteration"]] == list(range(1, state["iteration"] + 1))
        record("trainer: SIGKILL at a chosen moment, then --resume", clear=resumable, lost=not resumable)
        assert resumable, (point, rows, state["iteration"])
        assert (others >= 2) if workers else (others == 0)  # the workers were alive, and are gone
        if i:
            assert f"at update {expected_resume}" in out
        if point == "cloning":
            assert state["iteration"] == 0 and not state["pretrained"] and rows == []
        if point == "replace":  # killed between the temp file and its rename: the old one stays
            assert len(temp_files(run)) == 1 and state["iteration"] == 0 and state["pretrained"]
        if point == "logged":  # the log runs one update ahead of the checkpoint
            assert rows == list(range(1, state["iteration"] + 2))
        expected_resume = state["iteration"]

    done = finish(["--resume", str(ckpt)])
    assert done.returncode == 0, done.stderr[-3000:]
    assert f"resumed {ckpt} at update {expected_resume}" in done.stdout
    assert "behaviour cloning" not in done.stdout  # done once, and checkpointed
    final = load_checkpoint(ckpt)
    n = final["iteration"]
    rows = log_rows(run)
    assert [int(r["update"]) for r in rows] == list(range(1, n + 1))  # no row missing or twice
    steps = [int(r["global_step"]) for r in rows]
    assert steps == sorted(set(steps)) and steps[-1] == final["global_step"] >= 384
    assert int(rows[-1]["env_steps"]) == final["env_steps"]
    assert final["pretrained"] and final["elapsed"] > 0
    adam_steps = final["optimizer"]["state"][0]["step"].item()
    assert adam_steps == 1 + n * EPOCHS_X_MINIBATCHES  # one cloning minibatch, then n updates
    assert load_checkpoint(run / "final.pt")["iteration"] == n
    assert temp_files(run) == []


def test_a_busy_worker_dies_with_a_killed_trainer(tmp_path: Path):
    """The worker processes' parent-death guard: one that never reads its pipe again (busy)
    still ends when its parent is SIGKILLed (no atexit, no EOF to notice)."""
    proc = launch("busy-worker", 1, [], tmp_path / "err")
    wait_paused(proc)
    code, others = stop(proc, signal.SIGKILL)
    record("trainer: SIGKILL with a busy worker process", clear=others >= 1 and code == -signal.SIGKILL)
    assert others >= 1  # it was alive (with the spawn resource tracker), and stop() saw it end


# ---------------------------------------------------------------- SIGTERM and SIGINT
@pytest.mark.parametrize(("signum", "workers"), [(signal.SIGTERM, 2), (signal.SIGINT, 0)])
def test_sigterm_and_sigint_save_the_last_completed_update_then_exit(tmp_path: Path, signum: int,
                                                                   workers: int):
    """Signalled mid-update (the third), long before a periodic checkpoint is due: the
    state of update 2 is saved (checkpoint.pt, final.pt), log.csv ends at update 2, the
    workers are stopped, and the exit code is 128 + the signal."""
    run = tmp_path / "quick-seed1"
    args = [*TINY, "--pretrain-teacher", "", "--checkpoint-every", "10", "--num-workers", str(workers),
            "--run-dir", str(tmp_path)]
    proc = launch("update", 3, args, tmp_path / "err")
    wait_paused(proc)
    code, _ = stop(proc, signum)
    err = (tmp_path / "err").read_text()
    kept = load_checkpoint(run / "checkpoint.pt")
    exact = kept["iteration"] == 2 == load_checkpoint(run / "final.pt")["iteration"] and updates(run) == [1, 2]
    record("trainer: SIGTERM / SIGINT mid-update", clear=code == 128 + signum, lost=not exact)
    assert code == 128 + signum, err
    assert f"stopped by {signal.Signals(signum).name}: checkpoint.pt and final.pt" in err
    assert "hold update 2" in err and "Traceback" not in err
    assert exact and temp_files(run) == []


# ---------------------------------------------------------------- failed updates
@pytest.mark.parametrize("how", ["nan-weights", "nan-loss", "refused-save", "error"])
def test_a_failed_update_never_replaces_the_last_good_checkpoint(tmp_path: Path, monkeypatch, capsys,
                                                                 smoke_args: list[str], how: str):
    """Update 3 fails: its weights or loss become NaN, or the NaN escapes the divergence
    check and saving refuses it, or the update raises. checkpoint.pt and final.pt hold
    update 2 (saved when the run stopped: no periodic checkpoint was due), load, and are
    finite; the command reports it in one line and exits 1."""
    update, calls = train.ppo_update, [0]

    def failing(policy, *args):
        out = update(policy, *args)
        calls[0] += 1
        if calls[0] == 3:
            if how == "error":
                raise RuntimeError("a worker sent a malformed batch")
            if how == "nan-loss":
                out = {**out, "policy_loss": float("nan")}
            else:
                with torch.no_grad():
                    next(policy.parameters()).view(-1)[0] = float("nan")
        return out

    monkeypatch.setattr(train, "ppo_update", failing)
    if how == "refused-save":
        monkeypatch.setattr(train, "check_finite", lambda *a: None)
    with pytest.raises(SystemExit) as stopped:
        train.cli([*smoke_args, "--run-dir", str(tmp_path), "--total-steps", "1500",
                   "--checkpoint-every", "10"])
    err = capsys.readouterr().err
    run = tmp_path / "quick-seed1"
    kept = [load_checkpoint(run / name) for name in ("checkpoint.pt", "final.pt")]
    good = all(k["iteration"] == 2 for k in kept) and updates(run) == [1, 2]
    record("trainer: failed update (NaN loss or weights, refused save, error)",
           clear=stopped.value.code == 1, lost=not good)
    assert stopped.value.code == 1
    assert good
    assert all(torch.isfinite(t).all() for k in kept for t in k["model"].values())
    expected = {"nan-weights": "update 3 diverged: weights", "nan-loss": "update 3 diverged: policy_loss=nan",
                "refused-save": "NaN or infinite", "error": "update 3 failed (RuntimeError"}[how]
    assert expected in err
    assert f"hold update 2 (step {kept[0]['global_step']:,}), the last completed one" in err


# ---------------------------------------------------------------- the time budget
def test_resume_counts_the_time_already_used(tmp_path: Path, capsys, smoke_args: list[str],
                                            clock_jumps_after_each_update):
    """train.py's clock jumps 25 s per update (no wall clock). Two updates use 50 s of a
    1-minute limit; the resumed run may only do one more, not a fresh minute's three."""
    clock_jumps_after_each_update(25.0)
    run = train.main([*smoke_args, "--run-dir", str(tmp_path), "--time-limit-minutes", "1"])
    used = load_checkpoint(run / "checkpoint.pt")["elapsed"]
    assert 50 <= used < 60
    train.main(["--resume", str(run / "checkpoint.pt"), "--total-steps", "3000"])
    assert load_checkpoint(run / "checkpoint.pt")["iteration"] == 3
    assert "stopped on the time limit of 1 min" in capsys.readouterr().out
    assert updates(run) == [1, 2, 3]


# ---------------------------------------------------------------- options
CLI_ERRORS = [  # (arguments, the error: the option and what was expected)
    (["--checkpoint-every", "0"], r"checkpoint_every=0: expected an int >= 1"),
    (["--num-workers", "3"], r"num_workers=3: expected 0\.\.2 .*at most max\(2, the 2 CPU cores"),
    (["--num-workers", "-1"], r"num_workers=-1: expected 0\.\.2"),
    (["--torch-threads", "0"], r"torch_threads=0: expected an int in 1\.\.256"),
    (["--total-steps", "-5"], r"total_steps=-5: expected an int >= 0"),
    (["--seed", "-1"], r"seed=-1: expected an int in 0\.\.4294967295"),
    (["--learning-rate", "0"], r"learning_rate=0\.0: expected a finite number > 0"),
    (["--learning-rate", "nan"], r"learning_rate=nan: expected a finite number > 0"),
    (["--time-limit-minutes", "inf"], r"time_limit_minutes=inf: expected a finite number >= 0"),
    (["--gamma", "1.5"], r"gamma=1\.5: expected a finite number in 0\.\.1"),
    (["--gae-lambda", "-0.1"], r"gae_lambda=-0\.1: expected a finite number in 0\.\.1"),
    (["--clip-coef", "0"], r"clip_coef=0\.0: expected a finite number > 0"),
    (["--ent-coef", "-0.01"], r"ent_coef=-0\.01: expected a finite number >= 0"),
    (["--vf-coef", "-1"], r"vf_coef=-1\.0: expected a finite number >= 0"),
    (["--max-grad-norm", "0"], r"max_grad_norm=0\.0: expected a finite number > 0"),
    (["--reward-scale", "0"], r"reward_scale=0\.0: expected a finite number > 0"),
    (["--games-per-worker", "0"], r"games_per_worker=0: expected an int >= 1"),
    (["--rollout-steps", "0"], r"rollout_steps=0: expected an int >= 1"),
    (["--update-epochs", "0"], r"update_epochs=0: expected an int >= 1"),
    (["--num-minibatches", "0"], r"num_minibatches=0: expected an int >= 1"),
    (["--num-minibatches", "500", "--rollout-steps", "300"],
     r"num_minibatches=500: expected at most rollout_steps=300"),
    (["--snapshot-every", "-1"], r"snapshot_every=-1: expected an int >= 0"),
    (["--pool-size", "0"], r"pool_size=0: expected an int >= 1"),
    (["--eval-every", "-1"], r"eval_every=-1: expected an int >= 0"),
    (["--eval-games", "0"], r"eval_games=0: expected an int >= 1"),
    (["--final-eval-games", "-1"], r"final_eval_games=-1: expected an int >= 0"),
    (["--pretrain-decisions", "0"], r"pretrain_decisions=0: expected an int >= 1"),
    (["--pretrain-epochs", "0"], r"pretrain_epochs=0: expected an int >= 1"),
    (["--hidden-sizes", "6000"], r"hidden_sizes=\(6000,\): expected 1 to 8 layer widths, each in 1\.\.4096"),
    (["--hidden-sizes", *["8"] * 9], r"hidden_sizes=.*: expected 1 to 8 layer widths"),
    (["--learner-seats", "3"], r"learner_seats=3: expected 1\.\.2"),
    (["--rules.num-seats", "1"], r"rules\.num_seats=1: expected an int in 2\.\.14"),
    (["--critic", "nope"], r"critic='nope': expected one of"),
    (["--final-policy", "last"], r"final_policy='last': expected one of \('best', 'final'\)"),
    (["--features", "nope"], r"features='nope'"),
    (["--exp-name", ""], r"exp_name='': expected a non-empty name"),
    (["--exp-name", "a/b"], r"exp_name='a/b': expected a non-empty name without '/'"),
    (["--eval-opponent", "nobody"], r"eval_opponent='nobody': unknown agent 'nobody'"),
    (["--pretrain-teacher", "nobody"], r"pretrain_teacher='nobody': unknown agent 'nobody'"),
    (["--final-eval-opponents", "random", "nobody"],
     r"final_eval_opponents=\('random', 'nobody'\): unknown agent 'nobody'"),
    (["--opponent-mix", "self=1,nobody=1"], r"opponent_mix='self=1,nobody=1': unknown agent 'nobody'"),
]


@pytest.mark.parametrize(("args", "message"), CLI_ERRORS, ids=[" ".join(a) for a, _ in CLI_ERRORS])
def test_command_line_options_are_checked_before_any_work(tmp_path: Path, monkeypatch, args, message):
    monkeypatch.setattr(runs, "usable_cores", lambda: 2)
    with pytest.raises(runs.OptionError, match=message) as err:
        train.main(["--config", "quick", "--run-dir", str(tmp_path), *args])
    record("trainer: invalid option on the command line", clear=True, lost=bool(list(tmp_path.iterdir())))
    assert "\n" not in str(err.value)
    assert not list(tmp_path.iterdir())  # no run folder, nothing written


PRESET_ERRORS = [  # (a preset's TOML, the error)
    ('final_eval_opponents = "random"',
     r"final_eval_opponents='random' is a str: expected a list of strings \(e\.g\. \[\"random\", \"greedy\"\]\)"),
    ('progress = "no"', r"progress='no' is a str: expected true or false"),
    ("checkpoint_every = 0", r"checkpoint_every=0: expected an int >= 1"),
    ("total_steps = 1.5e6", r"total_steps=1500000\.0 is a float: expected an int"),
    ('hidden_sizes = [64, "64"]', r"hidden_sizes=\[64, '64'\] is a list: expected a list of ints"),
    ("hidden_sizes = 64", r"hidden_sizes=64 is an int: expected a list of ints \(e\.g\. \[128, 128\]\)"),
    ('learning_rate = "fast"', r"learning_rate='fast' is a str: expected a number"),
    ("anneal_lr = 1", r"anneal_lr=1 is an int: expected true or false"),
    ('exp_name = 3', r"exp_name=3 is an int: expected a string"),
    ('[rules]\nnum_seats = "4"', r"rules\.num_seats='4' is a str: expected an int"),
    ("[rules]\nnum_rounds = 1.0", r"rules\.num_rounds=1\.0 is a float: expected an int or none"),
    ("rules = 4", r"rules=4: expected a table of options"),
    ('final_eval_opponents = ["random", "nobody"]', r"unknown agent 'nobody'"),
    ("num_workers = 64", r"num_workers=64: expected 0\.\.2"),
]


@pytest.mark.parametrize(("toml", "message"), PRESET_ERRORS, ids=[t for t, _ in PRESET_ERRORS])
def test_preset_options_are_type_checked_and_range_checked(tmp_path: Path, monkeypatch, toml, message):
    monkeypatch.setattr(runs, "usable_cores", lambda: 2)
    preset = tmp_path / "bad.toml"
    preset.write_text(f"{toml}\n")
    with pytest.raises(runs.OptionError, match=message):
        train.parse_args(["--config", str(preset)])
    record("trainer: invalid option in a preset", clear=True)


def test_preset_numbers_and_lists_are_converted_not_refused(tmp_path: Path):
    preset = tmp_path / "ok.toml"
    preset.write_text('learning_rate = 1\nfinal_eval_opponents = ["random"]\nhidden_sizes = [32]\n')
    cfg = train.parse_args(["--config", str(preset)])
    assert cfg.learning_rate == 1.0 and isinstance(cfg.learning_rate, float)
    assert cfg.final_eval_opponents == ("random",) and cfg.hidden_sizes == (32,)


def test_every_numeric_option_has_a_range():
    numeric = {f.name for f in dataclasses.fields(train.TrainConfig) if f.type in ("int", "float")}
    assert numeric - set(runs.RANGES) == {"num_workers", "learner_seats"}  # checked on their own


# ---------------------------------------------------------------- the run folder
def test_unusable_run_folders_are_refused_before_any_work(tmp_path: Path, smoke_args: list[str]):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    with pytest.raises(runs.OptionError, match=r"run folder .*: cannot be created or written"):
        train.main([*smoke_args, "--run-dir", str(blocker)])
    record("trainer: unusable run folder", clear=True, lost=blocker.read_text() != "not a folder")
    # a fresh run never overwrites another run's checkpoint
    run = tmp_path / "runs" / "quick-seed1"
    run.mkdir(parents=True)
    (run / "checkpoint.pt").write_bytes(b"another run's")
    before = snapshot(run)
    with pytest.raises(runs.OptionError, match=r"already holds another run's checkpoint\.pt: continue it"):
        train.main([*smoke_args, "--run-dir", str(tmp_path / "runs")])
    record("trainer: unusable run folder", clear=True, lost=snapshot(run) != before)
    assert snapshot(run) == before
    # nor appends to a log of other columns
    (run / "checkpoint.pt").unlink()
    (run / "log.csv").write_text("step,reward\n1,2\n")
    with pytest.raises(runs.OptionError, match=r"log\.csv has other columns"):
        train.main([*smoke_args, "--run-dir", str(tmp_path / "runs")])
    record("trainer: unusable run folder", clear=True, lost=(run / "log.csv").read_text() != "step,reward\n1,2\n")
    assert sorted(p.name for p in run.iterdir()) == ["log.csv"]


@pytest.fixture
def tiny_run(tmp_path: Path) -> Path:
    """A finished two-update run (no cloning, no workers), in this process."""
    return train.main([*TINY, "--pretrain-teacher", "", "--num-workers", "0", "--total-steps", "128",
                       "--run-dir", str(tmp_path / "runs")])


def test_a_rejected_resume_changes_nothing(tiny_run: Path, tmp_path: Path):
    """Options, rules and critic of the checkpoint are all checked before config.json (or
    anything else) is written."""
    ckpt = tiny_run / "checkpoint.pt"
    cut = tmp_path / "cut" / "checkpoint.pt"
    cut.parent.mkdir()
    cut.write_bytes(ckpt.read_bytes()[:5000])
    (cut.parent / "config.json").write_text("{}")
    cases = [
        (["--resume", str(ckpt), "--critic", "privileged"], CheckpointError, "critic='observation'"),
        (["--resume", str(ckpt), "--rules.num-seats", "4"], CheckpointError, r"num_seats=2 \(asked for 4\)"),
        (["--resume", str(ckpt), "--checkpoint-every", "0"], runs.OptionError, "checkpoint_every=0"),
        (["--resume", str(tiny_run / "final.pt")], CheckpointError, "policy-only export"),
        (["--resume", str(cut)], CheckpointError, "corrupt or truncated"),
    ]
    for args, kind, message in cases:
        before = snapshot(tmp_path)
        with pytest.raises(kind, match=message):
            train.main(args)
        record("trainer: rejected --resume", clear=True, lost=snapshot(tmp_path) != before)
        assert snapshot(tmp_path) == before, args


def test_resume_honours_run_dir(tiny_run: Path, tmp_path: Path, capsys):
    """--resume continues in the checkpoint's folder unless --run-dir is given; then in
    --run-dir's <exp_name>-seed<seed>, with the log's rows carried over and the old folder
    left as it was (and not a second time over the copy: that would go backwards)."""
    before = snapshot(tiny_run)
    other = tmp_path / "elsewhere"
    run = train.main(["--resume", str(tiny_run / "checkpoint.pt"), "--run-dir", str(other),
                      "--total-steps", "192"])
    assert run == other / "quick-seed1"
    assert updates(run) == [1, 2, 3] and load_checkpoint(run / "checkpoint.pt")["iteration"] == 3
    assert snapshot(tiny_run) == before
    assert f"in {run}" in capsys.readouterr().out
    with pytest.raises(runs.OptionError, match="already holds another run's checkpoint.pt: resume that one"):
        train.main(["--resume", str(tiny_run / "checkpoint.pt"), "--run-dir", str(other)])


def test_stale_temp_files_are_removed_on_resume(tiny_run: Path, capsys):
    (tiny_run / ".checkpoint.pt.abc123.tmp").write_bytes(b"x" * 1000)
    (tiny_run / ".evaluation.pt.99.tmp").write_bytes(b"x")
    (tiny_run / "notes.tmp").write_text("not ours")
    train.main(["--resume", str(tiny_run / "checkpoint.pt"), "--total-steps", "192"])
    assert "removed 2 temp file(s)" in capsys.readouterr().out
    assert temp_files(tiny_run) == [] and (tiny_run / "notes.tmp").exists()


def test_the_log_is_cut_back_to_the_checkpoint_on_resume(tiny_run: Path):
    """Rows after the checkpoint's update (a run killed before checkpointing them) and a
    torn last line are dropped; the resumed run writes those updates once."""
    log = tiny_run / "log.csv"
    rows = log.read_bytes().splitlines(keepends=True)
    log.write_bytes(b"".join(rows) + rows[2].replace(b"2,", b"3,", 1) + rows[1][:20])
    train.main(["--resume", str(tiny_run / "checkpoint.pt"), "--total-steps", "192"])
    assert updates(tiny_run) == [1, 2, 3]


# ---------------------------------------------------------------- a forged checkpoint
def forged(tmp_path: Path, tiny_run: Path) -> Path:
    """The run's trainer checkpoint declaring 6000-wide layers, re-checksummed."""
    data = load_checkpoint(tiny_run / "checkpoint.pt")
    data.pop("sha256")
    data["hidden_sizes"] = [6000, 6000]
    data["sha256"] = content_digest(data)
    path = tmp_path / "forged" / "checkpoint.pt"
    path.parent.mkdir()
    torch.save(data, path)
    return path


def test_resume_of_absurd_widths_fails_before_building_anything(tiny_run: Path, tmp_path: Path, monkeypatch):
    path = forged(tmp_path, tiny_run)
    built = []
    monkeypatch.setattr(train, "make_policy", lambda *a: built.append(a))
    with pytest.raises(CheckpointError, match=r"hidden_sizes=\[6000, 6000\]; expected widths in 1\.\.4096"):
        train.main(["--resume", str(path)])
    record("trainer: --resume of a checkpoint declaring absurd widths", clear=not built)
    assert built == [] and sorted(p.name for p in path.parent.iterdir()) == ["checkpoint.pt"]


def test_the_command_prints_a_checkpoint_error_in_one_line(tiny_run: Path, tmp_path: Path):
    path = forged(tmp_path, tiny_run)
    proc = finish(["--resume", str(path)])
    record("trainer: --resume of a checkpoint declaring absurd widths",
           clear=proc.returncode == 2 and "Traceback" not in proc.stderr)
    assert proc.returncode == 2
    assert proc.stderr.startswith("mt-train: error: checkpoint ") and "hidden_sizes=[6000, 6000]" in proc.stderr
    assert "Traceback" not in proc.stderr and proc.stderr.count("\n") == 1


@pytest.mark.parametrize("elapsed", [-1.0, float("inf"), "10", True])
def test_a_checkpoint_with_a_bad_time_used_is_refused(tiny_run: Path, tmp_path: Path, elapsed):
    data = load_checkpoint(tiny_run / "checkpoint.pt")
    data.pop("sha256")
    data["elapsed"] = elapsed
    data["sha256"] = content_digest(data)
    path = tmp_path / "bad-time.pt"
    torch.save(data, path)
    with pytest.raises(CheckpointError, match=r"elapsed=.*expected a finite number >= 0"):
        train.main(["--resume", str(path)])
    record("trainer: --resume of a checkpoint with a bad time used", clear=True)
