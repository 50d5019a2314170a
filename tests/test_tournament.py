"""Tournaments: seat rotation and duplicate deals, determinism, intervals, outputs, CLI."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

import mt_env.agents.evaluation.tournament as tournament
from mt_env import RulesConfig
from mt_env.agents import AGENTS
from mt_env.agents.base import Agent
from mt_env.agents.evaluation.stats import mean_interval, openskill_ratings, rate_interval, wilson
from mt_env.agents.evaluation.tournament import (
    arrangements,
    entry_labels,
    main,
    markdown_table,
    parse_rules,
    run_tournament,
    tables,
)

FAST = RulesConfig(num_seats=3, num_rounds=1)
ROOT = Path(__file__).resolve().parents[1]


# ---------------------------------------------------------------------- schedule
@pytest.mark.parametrize("num_entries,num_seats", [(4, 4), (2, 4), (3, 4), (1, 3), (4, 2), (5, 3)])
@pytest.mark.parametrize("seating", ["rotate", "permute"])
def test_every_entry_plays_every_seat_equally(num_entries, num_seats, seating):
    plan = arrangements(num_entries, num_seats, seating)
    seat_counts = Counter((seat, e) for arr in plan for seat, e in enumerate(arr))
    for e in range(num_entries):
        per_seat = [seat_counts[(s, e)] for s in range(num_seats)]
        assert len(set(per_seat)) == 1 and per_seat[0] > 0, (e, per_seat)
    if num_entries > num_seats:  # round robin: every pair meets equally often
        meets = Counter((a, b) for arr in plan for a in set(arr) for b in set(arr) if a < b)
        assert len(set(meets.values())) == 1
        assert len(meets) == math.comb(num_entries, 2)


def test_lineup_semantics():
    assert tables(4, 4) == [(0, 1, 2, 3)]
    assert tables(2, 4) == [(0, 1, 0, 1)]  # ckpt:x longest-train -> x, lt, x, lt
    assert tables(3, 4) == [(0, 1, 2, 0)]
    assert tables(4, 2) == [(0, 1), (0, 2), (0, 3), (1, 2), (1, 3), (2, 3)]
    assert arrangements(3, 3) == [(0, 1, 2), (1, 2, 0), (2, 0, 1)]
    assert len(arrangements(3, 3, "permute")) == 6
    assert entry_labels(["greedy", "random", "greedy"]) == ["greedy", "random", "greedy#2"]
    with pytest.raises(ValueError, match="seating"):
        arrangements(2, 2, "shuffle")
    with pytest.raises(ValueError, match="at most 6 seats"):
        arrangements(7, 7, "permute")


def test_duplicate_deals_and_rotation(monkeypatch):
    """Each deal is replayed under every arrangement with the same deal seed; each
    entry sits in each seat once per deal; distinct deals get distinct seeds."""
    seeds: list[int] = []

    class RecordingMatch(tournament.Match):
        def __init__(self, config, seed=None, deals=()):
            seeds.append(seed)
            super().__init__(config, seed=seed, deals=deals)

    monkeypatch.setattr(tournament, "Match", RecordingMatch)
    result = run_tournament(
        ["random", "greedy", "longest-train"], FAST, 10, seed=9, workers=1, progress=False
    )
    assert result.deals == 4 and result.games == 12 and result.games_per_deal == 3
    by_deal: dict[int, set] = {}
    for rec, seed in zip(result.records, seeds, strict=True):
        by_deal.setdefault(rec.deal, set()).add(seed)
        assert seed == tournament.derive_seed(9, rec.deal)
    assert all(len(s) == 1 for s in by_deal.values())
    assert len({next(iter(s)) for s in by_deal.values()}) == 4
    for deal in range(4):
        recs = [r for r in result.records if r.deal == deal]
        for seat in range(3):
            assert sorted(r.seats[seat] for r in recs) == [0, 1, 2]


def test_same_seed_same_table_any_workers():
    specs = ["random", "greedy", "longest-train", "search"]
    a = run_tournament(specs, FAST, 24, seed=5, workers=1, progress=False)
    b = run_tournament(specs, FAST, 24, seed=5, workers=2, progress=False)
    c = run_tournament(specs, FAST, 24, seed=6, workers=1, progress=False)
    assert a.records == b.records and a.agents == b.agents and a.head_to_head == b.head_to_head
    assert a.to_markdown().split("\n")[2:] == b.to_markdown().split("\n")[2:]
    assert a.records != c.records


def test_py_factory_agents_play_in_worker_processes():
    """A py: spec is imported again in each spawned worker and gives the same table."""
    specs = ["py:agent_factories:lowest", "greedy"]
    a = run_tournament(specs, FAST, 8, seed=2, workers=1, progress=False)
    b = run_tournament(specs, FAST, 8, seed=2, workers=2, progress=False)
    assert a.records == b.records and len(a.records) == a.games >= 8
    assert a.labels == ["py:agent_factories:lowest", "greedy"]


def test_policy_search_agents_play_in_spawned_worker_processes():
    """search-ppo: runs torch, so its workers are spawned (a forked child of a process that
    used torch can hang); they give the table of one process."""
    from mt_env.agents.evaluation.tournament import _may_use_torch

    ckpt = Path(__file__).resolve().parents[1] / "checkpoints" / "default-2seat.pt"
    specs = [f"search-ppo:{ckpt}", "greedy"]
    assert _may_use_torch(specs) and not _may_use_torch(["greedy", "search"])
    rules = RulesConfig(num_seats=2, max_pip=9)  # the checkpoint's rules
    a = run_tournament(specs, rules, 2, seed=3, workers=1, progress=False)
    b = run_tournament(specs, rules, 2, seed=3, workers=2, progress=False)
    assert a.records == b.records and len(a.records) == 2


def test_evaluation_table_takes_any_agent_spec():
    """The trainer's final table, and the examples' of other libraries: a checkpoint path
    becomes ckpt:PATH, a spec stays itself."""
    from mt_env.agents.evaluation.report import agent_spec, evaluation_table

    assert agent_spec("runs/x/final.pt") == "ckpt:runs/x/final.pt"
    for spec in ("ckpt:a.pt", "search-ppo:a.pt", "py:agent_factories:lowest", "greedy"):
        assert agent_spec(spec) == spec
    config = RulesConfig(num_seats=2, num_rounds=1)
    table = evaluation_table("py:agent_factories:lowest", config, ["random"], 2, 0, workers=1)
    assert "Evaluation of py:agent_factories:lowest (2 games each" in table
    assert table.splitlines()[-1].startswith("| random | ")


def test_result_tables_are_consistent():
    result = run_tournament(
        ["greedy", "longest-train"],
        RulesConfig(num_seats=4, num_rounds=1),
        16,
        seed=1,
        workers=1,
        progress=False,
    )
    assert result.games == 16 and result.games_per_deal == 4
    rows = {r["agent"]: r for r in result.agents}
    assert rows["greedy"]["seat_games"] == rows["longest-train"]["seat_games"] == 32
    # win shares over all seats of all games sum to one win per game
    total = sum(r["win_rate"] * r["seat_games"] for r in result.agents)
    assert total == pytest.approx(result.games)
    ab, ba = result.h2h("greedy", "longest-train"), result.h2h("longest-train", "greedy")
    assert ab["rate"] + ba["rate"] == pytest.approx(1.0)
    for r in result.agents:
        assert r["win_lo"] <= r["win_rate"] <= r["win_hi"]
        assert r["place_lo"] <= r["place"] <= r["place_hi"]


def test_illegal_agent_is_reported(monkeypatch):
    class Cheater(Agent):
        name = "cheater"

        def act(self, observation, action_mask):
            return int(np.flatnonzero(action_mask == 0)[0])

    monkeypatch.setitem(AGENTS, "cheater", Cheater)
    with pytest.raises(RuntimeError, match="'cheater' in seat .* illegal action"):
        run_tournament(["cheater", "random"], FAST, 3, seed=0, workers=1, progress=False)


def test_bad_arguments():
    with pytest.raises(ValueError, match="unknown agent"):
        run_tournament(["random", "nope"], FAST, 3, seed=0, workers=1, progress=False)
    with pytest.raises(ValueError, match="games"):
        run_tournament(["random"], FAST, 0, seed=0, workers=1, progress=False)
    assert parse_rules(
        ["num_rounds=2", "dead_doubles=false", "first_turn=single"], 3
    ) == RulesConfig(num_seats=3, num_rounds=2, dead_doubles=False, first_turn="single")
    with pytest.raises(ValueError, match="key=value"):
        parse_rules(["num_rounds"], 3)
    with pytest.raises(ValueError, match="--seats"):
        parse_rules(["num_seats=3"], 3)
    with pytest.raises(ValueError, match="unknown rules option"):
        parse_rules(["colour=red"], 3)


# ---------------------------------------------------------------------- statistics
def test_cluster_intervals_cover_a_known_win_rate():
    """Synthetic duplicate data: each deal (cluster) has its own win probability around
    the true rate (luck shared by its games); the 95% interval must cover the truth in
    about 95% of repetitions, and the naive i.i.d. interval would not."""
    rng = np.random.default_rng(0)
    true_p, deals, per_deal, reps = 0.3, 150, 4, 400
    covered = naive_covered = 0
    for _ in range(reps):
        p_deal = rng.beta(true_p, 1 - true_p, size=deals)  # strong deal effect
        wins = rng.binomial(per_deal, p_deal)
        p, lo, hi = rate_interval((w, per_deal) for w in wins)
        covered += lo <= true_p <= hi
        n_lo, n_hi = wilson(p, deals * per_deal)
        naive_covered += n_lo <= true_p <= n_hi
    assert 0.92 <= covered / reps <= 0.98
    assert naive_covered / reps < 0.85


def test_mean_interval_covers_a_known_mean():
    rng = np.random.default_rng(1)
    covered = 0
    for _ in range(400):
        deal_effect = rng.normal(0, 5, size=120)
        scores = deal_effect[:, None] + rng.normal(20, 10, size=(120, 3))
        _, lo, hi = mean_interval((s.sum(), 3) for s in scores)
        covered += lo <= 20 <= hi
    assert 0.92 <= covered / 400 <= 0.98


def test_rate_interval_edges():
    p, lo, hi = rate_interval([(0, 4)] * 50)
    assert p == 0 and lo == 0 and 0 < hi < 0.03
    p, lo, hi = rate_interval([(4, 4)] * 50)
    assert p == 1 and hi == 1 and 0.97 < lo < 1
    p, lo, hi = rate_interval([(1, 2)])
    assert p == 0.5 and math.isnan(lo)


def test_intervals_match_hand_worked_values():
    """One tiny duplicate dataset worked by hand: 3 deals (clusters) x 2 games each.

    Win rate, wins per deal y = (2, 1, 1), games m = (2, 2, 2):
      p = 4/6 = 2/3; residuals y - p*m = 2/3, -1/3, -1/3; sum of squares = 6/9 = 2/3;
      var = G/(G-1) * ss / (sum m)^2 = 3/2 * (2/3) / 36 = 1/36
      (without the G/(G-1) cluster correction it would be 1/54);
      n_eff = p(1-p)/var = (2/9) * 36 = 8 (would be 12).
      Wilson on p = 2/3, n = 8, z = 1.959964, z^2 = 3.841459:
        denom = 1 + z^2/n = 1.480182; centre = (p + z^2/(2n)) / denom = 0.906758 / 1.480182
        = 0.612598; half = z * sqrt(p(1-p)/n + z^2/(4n^2)) / denom
        = 1.959964 * sqrt(0.0277778 + 0.0150057) / 1.480182 = 0.273887
      -> [0.338711, 0.886485]  (n_eff = 12 would give [0.3906, 0.8619]).
    Mean round score, totals per deal y = (10, 4, 16), m = (2, 2, 2):
      mean = 30/6 = 5; residuals 0, -6, 6; ss = 72; var = 3/2 * 72/36 = 3;
      half = 1.959964 * sqrt(3) = 3.394757 -> [1.605243, 8.394757]
      (without the correction var = 2: [2.228192, 7.771808]).
    Plain Wilson, 2 wins in 10 (the textbook example): z^2/n = 0.384146,
      denom = 1.384146, centre = (0.2 + 0.192073) / 1.384146 = 0.283259,
      half = 1.959964 * sqrt(0.016 + 0.009604) / 1.384146 = 0.226578 -> [0.056682, 0.509838].
    """
    p, lo, hi = rate_interval([(2, 2), (1, 2), (1, 2)])
    assert p == pytest.approx(2 / 3)
    assert (lo, hi) == pytest.approx((0.338711, 0.886485), abs=2e-6)
    mean, lo, hi = mean_interval([(10, 2), (4, 2), (16, 2)])
    assert mean == 5.0
    assert (lo, hi) == pytest.approx((1.605243, 8.394757), abs=2e-6)
    assert wilson(0.2, 10) == pytest.approx((0.056682, 0.509838), abs=2e-6)


def test_openskill_orders_a_clear_ranking():
    games = [((0, 1, 2), (1, 2, 3)), ((1, 2, 0), (2, 3, 1)), ((2, 0, 1), (3, 1, 2))] * 20
    r = openskill_ratings(["a", "b", "c"], games)
    assert r["a"]["mu"] > r["b"]["mu"] > r["c"]["mu"]
    assert all(v["ordinal"] == pytest.approx(v["mu"] - 3 * v["sigma"]) for v in r.values())


# ---------------------------------------------------------------------- output
def test_markdown_table():
    text = markdown_table(["a", "bb"], [["1", "x"], ["22", "yyy"]], align="lr")
    assert text.splitlines() == [
        "| a  |  bb |",
        "| :- | --: |",
        "| 1  |   x |",
        "| 22 | yyy |",
    ]
    with pytest.raises(ValueError):
        markdown_table(["a"], [["1", "2"]])


def test_cli_writes_every_output(tmp_path, capsys):
    out = tmp_path / "run"
    assert (
        main(
            [
                "--agents",
                "greedy",
                "random",
                "--seats",
                "2",
                "--games",
                "6",
                "--seed",
                "2",
                "--rules",
                "num_rounds=1",
                "--workers",
                "1",
                "--no-progress",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    printed = capsys.readouterr().out
    assert "| greedy" in printed and "Head-to-head" in printed
    data = json.loads((out / "summary.json").read_text())
    assert data["games"] == 6 and data["rules"]["num_rounds"] == 1
    assert [r["agent"] for r in data["agents"]] == ["greedy", "random"]
    for name in ("agents.csv", "head_to_head.csv", "summary.md"):
        assert (out / name).read_text().strip()
    assert (out / "ratings.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    with pytest.raises(SystemExit):
        main(["--agents", "nope", "--games", "1", "--no-progress"])


def test_scripted_play_and_evaluation_never_import_torch():
    """Only the learning code (mt_env.agents.ppo, train.py) imports torch; a tournament between
    scripted agents, and the CLI module, run without it."""
    code = (
        "import sys\n"
        "import mt_env.agents, mt_env.agents.evaluation.report, mt_env.agents.evaluation.stats\n"
        "from mt_env.agents.evaluation.tournament import run_tournament\n"
        "from mt_env import RulesConfig\n"
        "run_tournament(['greedy', 'longest-train'], RulesConfig(num_seats=2, num_rounds=1),\n"
        "               games=2, seed=0, workers=1, progress=False)\n"
        "assert 'torch' not in sys.modules, 'torch was imported'\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]


def test_cli_runs_as_a_module():
    proc = subprocess.run(
        [sys.executable, "-m", "mt_env.agents.evaluation.tournament", "--agents", "greedy", "random",
         "--seats", "2", "--games", "2", "--rules", "num_rounds=1", "--workers", "1",
         "--no-progress"],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "| greedy" in proc.stdout and "RuntimeWarning" not in proc.stderr
