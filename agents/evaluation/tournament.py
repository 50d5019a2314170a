"""Tournaments: any mix of agents, duplicate deals, rotated seats, intervals and ratings.

``python -m mt_env.agents.evaluation.tournament --agents random greedy longest-train ckpt:run/model.pt \\
--seats 4 --games 2000 --seed 0 --out results/x [--rules num_rounds=1 ...] [--workers N] \\
[--backend ray [--ray-address auto]]``

**A game** is one match under the rules configuration (``--rules num_rounds=1`` makes
single-round games). **A deal** is the seed of one match's deals: every round's shuffle.

**Lineup and seats.** The lineup is the list of agent specs; each entry is rated on its own
(a spec given twice becomes ``greedy`` and ``greedy#2``). With ``n`` seats:

- ``len(lineup) == n``: one table, seat ``k`` holds entry ``k``;
- ``len(lineup) < n``: one table, seat ``k`` holds entry ``k mod len(lineup)`` — so
  ``--agents ckpt:x longest-train`` in 4 seats plays x, longest-train, x, longest-train
  (an entry may hold several seats; every seat counts as one result, so an entry's
  even-strength win rate is still ``1/n`` per seat);
- ``len(lineup) > n``: every ``n``-entry subset of the lineup is a table (a round robin):
  in 2 seats, four entries meet in 6 pairings.

**Duplicate format.** Every deal is played at every table under every seat arrangement:
``rotate`` (default) takes the ``n`` cyclic rotations of the table (seat ``k`` holds table
entry ``(k + r) mod n`` in rotation ``r``), so each entry plays each seat, and each hand,
equally often; ``permute`` takes every distinct ordering (``n!``, up to 6 seats) and also
balances who sits after whom. The games of one deal are therefore
``tables x arrangements``; ``games`` is rounded up to whole deals.

**Statistics** (:mod:`mt_env.agents.evaluation.stats`): win rate (a win shared by ``k`` tied first places
counts ``1/k``), mean round score (match total / rounds) and mean place, each with a 95%
interval that treats the games of one deal as one cluster; head-to-head rates (how often
the row entry finished ahead of the column entry when both sat, ties half); OpenSkill
Plackett–Luce ratings. Results do not depend on the number of workers, nor on where
they run: each deal's games are seeded from ``(seed, deal, arrangement, seat)`` and
aggregated in deal order.

**Backends.** ``local`` (default): worker processes on this machine. ``ray``: Ray actors
on a cluster (:mod:`mt_env.integrations.ray`; ``pip install 'mt_env[ray]'``), for lineups
that outgrow one machine; the same records and tables for the same seed.

**Outputs** (``--out``): the folder is created and proven writable before the first game
(an unusable one is a command-line error, not a traceback after the run), and the five
files are written to temporary files first and renamed into place only once all are
complete (:meth:`TournamentResult.save`): a full disk or a crash while writing leaves the
previous run's files intact, never a mix of old and half-written ones.
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import io
import itertools
import json
import math
import os
import secrets
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from mt_env.agents import TORCH_PREFIXES, make_agent
from mt_env.agents.base import act_in_match
from mt_env.agents.evaluation.stats import mean_interval, openskill_ratings, rate_interval
from mt_env.config import RulesConfig
from mt_env.match import Match
from mt_env.observation import ObservationEncoder

SEATINGS = ("rotate", "permute")
BACKENDS = ("local", "ray")
MAX_PERMUTE_SEATS = 6


# ---------------------------------------------------------------------- schedule
def entry_labels(specs: Sequence[str]) -> list[str]:
    """Unique display names: a repeated spec gets ``#2``, ``#3``…; ``ckpt:`` is kept."""
    seen: dict[str, int] = {}
    labels = []
    for spec in specs:
        seen[spec] = seen.get(spec, 0) + 1
        labels.append(spec if seen[spec] == 1 else f"{spec}#{seen[spec]}")
    return labels


def tables(num_entries: int, num_seats: int) -> list[tuple[int, ...]]:
    """The tables of a lineup: entry index per seat before rotation (module docstring)."""
    if num_entries < 1:
        raise ValueError("a tournament needs at least one agent")
    if num_entries <= num_seats:
        return [tuple(k % num_entries for k in range(num_seats))]
    return list(itertools.combinations(range(num_entries), num_seats))


def arrangements(
    num_entries: int, num_seats: int, seating: str = "rotate"
) -> list[tuple[int, ...]]:
    """Every seat arrangement played on each deal: entry index per seat."""
    if seating not in SEATINGS:
        raise ValueError(f"seating={seating!r}: expected one of {SEATINGS}")
    if seating == "permute" and num_seats > MAX_PERMUTE_SEATS:
        raise ValueError(
            f"seating='permute' with {num_seats} seats would play {math.factorial(num_seats)} "
            f"games per table and deal: use at most {MAX_PERMUTE_SEATS} seats, or 'rotate'"
        )
    out: list[tuple[int, ...]] = []
    for table in tables(num_entries, num_seats):
        if seating == "rotate":
            out.extend(table[r:] + table[:r] for r in range(num_seats))
        else:
            out.extend(sorted(set(itertools.permutations(table))))
    return out


def derive_seed(*parts: int) -> int:
    """A 63-bit seed from integers (``numpy.random.SeedSequence``), stable across runs."""
    return int(np.random.SeedSequence(list(parts)).generate_state(1, np.uint64)[0] >> 1)


# ---------------------------------------------------------------------- playing
@dataclass(frozen=True)
class GameRecord:
    """One finished game: who sat where and how each seat finished."""

    deal: int
    arrangement: int
    seats: tuple[int, ...]  # entry index per seat
    places: tuple[int, ...]
    totals: tuple[int, ...]  # match totals per seat
    rounds: int
    decisions: int


class _Worker:
    """Plays whole deals; one per process (agents are built lazily, one per entry and seat)."""

    def __init__(self, specs: Sequence[str], config: RulesConfig, seed: int, seating: str):
        self.specs = list(specs)
        self.config = config
        self.seed = seed
        self.arrangements = arrangements(len(specs), config.num_seats, seating)
        self.encoder = ObservationEncoder(config)
        self._agents: dict[tuple[int, int], object] = {}

    def agent(self, entry: int, seat: int):
        key = (entry, seat)
        agent = self._agents.get(key)
        if agent is None:
            agent = make_agent(self.specs[entry], self.config, seed=None)
            self._agents[key] = agent
        return agent

    def play_deal(self, deal: int) -> list[GameRecord]:
        deal_seed = derive_seed(self.seed, deal)
        return [
            self.play_game(deal, deal_seed, i, seats) for i, seats in enumerate(self.arrangements)
        ]

    def play_game(
        self, deal: int, deal_seed: int, index: int, seats: tuple[int, ...]
    ) -> GameRecord:
        cfg, enc = self.config, self.encoder
        players = []
        for seat, entry in enumerate(seats):
            agent = self.agent(entry, seat)
            agent.seed(derive_seed(self.seed, deal, index, seat))
            agent.reset()
            players.append(agent)
        match = Match(cfg, seed=deal_seed)
        decisions = 0
        while not match.is_over:
            state = match.state
            seat = state.seat
            mask = enc.action_mask(match, seat)
            action = int(act_in_match(players[seat], enc, match, seat, mask))
            if not 0 <= action < mask.size or not mask[action]:
                raise RuntimeError(
                    f"agent {self.specs[seats[seat]]!r} in seat {seat} returned the illegal "
                    f"action {action} (deal {deal}, arrangement {index})"
                )
            match.apply(state.codec.to_move(action, seat))
            decisions += 1
        return GameRecord(
            deal=deal,
            arrangement=index,
            seats=tuple(seats),
            places=tuple(match.places()),
            totals=tuple(match.totals),
            rounds=len(match.results),
            decisions=decisions,
        )


_WORKER: _Worker | None = None


def _may_use_torch(specs: Sequence[str]) -> bool:
    """A checkpoint (``ckpt:``, ``search-ppo:``), or a ``py:`` factory (models from other
    libraries are torch models): such a lineup's workers are spawned, not forked."""
    return any(spec.startswith(TORCH_PREFIXES) for spec in specs)


def _init_worker(specs, config_dict, seed, seating) -> None:
    global _WORKER
    if _may_use_torch(specs):
        try:
            import torch  # one thread per process: the pool already uses every core
        except ImportError:  # a py: factory without torch
            pass
        else:
            torch.set_num_threads(1)
    _WORKER = _Worker(specs, RulesConfig.from_dict(config_dict), seed, seating)


def _play_deal(deal: int) -> list[GameRecord]:
    assert _WORKER is not None
    return _WORKER.play_deal(deal)


# ---------------------------------------------------------------------- results
@dataclass
class TournamentResult:
    """Everything a tournament measured; see :meth:`to_markdown` and :meth:`save`."""

    specs: list[str]
    labels: list[str]
    config: dict
    seed: int
    seating: str
    deals: int
    games_per_deal: int
    games: int
    elapsed_s: float
    decisions: int
    agents: list[dict]  # one row per entry (see summarize)
    head_to_head: list[dict]  # one row per ordered pair that met
    records: list[GameRecord] = field(default_factory=list, repr=False)

    @property
    def games_per_s(self) -> float:
        return self.games / self.elapsed_s if self.elapsed_s > 0 else math.nan

    def agent_row(self, label: str) -> dict:
        return next(r for r in self.agents if r["agent"] == label)

    def h2h(self, row: str, col: str) -> dict | None:
        return next(
            (h for h in self.head_to_head if h["agent"] == row and h["opponent"] == col), None
        )

    def to_dict(self) -> dict:
        return {
            "specs": self.specs,
            "labels": self.labels,
            "rules": self.config,
            "seed": self.seed,
            "seating": self.seating,
            "deals": self.deals,
            "games_per_deal": self.games_per_deal,
            "games": self.games,
            "elapsed_s": round(self.elapsed_s, 3),
            "games_per_s": round(self.games_per_s, 3),
            "decisions": self.decisions,
            "agents": self.agents,
            "head_to_head": self.head_to_head,
        }

    def to_markdown(self) -> str:
        cfg = self.config
        lines = [
            f"{self.games} games ({self.deals} deals x {self.games_per_deal}), "
            f"{cfg['num_seats']} seats, double-{cfg['max_pip']}, {cfg['num_rounds']} round(s) "
            f"per game, seating {self.seating}, seed {self.seed}; "
            f"{self.elapsed_s:.1f} s, {self.games_per_s:.2f} games/s",
            "",
            markdown_table(
                [
                    "agent",
                    "seat-games",
                    "win rate [95% CI]",
                    "mean round score [95% CI]",
                    "mean place [95% CI]",
                    "rating mu ± 1.96σ",
                    "ordinal",
                ],
                [
                    [
                        r["agent"],
                        str(r["seat_games"]),
                        _fmt_ci(r["win_rate"], r["win_lo"], r["win_hi"], pct=True),
                        _fmt_ci(r["round_score"], r["round_score_lo"], r["round_score_hi"]),
                        _fmt_ci(r["place"], r["place_lo"], r["place_hi"], digits=2),
                        f"{r['rating_mu']:.2f} ± {Z_PLOT * r['rating_sigma']:.2f}",
                        f"{r['rating_ordinal']:.2f}",
                    ]
                    for r in self.agents
                ],
                align="lrrrrrr",
            ),
        ]
        met = [a for a in self.labels if any(h["agent"] == a for h in self.head_to_head)]
        if len(met) > 1:
            rows = []
            for a in met:
                row = [a]
                for b in met:
                    h = self.h2h(a, b)
                    row.append("—" if h is None else _fmt_ci(h["rate"], h["lo"], h["hi"], pct=True))
                rows.append(row)
            lines += [
                "",
                "Head-to-head: how often the row agent finished ahead of the column agent "
                "(ties count half), 95% CI:",
                "",
                markdown_table(["row vs column", *met], rows, align="l" + "r" * len(met)),
            ]
        return "\n".join(lines)

    def save(self, out_dir: str | os.PathLike) -> list[Path]:
        """Write ``summary.json``, ``agents.csv``, ``head_to_head.csv``, ``summary.md`` and
        ``ratings.png`` into ``out_dir`` (created if needed); returns the paths.

        Every file is first written in full to a temporary file in ``out_dir`` (flushed
        to disk), and only when all five are written are they renamed over the old ones
        with ``os.replace`` (atomic per file; a rename within a folder needs no free
        space, so a full disk cannot stop it half-way). A failure while writing —
        a full disk, an unwritable folder, an error in the plot — raises ``OSError``
        naming the folder and leaves the previous run's files exactly as they were, with
        no temporary file behind; no reader ever sees a half-written file.
        """
        out = check_output_dir(out_dir)
        writers = [
            ("summary.json", lambda fh: _write_text(fh, json.dumps(self.to_dict(), indent=2))),
            ("agents.csv", lambda fh: _write_csv(fh, self.agents)),
            ("head_to_head.csv", lambda fh: _write_csv(fh, self.head_to_head)),
            ("summary.md", lambda fh: _write_text(fh, self.to_markdown())),
            ("ratings.png", lambda fh: plot_ratings(self, fh)),
        ]
        return write_files_atomically(out, writers)


Z_PLOT = 1.959963984540054


def _fmt_ci(value: float, lo: float, hi: float, pct: bool = False, digits: int = 1) -> str:
    if value is None or math.isnan(value):
        return "—"
    if pct:
        if math.isnan(lo):
            return f"{100 * value:.1f}%"
        return f"{100 * value:.1f}% [{100 * lo:.1f}, {100 * hi:.1f}]"
    if math.isnan(lo):
        return f"{value:.{digits}f}"
    return f"{value:.{digits}f} [{lo:.{digits}f}, {hi:.{digits}f}]"


def _write_text(fh, text: str) -> None:
    fh.write((text + "\n").encode())


def _write_csv(fh, rows: list[dict]) -> None:
    if not rows:
        return
    text = io.StringIO(newline="")
    writer = csv.DictWriter(text, fieldnames=list(rows[0]))
    writer.writeheader()
    writer.writerows(rows)
    fh.write(text.getvalue().encode())


TEMP_SUFFIX = ".tmp"


def _os_error(errno: int | None, message: str) -> OSError:
    return OSError(errno, message) if errno else OSError(message)


def _create_temp(folder: Path, name: str) -> tuple[int, Path]:
    """A new, empty ``folder/.NAME.<random>.tmp`` opened for writing: ``(fd, path)``.
    Created with mode 0o666 less the umask, like any new file (``tempfile.mkstemp``'s
    0o600 would survive the rename and hide the results from the rest of the group)."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0)
    for _ in range(100):
        path = folder / f".{name}.{secrets.token_hex(6)}{TEMP_SUFFIX}"
        try:
            return os.open(path, flags, 0o666), path
        except FileExistsError:
            continue
    raise FileExistsError(f"no free temporary name for {name!r} in {str(folder)!r}")


def check_output_dir(out_dir: str | os.PathLike) -> Path:
    """``out_dir``, created if needed and proven writable (a probe file is created and
    removed); ``OSError`` naming the folder and the reason otherwise. Run it before the
    work whose results go there, so an unusable folder fails in seconds, not at the end."""
    out = Path(out_dir)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        reason = err.strerror or str(err)
        if isinstance(err, FileExistsError) or (out.exists() and not out.is_dir()):
            reason = "it exists and is not a folder"
        else:
            blocker = next((p for p in out.parents if p.exists() and not p.is_dir()), None)
            if blocker is not None:
                reason = f"{str(blocker)!r} is a file, not a folder"
        message = f"output folder {str(out)!r} cannot be created: {reason}"
        raise _os_error(err.errno, message) from None
    try:
        fd, probe = _create_temp(out, "write-test")
        os.close(fd)
        probe.unlink()
    except OSError as err:
        raise _os_error(
            err.errno, f"output folder {str(out)!r} is not writable: {err.strerror or err}"
        ) from None
    return out


def write_files_atomically(out: Path, writers: Sequence[tuple[str, Callable]]) -> list[Path]:
    """Write each ``(name, write(binary_file))`` to a temporary file in ``out``, then, only
    once all are written and flushed to disk, ``os.replace`` them over ``out / name``.
    On any failure while writing the temporary files are removed and the old files are
    left untouched; the error is re-raised as ``OSError`` naming the folder."""
    temps: list[tuple[str, Path]] = []
    try:
        for name, write in writers:
            fd, tmp = _create_temp(out, name)
            temps.append((name, tmp))
            with os.fdopen(fd, "wb") as fh:
                write(fh)
                fh.flush()
                os.fsync(fh.fileno())
    except BaseException as err:
        for _, tmp in temps:
            tmp.unlink(missing_ok=True)
        if isinstance(err, OSError):
            raise _os_error(
                err.errno,
                f"could not write the results into {str(out)!r} ({err.strerror or err}); "
                f"the files already there are unchanged",
            ) from err
        raise
    paths = []
    for i, (name, tmp) in enumerate(temps):
        try:
            os.replace(tmp, out / name)
        except OSError:  # renaming in one folder does not fail short of a broken disk
            for _, rest in temps[i:]:
                rest.unlink(missing_ok=True)
            raise
        paths.append(out / name)
    _fsync_dir(out)
    return paths


def _fsync_dir(path: Path) -> None:
    """Make the renames durable (POSIX); a no-op where folders cannot be opened."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def markdown_table(headers: Sequence[str], rows: Sequence[Sequence[str]], align: str = "") -> str:
    """A GitHub-flavoured markdown table; ``align`` has one ``l``/``r``/``c`` per column."""
    widths = [len(h) for h in headers]
    for row in rows:
        if len(row) != len(headers):
            raise ValueError(f"row {row!r} has {len(row)} cells: expected {len(headers)}")
        widths = [max(w, len(str(c))) for w, c in zip(widths, row, strict=True)]
    align = (align or "l" * len(headers)).ljust(len(headers), "l")

    def cell(text: str, width: int, a: str) -> str:
        return str(text).rjust(width) if a == "r" else str(text).ljust(width)

    rule = {"l": ":{}", "r": "{}:", "c": ":{}:"}
    sep = []
    for w, a in zip(widths, align, strict=True):
        dashes = "-" * max(1, w - (2 if a == "c" else 1))
        sep.append(rule.get(a, ":{}").format(dashes))
    lines = [
        "| "
        + " | ".join(cell(h, w, a) for h, w, a in zip(headers, widths, align, strict=True))
        + " |",
        "| " + " | ".join(sep) + " |",
    ]
    for row in rows:
        lines.append(
            "| "
            + " | ".join(cell(c, w, a) for c, w, a in zip(row, widths, align, strict=True))
            + " |"
        )
    return "\n".join(lines)


def plot_ratings(result: TournamentResult, path) -> None:
    """PNG: OpenSkill rating (mu ± 1.96 sigma) and win rate (95% CI) per agent; ``path``
    is a file name or a binary file object."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = result.agents
    labels = [r["agent"] for r in rows]
    y = np.arange(len(rows))
    fig, axes = plt.subplots(1, 2, figsize=(10, 0.6 * len(rows) + 1.8), sharey=True)
    mu = np.array([r["rating_mu"] for r in rows])
    sig = np.array([r["rating_sigma"] for r in rows])
    axes[0].errorbar(mu, y, xerr=Z_PLOT * sig, fmt="o", capsize=4)
    axes[0].set_xlabel("OpenSkill rating (mu ± 1.96 sigma)")
    axes[0].set_yticks(y, labels)
    axes[0].invert_yaxis()
    win = np.array([r["win_rate"] for r in rows])
    lo = np.array([r["win_lo"] for r in rows])
    hi = np.array([r["win_hi"] for r in rows])
    err = np.clip(np.vstack([np.nan_to_num(win - lo), np.nan_to_num(hi - win)]), 0, None)
    axes[1].errorbar(100 * win, y, xerr=100 * err, fmt="o", capsize=4, color="C1")
    axes[1].axvline(100 / result.config["num_seats"], color="grey", lw=0.8, ls="--")
    axes[1].set_xlabel("win rate, % (95% CI; dashed: 1/seats)")
    for ax in axes:
        ax.grid(axis="x", alpha=0.3)
    cfg = result.config
    fig.suptitle(
        f"{result.games} games, {cfg['num_seats']} seats, double-{cfg['max_pip']}, "
        f"{cfg['num_rounds']} round(s)/game"
    )
    fig.tight_layout()
    try:
        fig.savefig(path, dpi=110, format="png")
    finally:
        plt.close(fig)


def summarize(
    labels: Sequence[str], records: Sequence[GameRecord], num_rounds: int
) -> tuple[list[dict], list[dict]]:
    """Per-entry rows and head-to-head rows (see the module docstring)."""
    num = len(labels)
    # per entry, per deal: [win sum, score sum, place sum, seat count]
    per: list[dict[int, list[float]]] = [{} for _ in range(num)]
    h2h: dict[tuple[int, int], dict[int, list[float]]] = {}
    for rec in records:
        best = min(rec.places)
        winners = rec.places.count(best)
        for seat, entry in enumerate(rec.seats):
            acc = per[entry].setdefault(rec.deal, [0.0, 0.0, 0.0, 0.0])
            acc[0] += 1.0 / winners if rec.places[seat] == best else 0.0
            acc[1] += rec.totals[seat] / num_rounds
            acc[2] += rec.places[seat]
            acc[3] += 1
        for i, a in enumerate(rec.seats):
            for j, b in enumerate(rec.seats):
                if a == b:
                    continue
                pi, pj = rec.places[i], rec.places[j]
                acc = h2h.setdefault((a, b), {}).setdefault(rec.deal, [0.0, 0.0])
                acc[0] += 1.0 if pi < pj else 0.5 if pi == pj else 0.0
                acc[1] += 1
    ratings = openskill_ratings(labels, ((r.seats, r.places) for r in records))
    rows = []
    for e, label in enumerate(labels):
        deals = per[e].values()
        win = rate_interval((v[0], v[3]) for v in deals)
        score = mean_interval((v[1], v[3]) for v in deals)
        place = mean_interval((v[2], v[3]) for v in deals)
        rt = ratings[label]
        rows.append(
            {
                "agent": label,
                "seat_games": int(sum(v[3] for v in deals)),
                "win_rate": win[0],
                "win_lo": win[1],
                "win_hi": win[2],
                "round_score": score[0],
                "round_score_lo": score[1],
                "round_score_hi": score[2],
                "place": place[0],
                "place_lo": place[1],
                "place_hi": place[2],
                "rating_mu": rt["mu"],
                "rating_sigma": rt["sigma"],
                "rating_ordinal": rt["ordinal"],
            }
        )
    pairs = []
    for (a, b), by_deal in sorted(h2h.items()):
        rate, lo, hi = rate_interval(by_deal.values())
        pairs.append(
            {
                "agent": labels[a],
                "opponent": labels[b],
                "meetings": int(sum(v[1] for v in by_deal.values())),
                "rate": rate,
                "lo": lo,
                "hi": hi,
            }
        )
    return rows, pairs


# ---------------------------------------------------------------------- entry point
def run_tournament(
    agents: list[str],
    config: RulesConfig,
    games: int,
    seed: int,
    workers: int | None = None,
    progress: bool | Callable = True,
    seating: str = "rotate",
    keep_records: bool = True,
    backend: str = "local",
    ray_address: str | None = None,
) -> TournamentResult:
    """Play ``games`` (rounded up to whole deals) between the ``agents`` specs.

    ``workers``: processes (``None`` = every core; 1 = in this process). The result is the
    same for any number of workers. ``progress``: a bar of games done on stderr (True), none
    (False), or a tqdm-like bar factory called with ``total`` and ``unit`` (to label the bar).
    ``backend``: ``"local"`` or ``"ray"`` (``workers`` Ray actors, ``None`` = one per CPU of
    the cluster, on the Ray at ``ray_address``: see :func:`mt_env.integrations.ray.connect`);
    the result is the same on both.
    """
    if backend not in BACKENDS:
        raise ValueError(f"backend={backend!r}: expected one of {BACKENDS}")
    if not agents:
        raise ValueError("a tournament needs at least one agent")
    if not isinstance(games, int) or games < 1:
        raise ValueError(f"games={games!r}: expected a positive int")
    for spec in dict.fromkeys(agents):  # fail fast, in this process, on a bad spec
        make_agent(spec, config, seed=0)
    labels = entry_labels(agents)
    plan = arrangements(len(agents), config.num_seats, seating)
    per_deal = len(plan)
    deals = math.ceil(games / per_deal)
    total = deals * per_deal
    if backend == "ray":  # checked before any game: ImportError naming the extra to install
        from mt_env.integrations import ray as ray_backend
    elif workers is None:
        workers = os.cpu_count() or 1
    if workers is not None:
        workers = max(1, min(workers, deals))
    bar = None
    if callable(progress):
        bar = progress(total=total, unit="game")
    elif progress:
        from tqdm import tqdm

        bar = tqdm(total=total, unit="game", desc="tournament", file=sys.stderr)
    started = time.perf_counter()
    records: list[GameRecord] = []
    try:
        if backend == "ray":
            deal_records = ray_backend.play_deals(
                agents, config, seed, seating, deals, workers, address=ray_address
            )
            with contextlib.closing(deal_records):  # the actors go with it
                for recs in deal_records:
                    records.extend(recs)
                    if bar is not None:
                        bar.update(per_deal)
        elif workers == 1:
            worker = _Worker(agents, config, seed, seating)
            for d in range(deals):
                records.extend(worker.play_deal(d))
                if bar is not None:
                    bar.update(per_deal)
        else:
            import multiprocessing as mp

            # fork is fastest and needs no importable __main__; a lineup with checkpoints or
            # py: factories spawns fresh interpreters instead (torch is not fork-safe once used).
            method = (
                "spawn"
                if _may_use_torch(agents) or "fork" not in mp.get_all_start_methods()
                else "fork"
            )
            ctx = mp.get_context(method)
            with ctx.Pool(
                workers, _init_worker, (list(agents), config.to_dict(), seed, seating)
            ) as pool:
                for recs in pool.imap(_play_deal, range(deals), chunksize=1):
                    records.extend(recs)
                    if bar is not None:
                        bar.update(per_deal)
    finally:
        if bar is not None:
            bar.close()
    elapsed = time.perf_counter() - started
    rows, pairs = summarize(labels, records, config.num_rounds)
    return TournamentResult(
        specs=list(agents),
        labels=labels,
        config=config.to_dict(),
        seed=seed,
        seating=seating,
        deals=deals,
        games_per_deal=per_deal,
        games=total,
        elapsed_s=elapsed,
        decisions=sum(r.decisions for r in records),
        agents=rows,
        head_to_head=pairs,
        records=records if keep_records else [],
    )


def parse_rules(items: Sequence[str], num_seats: int) -> RulesConfig:
    """``["num_rounds=1", "first_turn=single"]`` -> a RulesConfig with ``num_seats``."""
    values: dict[str, object] = {}
    for item in items:
        key, sep, raw = item.partition("=")
        if not sep or not key:
            raise ValueError(f"--rules {item!r}: expected key=value")
        if key == "num_seats":
            raise ValueError("--rules num_seats=…: use --seats")
        low = raw.lower()
        if low in ("true", "false"):
            value: object = low == "true"
        else:
            try:
                value = int(raw)
            except ValueError:
                value = raw
        values[key] = value
    return RulesConfig.from_dict({"num_seats": num_seats, **values})


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m mt_env.agents.evaluation.tournament",
        description="Play a duplicate tournament between agents and print the tables.",
        epilog=(
            "Lineup: as many agents as seats -> one table; fewer -> seat k holds agent "
            "k mod len (ckpt:x longest-train in 4 seats = x, lt, x, lt); more -> every "
            "seats-sized subset is a table (round robin). Every deal is replayed under every "
            "rotation of every table (duplicate format); --games is rounded up to whole deals."
        ),
    )
    parser.add_argument(
        "--agents",
        nargs="+",
        required=True,
        help="agent specs: random, greedy, longest-train, longest-train-reserve, search, "
        "ckpt:PATH, search-ppo:PATH, py:MODULE:FACTORY[:ARG]",
    )
    parser.add_argument("--seats", type=int, default=4, help="seats at the table (2..14)")
    parser.add_argument(
        "--games", type=int, default=2000, help="games (matches) to play, rounded up to whole deals"
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--rules",
        nargs="*",
        default=[],
        metavar="KEY=VALUE",
        help="rules options of mt_env.config.RulesConfig, e.g. num_rounds=1",
    )
    parser.add_argument(
        "--workers",
        type=int,
        default=None,
        help="processes, or Ray actors with --backend ray (default: all cores of this machine "
        "or of the Ray cluster)",
    )
    parser.add_argument(
        "--backend",
        choices=BACKENDS,
        default="local",
        help="local: worker processes on this machine; ray: actors on a Ray cluster "
        "(pip install 'mt_env[ray]'), same results for the same seed",
    )
    parser.add_argument(
        "--ray-address",
        default=None,
        help="with --backend ray: the cluster's address ('auto' = a running cluster); "
        "default: RAY_ADDRESS, else a cluster started on this machine, else a new local Ray",
    )
    parser.add_argument("--seating", choices=SEATINGS, default="rotate")
    parser.add_argument(
        "--out",
        default=None,
        help="directory for summary.json/.md, agents.csv, head_to_head.csv, ratings.png",
    )
    parser.add_argument("--no-progress", action="store_true")
    args = parser.parse_args(argv)
    try:
        config = parse_rules(args.rules, args.seats)
        if args.out:  # before any game: an unusable folder must not cost the whole run
            try:
                check_output_dir(args.out)
            except OSError as err:
                raise ValueError(f"--out: {err.strerror or err}") from None
        result = run_tournament(
            args.agents,
            config,
            args.games,
            args.seed,
            workers=args.workers,
            progress=not args.no_progress,
            seating=args.seating,
            keep_records=False,
            backend=args.backend,
            ray_address=args.ray_address,
        )
    except (ValueError, ImportError) as err:  # ImportError: --backend ray without Ray
        parser.error(str(err))
    print(result.to_markdown())
    if args.out:
        try:
            paths = result.save(args.out)
        except OSError as err:
            print(f"error: {err.strerror or err}", file=sys.stderr)
            return 1
        for path in paths:
            print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
