"""Decode a seat's observation and action mask into plain Python values for scripted agents.

Scripted agents reason with bitsets over tile ids (:mod:`mt_env.tiles`) and lists of
pips, not float vectors; :class:`ViewDecoder` turns one observation (and its mask) into
a :class:`SeatView` with those values, using only the named pieces of
:class:`mt_env.observation.ObservationEncoder` — so an agent sees exactly what the seat
sees. Trains are *relative* to the observer, as in the observation and the actions:
train 0 is its own, ``1..n-1`` the next seats clockwise, ``n`` the Mexican train.
"""

from __future__ import annotations

import numpy as np

from mt_env.config import RulesConfig
from mt_env.observation import ObservationEncoder
from mt_env.tiles import tile_set


class SeatView:
    """What one seat knows at one decision (all trains and seats relative to it)."""

    __slots__ = (
        "hand",
        "table",
        "ends",
        "lengths",
        "marked",
        "mexican_started",
        "open_double",
        "open_order",
        "dead_double",
        "restricting",
        "hand_sizes",
        "first_pending",
        "boneyard",
        "engine",
        "round_index",
        "free_first",
        "follow_up",
        "drawn",
        "follow_up_train",
        "totals",
        "plays",
        "can_draw",
        "can_pass",
    )

    hand: int  # bitset of tile ids in the observer's hand
    table: int  # bitset of tile ids on the table (engine included)
    ends: list[int]  # open-end pip of each relative train (n + 1)
    lengths: list[int]  # tiles in each relative train
    marked: list[bool]  # marker on each relative seat's train (n)
    mexican_started: bool
    open_double: list[bool]  # relative train ends in an open double (R19)
    open_order: list[int]  # trains of the open doubles, next to satisfy first (R21)
    dead_double: list[bool]  # ... and that double is dead (R22)
    restricting: int  # relative train of the double to satisfy now (R20), or -1
    hand_sizes: list[int]  # tiles in each relative seat's hand
    first_pending: list[bool]  # relative seat has not had its first turn
    boneyard: int  # tiles left in the boneyard
    engine: int
    round_index: int
    free_first: bool  # the observer is in its free first turn (R11)
    follow_up: bool  # the observer owes a follow-up to a double (R16)
    drawn: bool  # the observer drew since its last play
    follow_up_train: int  # relative train of the double owing the follow-up, or -1
    totals: list[int]  # match totals before this round, per relative seat
    plays: list[tuple[int, int, int]]  # legal plays as (action, tile id, relative train)
    can_draw: bool
    can_pass: bool


class ViewDecoder:
    """Builds :class:`SeatView` objects for one rules configuration."""

    def __init__(self, config: RulesConfig) -> None:
        self.config = config
        self.encoder = ObservationEncoder(config)
        self.tiles = tile_set(config.max_pip)
        n = config.num_seats
        self.num_seats = n
        self.num_trains = n + 1
        self.num_tiles = config.num_tiles
        self.draw_action = self.num_tiles * (n + 1)
        self.pass_action = self.draw_action + 1
        p = self.encoder.pieces
        self._s = p
        self._npip = config.max_pip + 1

    @staticmethod
    def _mask(bits: np.ndarray) -> int:
        return int.from_bytes(np.packbits(bits > 0.5, bitorder="little").tobytes(), "little")

    def decode(self, obs: np.ndarray, action_mask: np.ndarray) -> SeatView:
        s, n, npip = self._s, self.num_seats, self._npip
        v = SeatView()
        v.hand = self._mask(obs[s["hand"]])
        v.table = self._mask(obs[s["table"]])
        v.ends = obs[s["train_end"]].reshape(n + 1, npip).argmax(axis=1).tolist()
        v.lengths = np.rint(obs[s["train_length"]] * npip).astype(int).tolist()
        v.marked = (obs[s["train_marked"]] > 0.5).tolist()
        v.mexican_started = bool(obs[s["mexican_started"]][0] > 0.5)
        v.open_double = (obs[s["open_double"]] > 0.5).tolist()
        rank = obs[s["open_double_rank"]]
        v.open_order = sorted(np.flatnonzero(rank > 0).tolist(), key=lambda k: -rank[k])
        v.dead_double = (obs[s["dead_double"]] > 0.5).tolist()
        r = obs[s["restricting"]]
        v.restricting = int(r.argmax()) if r.max() > 0.5 else -1
        v.hand_sizes = np.rint(obs[s["hand_sizes"]] * self.config.hand_size).astype(int).tolist()
        v.first_pending = (obs[s["first_turn_pending"]] > 0.5).tolist()
        v.boneyard = int(round(float(obs[s["boneyard_size"]][0]) * self.num_tiles))
        v.engine = int(obs[s["engine"]].argmax())
        v.round_index = int(obs[s["round"]].argmax())
        phase = obs[s["phase"]]
        v.free_first = bool(phase[1] > 0.5)
        v.follow_up = bool(phase[2] > 0.5)
        v.drawn = bool(phase[3] > 0.5)
        f = obs[s["follow_up_train"]]
        v.follow_up_train = int(f.argmax()) if f.max() > 0.5 else -1
        v.totals = np.rint(obs[s["scores"]] * 100).astype(int).tolist()
        legal = np.flatnonzero(action_mask).tolist()
        n1, draw = self.num_trains, self.draw_action
        v.plays = [(a, a // n1, a % n1) for a in legal if a < draw]
        v.can_draw = draw in legal
        v.can_pass = draw + 1 in legal
        return v

    def play_action(self, tile: int, train: int) -> int:
        return tile * self.num_trains + train
