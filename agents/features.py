"""The policy's input: the observation plus features derived from it alone, and its layout.

Planning which chain of one's hand to keep for one's own train is the heart of
the game, and an MLP finds longest paths in a tile graph slowly. These features
hand it the answer, computed only from what the observing seat knows (its hand,
the table, the trains' open ends and markers — all in the observation), so they
leak nothing. The longest chain is :class:`mt_env.agents.chains.ChainPlanner`'s (the
search the ``longest-train`` baseline uses), cached per (hand, open end).

| feature set | policy input |
|---|---|
| ``"none"`` | the observation |
| ``"planning"`` | the observation, then ``on_chain`` (T): hand tiles on the longest chain from the own train's open end; ``chain_length`` (1) / hand_size; ``chain_pips`` (1) / 100; ``matches`` (n+1): hand tiles joining each train's open end / hand_size |
| ``"pairs"`` | the observation, then the per-tile, per-train, per-(tile, train) and global blocks below, read by the policy's pair head (:class:`mt_env.agents.ppo.policy.PolicyNet`) |

``"pairs"`` blocks (T tiles, n+1 relative trains, N+1 pips):

| block | shape | columns |
|---|---|---|
| tile | (T, 6) | in hand, on the planned chain, first tile of the chain, position on the chain (1 = first, falling), pips / 2N, double |
| train | (n+1, 8) | own, Mexican, another seat's, marked, open double, restricting, follow-up owed there, length / (N+1) |
| pair | (T, n+1, 4) | the tile joins the train's open end; hand tiles (others) matching the end it would leave / hand_size; unseen tiles matching that end / (N+1); other seats known to hold none of that end (the observation's ``voids``) / (n-1) |
| global | 8 | smallest other hand / hand_size, own hand / hand_size, boneyard / T, free first turn, follow-up owed, drawn, a double restricts, own train marked |

"Unseen" tiles are in no hand of the observer and not on the table: the other
seats' hands and the boneyard together.

:func:`layout` is the input/output layout of a policy for a rules configuration and a
feature set: what a checkpoint records and is checked against when loaded.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mt_env.actions import move_codec
from mt_env.agents.chains import ChainPlanner
from mt_env.config import RulesConfig
from mt_env.observation import OBSERVATION_VERSION, ObservationEncoder
from mt_env.tiles import tile_set

FEATURE_SETS = ("none", "planning", "pairs")
TILE_COLS, TRAIN_COLS, PAIR_COLS, GLOBAL_COLS = 6, 8, 4, 8


@dataclass(frozen=True)
class PairLayout:
    """Where the ``"pairs"`` blocks sit in a policy input vector. The pair block is in
    action order; ``tile_of``/``train_of`` map a play action to its tile and relative
    train (:class:`mt_env.actions.MoveCodec`'s tables: the formula has one home)."""

    num_tiles: int
    num_trains: int
    tile: slice
    train: slice
    pair: slice
    glob: slice
    tile_of: tuple[int, ...]
    train_of: tuple[int, ...]


def pair_layout(config: RulesConfig) -> PairLayout:
    t, n1 = config.num_tiles, config.num_trains
    start = ObservationEncoder(config).size
    sizes = [t * TILE_COLS, n1 * TRAIN_COLS, t * n1 * PAIR_COLS, GLOBAL_COLS]
    edges = np.cumsum([start, *sizes]).tolist()
    blocks = (slice(a, b) for a, b in zip(edges[:-1], edges[1:], strict=True))
    codec = move_codec(config.num_seats, config.max_pip)
    return PairLayout(t, n1, *blocks, tile_of=codec.tile_of, train_of=codec.train_of)


def feature_size(config: RulesConfig, features: str) -> int:
    t, n1 = config.num_tiles, config.num_trains
    if features == "none":
        return 0
    if features == "planning":
        return t + 2 + n1
    if features == "pairs":
        return t * TILE_COLS + n1 * TRAIN_COLS + t * n1 * PAIR_COLS + GLOBAL_COLS
    raise ValueError(f"features={features!r}: expected one of {FEATURE_SETS}")


def layout(config: RulesConfig, features: str) -> dict:
    """The input/output layout of a policy for ``config`` and ``features``: the observation
    layout version and size, the number of actions, and the policy input's width."""
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


class Featurizer:
    """``(B, D)`` observations -> ``(B, D + feature_size)`` policy inputs."""

    def __init__(self, config: RulesConfig, features: str) -> None:
        self.extra = feature_size(config, features)  # validates the name
        self.features = features
        self.config = config
        if features == "none":
            return
        enc = ObservationEncoder(config)
        self.tiles = tiles = tile_set(config.max_pip)
        self.planner = ChainPlanner(tiles)
        self.views = enc.pieces
        self.n, self.n1, self.npip, self.t = (
            config.num_seats, config.num_trains, config.max_pip + 1, config.num_tiles
        )
        self.low = np.array(tiles.low)
        self.high = np.array(tiles.high)
        self.pips = np.array(tiles.pips, dtype=np.float32)
        self.is_double = np.array(tiles.is_double, dtype=np.float32)
        # has_pip[t, p]: tile t bears pip p
        self.has_pip = np.zeros((self.t, self.npip), dtype=np.float32)
        self.has_pip[np.arange(self.t), self.low] = 1.0
        self.has_pip[np.arange(self.t), self.high] = 1.0
        self.inv_hand = 1.0 / config.hand_size

    def __call__(self, obs: np.ndarray) -> np.ndarray:
        if self.features == "none":
            return obs
        b, d = obs.shape
        out = np.zeros((b, d + self.extra), dtype=np.float32)
        out[:, :d] = obs
        if self.features == "pairs":
            self._pairs_batch(obs, out[:, d:])
            return out
        for i in range(b):
            self._planning(obs[i], out[i, d:])
        return out

    def _chain(self, hand: np.ndarray, own_end: int) -> tuple[int, ...]:
        mask = int.from_bytes(np.packbits(hand > 0.5, bitorder="little").tobytes(), "little")
        return self.planner.longest(mask, own_end)

    def _planning(self, o: np.ndarray, row: np.ndarray) -> None:
        v, t, n1 = self.views, self.t, self.n1
        hand = o[v["hand"]]
        ends = o[v["train_end"]].reshape(n1, self.npip).argmax(1)
        chain = self._chain(hand, int(ends[0]))
        row[list(chain)] = 1.0
        row[t] = len(chain) * self.inv_hand
        row[t + 1] = self.pips[list(chain)].sum() / 100.0
        hand_per_pip = hand @ self.has_pip
        row[t + 2 : t + 2 + n1] = hand_per_pip[ends] * self.inv_hand

    def _pairs_batch(self, obs: np.ndarray, rows: np.ndarray) -> None:
        """The ``"pairs"`` features of every row of ``obs`` at once, one numpy call per block
        for the whole batch (a rollout featurizes the decisions of all its games together);
        only the chain search runs row by row."""
        v, t, n, n1, npip = self.views, self.t, self.n, self.n1, self.npip
        b = len(obs)
        hand, table = obs[:, v["hand"]], obs[:, v["table"]]
        ends = obs[:, v["train_end"]].reshape(b, n1, npip).argmax(2)
        tile = np.zeros((b, t, TILE_COLS), dtype=np.float32)
        tile[:, :, 0] = hand
        for i in range(b):  # the chain: one search per row (agents/chains.py)
            chain = self._chain(hand[i], int(ends[i, 0]))
            if chain:
                ids = list(chain)
                tile[i, ids, 1] = 1.0
                tile[i, ids[0], 2] = 1.0
                tile[i, ids, 3] = 1.0 - np.arange(len(ids)) / len(ids)
        tile[:, :, 4] = self.pips / (2 * (npip - 1))
        tile[:, :, 5] = self.is_double
        train = np.zeros((b, n1, TRAIN_COLS), dtype=np.float32)
        train[:, 0, 0] = 1.0
        train[:, n, 1] = 1.0
        train[:, 1:n, 2] = 1.0
        train[:, :n, 3] = obs[:, v["train_marked"]]
        train[:, :, 4] = obs[:, v["open_double"]]
        train[:, :, 5] = obs[:, v["restricting"]]
        train[:, :, 6] = obs[:, v["follow_up_train"]]
        train[:, :, 7] = obs[:, v["train_length"]]
        joins_low = self.low[None, :, None] == ends[:, None, :]
        joins = joins_low | (self.high[None, :, None] == ends[:, None, :])
        new_end = np.where(joins_low, self.high[None, :, None], self.low[None, :, None])
        # per pip: hand tiles bearing it, unseen tiles bearing it, and the share of the
        # other seats known to hold none of it (voids rows 1.. are the others); one gather
        # at the end each play would leave reads all three
        per_pip = np.empty((b, npip, 3), dtype=np.float32)
        per_pip[:, :, 0] = hand @ self.has_pip
        per_pip[:, :, 1] = (1.0 - hand - table) @ self.has_pip
        per_pip[:, :, 2] = obs[:, v["voids"]].reshape(b, n, npip)[:, 1:].sum(1) / (n - 1)
        first = (np.arange(b) * npip)[:, None, None]  # row i of per_pip, flattened
        at = per_pip.reshape(b * npip, 3).take(first + new_end, axis=0)  # (b, t, n1, 3)
        pair = np.empty((b, t, n1, PAIR_COLS), dtype=np.float32)
        pair[:, :, :, 0] = joins
        pair[:, :, :, 1] = (at[:, :, :, 0] - hand[:, :, None]) * self.inv_hand
        pair[:, :, :, 2] = at[:, :, :, 1] / npip
        pair[:, :, :, 3] = at[:, :, :, 2]
        phase = obs[:, v["phase"]]
        sizes = obs[:, v["hand_sizes"]]
        glob = np.stack(
            [
                sizes[:, 1:].min(1),
                sizes[:, 0],
                obs[:, v["boneyard_size"]][:, 0],
                phase[:, 1],
                phase[:, 2],
                phase[:, 3],
                obs[:, v["restricting"]].max(1),
                obs[:, v["train_marked"]][:, 0],
            ],
            axis=1,
        ).astype(np.float32)
        rows[:] = np.concatenate(
            [tile.reshape(b, -1), train.reshape(b, -1), pair.reshape(b, -1), glob], axis=1
        )


def make_featurizer(config: RulesConfig, features: str) -> Featurizer:
    """The featurizer of a feature set (see the module docstring)."""
    return Featurizer(config, features)
