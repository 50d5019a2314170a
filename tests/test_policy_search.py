"""``search-ppo:PATH`` (:class:`mt_env.agents.ppo.PolicySearchAgent`): ``search`` whose candidates
and default come from a trained policy's probabilities instead of the ``longest-train`` ranking."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from conftest import game_steps

from mt_env import Match, RulesConfig
from mt_env.agents import make_agent
from mt_env.agents.base import act_in_match
from mt_env.agents.ppo import PolicySearchAgent, PPOAgent
from mt_env.agents.search import SearchAgent
from mt_env.observation import ObservationEncoder

CKPT = Path(__file__).resolve().parents[1] / "checkpoints" / "default-2seat.pt"
RULES = RulesConfig(num_seats=2)  # the rules the checkpoint was trained for


def searched_decisions(agent: PolicySearchAgent, seeds, opponent=None):
    """Play ``agent`` in seat 0 (``opponent``, default ``greedy``, in seat 1) and yield
    ``(observation, mask, view, action)`` for each of its decisions that it searched."""
    enc = ObservationEncoder(RULES)
    for seed in seeds:
        match = Match(RULES, seed=seed)
        agents = [agent, opponent or make_agent("greedy", RULES, seed=seed)]
        for a in agents:
            a.reset()
        for _ in game_steps():
            if match.is_over:
                break
            seat = match.state.seat
            obs, mask = enc.encode(match, seat), enc.action_mask(match, seat)
            before = agent.searches
            action = act_in_match(agents[seat], enc, match, seat, mask)  # the tournaments' path
            assert mask[action] == 1
            if seat == 0 and agent.searches > before:
                yield obs, mask, enc.decode(obs, mask), action
            match.apply(match.state.codec.to_move(action, seat))


def test_the_spec_builds_it_and_names_it():
    agent = make_agent(f"search-ppo:{CKPT}", RULES, seed=0)
    assert isinstance(agent, PolicySearchAgent) and agent.needs_vector
    assert agent.name == "search-ppo:default-2seat.pt"
    with pytest.raises(ValueError, match="search-ppo:.*needs a path"):
        make_agent("search-ppo:", RULES)
    with pytest.raises(ValueError, match="cannot load the checkpoint"):
        make_agent("search-ppo:no/such/file.pt", RULES)


def test_its_candidates_are_the_policys_most_probable_plays_and_its_default_the_policys_choice():
    """With ``margin=inf`` no candidate can beat the default: every searched decision is then
    the policy's own argmax; ``rank`` orders the plays by the policy's probabilities. The
    policy and ``longest-train`` disagree on some of these decisions (else this would not
    tell the two rankings apart)."""
    agent = PolicySearchAgent.from_checkpoint(CKPT, RULES, seed=0, samples=2, margin=math.inf)
    ppo = PPOAgent.from_checkpoint(CKPT, RULES)
    lt = SearchAgent(RULES, seed=0)
    seen = disagree = 0
    for obs, mask, view, action in searched_decisions(agent, range(1)):
        assert action == ppo.act(obs, mask)
        probs = ppo.probabilities(obs[None], mask[None])[0]
        agent._input = (obs, mask)
        ranked = [p[0] for p in agent.rank(view)]
        agent._input = None
        assert sorted(ranked) == sorted(p[0] for p in view.plays)
        assert all(probs[a] >= probs[b] for a, b in zip(ranked, ranked[1:], strict=False))
        disagree += lt.rank(view)[0][0] != action
        seen += 1
    assert seen >= 10 and disagree >= 1


def test_search_can_overrule_the_policy():
    """With no margin and a few samples, the rollouts sometimes pick a candidate other than
    the policy's argmax (the search does something)."""
    agent = PolicySearchAgent.from_checkpoint(CKPT, RULES, seed=1, samples=8, margin=0.0)
    ppo = PPOAgent.from_checkpoint(CKPT, RULES)
    overruled = [
        action != ppo.act(obs, mask)
        for obs, mask, _, action in searched_decisions(agent, range(1))
    ]
    assert len(overruled) >= 10 and any(overruled)


def test_a_view_without_the_vector_is_refused():
    agent = PolicySearchAgent.from_checkpoint(CKPT, RULES, seed=0)
    enc = ObservationEncoder(RULES)
    match = Match(RULES, seed=0)
    seat = match.state.seat
    mask = enc.action_mask(match, seat)
    with pytest.raises(RuntimeError, match=r"call act\(observation, action_mask\)"):
        agent.act_view(enc.view(match, seat, mask))
    assert np.asarray(mask)[agent.act(enc.encode(match, seat), mask)] == 1
