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


def test_the_free_first_turn_is_the_policys_own():
    """R11: in its free first turn ``search-ppo`` plays the policy's argmax move by move (the
    tile to lay, or the pass that ends the turn), not ``search``'s plan; the two differ on
    some of these decisions (else this would not tell them apart)."""
    agent = PolicySearchAgent.from_checkpoint(CKPT, RULES, seed=0)
    ppo = PPOAgent.from_checkpoint(CKPT, RULES)
    plain = SearchAgent(RULES, seed=0)
    enc = ObservationEncoder(RULES)
    seen = differ = 0
    for seed in range(6):
        match = Match(RULES, seed=seed)
        agents = [agent, make_agent("greedy", RULES, seed=seed)]
        for a in (*agents, plain):
            a.reset()
        for _ in game_steps():
            if match.is_over:
                break
            seat = match.state.seat
            obs, mask = enc.encode(match, seat), enc.action_mask(match, seat)
            action = act_in_match(agents[seat], enc, match, seat, mask)
            if seat == 0 and match.state.in_free_first_turn and mask.sum() > 1:
                assert action == ppo.act(obs, mask)
                view = enc.decode(obs, mask)
                if view.lengths[0] == 0:  # the turn's first move: search would start its plan
                    differ += plain.act_view(view) != action
                seen += 1
            match.apply(match.state.codec.to_move(action, seat))
    assert seen >= 20 and differ >= 1


def test_its_rollouts_are_the_policys_own_play_to_the_rounds_end():
    """``finish_rounds`` plays each imagined world out with the policy's argmax for every
    seat (batched): the same end as playing the world move by move with ``PPOAgent.act`` on
    the worlds' own observations, and a different one from ``search``'s scripted rollout
    in some worlds (else this would not tell them apart)."""
    agent = PolicySearchAgent.from_checkpoint(CKPT, RULES, seed=3)
    ppo = PPOAgent.from_checkpoint(CKPT, RULES)
    plain = SearchAgent(RULES, seed=3)
    enc = ObservationEncoder(RULES)
    worlds = differ = 0
    for _, _, view, _ in searched_decisions(agent, range(2)):
        position = enc.position(view)
        unknown = agent.decoder.tiles.ids_in(position.unseen)
        for _ in range(2):
            world = agent._world(position, view, unknown)
            batched, scripted, stepped = world.copy(), world.copy(), world.copy()
            agent.finish_rounds(view, [batched])
            plain.finish_rounds(view, [scripted])
            totals = list(view.totals) if view.round_index else None
            while not stepped.is_over:
                seat = stepped.seat
                o = enc.encode_round(stepped, seat, view.round_index, totals)
                action = ppo.act(o, enc.round_action_mask(stepped, seat))
                stepped.apply(stepped.codec.to_move(action, seat))
            assert batched.is_over and batched.scores() == stepped.scores()
            assert [batched.hand_mask(k) for k in range(2)] == [stepped.hand_mask(k) for k in range(2)]
            differ += batched.scores() != scripted.scores()
            worlds += 1
        if worlds >= 40:
            break
    assert worlds >= 40 and differ >= 1
