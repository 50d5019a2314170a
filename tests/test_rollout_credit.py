"""Per-seat credit assignment in self-play rollouts (issue 4), on a scripted game.

Each seat's decisions form their own stream; a round reward that arrives after
another seat's move is credited to each seat's *last* decision; GAE runs per seat.
"""

from __future__ import annotations

import math
import random

import numpy as np
import pytest
import torch

from mt_env import Deal, Match, RulesConfig
from mt_env.agents.longest_train import LongestTrainAgent
from mt_env.agents.ppo.policy import make_policy
from mt_env.agents.ppo.rollout import Collector, RolloutSpec
from mt_env.match import RoundResult
from mt_env.rewards import REWARD_MODES, match_rewards, round_rewards, round_sd, win_chances

RULES = RulesConfig(num_seats=2, max_pip=6, num_rounds=1)
# Engine 6|6. Seat 0 lays 6|5, 5|4 in its free first turn, cannot place 0|0 and passes;
# seat 1 lays 6|1, 1|2 and goes out in its first turn: the round ends once both have had
# their first turn (R24). Seat 0 keeps 0|0 = 50 points (R26).
HANDS = [[(6, 5), (5, 4), (0, 0)], [(6, 1), (1, 2)]]


def _deal() -> Deal:
    used = {tuple(sorted(t)) for h in HANDS for t in h} | {(6, 6)}
    rest = [(a, b) for a in range(7) for b in range(a, 7) if (a, b) not in used]
    return Deal(hands=HANDS, boneyard=rest, engine=6, start_seat=0)


def _collector(reward: str, gamma: float = 1.0, lam: float = 0.95, rules=RULES) -> Collector:
    spec = RolloutSpec(
        rules=rules, num_games=1, seed=0, reward=reward, reward_scale=0.01,
        round_is_episode=True, learner_seats=2, opponent_mix={"self": 1.0}, features="none",
        hidden_sizes=(8,), gamma=gamma, gae_lambda=lam,
    )
    return Collector(spec)


def _play_scripted(col: Collector, values: dict[int, list[float]], rules=RULES) -> list[int]:
    """Drive the scripted round, recording every decision with the given values."""
    g = col.games[0]
    g.match = Match(rules, deals=[_deal()])
    g.roles = ["self", "self"]
    g.streams = {0: [], 1: []}
    enc, codec = col.enc, g.match.state.codec
    script = [(0, (6, 5), 0), (0, (5, 4), 0), (0, None, None), (1, (6, 1), 1), (1, (1, 2), 1)]
    ts = g.match.state.tiles
    seen = {0: 0, 1: 0}
    actors = []
    for seat, tile, train in script:
        st = g.match.state
        assert st.seat == seat
        move = codec.pass_ if tile is None else codec.play(ts.id_of(tile), train)
        action = codec.to_action(move, seat)
        obs, mask = enc.encode(g.match, seat), enc.action_mask(g.match, seat)
        assert mask[action] == 1
        col.record(g, seat, obs, mask.astype(bool), action, -0.1, values[seat][seen[seat]])
        seen[seat] += 1
        actors.append(seat)
        if g.match.state.is_over:
            break
        col.step(g, seat, action)
    return actors


def test_rewards_go_to_each_seats_last_decision_and_gae_runs_per_seat():
    values = {0: [0.1, 0.2, 0.3], 1: [0.4, 0.5]}
    col = _collector("score_zero_sum")
    _play_scripted(col, values)
    batch_rows = col.finished
    # 5 decisions in all, every one closed by the round's end (the episode).
    assert len(batch_rows) == 5
    # R26: seat 0 holds 0|0 = 50, seat 1 went out: zero-sum rewards -0.5 and +0.5, which
    # arrived on seat 1's move but are credited to seat 0's pass too.
    by_seat = {0: batch_rows[:3], 1: batch_rows[3:]}
    gamma, lam = 1.0, 0.95
    for seat, final_reward in ((0, -0.5), (1, 0.5)):
        vals = values[seat]
        rewards = [0.0] * (len(vals) - 1) + [final_reward]
        # Independent GAE over this seat's own decisions only.
        adv, expected = 0.0, []
        for i in reversed(range(len(vals))):
            nxt = vals[i + 1] if i + 1 < len(vals) else 0.0
            nonterminal = 1.0 if i + 1 < len(vals) else 0.0
            delta = rewards[i] + gamma * nxt * nonterminal - vals[i]
            adv = delta + gamma * lam * nonterminal * adv
            expected.append(adv)
        expected.reverse()
        got = [row[5] for row in by_seat[seat]]
        np.testing.assert_allclose(got, expected, rtol=1e-6)
        np.testing.assert_allclose([row[6] for row in by_seat[seat]],
                                   np.array(expected) + np.array(vals), rtol=1e-6)
        assert [row[4] for row in by_seat[seat]] == pytest.approx(vals)


@pytest.mark.parametrize("reward", REWARD_MODES)
def test_a_round_that_is_not_the_last_closes_every_stream(reward):
    """round_is_episode: when round 1 of a 2-round match ends, each seat's stream is closed
    there (bootstrap 0, rewards of that round only) — whatever the reward scheme — and the
    next round starts new streams."""
    rules = RULES.replace(num_rounds=2)
    values = {0: [0.1, 0.2, 0.3], 1: [0.4, 0.5]}
    col = _collector(reward, rules=rules)
    _play_scripted(col, values, rules)
    g = col.games[0]
    assert g.match.round_index == 1 and not g.match.is_over
    assert len(col.finished) == 5 and all(not s for s in g.streams.values())
    first = g.match.results[0]
    final = round_rewards(reward, rules, first, 0.01, first.scores) or [0.0, 0.0]
    rows = {0: col.finished[:3], 1: col.finished[3:]}
    for seat in (0, 1):
        vals = values[seat]
        # the return of the seat's last decision of the round is that round's reward alone
        assert rows[seat][-1][6] == pytest.approx(final[seat])
        assert [row[4] for row in rows[seat]] == pytest.approx(vals)


def test_open_streams_bootstrap_from_the_same_seats_next_decision():
    """Mid-episode, a seat's transitions bootstrap from that seat's next value, not the
    next value of whoever acted next; the open transition waits for the next batch."""
    col = _collector("score", gamma=0.9, lam=0.8)
    g = col.games[0]
    g.match = Match(RULES, deals=[_deal()])
    g.roles = ["self", "self"]
    g.streams = {0: [], 1: []}
    enc, codec, ts = col.enc, g.match.state.codec, g.match.state.tiles
    for tile, value in (((6, 5), 1.0), ((5, 4), 2.0)):
        move = codec.play(ts.id_of(tile), 0)
        obs, mask = enc.encode(g.match, 0), enc.action_mask(g.match, 0)
        col.record(g, 0, obs, mask.astype(bool), codec.to_action(move, 0), -0.1, value)
        col.step(g, 0, codec.to_action(move, 0))
    assert col.ready == 1  # the first decision has a successor, the second does not yet
    stream = g.streams[0]
    col._flush(stream, next_value=stream[-1][4], keep_last=True)
    (row,) = col.finished
    # delta = r + gamma * V(next decision of seat 0) - V = 0 + 0.9 * 2.0 - 1.0
    assert row[5] == pytest.approx(0.9 * 2.0 - 1.0)
    assert len(stream) == 1 and stream[0][4] == 2.0


def test_demonstrations_record_the_teachers_choices_with_monte_carlo_returns():
    """Behaviour-cloning data (``spec.teacher``): the scripted teacher plays the learner
    seats; each of its real decisions is recorded with the action it chose, and with the
    return of its episode (values 0, lambda 1): here seat 0 keeps 0|0 (50 points, R26)."""
    spec = RolloutSpec(
        rules=RULES, num_games=1, seed=0, reward="score", reward_scale=0.01,
        round_is_episode=True, learner_seats=2, opponent_mix={"self": 1.0}, features="none",
        hidden_sizes=(8,), gamma=1.0, gae_lambda=1.0, teacher="longest-train",
    )
    col = Collector(spec)
    g = col.games[0]
    g.match = Match(RULES, deals=[_deal()])
    batch = col.demonstrate(1)
    teacher = LongestTrainAgent(RULES)
    assert len(batch["actions"]) >= 1
    own_tiles = {(6, 5), (5, 4), (0, 0)}
    for x, mask, action, ret in zip(batch["obs"], batch["masks"], batch["actions"], batch["returns"],
                                    strict=True):
        assert mask.sum() > 1  # forced moves are not decisions
        assert teacher.act(x, mask) == action
        hand = _hand_tiles(x)
        assert hand, "a decision with an empty hand"
        # Seat 0 (holding tiles of its dealt hand) ends with 0|0: -50 * 0.01; seat 1 goes out: 0.
        expected = -0.5 if hand <= own_tiles else 0.0
        assert ret == pytest.approx(expected)
    np.testing.assert_array_equal(batch["values"], 0.0)


def _hand_tiles(obs: np.ndarray) -> set[tuple[int, int]]:
    from mt_env.observation import ObservationEncoder
    from mt_env.tiles import tile_set

    enc, ts = ObservationEncoder(RULES), tile_set(RULES.max_pip)
    hand = obs[enc.pieces["hand"]]
    return {(ts.high[t], ts.low[t]) for t in np.flatnonzero(hand > 0.5)}


def test_a_batch_cut_mid_round_bootstraps_open_streams_from_their_own_value():
    """collect() returns as soon as enough transitions are ready; the rounds still going
    on are cut there, each seat's ready transitions bootstrapping from that seat's next
    (kept) decision's value. With gamma = lambda = 1 and a value head that always says c,
    a cut transition's return is c — never 0, which would teach that mid-round positions
    are worth nothing."""
    rules = RulesConfig(num_seats=4, num_rounds=1)  # long rounds: a 40-step batch cuts them
    spec = RolloutSpec(
        rules=rules, num_games=2, seed=3, reward="score", reward_scale=0.01,
        round_is_episode=True, learner_seats=4, opponent_mix={"self": 1.0}, features="none",
        hidden_sizes=(8,), gamma=1.0, gae_lambda=1.0,
    )
    col = Collector(spec)
    net = make_policy(rules, "none", (8,))
    c = 0.125
    with torch.no_grad():
        net.critic.weight.zero_()
        net.critic.bias.fill_(c)
    batch = col.collect(net.state_dict(), min_steps=40)
    returns = np.asarray(batch["returns"])
    assert len(returns) >= 40
    assert np.isclose(returns, c).sum() >= 20  # rounds still going: bootstrapped from c
    assert np.allclose(batch["values"], c)


@pytest.mark.parametrize("reward", ["rank", "win"])
def test_match_end_rewards_reach_each_seats_last_decision(reward):
    """rank/win pay only at the match's end: seat 1 went out and won, so its last
    decision's return (gamma = 1, rewards 0 before) is the match reward, and seat 0's
    is the loser's."""
    values = {0: [0.0, 0.0, 0.0], 1: [0.0, 0.0]}
    col = _collector(reward, lam=1.0)
    _play_scripted(col, values)
    expected = match_rewards(reward, [2, 1])  # seat 1 first, seat 0 second
    rows = {0: col.finished[:3], 1: col.finished[3:]}
    assert expected[1] > expected[0]
    for seat in (0, 1):
        assert [row[6] for row in rows[seat]] == pytest.approx([expected[seat]] * len(rows[seat]))


def test_lead_reward_sums_to_the_final_lead_over_the_best_other_seat():
    """reward="lead" (R27 totals): over a match a seat's round rewards add up to its final
    lead over the best other seat, the value of `search`'s rollouts; at 2 seats it is the
    zero-sum score."""
    rng = random.Random(3)
    rules4 = RulesConfig(num_seats=4, num_rounds=3)
    m = Match(rules4, seed=11)
    sums = [0.0] * 4
    while not m.is_over:
        result = m.apply(rng.choice(m.legal_moves()))
        if result is not None:
            for k, r in enumerate(round_rewards("lead", rules4, result, 0.01, m.totals)):
                sums[k] += r
    totals = m.totals
    for k in range(4):
        best_other = min(t for j, t in enumerate(totals) if j != k)
        assert sums[k] == pytest.approx(0.01 * (best_other - totals[k]))
    assert any(s > 0 for s in sums) and any(s < 0 for s in sums)
    two = RulesConfig(num_seats=2)
    result = RoundResult(0, 9, 0, "out", (0,), (0, 37), (0, 37))
    assert round_rewards("lead", two, result, 0.01, [5, 60]) == pytest.approx(
        round_rewards("score_zero_sum", two, result, 0.01)
    )
    with pytest.raises(ValueError, match="match totals"):
        round_rewards("lead", two, result, 0.01)


def test_win_prob_rewards_sum_to_the_match_win_less_a_fair_share():
    """reward="win_prob": each round pays the change of each seat's modelled chance to win
    the match; the chances sum to 1 at every round end (so a round's rewards sum to 0) and
    after the last round they are the R27 outcome, so over a match a seat's rewards add up
    to its win (ties on totals shared) minus 1/n, whatever the model's error."""
    rng = random.Random(5)
    for seed, n in ((11, 4), (12, 2), (13, 3)):
        rules = RulesConfig(num_seats=n, num_rounds=3)
        m = Match(rules, seed=seed)
        sums, paid = [0.0] * n, 0
        while not m.is_over:
            result = m.apply(rng.choice(m.legal_moves()))
            if result is not None:
                rewards = round_rewards("win_prob", rules, result, 0.01, m.totals)
                assert sum(rewards) == pytest.approx(0.0, abs=1e-9)
                paid += any(abs(r) > 1e-6 for r in rewards)
                sums = [a + r for a, r in zip(sums, rewards, strict=True)]
        best = min(m.totals)
        winners = [k for k in range(n) if m.totals[k] == best]
        for k in range(n):
            share = 1 / len(winners) if k in winners else 0.0
            assert sums[k] == pytest.approx(share - 1 / n, abs=1e-9)
        assert paid == 3  # every round moved the chances, not only the last
    with pytest.raises(ValueError, match="match totals"):
        round_rewards("win_prob", RulesConfig(num_seats=2), RoundResult(0, 9, 0, "out", (0,), (0, 37), (0, 37)), 0.01)


def test_win_chances_follow_the_normal_model_of_the_rounds_left():
    """win_chances against an independent computation: at 2 seats the closed form
    Phi(lead / (sd sqrt(2 k))); at 3 seats a fine-grid integral of the same model. A lead
    is worth less with more rounds left; equal totals are an equal share; positive scoring
    (V-positive-score) turns the order round."""
    two = RulesConfig(num_seats=2)
    sd = round_sd(two)
    for lead, k in ((10, 1), (10, 5), (40, 2), (0, 3)):
        expected = 0.5 * (1 + math.erf(lead / (sd * math.sqrt(2 * k)) / math.sqrt(2)))
        assert win_chances(two, [0, lead], k)[0] == pytest.approx(expected, abs=1e-6)
    assert win_chances(two, [0, 10], 1)[0] > win_chances(two, [0, 10], 5)[0] > 0.5
    three = RulesConfig(num_seats=3)
    totals, k = [20, 35, 60], 2
    s = round_sd(three) * math.sqrt(k)
    z = np.linspace(-9, 9, 20001)
    pdf = np.exp(-z**2 / 2) / math.sqrt(2 * math.pi)
    cdf = np.vectorize(lambda x: 0.5 * (1 + math.erf(x / math.sqrt(2))))
    g = [-t for t in totals]
    grid = [float(np.sum(pdf * np.prod([cdf((g[i] - g[j]) / s + z) for j in range(3) if j != i], axis=0))) * (z[1] - z[0])
            for i in range(3)]
    got = win_chances(three, totals, k)
    assert got == pytest.approx(grid, abs=1e-5)
    assert sum(got) == pytest.approx(1.0) and got[0] > got[1] > got[2]
    assert win_chances(three, [30, 30, 30], 4) == pytest.approx([1 / 3] * 3)
    assert win_chances(three, [30, 30, 50], 0) == [0.5, 0.5, 0.0]
    positive = RulesConfig(num_seats=3, scoring="positive")  # the highest total wins: 80 - t
    assert round_sd(positive) == round_sd(three)
    assert win_chances(positive, [80 - t for t in totals], k) == pytest.approx(grid, abs=1e-5)
