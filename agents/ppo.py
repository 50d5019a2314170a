"""The PPO policy: network, checkpoint files, and :class:`PPOAgent` for tournaments.

The network sees the observation vector of :mod:`mt_env.observation` (plus the
planning features of :mod:`agents.features` when the checkpoint was trained
with them) and returns masked action logits and a state value. Illegal actions
get the dtype's minimum logit, so they are never sampled and carry no gradient.

Checkpoint file (``torch.save`` of a dict, written atomically — temp file in the
same folder, fsync, ``os.replace``):

| key | what |
|---|---|
| ``format``, ``format_version`` | ``"mt_env-ppo"``, :data:`CHECKPOINT_VERSION` |
| ``observation_version``, ``obs_size``, ``num_actions``, ``features`` | the layout the weights expect |
| ``rules`` | the :class:`~mt_env.config.RulesConfig` as a dict |
| ``train_config`` | the full trainer configuration |
| ``model`` | network weights; ``hidden_sizes`` its shape |
| ``optimizer``, ``global_step``, ``iteration``, ``rng``, ``pool``… | trainer state for ``--resume`` (absent from policy-only exports) |

Loading checks every layout key against the rules configuration it is used with
and raises :class:`CheckpointError` naming the mismatch; a truncated or corrupt
file raises it too.
"""

from __future__ import annotations

import io
import os
import tempfile
from pathlib import Path

import numpy as np
import torch
from torch import nn

from agents.base import Agent
from agents.features import (
    FEATURE_SETS,
    GLOBAL_COLS,
    PAIR_COLS,
    TILE_COLS,
    TRAIN_COLS,
    PairLayout,
    feature_size,
    make_featurizer,
    pair_layout,
)
from mt_env.config import RulesConfig
from mt_env.observation import OBSERVATION_VERSION, ObservationEncoder

CHECKPOINT_FORMAT = "mt_env-ppo"
CHECKPOINT_VERSION = 1


class CheckpointError(ValueError):
    """A checkpoint that cannot be used: corrupt, truncated, or built for another layout/rules."""


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
    :class:`~agents.features.PairLayout` (feature set ``"pairs"``) each play
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
        pair_hidden: int = 64,
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
        self.actor = _layer(width, num_actions - self.num_plays, 0.01)  # draw, pass
        self.tile_in = _layer(TILE_COLS, pair_hidden, 2**0.5)
        self.train_in = _layer(TRAIN_COLS, pair_hidden, 2**0.5)
        self.pair_in = _layer(PAIR_COLS, pair_hidden, 2**0.5)
        self.glob_in = _layer(GLOBAL_COLS, pair_hidden, 2**0.5)
        self.state_in = _layer(width, pair_hidden, 2**0.5)
        self.pair_out = _layer(pair_hidden, 1, 0.01)

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Masked logits ``(B, A)`` and values ``(B,)``; ``mask`` is bool ``(B, A)``."""
        p = self.pairs
        if p is None:
            h = self.trunk(x)
            logits = self.actor(h)
        else:
            # Score only the legal plays: a handful per decision, whatever the set size.
            b, t, n1 = x.shape[0], p.num_tiles, p.num_trains
            h = self.trunk(self.trunk_input(x))
            bi, ai = mask[:, : self.num_plays].nonzero(as_tuple=True)
            ti = torch.div(ai, n1, rounding_mode="floor")
            z = (
                self.tile_in(x[:, p.tile].view(b, t, TILE_COLS)[bi, ti])
                + self.train_in(x[:, p.train].view(b, n1, TRAIN_COLS)[bi, ai - ti * n1])
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


# ------------------------------------------------------------ training-only privileged critic
def privileged_size(config: RulesConfig) -> int:
    """Length of :func:`privileged_features`: the other seats' hands and the boneyard."""
    return config.num_seats * config.num_tiles


def privileged_features(state, seat: int) -> np.ndarray:
    """What ``seat`` cannot see, for the **training-only** critic (asymmetric actor-critic,
    as in PerfectDou): each other seat's hand in seat order from ``seat``'s left, then the
    boneyard, each a 0/1 vector over tile ids. The policy never reads it."""
    hands, n, t = state.hands, state.num_seats, state._ts.num_tiles
    held = 0
    for h in hands:
        held |= h
    masks = [hands[(seat + k) % n] for k in range(1, n)] + [state._unplayed & ~held]
    raw = b"".join(m.to_bytes((t + 7) // 8, "little") for m in masks)
    bits = np.unpackbits(np.frombuffer(raw, dtype=np.uint8), bitorder="little")
    return bits.reshape(n, -1)[:, :t].reshape(-1).astype(np.float32)


class PrivilegedCritic(nn.Module):
    """Value network of ``critic = "privileged"`` training: an MLP over the policy trunk's
    input plus :func:`privileged_features`. Seeing the hidden tiles, it explains much more of
    a round's result than a critic limited to the observation, so the advantages carry less
    deal noise. It exists only in the trainer; checkpoints keep it for ``--resume``, and
    agents never load it."""

    def __init__(self, input_size: int, hidden_sizes: tuple[int, ...]) -> None:
        super().__init__()
        layers, width = _hidden_layers(input_size, hidden_sizes)
        self.net = nn.Sequential(*layers, _layer(width, 1, 1.0))

    def forward(self, trunk_x: torch.Tensor, priv: torch.Tensor) -> torch.Tensor:
        return self.net(torch.cat([trunk_x, priv], 1)).squeeze(-1)


def make_critic(config: RulesConfig, features: str, hidden_sizes: tuple[int, ...]) -> PrivilegedCritic:
    """The privileged critic matching :func:`make_policy`'s network for the same arguments."""
    pairs = pair_layout(config) if features == "pairs" else None
    trunk_in = trunk_size(layout(config, features)["input_size"], pairs)
    return PrivilegedCritic(trunk_in + privileged_size(config), tuple(hidden_sizes))


def make_policy(config: RulesConfig, features: str, hidden_sizes: tuple[int, ...]) -> PolicyNet:
    """The network for a rules configuration and feature set (one place builds them all)."""
    lay = layout(config, features)
    pairs = pair_layout(config) if features == "pairs" else None
    return PolicyNet(lay["input_size"], lay["num_actions"], tuple(hidden_sizes), pairs)


def layout(config: RulesConfig, features: str) -> dict:
    """The input/output layout a network for ``config`` and ``features`` has."""
    if features not in FEATURE_SETS:
        raise ValueError(f"features={features!r}: expected one of {FEATURE_SETS}")
    enc = ObservationEncoder(config)
    return {
        "observation_version": OBSERVATION_VERSION,
        "obs_size": enc.size,
        "num_actions": enc.num_actions,
        "features": features,
        "input_size": enc.size + feature_size(config, features),
    }


def save_checkpoint(path: str | os.PathLike, payload: dict) -> None:
    """Write ``payload`` to ``path`` atomically: a crash leaves the old file or the new one."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    buf = io.BytesIO()
    torch.save(payload, buf)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(buf.getvalue())
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def load_checkpoint(path: str | os.PathLike, config: RulesConfig | None = None) -> dict:
    """Read and check a checkpoint. With ``config``, its rules must match exactly."""
    path = Path(path)
    if not path.is_file():
        raise CheckpointError(f"checkpoint {path}: no such file")
    try:
        data = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as err:  # torch raises many kinds for truncated/corrupt archives
        raise CheckpointError(
            f"checkpoint {path} is corrupt or truncated ({type(err).__name__}: {err}); "
            f"expected a file written by train.py"
        ) from None
    if not isinstance(data, dict) or data.get("format") != CHECKPOINT_FORMAT:
        raise CheckpointError(f"checkpoint {path} is not an mt_env PPO checkpoint")
    if data.get("format_version") != CHECKPOINT_VERSION:
        raise CheckpointError(
            f"checkpoint {path} has format version {data.get('format_version')}; "
            f"this code reads version {CHECKPOINT_VERSION}"
        )
    if data.get("observation_version") != OBSERVATION_VERSION:
        raise CheckpointError(
            f"checkpoint {path} was trained on observation layout version "
            f"{data.get('observation_version')}; this code builds version {OBSERVATION_VERSION}"
        )
    if config is not None:
        trained = RulesConfig.from_dict(data["rules"])
        if trained != config:
            diff = {
                k: (v, getattr(config, k))
                for k, v in trained.to_dict().items()
                if getattr(config, k) != v
            }
            raise CheckpointError(
                f"checkpoint {path} was trained for other rules: "
                + ", ".join(f"{k}={a!r} (asked for {b!r})" for k, (a, b) in diff.items())
            )
        expected = layout(config, data.get("features", "none"))
        for key in ("obs_size", "num_actions"):
            if data.get(key) != expected[key]:
                raise CheckpointError(
                    f"checkpoint {path}: {key}={data.get(key)} but these rules need {expected[key]}"
                )
    return data


def build_policy(data: dict) -> PolicyNet:
    """The network stored in a checkpoint dict (from :func:`load_checkpoint`)."""
    config = RulesConfig.from_dict(data["rules"])
    net = make_policy(config, data["features"], tuple(data["hidden_sizes"]))
    try:
        net.load_state_dict(data["model"])
    except (RuntimeError, KeyError) as err:
        raise CheckpointError(f"checkpoint weights do not fit the network: {err}") from None
    net.eval()
    return net


class PPOAgent(Agent):
    """A trained policy as an :class:`~agents.base.Agent`: argmax (or sampled) masked action."""

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
    def act_batch(self, observations: np.ndarray, action_masks: np.ndarray) -> np.ndarray:
        x = torch.as_tensor(self._featurize(np.asarray(observations, dtype=np.float32)))
        mask = torch.as_tensor(np.asarray(action_masks, dtype=bool))
        logits, _ = self.net(x, mask)
        if self.deterministic:
            return logits.argmax(-1).numpy()
        probs = torch.softmax(logits, -1)
        return torch.multinomial(probs, 1, generator=self._gen).squeeze(-1).numpy()

    def act(self, observation: np.ndarray, action_mask: np.ndarray) -> int:
        return int(self.act_batch(observation[None], action_mask[None])[0])
