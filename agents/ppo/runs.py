"""The trainer's plumbing, so that ``train.py`` reads top to bottom: option checks, the run
folder, and what happens when a run stops early.

**Options.** :func:`check_types` checks every option against its annotation (presets and
checkpoints go through it; tyro checks the command line's types) and :data:`RANGES` gives
every count, size and coefficient its range (:func:`check_ranges`). Errors are
:class:`OptionError`, naming the option and what was expected.

**The run folder** (``--run-dir``/``<exp_name>-seed<seed>``; with ``--resume``, the
checkpoint's folder unless ``--run-dir`` is given): :func:`run_folder` picks it,
:func:`prepare_run_folder` checks it before any work (writable; a fresh run never
overwrites another run's ``checkpoint.pt``; a resume elsewhere copies ``best.pt``), removes
temp files a killed run left, and :class:`UpdateLog` keeps ``log.csv`` at exactly one row
per update 1..k of the checkpoint the run continues from.

**Stopping early.** :class:`StopSignals`: SIGINT and SIGTERM raise :class:`Interrupted`
(exit code 128 + the signal: 130, 143), except inside ``deferred()`` blocks (an update's
log row and checkpoint are written together) and after the first signal (nothing
interrupts the final save). :class:`TrainingFailed`: the run failed (:func:`check_finite`:
the losses or weights are no longer finite); the trainer keeps its last good state.
"""

from __future__ import annotations

import contextlib
import csv
import dataclasses
import io
import math
import os
import signal
import tempfile
import threading
import types
import typing
from pathlib import Path

import torch

from mt_env.agents.ppo.checkpoint import (
    MAX_HIDDEN,
    load_checkpoint,
    remove_stale_temp_files,
    save_checkpoint,
)


class OptionError(ValueError):
    """An option that cannot be used; the message names it and what was expected."""


class TrainingFailed(RuntimeError):
    """Training could not go on (diverged, or an error in an update); exit code 1."""


class Interrupted(KeyboardInterrupt):
    """SIGINT or SIGTERM stopped the run; the exit code is 128 + the signal's number."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum
        self.exit_code = 128 + signum


# ------------------------------------------------------------------------------ options
RANGES = {
    # option: the range its values must lie in ("A..B" inclusive, ">= A", "> A")
    "seed": "0..4294967295",  # numpy's seed range
    "total_steps": ">= 0",
    "time_limit_minutes": ">= 0",
    "games_per_worker": ">= 1",
    "rollout_steps": ">= 1",
    "learning_rate": "> 0",
    "gamma": "0..1",
    "gae_lambda": "0..1",
    "num_minibatches": ">= 1",
    "update_epochs": ">= 1",
    "clip_coef": "> 0",
    "ent_coef": ">= 0",
    "vf_coef": ">= 0",
    "max_grad_norm": "> 0",
    "reward_scale": "> 0",
    "pretrain_decisions": ">= 1",
    "pretrain_epochs": ">= 1",
    "expert_every": ">= 0",
    "expert_coef": ">= 0",
    "belief_coef": ">= 0",
    "duplicates": ">= 1",
    "critic_warmup_updates": ">= 0",
    "snapshot_every": ">= 0",
    "pool_size": ">= 1",
    "pair_hidden": f"1..{MAX_HIDDEN}",
    "eval_every": ">= 0",
    "eval_games": ">= 1",
    "final_eval_games": ">= 0",
    "checkpoint_every": ">= 1",
    "torch_threads": "1..256",
}
"""Every numeric option's range; ``num_workers`` (:func:`max_workers`), ``learner_seats``
(1..num_seats) and ``hidden_sizes`` (:data:`MAX_LAYERS` widths in 1..``MAX_HIDDEN``) depend on
more than themselves."""
MAX_LAYERS = 8


def usable_cores() -> int:
    """The CPU cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def max_workers() -> int:
    """The most rollout workers a run may ask for: max(2, usable cores). Each worker is a
    process with its own torch (~200 MB); more workers than cores only slow rollouts down
    (16 workers on 2 cores: 3.5 GB and 7x slower than 2)."""
    return max(2, usable_cores())


def _in_range(value: float, rule: str) -> bool:
    if ".." in rule:
        lo, hi = (float(x) for x in rule.split(".."))
        return lo <= value <= hi
    op, bound = rule.split()
    return value >= float(bound) if op == ">=" else value > float(bound)


def check_ranges(options: dict) -> None:
    """OptionError unless every option of :data:`RANGES` (and ``num_workers``,
    ``hidden_sizes``, ``num_minibatches`` against ``rollout_steps``) is in its range."""
    for key, rule in RANGES.items():
        value = options[key]
        kind = "an int" if isinstance(value, int) else "a finite number"
        if isinstance(value, float) and not math.isfinite(value) or not _in_range(value, rule):
            raise OptionError(f"{key}={value!r}: expected {kind} {'in ' if '..' in rule else ''}{rule}")
    cap = max_workers()
    on_ray = options.get("backend") == "ray"  # actors on a cluster: its size is Ray's business
    if options["num_workers"] < 0 or not on_ray and options["num_workers"] > cap:
        raise OptionError(
            f"num_workers={options['num_workers']}: expected 0..{cap} (0 = collect in the main "
            f"process; at most max(2, the {usable_cores()} CPU cores this process may use): "
            f"each worker is a process with its own torch, and more workers than cores only slow "
            f"the rollouts down)"
        )
    hidden = options["hidden_sizes"]
    if not 1 <= len(hidden) <= MAX_LAYERS or not all(1 <= h <= MAX_HIDDEN for h in hidden):
        raise OptionError(
            f"hidden_sizes={tuple(hidden)}: expected 1 to {MAX_LAYERS} layer widths, each in "
            f"1..{MAX_HIDDEN}"
        )
    if options["num_minibatches"] > options["rollout_steps"]:
        raise OptionError(
            f"num_minibatches={options['num_minibatches']}: expected at most "
            f"rollout_steps={options['rollout_steps']} (a minibatch needs a transition)"
        )


def _describe(hint) -> str:
    if hint is bool:
        return "true or false"
    if hint is int:
        return "an int"
    if hint is float:
        return "a number"
    if hint is str:
        return "a string"
    args = typing.get_args(hint)
    if typing.get_origin(hint) is tuple:
        return f"a list of {_describe(args[0]).removeprefix('an ').removeprefix('a ')}s"
    if isinstance(hint, types.UnionType):
        return " or ".join("none" if a is type(None) else _describe(a) for a in args)
    return getattr(hint, "__name__", str(hint))


def _check_value(value, hint):
    """``value`` as the type ``hint`` declares (a list becomes a tuple, an int a float
    where a float is declared); ``TypeError`` if it is not of that type."""
    if hint is bool:
        if isinstance(value, bool):
            return value
    elif hint is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    elif hint is float:
        if isinstance(value, int | float) and not isinstance(value, bool):
            return float(value)
    elif hint is str:
        if isinstance(value, str):
            return value
    elif typing.get_origin(hint) is tuple:  # tuple[X, ...]; a bare string is no list
        if isinstance(value, list | tuple):
            return tuple(_check_value(v, typing.get_args(hint)[0]) for v in value)
    elif isinstance(hint, types.UnionType):  # e.g. int | None
        for option in typing.get_args(hint):
            if option is type(None) and value is None:
                return None
            with contextlib.suppress(TypeError):
                return _check_value(value, option)
    raise TypeError


def check_types(values: dict, cls: type, where: str = "", prefix: str = "") -> dict:
    """``values`` (a preset's or checkpoint's options) checked against the annotations of
    the dataclass ``cls``, nested dataclasses (``rules``) included: a copy with lists as
    tuples, or OptionError naming the option (after ``where``, e.g. the preset's path), its
    value and the type expected."""
    where = f"{where}: " if where and not prefix else where
    hints = typing.get_type_hints(cls)
    out = {}
    for key, value in values.items():
        hint = hints[key]
        if dataclasses.is_dataclass(hint):
            if not isinstance(value, dict):
                raise OptionError(f"{where}{prefix}{key}={value!r}: expected a table of options")
            out[key] = check_types(value, hint, where, prefix=f"{prefix}{key}.")
            continue
        try:
            out[key] = _check_value(value, hint)
        except TypeError:
            example = ""
            if typing.get_origin(hint) is tuple:
                example = " (e.g. [128, 128])" if typing.get_args(hint)[0] is int else ' (e.g. ["random", "greedy"])'
            kind = type(value).__name__
            raise OptionError(
                f"{where}{prefix}{key}={value!r} is {'an' if kind[0] in 'aeiou' else 'a'} {kind}: expected "
                f"{_describe(hint)}{example}"
            ) from None
    return out


def checked(option: str, value, check):
    """``check()``, its ValueError turned into an OptionError that names ``option``."""
    try:
        return check()
    except OptionError:
        raise
    except ValueError as err:
        text = str(err)
        if option == "rules":
            raise OptionError(f"rules.{text}") from None
        raise OptionError(text if text.startswith(f"{option}=") else f"{option}={value!r}: {text}") from None


def option_given(argv: list[str], flag: str) -> bool:
    """Whether the command line ``argv`` sets ``flag`` (``--run-dir X``, ``--run-dir=X``,
    ``--run_dir X``)."""
    names = {flag, flag.replace("-", "_").replace("__", "--", 1)}
    return any(a.split("=", 1)[0] in names for a in argv)


# ------------------------------------------------------------------------------ the run folder
def run_folder(run_dir: str, name: str, resume: str, run_dir_given: bool) -> Path:
    """A fresh run's folder is ``run_dir/name``; a resumed run continues in the
    checkpoint's folder, or in ``run_dir/name`` if ``--run-dir`` was given."""
    if resume and not run_dir_given:
        return Path(resume).parent
    return Path(run_dir) / name


def prepare_run_folder(folder: Path, resume: str, log_columns: tuple[str, ...]) -> list[Path]:
    """Check the run folder before any work and make it ready: OptionError if it cannot
    be written, if it holds another run's ``checkpoint.pt`` (a fresh run, or a resume of a
    checkpoint from elsewhere, would overwrite it) or a ``log.csv`` of other columns; a
    resume into another folder copies the checkpoint's ``best.pt`` there. Returns the stale
    temp files removed (left by a run killed while writing a checkpoint)."""
    ckpt = folder / "checkpoint.pt"
    if ckpt.exists() and not (resume and _same_file(ckpt, Path(resume))):
        hint = f"continue it with --resume {ckpt}, or" if not resume else "resume that one, or"
        raise OptionError(
            f"run folder {folder} already holds another run's checkpoint.pt: {hint} choose "
            f"another --exp-name, --seed or --run-dir"
        )
    UpdateLog.check_columns(folder / "log.csv", log_columns)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=folder):
            pass
    except OSError as err:
        raise OptionError(
            f"run folder {folder}: cannot be created or written ({type(err).__name__}: "
            f"{err.strerror or err}); expected a writable folder (--run-dir)"
        ) from None
    removed = remove_stale_temp_files(folder)
    if resume:
        source = Path(resume).parent / "best.pt"
        if source.is_file() and not _same_file(source.parent, folder) and not (folder / "best.pt").exists():
            save_checkpoint(folder / "best.pt", load_checkpoint(source))
    return removed


def _same_file(a: Path, b: Path) -> bool:
    try:
        return a.exists() and b.exists() and os.path.samefile(a, b)
    except OSError:
        return False


@contextlib.contextmanager
def policy_file(folder: Path, payload: dict):
    """``payload`` (a policy export) saved in a hidden temp file of ``folder`` for the
    block (an evaluation reads it), then removed; a killed run's is a stale temp file."""
    path = folder / f".evaluation.pt.{os.getpid()}.tmp"
    save_checkpoint(path, payload)
    try:
        yield path
    finally:
        path.unlink(missing_ok=True)


def write_text_atomic(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` through a temp file and a rename: the old file or the new one."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", newline="") as f:
            f.write(text)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


class UpdateLog:
    """``log.csv``: a header, then exactly one row per update 1..k, each flushed and synced
    to disk as its update ends (before that update's checkpoint).

    Opening it keeps only the rows of updates 1..``keep`` (the checkpoint the run continues
    from; 0 for a fresh run): rows of later updates, written by a run killed before it
    checkpointed them, are dropped (they are trained again), and so is a torn last line.
    ``source``: another run folder's ``log.csv`` whose rows to start from (a resume into
    another folder). OptionError if the file has other columns."""

    def __init__(self, path: Path, columns: tuple[str, ...], keep: int, source: Path | None = None) -> None:
        self.path, self.columns = path, columns
        rows = self.rows(source if source is not None and not path.exists() else path)
        self.missing = max(0, keep - len(rows))  # rows lost before this run (not by it)
        self.cut(keep, rows)
        self.file = path.open("a", newline="")
        self.writer = csv.writer(self.file)

    def rows(self, path: Path) -> list[str]:
        """The file's update rows 1, 2, ... as raw lines, up to the first that is torn,
        malformed or out of sequence."""
        if path is None or not path.is_file():
            return []
        with path.open(newline="") as f:
            lines = f.read().splitlines(keepends=True)
        if not lines:
            return []
        self.check_columns(path, self.columns)
        rows = []
        for line in lines[1:]:
            fields = next(csv.reader([line]), [])
            if not line.endswith("\n") or len(fields) != len(self.columns) or fields[0] != str(len(rows) + 1):
                break
            rows.append(line)
        return rows

    @staticmethod
    def check_columns(path: Path, columns: tuple[str, ...]) -> None:
        """OptionError if ``path`` is a log whose header is not ``columns``."""
        if not path.is_file():
            return
        with path.open(newline="") as f:
            header = f.readline()
        if header and next(csv.reader([header]), None) != list(columns):
            raise OptionError(
                f"{path} has other columns than this trainer writes ({','.join(columns)}); "
                f"move it away or choose another --run-dir"
            )

    def cut(self, keep: int, rows: list[str] | None = None) -> None:
        """Rewrite the file (atomically) with the header and the rows of updates 1..keep,
        unless it holds exactly those already."""
        rows = self.rows(self.path) if rows is None else rows
        text = ""
        if self.path.is_file():
            with self.path.open(newline="") as f:
                text = f.read()
        header = io.StringIO()
        csv.writer(header).writerow(self.columns)
        wanted = header.getvalue() + "".join(rows[:keep])
        if text != wanted:
            write_text_atomic(self.path, wanted)

    def write(self, row: list) -> None:
        self.writer.writerow(row)
        self.file.flush()
        os.fsync(self.file.fileno())

    def close(self, keep: int) -> None:
        """Close, keeping the rows of updates 1..keep (those the saved checkpoint holds)."""
        self.file.close()
        self.cut(keep)


# ------------------------------------------------------------------------------ stopping early
class StopSignals:
    """SIGINT and SIGTERM raise :class:`Interrupted` in the main thread while installed,
    except inside :meth:`deferred` blocks (raised at the block's end) and once the run is
    stopping (:meth:`hold`, or after the first signal): later ones are only recorded, so
    nothing interrupts the final save. Elsewhere than the main thread it does nothing."""

    def __init__(self) -> None:
        self.received: int | None = None
        self._depth = 0
        self._holding = False
        self._previous: dict = {}

    def install(self) -> None:
        if threading.current_thread() is threading.main_thread():
            for signum in (signal.SIGINT, signal.SIGTERM):
                self._previous[signum] = signal.signal(signum, self._handle)

    def restore(self) -> None:
        for signum, handler in self._previous.items():
            signal.signal(signum, handler)
        self._previous = {}

    def hold(self) -> None:
        """From now on signals are recorded, never raised (the run is saving and stopping)."""
        self._holding = True

    def _handle(self, signum: int, frame) -> None:
        if self.received is not None or self._holding:
            self.received = self.received or signum
            return
        self.received = signum
        if not self._depth:
            raise Interrupted(signum)

    @contextlib.contextmanager
    def deferred(self):
        """A block no signal interrupts: a signal that arrives inside it is raised at its end."""
        self._depth += 1
        try:
            yield
        finally:
            self._depth -= 1
        if not self._depth and self.received is not None and not self._holding:
            raise Interrupted(self.received)


def stop_note(err: BaseException, folder: Path, kept: dict) -> str:
    """What a run stopped by ``err`` (a signal or a failure) kept: the checkpoint ``kept``."""
    why = "training failed"
    if isinstance(err, KeyboardInterrupt):
        why = f"stopped by {signal.Signals(getattr(err, 'signum', signal.SIGINT)).name}"
    return (f"{why}: checkpoint.pt and final.pt in {folder} hold update {kept['iteration']} "
            f"(step {kept['global_step']:,}), the last completed one; continue with --resume "
            f"{folder / 'checkpoint.pt'}")


def check_finite(what: str, losses: dict, *modules: torch.nn.Module | None) -> None:
    """TrainingFailed if a loss in ``losses`` or a weight of ``modules`` is NaN or infinite:
    ``what`` (e.g. "update 3") diverged."""
    bad = [f"{k}={v}" for k, v in losses.items() if k.endswith("loss") or k in ("entropy", "cross_entropy")
           if not math.isfinite(v)]
    for module in modules:
        if module is not None:
            bad += [f"weights {name}" for name, p in module.named_parameters() if not torch.isfinite(p).all()][:1]
    if bad:
        raise TrainingFailed(f"{what} diverged: {', '.join(bad)} not finite")
