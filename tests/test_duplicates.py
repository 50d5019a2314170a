"""Duplicate matches in the rollouts (``duplicates`` = K, issue 14): K copies of one match on
the same deals, seats and opponents, each decision's advantage its round's return against the
other copies' mean (leave-one-out)."""

from __future__ import annotations

import numpy as np
import pytest

import train
from mt_env import Match, RulesConfig
from mt_env.agents.ppo import rollout
from mt_env.agents.ppo.rollout import Collector, RolloutSpec, check_duplicates, common_prefix

RULES = RulesConfig(num_seats=2, max_pip=6, num_rounds=3)


def _spec(duplicates: int, num_games: int = 8, **kw) -> RolloutSpec:
    options = dict(
        rules=RULES,
        num_games=num_games,
        seed=5,
        reward="score_zero_sum",
        reward_scale=0.01,
        round_is_episode=True,
        learner_seats=1,
        opponent_mix={"self": 0.5, "longest-train": 0.5},
        features="pairs",
        hidden_sizes=(16,),
        gamma=1.0,
        gae_lambda=0.95,
        duplicates=duplicates,
    )
    return RolloutSpec(**{**options, **kw})


def _deal_of(state) -> tuple:
    return tuple(tuple(state.hand(s)) for s in range(RULES.num_seats)), state.boneyard_ids


class _DealtMatch(Match):
    """A match that keeps each round's deal as it was dealt."""

    def _deal(self, round_index, previous_start):
        state = super()._deal(round_index, previous_start)
        self.__dict__.setdefault("dealt", []).append(_deal_of(state))
        return state


def test_copies_share_deals_seats_and_opponents_and_groups_differ():
    col = Collector(_spec(4))
    groups = [col.games[:4], col.games[4:]]
    for games in groups:
        assert len({_deal_of(g.match.state) for g in games}) == 1  # hands and boneyard order (R4)
        assert len({tuple(g.roles) for g in games}) == 1
        seeds = {tuple(sorted((s, a.seed) for s, a in g.agents.items())) for g in games}
        assert len(seeds) == 1
    assert _deal_of(groups[0][0].match.state) != _deal_of(groups[1][0].match.state)


def test_copies_keep_sharing_deals_in_later_rounds_and_matches(monkeypatch):
    """Each game's n-th match (and so each of its rounds) is its copies' n-th match, however
    far apart the copies have drifted."""
    monkeypatch.setattr(rollout, "Match", _DealtMatch)
    col = Collector(_spec(4))
    compared = 0
    for _ in range(8):
        col.collect(col.policy.state_dict(), 150)
        by_plan: dict[tuple, list] = {}
        for g in col.games:
            by_plan.setdefault(g.plan_key, []).append(g.match.dealt)
        for deals in by_plan.values():
            for other in deals[1:]:
                common = min(len(other), len(deals[0]))
                assert other[:common] == deals[0][:common]
                compared += common - 1  # later rounds compared
    assert compared > 0
    assert max(g.plays for g in col.games) >= 2  # a second match was reached


def test_copies_that_play_alike_carry_zero_advantage(monkeypatch):
    """With every seat's choice fixed (the argmax, not a sample) the copies play the same moves:
    the leave-one-out advantage is exactly 0 for every decision, while the value head's
    targets (GAE's returns) are the round's real outcome."""
    monkeypatch.setattr(rollout, "sample_actions", lambda logits, gen: logits.argmax(-1))
    col = Collector(_spec(4))
    batch = col.collect(col.policy.state_dict(), 300)
    assert len(batch["advantages"]) >= 300
    assert abs(batch["advantages"]).max() < 1e-6  # 0 but for rounding
    assert batch["returns"].std() > 0


class _Recording(Collector):
    """Records each copy's round return and decisions as the copy finishes the round."""

    def __init__(self, spec):
        self.returns: dict[tuple, list[tuple[float, int]]] = {}
        super().__init__(spec)

    def _end_episode(self, g, round_index):
        (seat,) = list(g.streams)  # one learner seat: learner_seats=1, no "self" seat
        copy = (g.returns[seat], len(g.streams[seat]))
        self.returns.setdefault((*g.plan_key, round_index), []).append(copy)
        super()._end_episode(g, round_index)


def test_sampled_play_gives_leave_one_out_advantages():
    col = _Recording(_spec(4, opponent_mix={"longest-train": 1.0}))
    batch = col.collect(col.policy.state_dict(), 400)
    expected = set()
    for copies in col.returns.values():
        if len(copies) == 4:
            rets = [r for r, _ in copies]
            advs = [r - (sum(rets) - r) / 3 for r in rets]
            assert sum(advs) == pytest.approx(0, abs=1e-9)
            expected.update(round(a, 5) for a in advs)
    got = {round(float(a), 5) for a in batch["advantages"]}
    # every advantage is one copy's return against the others', or 0 where all played alike
    assert got <= expected | {0.0}
    assert len(got - {0.0}) > 1  # a fresh policy's sampled play parts the copies


def test_decisions_every_copy_made_alike_get_no_advantage():
    x = np.zeros(3, dtype=np.float32)
    y = np.ones(3, dtype=np.float32)

    def row(inp, action):
        return (inp, None, action, 0.0, 0.0, 0.0, 0.0, None, -1)

    same = [row(x, 1), row(y, 2)]
    assert common_prefix([same + [row(x, 3)], same + [row(x, 4)], same]) == 2
    assert common_prefix([[row(x, 1), row(x, 2)], [row(x, 1), row(y, 2)]]) == 1  # the input parts
    assert common_prefix([[row(x, 1)], [row(x, 2)]]) == 0  # the action parts
    assert common_prefix([same, same]) == 2


def test_rounds_wait_for_their_last_copy():
    """A batch holds exactly the decisions of the rounds every copy has finished; the rest
    are kept back for a later batch."""
    col = _Recording(_spec(4, opponent_mix={"longest-train": 1.0}))
    batch = col.collect(col.policy.state_dict(), 50)
    complete = [c for c in col.returns.values() if len(c) == 4]
    assert complete
    assert len(batch["actions"]) == sum(n for c in complete for _, n in c)
    assert all(len(copies) < 4 for copies in col._held.values())
    waiting = sum(n for c in col.returns.values() if len(c) < 4 for _, n in c)
    held = sum(len(r) for copies in col._held.values() for rows, _ in copies for r in rows.values())
    assert held == waiting
    later = col.collect(col.policy.state_dict(), 50)  # they come with a later batch
    assert len(later["actions"]) >= 50


def test_invalid_duplicates_are_refused_with_the_reason():
    with pytest.raises(ValueError, match="divisor of the games per collector"):
        check_duplicates(3, 8, True, 1.0)
    with pytest.raises(ValueError, match="round_is_episode"):
        check_duplicates(2, 8, False, 1.0)
    with pytest.raises(ValueError, match="gamma=1.0"):
        check_duplicates(2, 8, True, 0.99)
    with pytest.raises(ValueError, match=">= 1"):
        check_duplicates(0, 8, True, 1.0)
    check_duplicates(1, 7, False, 0.5)  # off: anything goes
    with pytest.raises(ValueError, match="divisor"):
        Collector(_spec(3))
    with pytest.raises(ValueError, match=r"duplicates=5: expected a divisor"):
        train.parse_args(["--config", "quick", "--duplicates", "5"])
    with pytest.raises(ValueError, match=r"duplicates=0"):
        train.parse_args(["--config", "quick", "--duplicates", "0"])
