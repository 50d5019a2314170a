"""Property-based fuzzing of the environments: the AEC env (``raw_env`` and the wrapped
``env()``), the parallel env and the Gymnasium wrapper, over every seat count (2–14),
every variant (``mt_env.config.VARIANTS``) and one- or two-round matches.

Random games are interleaved with hostile actions — in-range illegal actions (as ``int``,
``np.int64`` and 0-d arrays), out-of-range integers, ill-typed values, steps by done
agents and steps after the end, malformed parallel action dicts, and opponents of the
Gymnasium wrapper that choose illegal or ill-typed actions or raise. Checked for each:

- it is a clear error (the expected type, a message naming the action or the problem),
  or, for an illegal learner action under the wrapper's ``"terminate"`` / ``"penalize"``
  modes, the documented outcome (a terminated episode / a penalised no-op, no move made);
- a rejected action changes nothing: every seat's :meth:`RoundState.public`, ``state()``
  (hidden tiles included), the agent to act, rewards, terminations, infos' masks and,
  for the Gymnasium wrapper, its random generator;
- a failed opponent leaves the wrapper refusing every step until ``reset()`` (no move is
  ever played for the wrong seat);
- tiles are conserved after every move (hands + boneyard + table = the set, each once).

Hypothesis is derandomized: every run tries the same examples. Each probe is tallied in
:mod:`probes` (``.venv/bin/python tests/probes.py`` prints the table).
"""

from __future__ import annotations

import random

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from probes import OPPONENT_IN_RESET, OPPONENT_IN_STEP, record

from mt_env import IllegalMoveError, MexicanTrainGymEnv
from mt_env.aec import env, parallel_env, raw_env
from mt_env.config import VARIANTS

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

MAX_STEPS = 4_000  # agent-steps per example: far above any game here, so every loop ends
VARIANT_NAMES = ["default", *VARIANTS]
FUZZ = settings(
    max_examples=40,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow],
)
GAMES = dict(
    seed=st.integers(0, 2**32 - 1),
    n=st.integers(2, 14),
    variant=st.sampled_from(VARIANT_NAMES),
    rounds=st.integers(1, 2),
)
ILL_TYPED = (1.0, "0", None, True, np.float32(0), [0], {"a": 1}, b"0", np.bool_(False))


def rules(n: int, variant: str, rounds: int) -> dict:
    return dict(num_seats=n, num_rounds=rounds, **VARIANTS.get(variant, {}))


# ---------------------------------------------------------------------- invariants
def conserved(state) -> bool:
    """Hands, boneyard and table partition the set: every tile exactly once."""
    ts = state.tiles
    masks = [state.hand_mask(k) for k in range(state.num_seats)]
    masks += [ts.mask_of(state.boneyard_ids), state.table_mask]
    union = 0
    for m in masks:
        if union & m:
            return False
        union |= m
    return union == ts.full_mask and sum(m.bit_count() for m in masks) == ts.num_tiles


def aec_snapshot(raw: raw_env) -> tuple:
    """Everything a step could change in the AEC env (hidden tiles included)."""
    match = raw.match
    state = match.state
    return (
        tuple(state.public(k) for k in range(state.num_seats)),
        raw.state().tobytes(),
        len(match.results),
        match.round_index,
        tuple(match.totals),
        raw.agent_selection,
        tuple(raw.agents),
        tuple(raw.rewards.items()),
        tuple(raw._cumulative_rewards.items()),
        tuple(raw.terminations.items()),
        tuple((a, i["to_act"], i["action_mask"].tobytes()) for a, i in raw.infos.items()),
    )


def gym_snapshot(g: MexicanTrainGymEnv) -> tuple:
    return (
        aec_snapshot(g.aec),
        g.seat,
        g._over,
        g.failed,
        g._pending,
        repr(g.np_random.bit_generator.state),
    )


def bad_actions(mask: np.ndarray, rng: random.Random) -> list[tuple[str, object]]:
    """``(probe class, action)``: illegal in-range actions, out-of-range ints, ill-typed."""
    n = mask.size
    illegal = [a for a in rng.sample(range(n), min(n, 12)) if not mask[a]][:3]
    x = illegal[0] if illegal else n
    return [
        *(("illegal in range", a) for a in illegal),
        ("illegal in range", np.int64(x)),
        ("illegal in range", np.array(x)),
        ("out of range", -1),
        ("out of range", n),
        ("out of range", 2**70),
        ("out of range", np.int64(-5)),
        *(("ill-typed", v) for v in (*ILL_TYPED, np.array([x]))),
    ]


def legal_choice(mask: np.ndarray, rng: random.Random) -> int:
    return int(rng.choice(np.flatnonzero(mask).tolist()))


def clear_action_error(err: BaseException, wrapped: bool) -> bool:
    """The AEC env's IllegalMoveError names the action; env()'s AssertOutOfBoundsWrapper
    (PettingZoo's) says the action is not in the action space."""
    msg = str(err)
    if isinstance(err, IllegalMoveError):
        return msg.startswith("action ") and ("not legal" in msg or "not an action" in msg)
    return wrapped and isinstance(err, AssertionError) and "not in action space" in msg


def expect_error(probe: str, call, snapshot, types, clear) -> None:
    """Probe: ``call()`` must raise one of ``types`` with ``clear(err)`` true, leaving
    ``snapshot()`` unchanged. Tallied before asserting."""
    before = snapshot()
    try:
        call()
    except types as err:
        ok, raised = clear(err), err
    else:
        ok, raised = False, None
    lost = snapshot() != before
    record(probe, ok, lost)
    assert ok, f"{probe}: {raised!r} is not the expected clear error"
    assert not lost, f"{probe}: the state changed"


# ---------------------------------------------------------------------- AEC env
def _aec_end_probes(e, raw, wrapped: bool) -> None:
    """Done agents may only step None; once every agent left, any step is refused."""
    snap = lambda: aec_snapshot(raw)  # noqa: E731
    for bad in (0, "x") if wrapped else (0, 7, "x"):
        expect_error(
            "AEC env: step by a done agent (not None)",
            lambda bad=bad: e.step(bad),
            snap,
            (ValueError, AssertionError),
            lambda err: "None" in str(err) or "not in action space" in str(err),
        )
    for _ in range(len(raw.possible_agents)):
        if not e.agents:
            break
        e.step(None)
    assert e.agents == []
    for bad in (None, 0, "x"):
        expect_error(
            "AEC / parallel env: step after every agent left",
            lambda bad=bad: e.step(bad),
            snap,
            RuntimeError,
            lambda err: "reset()" in str(err) and "ended" in str(err),
        )


@FUZZ
@given(wrapped=st.booleans(), **GAMES)
def test_aec_env_random_games_with_bad_actions(seed, n, variant, rounds, wrapped):
    make = env if wrapped else raw_env
    e = make(**rules(n, variant, rounds))
    raw = e.unwrapped
    rng = random.Random(seed)
    expect_error(
        "AEC / parallel env: step before reset",
        lambda: e.step(0),
        lambda: None,
        (RuntimeError, AssertionError),
        lambda err: "reset()" in str(err),
    )
    e.reset(seed=seed)
    snap = lambda: aec_snapshot(raw)  # noqa: E731
    for _ in range(MAX_STEPS):
        agent = e.agent_selection
        if e.terminations[agent]:
            break
        mask = e.observe(agent)["action_mask"]
        if rng.random() < 0.15:
            for kind, bad in bad_actions(mask, rng):
                expect_error(
                    f"AEC / parallel env: {kind} action",
                    lambda bad=bad: e.step(bad),
                    snap,
                    (ValueError, AssertionError),
                    lambda err: clear_action_error(err, wrapped),
                )
        e.step(legal_choice(mask, rng))
        assert conserved(raw.match.state)
    assert raw.match.is_over and all(e.terminations.values())
    _aec_end_probes(e, raw, wrapped)
    e.reset(seed=seed + 1)  # the env is whole again
    assert len(e.agents) == n and not any(e.terminations.values())


@FUZZ
@given(**GAMES)
def test_aec_terminate_mode_ends_without_a_move(seed, n, variant, rounds):
    """``illegal_action="terminate"``: an illegal action ends the episode, nothing played;
    ill-typed actions are still errors."""
    e = raw_env(illegal_action="terminate", **rules(n, variant, rounds))
    rng = random.Random(seed)
    e.reset(seed=seed)
    snap = lambda: aec_snapshot(e)  # noqa: E731
    stop = rng.randrange(60)
    for step in range(MAX_STEPS):
        agent = e.agent_selection
        if e.terminations[agent]:
            break
        mask = e.observe(agent)["action_mask"]
        if step == stop:
            for bad in ILL_TYPED:
                expect_error(
                    "AEC / parallel env: ill-typed action",
                    lambda bad=bad: e.step(bad),
                    snap,
                    ValueError,
                    lambda err: clear_action_error(err, False),
                )
            _, bad = rng.choice(bad_actions(mask, rng)[:-len(ILL_TYPED) - 1])
            public = snap()[:5]  # the game itself: positions, hidden tiles, results
            e.step(bad)
            ok = all(e.terminations.values()) and e.infos[agent]["illegal_action"]
            ok = ok and e.rewards[agent] == e.illegal_reward
            lost = snap()[:5] != public
            record("AEC env, terminate mode: illegal action (ends, no move)", ok, lost)
            assert ok and not lost
            break
        e.step(legal_choice(mask, rng))
        assert conserved(e.match.state)
    _aec_end_probes(e, e, wrapped=False)


# ---------------------------------------------------------------------- parallel env
@FUZZ
@given(**GAMES)
def test_parallel_env_random_games_with_bad_actions(seed, n, variant, rounds):
    p = parallel_env(**rules(n, variant, rounds))
    rng = random.Random(seed)
    snap = lambda: (aec_snapshot(p.aec), tuple(p.agents))  # noqa: E731
    expect_error(
        "AEC / parallel env: step before reset", lambda: p.step({}), lambda: None, RuntimeError,
        lambda err: "reset()" in str(err),
    )
    obs, infos = p.reset(seed=seed)
    for _ in range(MAX_STEPS):
        if not p.agents:
            break
        actor = p.aec.agent_selection
        mask = obs[actor]["action_mask"]
        if rng.random() < 0.15:
            for kind, bad in bad_actions(mask, rng):
                expect_error(
                    f"AEC / parallel env: {kind} action",
                    lambda bad=bad, actor=actor: p.step({actor: bad}),
                    snap,
                    ValueError,
                    lambda err: clear_action_error(err, False),
                )
            others = {a: legal_choice(mask, rng) for a in p.agents if a != actor}
            for bad in (others, [actor], 0, None, actor, [(actor, 0)]):
                expect_error(
                    "parallel env: malformed actions (not a dict, actor missing)",
                    lambda bad=bad: p.step(bad),
                    snap,
                    ValueError,
                    lambda err, actor=actor: actor in str(err),
                )
        obs, rewards, terms, truncs, infos = p.step({actor: legal_choice(mask, rng)})
        assert conserved(p.match.state)
    assert p.agents == [] and p.match.is_over
    for bad in ({}, {"player_0": 0}, None):
        expect_error(
            "AEC / parallel env: step after every agent left",
            lambda bad=bad: p.step(bad),
            snap,
            RuntimeError,
            lambda err: "reset()" in str(err),
        )


# ---------------------------------------------------------------------- Gymnasium wrapper
class Saboteur:
    """A random-legal opponent that, once armed, misbehaves on its next move: chooses an
    illegal action, an ill-typed one, or raises. It checks tile conservation at every
    opponent move (between moves of the match)."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.armed: str | None = None
        self.env: MexicanTrainGymEnv | None = None
        self.fired: str | None = None

    def __call__(self, observation, action_mask):
        assert conserved(self.env.match.state)
        kind, self.armed = self.armed, None
        if kind is not None:
            self.fired = kind
        if kind == "illegal":
            return int(np.flatnonzero(action_mask == 0)[0])
        if kind == "ill-typed":
            return self.rng.choice(["0", 1.5, None, [0]])
        if kind == "raises":
            raise ZeroDivisionError("the opponent's network divided by zero")
        return legal_choice(action_mask, self.rng)


def _opponent_failure(g: MexicanTrainGymEnv, kind: str, err: BaseException) -> None:
    """After a failed opponent: a clear error, then every step refused until reset()."""
    msg = str(err) + " ".join(getattr(err, "__notes__", []))
    if kind == "raises":
        clear = isinstance(err, ZeroDivisionError) and "opponent policy at seat" in msg
    else:
        clear = isinstance(err, IllegalMoveError) and "opponent policy at seat" in msg
    before = gym_snapshot(g)
    refused = 0
    for action in (0, int(np.flatnonzero(g.encoder.action_mask(g.match, g.match.state.seat))[0])):
        try:
            g.step(action)
        except RuntimeError as refusal:
            refused += "reset()" in str(refusal) and type(err).__name__ in str(refusal)
    lost = gym_snapshot(g) != before or g.action_masks().any()
    record(OPPONENT_IN_STEP, clear and refused == 2, lost)
    assert clear and refused == 2 and not lost


def _failed_reset(g: MexicanTrainGymEnv, kind: str, err: BaseException) -> None:
    """After reset() failed: every step refused, naming the failure and reset()."""
    before = gym_snapshot(g)
    try:
        g.step(0)
    except RuntimeError as refusal:
        clear = "reset() raised" in str(refusal) and type(err).__name__ in str(refusal)
    else:
        clear = False
    lost = gym_snapshot(g) != before or g.action_masks().any()
    record(OPPONENT_IN_RESET, clear, lost)
    assert clear and not lost


@FUZZ
@given(mode=st.sampled_from(["terminate", "penalize", "raise"]), **GAMES)
def test_gym_wrapper_random_games_with_bad_actions(seed, n, variant, rounds, mode):
    rng = random.Random(seed)
    saboteur = Saboteur(random.Random(seed + 1))
    opponents = [saboteur if rng.random() < 0.7 else None for _ in range(n - 1)]
    g = MexicanTrainGymEnv(
        learner_seat="random", opponents=opponents, illegal_action=mode, illegal_reward=-3.0,
        **rules(n, variant, rounds),
    )
    saboteur.env = g
    snap = lambda: gym_snapshot(g)  # noqa: E731
    obs, info = g.reset(seed=seed)
    episodes = 1
    for _ in range(MAX_STEPS):
        mask = obs["action_mask"]
        if rng.random() < 0.15:
            for _, bad in bad_actions(mask, rng):
                in_space = isinstance(bad, (int, np.integer, np.ndarray)) and not isinstance(
                    bad, bool
                ) and np.ndim(bad) == 0 and 0 <= int(bad) < mask.size
                if not in_space:
                    expect_error(
                        "Gymnasium: out-of-space or ill-typed action",
                        lambda bad=bad: g.step(bad),
                        snap,
                        ValueError,
                        lambda err: "not in the action space" in str(err),
                    )
                elif mode == "raise":
                    expect_error(
                        "Gymnasium, raise mode: illegal action",
                        lambda bad=bad: g.step(bad),
                        snap,
                        IllegalMoveError,
                        lambda err: clear_action_error(err, False),
                    )
                else:
                    before, owed = aec_snapshot(g.aec), g._pending
                    out, reward, terminated, truncated, info = g.step(bad)
                    ok = info["illegal_action"] and reward == pytest.approx(-3.0 + owed)
                    ok = ok and terminated == (mode == "terminate") and not truncated
                    ok = ok and np.array_equal(out["observation"], obs["observation"])
                    lost = aec_snapshot(g.aec) != before  # no move was made
                    record(f"Gymnasium, {mode} mode: illegal action (no move)", ok, lost)
                    assert ok and not lost
                    if terminated:
                        break
        if g._over:  # terminated by an illegal action: refused, then a new episode
            expect_error(
                "Gymnasium: step after the episode ended", lambda: g.step(0), snap,
                RuntimeError, lambda err: "reset()" in str(err),
            )
        else:
            if rng.random() < 0.04 and any(p is saboteur for p in opponents):
                saboteur.armed = rng.choice(["illegal", "ill-typed", "raises"])
            saboteur.fired = None
            try:
                obs, reward, terminated, truncated, info = g.step(legal_choice(mask, rng))
            except (IllegalMoveError, ZeroDivisionError) as err:
                assert saboteur.fired is not None, err
                _opponent_failure(g, saboteur.fired, err)
                terminated = True
            else:
                assert saboteur.fired is None  # an armed opponent that never moved
                saboteur.armed = None
                assert conserved(g.match.state)
            if not terminated:
                continue
        if episodes == 3:
            break
        episodes += 1
        saboteur.armed = saboteur.fired = None
        if rng.random() < 0.5 and any(p is saboteur for p in opponents):
            saboteur.armed = rng.choice(["illegal", "ill-typed", "raises"])
        try:  # an armed opponent that moves before the learner fails inside reset()
            obs, info = g.reset(seed=seed + episodes)
        except (IllegalMoveError, ZeroDivisionError) as err:
            assert saboteur.fired is not None, err
            _failed_reset(g, saboteur.fired, err)
            saboteur.armed = None
            obs, info = g.reset(seed=seed + episodes)
        saboteur.armed = None
