"""Plant realistic one-line bugs, one at a time, and count how many the tests catch.

    .venv/bin/python benchmarks/mutants.py [--only MODULE] [--list]

Each mutant is an exact snippet of a source file and a plausible wrong replacement (a bug
someone could really write: an off-by-one, a dropped correction, a wrong frame of
reference, a check removed). For each, the script copies the repository to a scratch
folder once, applies the one mutant there, runs the test files that cover that module
(pytest -x), and calls the mutant *killed* if any test fails. It prints one line per
mutant and a table of kill rates per module. The working tree is never modified.

A mutant whose snippet is no longer in its file is reported as ``stale`` (the code
changed): update the list rather than ignore it. Not a test: it takes minutes.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Mutant:
    path: str
    old: str
    new: str
    why: str
    tests: tuple[str, ...]


MUTANTS: list[Mutant] = []  # filled below, module by module


def mutant(path: str, old: str, new: str, why: str, *tests: str) -> None:
    MUTANTS.append(Mutant(path, old, new, why, tests))


def mirrors(path: str) -> list[str]:
    """Where a file lives in the scratch copy: the repository's path and, for the folders
    that the install maps to other names, the importable one (see ``prepare``)."""
    if path.startswith("agents/"):
        return [path, "mt_env/" + path]
    if path == "train.py":
        return [path, "mt_env/cli/train.py"]
    return [path]


def prepare(scratch: Path) -> None:
    """Lay the mapped folders out where imports find them without the editable install
    (which points at the real checkout): agents/ as mt_env/agents, the top level as
    mt_env/cli."""
    shutil.copytree(scratch / "agents", scratch / "mt_env" / "agents")
    cli = scratch / "mt_env" / "cli"
    cli.mkdir()
    for name in ("__init__.py", "train.py"):
        shutil.copy(scratch / name, cli / name)
    shutil.copytree(scratch / "configs", cli / "configs")


# ---------------------------------------------------------------- the mutants
OBS = "mt_env/observation.py"
OBS_T = ("tests/test_determinize.py", "tests/test_env.py", "tests/test_conventions.py")
mutant(OBS, "obs[sc + r] = totals[rel[r]] * inv_score", "obs[sc + r] = totals[r] * inv_score",
       "scores in absolute seat order", *OBS_T)
mutant(OBS, "self._void_ones(ones, r, voids[rel[r]])", "self._void_ones(ones, r, voids[r])",
       "voids in absolute seat order", *OBS_T)
mutant(OBS, """            if cfg.doubles_order == "newest":
                open_doubles.reverse()""", """            pass""",
       "newest-first open doubles (V-doubles-reverse) ignored", *OBS_T)
mutant(OBS, """                if st.is_dead_double(tr):
                    ones.append(o["dead_double"] + r)""", """                pass""",
       "the dead-double bit never set", *OBS_T)
mutant(OBS, """ones += (p + 2, o["follow_up_train"] + to_rel[follow])""",
       """ones += (p + 2, o["follow_up_train"] + follow)""", "the follow-up train absolute", *OBS_T)
mutant(OBS, "if st.seat == seat and not st.is_over:", "if not st.is_over:",
       "phase bits for every seat", *OBS_T)
mutant(OBS, """ones.append(o["restricting"] + to_rel[restricting])""",
       """ones.append(o["restricting"] + restricting)""", "the restricting train absolute", *OBS_T)
mutant(OBS, "obs[hs + r] = st.hand_size(k) * inv_hand", "obs[hs + r] = st.hand_size(r) * inv_hand",
       "hand sizes in absolute seat order", *OBS_T)
mutant(OBS, "if st.first_turn_pending(k):", "if st.first_turn_pending(r):",
       "first-turn flags in absolute seat order", *OBS_T)
mutant(OBS, """            turn_plays = 1 if v.follow_up else 0""", """            turn_plays = 0""",
       "position(): a follow-up turn has played no tile", *OBS_T)
mutant(OBS, """            drawn = v.plays[0][1]  # after a draw only the drawn tile may be played (R17)""",
       """            drawn = -1""", "position(): the drawn tile forgotten", *OBS_T)

RULES = "mt_env/rules.py"
RULES_T = ("tests/test_rules_scenarios.py", "tests/test_rules_properties.py",
           "tests/test_determinize.py", "tests/test_bad_input.py")
mutant(RULES, "            self._marked &= ~(1 << s)  # R10", "            pass  # R10",
       "playing on one's own train does not lift its marker (R10)", *RULES_T)
mutant(RULES, """            td.remove(tr)  # the double played on it this turn is followed up (R16): not open""",
       """            pass""", "a followed-up double still becomes open (R19)", *RULES_T)
mutant(RULES, "return legal[:]", "return legal", "legal_moves() hands out its cache", *RULES_T)
mutant(RULES, """        order = od if self._oldest_first else od[::-1]
        if not self._dead_rule:""", """        order = od
        if not self._dead_rule:""", "V-doubles-reverse ignored when restricting", *RULES_T)
mutant(RULES, """        return -1  # R22: every open double is dead""",
       """        return od[0]  # R22: every open double is dead""", "a dead double still restricts (R22)", *RULES_T)
mutant(RULES, "and self._no_play_turns >= n", "and self._no_play_turns >= n - 1",
       "a round blocks one turn early (R25)", *RULES_T)
mutant(RULES, "    if placed & bone or placed | bone != position.unseen:",
       "    if placed & bone:", "determinize accepts a guess that leaves tiles out", *RULES_T)
mutant(RULES, """    st._turn_doubles = list(position.turn_doubles)""", """    st._turn_doubles = []""",
       "determinize forgets this turn's doubles", *RULES_T)
mutant(RULES, """            drawn = HIDDEN_DRAW  # everyone sees the draw, only the drawer the tile""",
       """            pass""", "public() shows another seat's drawn tile", *RULES_T)
mutant(RULES, """            seat = (seat + 1) % n""", """            seat = (seat + 2) % n""",
       "seats draw for the engine out of turn (R6)", *RULES_T)
mutant(RULES, """                    self._learn_void(s, self._no_play)""",
       """                    self._learn_void(s, self._voids[s] | self._no_play)""",
       "a pass after a draw keeps voids the drawn tile may bear", *RULES_T)
mutant(RULES, """                elif not (self._free_first and self._first_pending[s]):""",
       """                else:""", "a free-first-turn pass counts as proof of a void (R11)", *RULES_T)

MATCH = "mt_env/match.py"
MATCH_T = ("tests/test_rules_scenarios.py", "tests/test_rules_properties.py", "tests/test_env.py")
mutant(MATCH, "keys.append((totals[k], -zeros, min(nonzero) if nonzero else math.inf))",
       "keys.append((totals[k], zeros, min(nonzero) if nonzero else math.inf))",
       "R28: fewer zero rounds wins the tie", *MATCH_T)
mutant(MATCH, "return tuple(total - values[k] if k in out else 0 for k in range(len(values)))",
       "return tuple(total - values[k] if k not in out else 0 for k in range(len(values)))",
       "V-positive-score: the seats left holding tiles collect", *MATCH_T)
mutant(MATCH, "first = 0 if previous_start is None else (previous_start + 1) % cfg.num_seats",
       "first = 0 if previous_start is None else previous_start",
       "R6: the first drawer does not rotate", *MATCH_T)

REW = "mt_env/rewards.py"
REW_T = ("tests/test_env.py", "tests/test_rollout_credit.py", "tests/test_gym_env.py")
mutant(REW, "return [r - (total - r) / (n - 1) for r in raw]", "return [r - total / n for r in raw]",
       "score_zero_sum subtracts the mean of all seats", *REW_T)
mutant(REW, "ranks = [p + (places.count(p) - 1) / 2 for p in places]", "ranks = list(places)",
       "rank reward ignores ties", *REW_T)
mutant(REW, "return [1.0 / k if p == 1 else 0.0 for p in places]",
       "return [1.0 if p == 1 else 0.0 for p in places]", "win reward not shared by tied winners", *REW_T)

SEARCH = "agents/search.py"
SEARCH_T = ("tests/test_agents.py",)
mutant(SEARCH, "        voids = v.voids if self.infer else [0] * n", "        voids = [0] * n",
       "search's guessed hands ignore the known voids", *SEARCH_T)
mutant(SEARCH, "            return chain[: max(0, len(chain) - self.reserve)]",
       "            return chain", "search keeps no tile back in its free first turn", *SEARCH_T)

CHAINS = "agents/chains.py"
CHAINS_T = ("tests/test_chains.py", "tests/test_agents.py", "tests/test_features.py")
mutant(CHAINS, "            if length > stack[sp, 3] or (length == stack[sp, 3] and weight > stack[sp, 4]):",
       "            if length > stack[sp, 3]:", "longest chain ignores the heavier tie-break", *CHAINS_T)
mutant(CHAINS, "        return _CAPPED, n, nodes", "        pass", "capped (inexact) answers are memoized",
       *CHAINS_T)


AEC = "mt_env/aec.py"
AEC_T = ("tests/test_env.py", "tests/test_conventions.py", "tests/test_failure_paths.py",
         "tests/test_gym_env.py")
mutant(AEC, "            r = per_seat[k] + 0.0  # + 0.0 turns -0.0 into 0.0",
       "            r = per_seat[(k + 1) % len(agents)] + 0.0",
       "round rewards credited to the next seat", *AEC_T)
mutant(AEC, "self.match = Match(self.config, seed=self._rng.getrandbits(64), deals=deals)",
       "self.match = Match(self.config, seed=None if deals else self._rng.getrandbits(64), deals=deals)",
       "no seed drawn when deals are given", *AEC_T)
mutant(AEC, "        out[list(result.out_seats)] = True", "        pass",
       "round_out_seats never set in infos", *AEC_T)

GYM = "mt_env/gym_env.py"
GYM_T = ("tests/test_gym_env.py", "tests/test_conventions.py", "tests/test_failure_paths.py")
mutant(GYM, "            policy = self._policies[(seat - learner) % n - 1]",
       "            policy = self._policies[(learner - seat) % n - 1]",
       "opponent policies assigned counter-clockwise", *GYM_T)
mutant(GYM, "                policy.seed(int(seed))\n                policy.reset()",
       "                policy.reset()", "Agent opponents not reseeded at reset", *GYM_T)
mutant(GYM, "                obs = aec.observe(aec.possible_agents[seat])",
       "                obs = aec.observe(aec.possible_agents[learner])",
       "an opponent is shown the learner's observation", *GYM_T)

STATS = "agents/evaluation/stats.py"
STATS_T = ("tests/test_tournament.py",)
mutant(STATS, "    return p, g / (g - 1) * ss / total_m**2, g", "    return p, ss / total_m**2, g",
       "the cluster correction factor G/(G-1) dropped", *STATS_T)


ROLL = "agents/ppo/rollout.py"
ROLL_T = ("tests/test_rollout_credit.py", "tests/test_privileged_critic.py", "tests/test_train.py")
mutant(ROLL, """        elif spec.round_is_episode:
            for stream in g.streams.values():
                self._close(stream)""", """        elif spec.round_is_episode:
            pass""", "per-round stream closing removed", *ROLL_T)
mutant(ROLL, "self._flush(stream, next_value=stream[-1][_VAL], keep_last=True)",
       "self._flush(stream, next_value=0.0, keep_last=True)",
       "open streams bootstrap from 0", *ROLL_T)
mutant(ROLL, """                if final is not None and stream:
                    stream[-1][_REW] += final[s]""", """                pass""",
       "match-end rank/win rewards dropped", *ROLL_T)
mutant(ROLL, "            adv = delta + gamma * lam * nonterminal * adv",
       "            adv = delta + gamma * nonterminal * adv", "GAE without lambda", *ROLL_T)

CKPT = "agents/ppo/checkpoint.py"
CKPT_T = ("tests/test_checkpoints.py", "tests/test_checkpoint_integrity.py", "tests/test_train.py")
mutant(CKPT, """    if data.get("format_version") not in READABLE_VERSIONS:""",
       """    if False:""", "the format version is not checked", *CKPT_T)
mutant(CKPT, "        if data.get(key) != expected[key]:", "        if False:",
       "the layout sizes are not checked", *CKPT_T)
mutant(CKPT, "weights_only=True", "weights_only=False", "checkpoints unpickled without weights_only",
       *CKPT_T)
mutant(CKPT, "        check_layout(data, config, path)", "        pass",
       "the rules are not checked against the checkpoint's", *CKPT_T)
mutant(CKPT, "        if not isinstance(stored, str) or stored != content_digest(body):",
       "        if not isinstance(stored, str):", "the checksum is not compared", *CKPT_T)
mutant(CKPT, "    _check_finite(model, \"model\", where)", "    pass",
       "non-finite weights load", *CKPT_T)

FEAT = "agents/features.py"
FEAT_T = ("tests/test_features.py", "tests/test_conventions.py", "tests/test_checkpoints.py")
mutant(FEAT, "[:, 1:].sum(1) / (n - 1)", "[:, :].sum(1) / (n - 1)",
       "the observer's own voids counted as the others'", *FEAT_T)
mutant(FEAT, "        pair[:, :, :, 2] = at[:, :, :, 1] / npip",
       "        pair[:, :, :, 2] = at[:, :, :, 1] / (npip + 1)",
       "unseen-tile counts scaled wrongly", *FEAT_T)
mutant(FEAT, "        train[:, :n, 3] = obs[:, v[\"train_marked\"]]", "        train[:, :n, 3] = 0.0",
       "the marked-train column left empty", *FEAT_T)
mutant(FEAT, "                tile[i, ids[0], 2] = 1.0", "                tile[i, ids[-1], 2] = 1.0",
       "the chain's last tile flagged as its first", *FEAT_T)

def run(m: Mutant, scratch: Path) -> str:
    targets = [scratch / q for q in mirrors(m.path)]
    sources = [t.read_text() for t in targets]
    if sources[0].count(m.old) != 1:
        return "stale"
    for t, source in zip(targets, sources, strict=True):
        t.write_text(source.replace(m.old, m.new))
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", *m.tests],
            cwd=scratch, capture_output=True, text=True, timeout=900,
        )
        return "survived" if proc.returncode == 0 else "killed"
    except subprocess.TimeoutExpired:
        return "killed (timeout)"
    finally:
        for t, source in zip(targets, sources, strict=True):
            t.write_text(source)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--only", default=None, help="only mutants of paths containing this")
    p.add_argument("--list", action="store_true", help="list the mutants and exit")
    args = p.parse_args()
    chosen = [m for m in MUTANTS if args.only is None or args.only in m.path]
    if args.list:
        for m in chosen:
            print(f"{m.path}: {m.why}")
        return
    tally: dict[str, list[str]] = defaultdict(list)
    with tempfile.TemporaryDirectory() as tmp:
        scratch = Path(tmp) / "repo"
        shutil.copytree(ROOT, scratch, ignore=shutil.ignore_patterns(
            ".git", ".venv", ".venv-*", "runs", "__pycache__", ".pytest_cache", ".hypothesis", "build"))
        prepare(scratch)
        for m in chosen:
            outcome = run(m, scratch)
            tally[m.path].append(outcome)
            print(f"{outcome:9s} {m.path}: {m.why}", flush=True)
    print("\n| module | mutants | killed | survived | stale | kill rate |\n|---|---|---|---|---|---|")
    for path, outcomes in tally.items():
        killed = sum(o.startswith("killed") for o in outcomes)
        stale = outcomes.count("stale")
        live = len(outcomes) - stale
        rate = f"{killed / live:.0%}" if live else "-"
        print(f"| {path} | {len(outcomes)} | {killed} | {outcomes.count('survived')} | {stale} | {rate} |")


if __name__ == "__main__":
    main()
