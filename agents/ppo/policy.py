"""The PPO networks and :class:`PPOAgent`, the trained policy as a tournament agent.

The policy network sees the policy input of :mod:`mt_env.agents.features` (the observation
vector of :mod:`mt_env.observation`, plus derived features when the checkpoint was trained
with them) and returns masked action logits and a state value. Illegal actions get the
dtype's minimum logit, so they are never sampled and carry no gradient; the PPO loss and
behaviour cloning only look at the legal actions' logits (:func:`legal_index`,
:func:`legal_log_probs`).

With ``critic = "privileged"`` the trainer's values come from a separate
:class:`PrivilegedCritic` that also sees :func:`privileged_features` (the hidden tiles);
agents never load it. Checkpoint files are :mod:`mt_env.agents.ppo.checkpoint`'s.
"""

from __future__ import annotations

import math
import os
from pathlib import Path

import numpy as np
import torch
from torch import nn

from mt_env.agents.base import Agent
from mt_env.agents.features import (
    GLOBAL_COLS,
    PAIR_COLS,
    TILE_COLS,
    TRAIN_COLS,
    PairLayout,
    layout,
    make_featurizer,
    pair_layout,
)
from mt_env.agents.ppo.checkpoint import PAIR_HIDDEN, CheckpointError, load_checkpoint, pair_width
from mt_env.agents.search import SearchAgent
from mt_env.config import RulesConfig
from mt_env.observation import ObservationEncoder


def _layer(inp: int, out: int, std: float) -> nn.Linear:
    layer = nn.Linear(inp, out)
    nn.init.orthogonal_(layer.weight, std)
    nn.init.zeros_(layer.bias)
    return layer


def _hidden_layers(width: int, hidden_sizes: tuple[int, ...]) -> tuple[list[nn.Module], int]:
    """Linear + ReLU layers of the given widths from ``width`` inputs, and the output width."""
    layers: list[nn.Module] = []
    for h in hidden_sizes:
        layers += [_layer(width, h, 2**0.5), nn.ReLU()]
        width = h
    return layers, width


def trunk_size(input_size: int, pairs: PairLayout | None) -> int:
    """Width of :meth:`PolicyNet.trunk_input`: the policy input less its per-pair block."""
    return input_size if pairs is None else input_size - (pairs.pair.stop - pairs.pair.start)


class PolicyNet(nn.Module):
    """MLP trunk with a value head and a policy head over every action.

    Without ``pairs`` the policy head is one linear layer over all actions. With a
    :class:`~mt_env.agents.features.PairLayout` (feature set ``"pairs"``) each play
    ``(tile, train)`` is scored by one small MLP **shared by every pair**, from that
    tile's, that train's and that pair's features plus the trunk's state embedding;
    draw and pass come from a linear layer on the trunk. Sharing weights across tiles
    and trains is what lets the policy generalise from few games.
    """

    def __init__(
        self,
        input_size: int,
        num_actions: int,
        hidden_sizes: tuple[int, ...],
        pairs: PairLayout | None = None,
        pair_hidden: int = PAIR_HIDDEN,
    ) -> None:
        super().__init__()
        self.pairs = pairs
        layers, width = _hidden_layers(trunk_size(input_size, pairs), hidden_sizes)
        self.trunk = nn.Sequential(*layers)
        self.critic = _layer(width, 1, 1.0)
        if pairs is None:
            self.actor = _layer(width, num_actions, 0.01)
            return
        self.num_plays = pairs.num_tiles * pairs.num_trains
        # play action -> tile, relative train (not saved: they follow from the rules)
        self.register_buffer("tile_of", torch.tensor(pairs.tile_of), persistent=False)
        self.register_buffer("train_of", torch.tensor(pairs.train_of), persistent=False)
        self.actor = _layer(width, num_actions - self.num_plays, 0.01)  # draw, pass
        self.tile_in = _layer(TILE_COLS, pair_hidden, 2**0.5)
        self.train_in = _layer(TRAIN_COLS, pair_hidden, 2**0.5)
        self.pair_in = _layer(PAIR_COLS, pair_hidden, 2**0.5)
        self.glob_in = _layer(GLOBAL_COLS, pair_hidden, 2**0.5)
        self.state_in = _layer(width, pair_hidden, 2**0.5)
        self.pair_out = _layer(pair_hidden, 1, 0.01)

    def forward(
        self, x: torch.Tensor, mask: torch.Tensor, h: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Masked logits ``(B, A)`` and values ``(B,)``; ``mask`` is bool ``(B, A)``; ``h`` is
        :meth:`embed` ``(x)`` where the caller already has it (the update's belief loss)."""
        p = self.pairs
        h = self.embed(x) if h is None else h
        if p is None:
            logits = self.actor(h)
        else:
            # Score only the legal plays: a handful per decision, whatever the set size.
            b, t, n1 = x.shape[0], p.num_tiles, p.num_trains
            bi, ai = mask[:, : self.num_plays].nonzero(as_tuple=True)
            z = (
                self.tile_in(x[:, p.tile].view(b, t, TILE_COLS)[bi, self.tile_of[ai]])
                + self.train_in(x[:, p.train].view(b, n1, TRAIN_COLS)[bi, self.train_of[ai]])
                + self.pair_in(x[:, p.pair].view(b, t * n1, PAIR_COLS)[bi, ai])
                + (self.glob_in(x[:, p.glob]) + self.state_in(h))[bi]
            )
            scores = self.pair_out(torch.relu(z)).squeeze(-1)
            plays = x.new_zeros(b, self.num_plays).index_put((bi, ai), scores)
            logits = torch.cat([plays, self.actor(h)], 1)
        logits = logits.masked_fill(~mask, torch.finfo(logits.dtype).min)
        return logits, self.critic(h).squeeze(-1)

    def trunk_input(self, x: torch.Tensor) -> torch.Tensor:
        """The part of the policy input the trunk reads (all but the per-pair block)."""
        p = self.pairs
        return x if p is None else torch.cat([x[:, : p.pair.start], x[:, p.glob]], 1)

    def embed(self, x: torch.Tensor) -> torch.Tensor:
        """The trunk's state embedding ``(B, hidden_sizes[-1])`` that every head reads."""
        return self.trunk(self.trunk_input(x))


# ------------------------------------------------------------ training-only privileged critic
def privileged_size(config: RulesConfig) -> int:
    """Length of :func:`privileged_features`: the other seats' hands and the boneyard."""
    return config.num_seats * config.num_tiles


def privileged_features(state, seat: int) -> np.ndarray:
    """What ``seat`` cannot see, for the **training-only** critic (asymmetric actor-critic,
    as in PerfectDou): each other seat's hand in seat order from ``seat``'s left, then the
    boneyard, each a 0/1 vector over tile ids. The policy never reads it."""
    n, tiles = state.num_seats, state.tiles
    t = tiles.num_tiles
    masks = [state.hand_mask((seat + k) % n) for k in range(1, n)]
    masks.append(tiles.mask_of(state.boneyard_ids))
    raw = b"".join(m.to_bytes((t + 7) // 8, "little") for m in masks)
    bits = np.unpackbits(np.frombuffer(raw, dtype=np.uint8), bitorder="little")
    return bits.reshape(n, -1)[:, :t].reshape(-1).astype(np.float32)


class PrivilegedCritic(nn.Module):
    """Value network of ``critic = "privileged"`` training: an MLP over the policy trunk's
    input plus :func:`privileged_features`, meant to take deal noise out of the advantages
    by seeing the hidden tiles. Measured, it explains little more of a round's result than
    the policy's own value head (0.22 against 0.17 at 2 seats, 0.43 against 0.41 at 4:
    docs/experiments.md §3.30–3.31). It exists only in the trainer; checkpoints keep it for
    ``--resume``, and agents never load it."""

    def __init__(self, input_size: int, hidden_sizes: tuple[int, ...]) -> None:
        super().__init__()
        layers, width = _hidden_layers(input_size, hidden_sizes)
        self.net = nn.Sequential(*layers, _layer(width, 1, 1.0))

    def forward(self, trunk_x: torch.Tensor, priv: torch.Tensor) -> torch.Tensor:
        return self.net(torch.cat([trunk_x, priv], 1)).squeeze(-1)


def seed_critic(critic: PrivilegedCritic, policy: PolicyNet) -> None:
    """Make ``critic`` compute ``policy``'s own value function: its layers take the policy
    trunk's and value head's weights, and the hidden tiles' input columns read 0, so a
    second stage (``init_policy`` with ``critic = "privileged"``) starts from the file's
    values and learns from the hidden tiles only what they add. Both networks must come
    from :func:`make_critic` and :func:`make_policy` with the same arguments."""
    trunk = [m for m in policy.trunk if isinstance(m, nn.Linear)] + [policy.critic]
    layers = [m for m in critic.net if isinstance(m, nn.Linear)]
    widths = [m.out_features for m in layers]
    expected = [m.out_features for m in trunk]
    if widths != expected:
        raise ValueError(f"seed_critic: the critic's layers do not match the policy's trunk and value "
                         f"head: layer widths {widths}, expected {expected} (make_critic with the "
                         f"policy's hidden_sizes)")
    with torch.no_grad():
        for src, dst in zip(trunk, layers, strict=True):
            dst.weight.zero_()
            dst.weight[:, : src.in_features] = src.weight
            dst.bias.copy_(src.bias)


class BeliefHead(nn.Module):
    """Training-only auxiliary head of ``belief_coef > 0`` training: from the policy trunk's
    embedding (:meth:`PolicyNet.embed`) it guesses where each tile the observer cannot see
    lies: in one of the other seats' hands (clockwise from the observer) or in the boneyard,
    ``n`` places per tile, the order of :func:`privileged_features`. Its cross-entropy
    against the true places joins the PPO loss, so the trunk is pushed to encode what the
    public record (hand sizes, known voids, the table) says about the hidden hands, as the
    hidden-information guidance of Suphx and PerfectDou does; the policy still reads only its
    observation. Checkpoints keep it for ``--resume``; agents never load it."""

    def __init__(self, width: int, num_seats: int, num_tiles: int) -> None:
        super().__init__()
        self.num_seats, self.num_tiles = num_seats, num_tiles
        self.net = _layer(width, num_seats * num_tiles, 0.01)

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        """Logits ``(B, n, T)`` of each tile's place."""
        return self.net(h).view(-1, self.num_seats, self.num_tiles)

    def loss(self, h: torch.Tensor, priv: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The mean cross-entropy of the true places over the tiles hidden from the observer
        (``priv``: :func:`privileged_features` rows; a tile in the observer's hand or on the
        table is in no place and counts for nothing), and the share of them whose most
        likely place is the true one."""
        where = priv.view(-1, self.num_seats, self.num_tiles)
        hidden = where.sum(1) > 0  # (B, T)
        logits = self(h)
        target = where.argmax(1)
        ce = nn.functional.cross_entropy(logits, target, reduction="none")[hidden]
        hits = (logits.argmax(1) == target)[hidden]
        if not len(ce):
            raise ValueError("BeliefHead.loss: no hidden tile in the batch (privileged inputs recorded?)")
        return ce.mean(), hits.float().mean()


def make_belief_head(config: RulesConfig, hidden_sizes: tuple[int, ...]) -> BeliefHead:
    """The belief head for :func:`make_policy`'s trunk of these ``hidden_sizes``."""
    return BeliefHead(hidden_sizes[-1], config.num_seats, config.num_tiles)


def make_critic(config: RulesConfig, features: str, hidden_sizes: tuple[int, ...]) -> PrivilegedCritic:
    """The privileged critic matching :func:`make_policy`'s network for the same arguments."""
    pairs = pair_layout(config) if features == "pairs" else None
    trunk_in = trunk_size(layout(config, features)["input_size"], pairs)
    return PrivilegedCritic(trunk_in + privileged_size(config), tuple(hidden_sizes))


def make_policy(
    config: RulesConfig, features: str, hidden_sizes: tuple[int, ...], pair_hidden: int = PAIR_HIDDEN
) -> PolicyNet:
    """The network for a rules configuration and feature set (one place builds them all);
    ``pair_hidden`` is the width of the pair head's hidden layer (feature set ``"pairs"``)."""
    lay = layout(config, features)
    pairs = pair_layout(config) if features == "pairs" else None
    return PolicyNet(lay["input_size"], lay["num_actions"], tuple(hidden_sizes), pairs, pair_hidden)


def build_policy(data: dict) -> PolicyNet:
    """The network stored in a checkpoint dict (from
    :func:`mt_env.agents.ppo.checkpoint.load_checkpoint`), in eval mode."""
    config = RulesConfig.from_dict(data["rules"])
    net = make_policy(config, data["features"], tuple(data["hidden_sizes"]), pair_width(data["model"]))
    try:
        net.load_state_dict(data["model"])
    except (RuntimeError, KeyError) as err:
        raise CheckpointError(f"checkpoint weights do not fit the network: {err}") from None
    net.eval()
    return net


def legal_index(masks: torch.Tensor, actions: torch.Tensor):
    """Per row of a ``(B, A)`` bool mask: the legal action ids in increasing order, padded
    with 0 to the widest row ``(B, K)``, which of those are real ``(B, K)``, and the position
    of ``actions`` among them ``(B,)``. (From the mask's nonzero entries, which come row by
    row: no sort of the ``(B, A)`` mask.)"""
    counts = masks.sum(1)
    width = int(counts.max())
    rows, ids = masks.nonzero(as_tuple=True)
    start = counts.cumsum(0) - counts  # where each row's entries begin in ``ids``
    cols = torch.arange(len(ids)) - start[rows]
    legal = masks.new_zeros(masks.shape[0], width, dtype=torch.long).index_put_((rows, cols), ids)
    valid = torch.arange(width)[None, :] < counts[:, None]
    pos = (legal == actions[:, None]).logical_and(valid).float().argmax(1)
    return legal, valid, pos


def legal_log_probs(logits: torch.Tensor, legal: torch.Tensor, valid: torch.Tensor) -> torch.Tensor:
    """Log-probabilities over each row's legal actions ``(B, K)`` (from :func:`legal_index`);
    padding columns get -inf."""
    return torch.log_softmax(logits.gather(1, legal).masked_fill(~valid, -math.inf), -1)


def sample_actions(logits: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    """One action per row of masked ``logits`` ``(B, A)``, drawn from their softmax: the
    same distribution as ``torch.multinomial(torch.softmax(logits, -1), 1)``, by inverting
    each row's cumulative distribution at one uniform draw.

    Why not ``multinomial``: on CPU it costs ~0.3 ms for 48 rows of 457 actions, and the
    ``exp`` of the masked logits (``finfo.min``) ~0.15 ms more on a slow path; this costs
    ~0.03 ms, and the rollout samples ~130 times per update. ``searchsorted(right=True)``
    returns the first action whose cumulative probability exceeds the draw, so the action
    always has probability > 0; a draw that rounding puts at or past the row's total is
    given the row's last action of probability > 0 (``argmax`` of the cumulative sums)."""
    cdf = torch.softmax(logits, -1).double().cumsum_(-1)
    draw = torch.rand(len(cdf), 1, generator=generator, dtype=torch.float64) * cdf[:, -1:]
    return torch.minimum(torch.searchsorted(cdf, draw, right=True).squeeze(1), cdf.argmax(-1))


class PPOAgent(Agent):
    """A trained policy as an :class:`~mt_env.agents.base.Agent`: argmax (or sampled) masked action."""

    name = "ppo"

    def __init__(
        self,
        config: RulesConfig,
        seed: int | None = None,
        *,
        net: PolicyNet,
        features: str = "none",
        deterministic: bool = True,
        label: str = "ppo",
    ) -> None:
        super().__init__(config, seed)
        self.net = net
        self.features = features
        self._featurize = make_featurizer(config, features)
        self.deterministic = deterministic
        self.name = label
        self._gen = torch.Generator().manual_seed(seed if seed is not None else 0)
        self._encoder: ObservationEncoder | None = None  # for play_out, made when first used

    @classmethod
    def from_checkpoint(
        cls,
        path: str | os.PathLike,
        config: RulesConfig,
        seed: int | None = None,
        deterministic: bool = True,
    ) -> PPOAgent:
        data = load_checkpoint(path, config)
        return cls(
            config,
            seed,
            net=build_policy(data),
            features=data["features"],
            deterministic=deterministic,
            label=f"ckpt:{Path(path).name}",
        )

    def seed(self, seed: int | None) -> None:
        super().seed(seed)
        self._gen = torch.Generator().manual_seed(seed if seed is not None else 0)

    @torch.no_grad()
    def logits(self, observations: np.ndarray, action_masks: np.ndarray) -> torch.Tensor:
        """The policy's masked logits ``(B, A)`` for a batch of observations and masks."""
        x = torch.as_tensor(self._featurize(np.asarray(observations, dtype=np.float32)))
        mask = torch.as_tensor(np.asarray(action_masks, dtype=bool))
        return self.net(x, mask)[0]

    def probabilities(self, observations: np.ndarray, action_masks: np.ndarray) -> np.ndarray:
        """The policy's action probabilities ``(B, A)`` (0 on illegal actions)."""
        return torch.softmax(self.logits(observations, action_masks), -1).numpy()

    def act_batch(self, observations: np.ndarray, action_masks: np.ndarray) -> np.ndarray:
        logits = self.logits(observations, action_masks)
        if self.deterministic:
            return logits.argmax(-1).numpy()
        return sample_actions(logits, self._gen).numpy()

    def act(self, observation: np.ndarray, action_mask: np.ndarray) -> int:
        return int(self.act_batch(observation[None], action_mask[None])[0])

    def play_out(self, states: list, round_index: int, totals: list[int] | None) -> None:
        """Play each :class:`~mt_env.rules.RoundState` to the end of its round with this
        policy for every seat: forced moves at once, then one batched network call for the
        states still playing, until none is. ``round_index`` and ``totals`` (match totals by
        seat before the round; None in the first) are what every seat's observation shows
        (:meth:`~mt_env.observation.ObservationEncoder.encode_round`). The rollouts of
        ``search-ppo`` and of :mod:`mt_env.agents.ppo.improve`."""
        if self._encoder is None:
            self._encoder = ObservationEncoder(self.config)
        enc, playing = self._encoder, states
        while playing:
            waiting = []
            for s in playing:
                legal = s.legal_moves()
                while len(legal) == 1:
                    s.apply(legal[0])
                    legal = s.legal_moves()
                if legal:
                    waiting.append(s)
            if not waiting:
                return
            observations = np.stack([enc.encode_round(s, s.seat, round_index, totals) for s in waiting])
            masks = np.stack([enc.round_action_mask(s, s.seat) for s in waiting])
            for s, action in zip(waiting, self.act_batch(observations, masks), strict=True):
                s.apply(s.codec.to_move(int(action), s.seat))
            playing = waiting


POLICY_SEARCH_SAMPLES = 16
POLICY_SEARCH_TOP_K = 3


class PolicySearchAgent(SearchAgent):
    """``search-ppo:PATH``: :class:`~mt_env.agents.search.SearchAgent` built on a trained
    policy, which proposes, continues and decides:

    - **candidates and default:** the plays it searches are the policy's ``top_k`` most
      probable ones, and the policy's own choice is the default that another candidate must
      beat by ``margin`` standard errors of the paired rollout differences (``search`` ranks
      by ``longest-train`` instead);
    - **rollouts:** each candidate is played in ``samples`` guessed worlds (common to all
      candidates) and every seat then plays the round out with the policy's argmax, all
      worlds and candidates batched into one network call per move (``search`` finishes them
      with a scripted policy much weaker than the trained one; with it, ``search-ppo`` was
      no stronger than the bare policy);
    - **free first turn (R11):** the policy's own, move by move (``search``'s plan there,
      the longest chain less its last tile, is worse than what the policy learned).

    The guessed worlds (which keep out each seat's known voids), forced moves, draws and
    passes are ``search``'s. Defaults: ``samples=16``, ``top_k=3`` (docs/experiments.md, section 3.10,
    measures them and the steps above). It needs the observation vector for the network
    (``needs_vector``): :meth:`act`, not ``act_view``."""

    name = "search-ppo"
    needs_vector = True

    def __init__(
        self,
        config: RulesConfig,
        seed: int | None = None,
        *,
        policy: PPOAgent,
        samples: int = POLICY_SEARCH_SAMPLES,
        top_k: int = POLICY_SEARCH_TOP_K,
        **search_options,
    ) -> None:
        self.policy = policy
        self._input: tuple[np.ndarray, np.ndarray] | None = None
        super().__init__(config, seed, samples=samples, top_k=top_k, **search_options)

    @classmethod
    def from_checkpoint(
        cls, path: str | os.PathLike, config: RulesConfig, seed: int | None = None, **search_options
    ) -> PolicySearchAgent:
        policy = PPOAgent.from_checkpoint(path, config, seed=seed)
        agent = cls(config, seed, policy=policy, **search_options)
        agent.name = f"search-ppo:{Path(path).name}"
        return agent

    def act(self, observation: np.ndarray, action_mask: np.ndarray) -> int:
        self._input = (observation, action_mask)
        try:
            return super().act(observation, action_mask)
        finally:
            self._input = None

    def act_view(self, v) -> int:
        observation, mask = self.current_input()
        if v.free_first and v.plays:  # R11: the policy lays its own first train, and passes
            return int(self.policy.act(observation, mask))
        return super().act_view(v)

    def current_input(self) -> tuple[np.ndarray, np.ndarray]:
        """The observation vector and action mask :meth:`act` is deciding on."""
        if self._input is None:
            raise RuntimeError(
                "search-ppo ranks its candidates with a network that reads the observation "
                "vector: call act(observation, action_mask), not act_view(view)"
            )
        return self._input

    def rank(self, v) -> list[tuple[int, int, int]]:
        """The legal plays by the policy's probability, most probable first."""
        return self.by_probability(v.plays)

    def by_probability(self, options: list[tuple[int, int, int]]) -> list[tuple[int, int, int]]:
        """``(action, tile, train)`` options by the policy's probability of the action on
        the current input, most probable first."""
        observation, mask = self.current_input()
        probs = self.policy.probabilities(observation[None], mask[None])[0]
        return sorted(options, key=lambda p: -probs[p[0]])

    def finish_rounds(self, v, states: list) -> None:
        """Play every imagined world to the end of the round with the policy's argmax for
        every seat (:meth:`PPOAgent.play_out`). The worlds are in the observer's frame (it
        is seat 0), so ``v``'s round and match totals are theirs."""
        self.policy.play_out(states, v.round_index, list(v.totals) if v.round_index else None)
