"""The PPO trainer: smoke run through the real script, checkpoints, resume, masking, config."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

import train
from mt_env import Match, RulesConfig
from mt_env.agents.ppo import (
    CheckpointError,
    Collector,
    Collectors,
    PolicyNet,
    PPOAgent,
    RolloutSpec,
    build_policy,
    layout,
    load_checkpoint,
    make_featurizer,
    make_policy,
    save_checkpoint,
)
from mt_env.agents.ppo.checkpoint import load_policy_weights
from mt_env.agents.ppo.policy import sample_actions
from mt_env.observation import ObservationEncoder

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def smoke_run(tmp_path_factory, smoke_args: list[str]) -> Path:
    """A few hundred learner steps through the real script, in a subprocess."""
    runs = tmp_path_factory.mktemp("runs")
    proc = subprocess.run(
        [sys.executable, str(ROOT / "train.py"), *smoke_args, "--run-dir", str(runs)],
        cwd=ROOT, capture_output=True, text=True, timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "trained" in proc.stdout
    return runs / "quick-seed1"


def test_smoke_run_writes_checkpoints_and_logs(smoke_run: Path):
    for name in ("checkpoint.pt", "final.pt", "config.json", "log.csv"):
        assert (smoke_run / name).is_file(), name
    rows = (smoke_run / "log.csv").read_text().strip().splitlines()
    assert rows[0].startswith("update,global_step")
    assert len(rows) == 1 + 2  # two updates of >= 300 steps reach 600
    assert list((smoke_run / "tb").glob("events.out.tfevents.*"))
    data = load_checkpoint(smoke_run / "checkpoint.pt", RulesConfig(num_seats=2))
    assert data["global_step"] >= 600 and data["iteration"] == 2
    assert len(data["pool"]) == 2  # a snapshot per update
    assert "optimizer" not in load_checkpoint(smoke_run / "final.pt")


def test_save_load_gives_identical_actions(smoke_run: Path):
    rules = RulesConfig(num_seats=2)
    data = load_checkpoint(smoke_run / "checkpoint.pt", rules)
    net = build_policy(data)
    agent = PPOAgent.from_checkpoint(smoke_run / "final.pt", rules)
    enc = ObservationEncoder(rules)
    rng = np.random.default_rng(0)
    featurize = make_featurizer(rules, data["features"])
    match = Match(rules, seed=3)
    checked = 0
    while not match.is_over and checked < 60:
        seat = match.state.seat
        obs, mask = enc.encode(match, seat), enc.action_mask(match, seat)
        with torch.no_grad():
            logits, _ = net(torch.from_numpy(featurize(obs[None])), torch.from_numpy(mask[None] > 0))
        assert agent.act(obs, mask) == int(logits.argmax())
        legal = np.flatnonzero(mask)
        match.apply(match.state.codec.to_move(int(rng.choice(legal)), seat))
        checked += 1
    assert checked == 60


def test_resume_continues_step_count_and_optimizer(smoke_run: Path, tmp_path: Path):
    # Copy the run, then resume it to 900 steps: the step count and the optimizer go on.
    run = tmp_path / "run"
    run.mkdir()
    for name in ("checkpoint.pt", "log.csv", "config.json"):
        (run / name).write_bytes((smoke_run / name).read_bytes())
    before = load_checkpoint(run / "checkpoint.pt")
    ckpt = run / "checkpoint.pt"
    proc = subprocess.run(
        [sys.executable, str(ROOT / "train.py"), "--resume", str(ckpt), "--total-steps", "900"],
        cwd=ROOT, capture_output=True, text=True, timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert f"resumed {ckpt} at update 2" in proc.stdout
    after = load_checkpoint(ckpt)
    assert after["iteration"] == 3
    assert after["global_step"] >= 900 > before["global_step"]
    # Adam's step counters carry on from the saved ones (1 epoch x minibatches per update).
    step_before = before["optimizer"]["state"][0]["step"].item()
    step_after = after["optimizer"]["state"][0]["step"].item()
    per_update = step_before / 2
    assert step_after == pytest.approx(step_before + per_update)
    rows = (run / "log.csv").read_text().strip().splitlines()
    assert [r.split(",")[0] for r in rows[1:]] == ["1", "2", "3"]


def test_truncated_and_corrupt_checkpoints_raise_clear_errors(smoke_run: Path, tmp_path: Path):
    good = (smoke_run / "checkpoint.pt").read_bytes()
    truncated = tmp_path / "truncated.pt"
    truncated.write_bytes(good[: len(good) // 2])
    with pytest.raises(CheckpointError, match="corrupt or truncated"):
        load_checkpoint(truncated)
    garbage = tmp_path / "garbage.pt"
    garbage.write_bytes(b"not a checkpoint at all")
    with pytest.raises(CheckpointError, match="corrupt or truncated"):
        load_checkpoint(garbage)
    with pytest.raises(CheckpointError, match="no such file"):
        load_checkpoint(tmp_path / "missing.pt")
    other = tmp_path / "other.pt"
    torch.save({"weights": torch.zeros(3)}, other)
    with pytest.raises(CheckpointError, match="not an mt_env PPO checkpoint"):
        load_checkpoint(other)


def test_mismatched_checkpoints_raise_clear_errors(smoke_run: Path, tmp_path: Path):
    path = smoke_run / "checkpoint.pt"
    with pytest.raises(CheckpointError, match=r"num_seats=2 \(asked for 4\)"):
        load_checkpoint(path, RulesConfig(num_seats=4))
    with pytest.raises(CheckpointError, match=r"first_turn='free' \(asked for 'draw'\)"):
        load_checkpoint(path, RulesConfig(num_seats=2, first_turn="draw"))
    data = load_checkpoint(path)
    data["observation_version"] = 999
    bad = tmp_path / "layout.pt"
    save_checkpoint(bad, data)
    with pytest.raises(CheckpointError, match="observation layout version 999"):
        load_checkpoint(bad, RulesConfig(num_seats=2))
    # A policy-only export cannot be resumed.
    with pytest.raises(CheckpointError, match="policy-only"):
        train.parse_args(["--resume", str(smoke_run / "final.pt")])


@pytest.mark.parametrize("warmup", [1, 0])
def test_init_policy_starts_a_fresh_run_from_the_files_weights(smoke_run: Path, tmp_path: Path,
                                                               smoke_args: list[str], capsys, warmup: int):
    """--init-policy: a second stage from a policy-only export: no cloning (even with a teacher
    set), counters from 0, the file's weights as the start. One update of critic warm-up
    moves only the value head; without the warm-up the same update moves the policy too."""
    start = load_checkpoint(smoke_run / "final.pt")["model"]
    run_dir = train.main([*smoke_args, "--run-dir", str(tmp_path), "--total-steps", "300",
                          "--init-policy", str(smoke_run / "final.pt"), "--pretrain-teacher", "greedy",
                          "--reward", "rank", "--no-round-is-episode",
                          "--critic-warmup-updates", str(warmup)])
    assert "behaviour cloning" not in capsys.readouterr().out
    after = load_checkpoint(run_dir / "final.pt")
    assert after["iteration"] == 1 and after["global_step"] < 600
    moved = {k for k in start if not torch.equal(start[k], after["model"][k])}
    if warmup:
        assert moved == {"critic.weight", "critic.bias"}
    else:
        assert "critic.weight" in moved and moved - {"critic.weight", "critic.bias"}
    # such a run resumes like any other (its checkpoint records the init_policy it began from)
    train.main(["--resume", str(run_dir / "checkpoint.pt"), "--total-steps", "600"])
    assert load_checkpoint(run_dir / "checkpoint.pt")["iteration"] == 2


def test_init_policy_refuses_a_file_of_another_shape_and_a_resume(smoke_run: Path, tmp_path: Path,
                                                                   smoke_args: list[str]):
    final = str(smoke_run / "final.pt")
    args = [*smoke_args, "--run-dir", str(tmp_path), "--init-policy", final]
    with pytest.raises(CheckpointError, match=r"hidden_sizes=\[.*\], not \[16\]: start from it with --hidden-sizes"):
        train.main([*args, "--hidden-sizes", "16"])
    with pytest.raises(CheckpointError, match="no such file"):
        train.main([*smoke_args, "--run-dir", str(tmp_path), "--init-policy", str(tmp_path / "none.pt")])
    with pytest.raises(CheckpointError, match="num_seats=2 \\(asked for 4\\)"):
        train.main([*args, "--rules.num-seats", "4"])
    with pytest.raises(train.OptionError, match="init_policy=.* with resume="):
        train.parse_args(["--resume", str(smoke_run / "checkpoint.pt"), "--init-policy", final])
    assert not list(tmp_path.iterdir())  # refused before any run folder was made


def test_init_policy_grows_a_wider_trunk_without_changing_the_policy(smoke_run: Path):
    """A wider --hidden-sizes of as many layers starts from the file's function: the same
    logits and values on any input, with new units that can learn (fresh incoming weights,
    read with 0 until training moves them). A narrower trunk is refused."""
    rules, final = RulesConfig(num_seats=2), smoke_run / "final.pt"
    narrow, wide = make_policy(rules, "pairs", (128, 128)), make_policy(rules, "pairs", (192, 160))
    load_policy_weights(final, rules, narrow, "pairs", (128, 128))
    load_policy_weights(final, rules, wide, "pairs", (192, 160))
    gen = torch.Generator().manual_seed(0)
    x = torch.rand(64, layout(rules, "pairs")["input_size"], generator=gen)
    mask = torch.rand(64, layout(rules, "pairs")["num_actions"], generator=gen) < 0.05
    mask[:, -1] = True  # at least one legal action per row
    with torch.no_grad():
        (logits_n, values_n), (logits_w, values_w) = narrow(x, mask), wide(x, mask)
    assert torch.allclose(values_n, values_w, atol=1e-5)
    assert torch.allclose(logits_n[mask], logits_w[mask], atol=1e-5)
    assert wide.trunk[0].weight[128:].abs().sum() > 0  # the new units see the input
    assert wide.trunk[2].weight[:128, 128:].abs().sum() == 0  # and are read with 0
    for sizes in ((64, 128), (256,)):
        with pytest.raises(CheckpointError, match=r"at least as wide"):
            load_policy_weights(final, rules, make_policy(rules, "pairs", sizes), "pairs", sizes)


def test_init_policy_grows_a_wider_pair_head_without_changing_the_policy(smoke_run: Path):
    """--pair-hidden wider than the file's 64 (with the trunk grown too, or not): the same
    logits and values, new pair units that see their inputs and are read with 0; the
    width is read back from the weights, and a narrower pair head is refused."""
    rules, final = RulesConfig(num_seats=2), smoke_run / "final.pt"
    base = make_policy(rules, "pairs", (128, 128))
    load_policy_weights(final, rules, base, "pairs", (128, 128))
    gen = torch.Generator().manual_seed(1)
    x = torch.rand(64, layout(rules, "pairs")["input_size"], generator=gen)
    mask = torch.rand(64, layout(rules, "pairs")["num_actions"], generator=gen) < 0.05
    mask[:, -1] = True
    for sizes in ((128, 128), (160, 128)):
        wide = make_policy(rules, "pairs", sizes, pair_hidden=96)
        load_policy_weights(final, rules, wide, "pairs", sizes)
        with torch.no_grad():
            (logits_b, values_b), (logits_w, values_w) = base(x, mask), wide(x, mask)
        assert torch.allclose(values_b, values_w, atol=1e-5)
        assert torch.allclose(logits_b[mask], logits_w[mask], atol=1e-5)
        assert wide.tile_in.weight[64:].abs().sum() > 0  # the new units see their inputs
        assert wide.pair_out.weight[:, 64:].abs().sum() == 0  # and are read with 0
    data = load_checkpoint(final, rules)
    data["model"] = wide.state_dict()
    data["hidden_sizes"] = [160, 128]
    assert build_policy(data).pair_out.weight.shape == (1, 96)  # the width comes from the weights
    with pytest.raises(CheckpointError, match=r"pair head 64 wide, not 32: start from it with --pair-hidden 64"):
        load_policy_weights(final, rules, make_policy(rules, "pairs", (128, 128), 32), "pairs", (128, 128))
    with pytest.raises(train.OptionError, match=r"pair_hidden=0: expected an int in 1..4096"):
        train.parse_args(["--config", "quick", "--pair-hidden", "0"])
    with pytest.raises(train.OptionError, match=r"pair_hidden=32 with features='none'"):
        train.parse_args(["--config", "quick", "--features", "none", "--pair-hidden", "32"])


def test_atomic_save_leaves_no_partial_file(tmp_path: Path):
    target = tmp_path / "c.pt"
    save_checkpoint(target, {"a": 1})

    class Boom:
        def __reduce__(self):
            raise RuntimeError("boom")

    with pytest.raises(RuntimeError):
        save_checkpoint(target, {"a": Boom()})
    assert torch.load(target, weights_only=True)["a"] == 1
    assert [p.name for p in tmp_path.iterdir()] == ["c.pt"]


def test_masked_policy_never_samples_an_illegal_action():
    rules = RulesConfig(num_seats=4)
    lay = layout(rules, "none")
    torch.manual_seed(0)
    net = PolicyNet(lay["input_size"], lay["num_actions"], (32,))
    with torch.no_grad():  # make illegal actions as attractive as possible
        net.actor.bias.fill_(50.0)
    x = torch.randn(256, lay["input_size"])
    mask = torch.rand(256, lay["num_actions"]) < 0.02
    mask[:, -1] = True  # at least one legal action per row
    logits, _ = net(x, mask)
    dist = torch.distributions.Categorical(logits=logits)
    samples = dist.sample((200,))
    assert mask.gather(1, samples.T).all()
    assert torch.all(dist.probs[~mask] == 0)


def test_sample_actions_draws_from_the_masked_softmax():
    """The rollout's sampler (inverse CDF, not ``multinomial``): only legal actions, at the
    softmax's frequencies; a row whose last actions are illegal never falls off its end."""
    mask = torch.zeros(3, 12, dtype=torch.bool)
    mask[0, [1, 4]] = True
    mask[1, [0]] = True  # one legal action, the first: every later one is illegal
    mask[2, [0, 5, 7]] = True
    logits = torch.tensor([[0.3] * 12, [5.0] * 12, [1.0, 0, 0, 0, 0, -1.0, 0, 2.0, 0, 0, 0, 0]])
    logits = logits.masked_fill(~mask, torch.finfo(torch.float32).min)
    draws = sample_actions(logits.repeat_interleave(20_000, 0), torch.Generator().manual_seed(0))
    counts = torch.stack([torch.bincount(d, minlength=12) for d in draws.view(3, -1)]).double()
    assert torch.all(counts[~mask] == 0)
    expected = torch.softmax(logits.double(), -1) * 20_000
    assert torch.all((counts - expected).abs() <= 4 * expected.clamp(min=1).sqrt())  # within 4 sigma


def test_config_errors_name_the_key(tmp_path: Path):
    preset = tmp_path / "bad.toml"
    preset.write_text('learning_rat = 0.1\n[rules]\nnum_seats = 2\n')
    with pytest.raises(ValueError, match=r"unknown option\(s\) \['learning_rat'\]"):
        train.load_preset(str(preset))
    preset.write_text('[rules]\nnum_seat = 2\n')
    with pytest.raises(ValueError, match=r"unknown rules option\(s\) \['num_seat'\]"):
        train.load_preset(str(preset))
    with pytest.raises(ValueError, match="no such preset"):
        train.load_preset("nope")
    with pytest.raises(SystemExit):
        train.parse_args(["--config", "quick", "--learning-rat", "0.1"])
    with pytest.raises(ValueError, match="reward='nope'"):
        train.parse_args(["--config", "quick", "--reward", "nope"])
    with pytest.raises(ValueError, match="unknown agent 'nobody'"):
        train.parse_args(["--config", "quick", "--opponent-mix", "nobody=1.0"])
    with pytest.raises(ValueError, match="expected NAME=WEIGHT"):
        train.parse_args(["--config", "quick", "--opponent-mix", "self=-1"])


def test_presets_keys_are_trainer_options():
    for path in sorted((ROOT / "configs").glob("*.toml")):
        cfg = train.load_preset(str(path))
        cfg.validate()
    # Overriding the seat count re-derives the set and hand size (R3).
    cfg = train.parse_args(["--config", "quick", "--rules.num-seats", "4"])
    assert cfg.rules_config().max_pip == 12 and cfg.rules_config().hand_size == 15


def test_pretraining_clones_the_teacher_once(tmp_path: Path, capsys, smoke_args: list[str]):
    """``--pretrain-teacher``: behaviour cloning before PPO makes the policy agree with the
    teacher on fresh positions (an untrained one does not), and a resumed run does not
    clone again."""
    run = train.main([
        *smoke_args, "--run-dir", str(tmp_path), "--total-steps", "0", "--games-per-worker", "8",
        "--pretrain-teacher", "longest-train", "--pretrain-decisions", "2000",
        "--pretrain-epochs", "40",
    ])
    assert "behaviour cloning of longest-train" in capsys.readouterr().out
    rules = RulesConfig(num_seats=2)
    assert load_checkpoint(run / "checkpoint.pt", rules)["pretrained"] is True
    spec = RolloutSpec(
        rules=rules, num_games=8, seed=99, reward="score_zero_sum", reward_scale=0.01,
        round_is_episode=True, learner_seats=2, opponent_mix={"self": 1.0}, features="pairs",
        hidden_sizes=(128, 128), gamma=1.0, gae_lambda=1.0, teacher="longest-train",
    )
    fresh = Collector(spec).demonstrate(400)  # other deals than the training data
    x = torch.from_numpy(make_featurizer(rules, "pairs")(fresh["obs"]))  # raw obs: the input
    masks = torch.from_numpy(fresh["masks"])

    def teacher_nll(net: PolicyNet) -> float:
        """Mean negative log-probability the policy gives the teacher's action."""
        with torch.no_grad():
            logp = torch.log_softmax(net(x, masks)[0], -1)
        return float(-logp.gather(1, torch.from_numpy(fresh["actions"])[:, None]).mean())

    cloned = build_policy(load_checkpoint(run / "final.pt", rules))
    untrained = make_policy(rules, "pairs", (128, 128))  # near-uniform over legal actions
    before, after = teacher_nll(untrained), teacher_nll(cloned)
    assert after < 0.5 * before, (before, after)
    with torch.no_grad():
        agreement = (cloned(x, masks)[0].argmax(1).numpy() == fresh["actions"]).mean()
    assert agreement > 0.9

    train.main(["--resume", str(run / "checkpoint.pt"), "--total-steps", "300"])
    assert "behaviour cloning" not in capsys.readouterr().out


@pytest.mark.parametrize("final_policy", ["best", "final"])
def test_final_table_reports_the_chosen_checkpoint(tmp_path: Path, capsys, smoke_args, final_policy):
    """``final_policy``: the final evaluation table is of best.pt (kept by the in-training
    evaluations) or of final.pt, the last weights, as asked."""
    run = train.main([
        *smoke_args, "--run-dir", str(tmp_path), "--eval-every", "1", "--eval-games", "2",
        "--final-eval-games", "2", "--final-eval-opponents", "random", "--final-policy", final_policy,
    ])
    assert (run / "best.pt").is_file() and (run / "final.pt").is_file()
    out = capsys.readouterr().out
    assert f"Evaluation of {run / (final_policy + '.pt')} (2 games each" in out
    assert f"{run / (final_policy + '.pt')}" in (run / "evaluation.md").read_text()


# ---------------------------------------------------------------- progress, phase by phase
@pytest.fixture
def bars(monkeypatch) -> list:
    """Every progress bar the trainer makes in this test (train.tqdm replaced by a subclass
    that keeps them): their ``desc``, ``n`` and ``total`` after the run, no terminal parsing."""
    made: list = []

    class Kept(train.tqdm):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            made.append(self)

    monkeypatch.setattr(train, "tqdm", Kept)
    return made


def _bar(bars: list, desc: str):
    (bar,) = [b for b in bars if b.desc.startswith(desc)]
    return bar


def test_cloning_reports_progress_up_to_the_requested_decisions(tmp_path: Path, capsys, bars: list,
                                                               smoke_args: list[str]):
    train.main([*smoke_args, "--progress", "--run-dir", str(tmp_path), "--total-steps", "0",
                "--pretrain-teacher", "longest-train", "--pretrain-decisions", "333",
                "--pretrain-epochs", "2"])
    recorded = _bar(bars, "cloning: longest-train decisions recorded")
    assert recorded.n == recorded.total == 333
    fit = _bar(bars, "cloning: fitting 2 epochs")
    assert fit.n == fit.total > 0 and "epoch=2/2" in str(fit)
    err = capsys.readouterr().err
    assert "333/333" in err and "cloning: fitting 2 epochs: 100%" in err


def test_worker_processes_report_the_decisions_they_record():
    """The main command records demonstrations in worker processes: each sends its counts while
    it plays (several reports, not one at the end), ``min_steps`` in all."""
    spec = RolloutSpec(
        rules=RulesConfig(num_seats=2), num_games=4, seed=5, reward="score_zero_sum",
        reward_scale=0.01, round_is_episode=True, learner_seats=1, opponent_mix={"greedy": 1.0},
        features="none", hidden_sizes=(8,), gamma=1.0, gae_lambda=1.0, teacher="greedy",
    )
    other = dataclasses.replace(spec, seed=6)
    reports: list[int] = []
    collectors = Collectors([spec, other], processes=True)
    try:
        batch = collectors.demonstrate(401, reports.append)
    finally:
        collectors.close()
    assert sum(reports) == 401 <= len(batch["actions"])
    assert len(reports) > 2


def test_a_run_stopped_by_the_time_limit_says_so(tmp_path: Path, capsys, bars: list,
                                                 smoke_args: list[str],
                                                 clock_jumps_after_each_update):
    """No wall clock: train.py's clock jumps an hour after the first PPO update, so a 1-minute
    limit stops the run before the second, and the PPO bar ends at 100%."""
    clock_jumps_after_each_update(3600.0)
    run = train.main([*smoke_args, "--progress", "--run-dir", str(tmp_path), "--time-limit-minutes", "1"])
    steps = load_checkpoint(run / "checkpoint.pt")["global_step"]
    assert 300 <= steps < 600
    out = capsys.readouterr().out
    assert f"stopped on the time limit of 1 min: trained {steps:,} of total_steps=600 learner steps" in out
    assert len((run / "log.csv").read_text().strip().splitlines()) == 1 + 1
    ppo = _bar(bars, "PPO")
    assert ppo.n == ppo.total == 100
    assert f"learner steps {steps:,}/600, time 1:00:" in str(ppo)
    status = [b for b in bars if "last update: win rate" in b.desc]
    assert status and "round score me/opponents" in status[0].desc and "lower is better" in status[0].desc


def test_evaluations_report_each_opponent(tmp_path: Path, capsys, bars: list, smoke_args: list[str]):
    """The periodic evaluation says it is evaluating; the final one has a bar per opponent."""
    train.main([*smoke_args, "--progress", "--run-dir", str(tmp_path), "--total-steps", "300",
                "--eval-every", "1", "--eval-games", "2", "--final-eval-games", "2",
                "--final-eval-opponents", "random", "greedy"])
    periodic = _bar(bars, "evaluating vs longest-train")
    assert periodic.n == periodic.total == 2
    for opponent in ("random", "greedy"):
        final = _bar(bars, f"final evaluation vs {opponent}")
        assert final.n == final.total == 2
    captured = capsys.readouterr()
    assert "update 1: evaluation win rate vs longest-train" in captured.out
    assert "| random |" in captured.out and "| greedy |" in captured.out
    assert "final evaluation vs greedy: 100%" in captured.err


def test_the_main_process_takes_the_asked_torch_threads(tmp_path: Path, smoke_args: list[str],
                                                       monkeypatch):
    """--torch-threads sets the PPO update's threads (default 1: more spin-wait while the
    rollout workers hold the cores)."""
    import torch

    import train

    asked: list[int] = []
    monkeypatch.setattr(torch, "set_num_threads", asked.append)  # this process only
    train.main([*smoke_args, "--run-dir", str(tmp_path), "--torch-threads", "3"])
    assert asked and asked[0] == 3
    assert train.TrainConfig().torch_threads == 1


def test_no_progress_prints_a_summary_line_per_phase_only(tmp_path: Path, capsys, smoke_args: list[str]):
    train.main([*smoke_args, "--run-dir", str(tmp_path), "--total-steps", "300",
                "--pretrain-teacher", "longest-train", "--pretrain-decisions", "200",
                "--pretrain-epochs", "1", "--final-eval-games", "2", "--final-eval-opponents", "random"])
    captured = capsys.readouterr()
    assert "%|" not in captured.err and "%|" not in captured.out  # no bar anywhere
    lines = captured.out.splitlines()
    assert lines[0].startswith("behaviour cloning of longest-train: ")
    assert lines[1].startswith("trained ") and "of total_steps=300 learner steps" in lines[1]
    assert lines[2].startswith("Evaluation of ") and lines[-1].startswith("| random |")
    assert len(lines) == 2 + 5  # then the table: caption, blank line, header, rule, one row


def test_async_rollouts_update_from_a_batch_one_update_older(tmp_path: Path, smoke_args: list[str],
                                                             monkeypatch):
    """--async-rollouts: each batch is started before the update that precedes its own, so
    update k (k >= 2) learns from the weights of update k - 2's start; without it, from
    update k's own. (Weights are told apart by a sum of their entries.)"""

    def digest(state: dict) -> float:
        return float(sum(v.double().sum() for v in state.values()))

    for flag, lag in (([], 0), (["--async-rollouts"], 1)):
        started, updated = [], []
        start, update = train.Collectors.start, train.ppo_update

        def record_start(self, state_dict, *a, _start=start, _started=started):
            _started.append(digest(state_dict))
            return _start(self, state_dict, *a)

        def record_update(policy, *a, _update=update, _updated=updated):
            _updated.append(digest(policy.state_dict()))
            return _update(policy, *a)

        monkeypatch.setattr(train.Collectors, "start", record_start)
        monkeypatch.setattr(train, "ppo_update", record_update)
        train.main([*smoke_args, "--run-dir", str(tmp_path / str(lag)), "--total-steps", "1200",
                    *flag])
        monkeypatch.undo()
        assert len(updated) == 4 and len(set(updated)) == 4  # every update changed the weights
        if lag == 0:
            assert started == updated
        else:  # the first batch is waited for; then one is always in flight (the last unused)
            assert started == [updated[0], *updated]
            torch.testing.assert_close(torch.tensor(started[2]), torch.tensor(updated[1]))


def test_collectors_start_finish_is_collect_and_a_pending_batch_closes_cleanly():
    """start + finish gives collect's batch (same seeds, worker processes); a batch still
    being collected at close is waited for, so the workers exit on their own (code 0)."""
    spec = RolloutSpec(rules=RulesConfig(num_seats=2), num_games=2, seed=3, reward="score_zero_sum",
                       reward_scale=0.01, round_is_episode=False, learner_seats=1,
                       opponent_mix={"greedy": 1.0}, features="pairs", hidden_sizes=(8,),
                       gamma=1.0, gae_lambda=0.95)
    first, second = Collectors([spec], processes=True), Collectors([spec], processes=True)
    try:
        weights = make_policy(RulesConfig(num_seats=2), "pairs", (8,)).state_dict()
        a = first.collect(weights, 50)
        second.start(weights, 50)
        with pytest.raises(RuntimeError, match="not finished"):
            second.start(weights, 50)
        b = second.finish()
        with pytest.raises(RuntimeError, match="no batch was started"):
            second.finish()
        for key in ("obs", "masks", "actions", "logprobs", "returns"):
            np.testing.assert_array_equal(a[key], b[key])
        second.start(weights, 50)
    finally:
        first.close()
        second.close()
    assert [c.proc.exitcode for c in (*first.items, *second.items)] == [0, 0]
