"""The whole game state as one fixed-size float32 vector, for centralised critics.

``env.state()`` (PettingZoo's ``state()``/``state_space``, e.g. for MAPPO) returns
:meth:`StateEncoder.encode` of the match. Unlike an observation
(:mod:`mt_env.observation`) it **holds hidden information** — every hand, the boneyard
and its draw order, the tile just drawn — so it is for training-time critics only; a
policy that reads it cheats.

Seats and trains are **absolute**: row ``k`` of ``hands`` is seat ``k`` (agent
``player_k``), train ``k`` is seat ``k``'s personal train and train ``n`` the Mexican
train. With ``n`` seats, a double-``N`` set of ``T`` tiles and ``R`` rounds the vector is
the concatenation of these pieces (``StateEncoder.pieces`` gives the slices, ``unpack``
named, shaped views):

| piece | shape | meaning |
|---|---|---|
| ``hands`` | (n, T) | 1 where seat ``k`` holds tile ``t`` (hidden) |
| ``boneyard`` | T | 1 for each tile in the boneyard (hidden) |
| ``boneyard_order`` | T | a boneyard tile ``p``-th to be drawn (``p = 0`` next): 1 − p/T; 0 for other tiles (hidden) |
| ``drawn_tile`` | T | one-hot: the tile the seat to act drew since its last play, if any (hidden from the others) |
| ``table`` | T | 1 for each tile on the table, engine included |
| ``train_end`` | (n+1, N+1) | one-hot open end pip of each train |
| ``train_length`` | n+1 | tiles in each train / (N+1) |
| ``train_marked`` | n | marker on each seat's train (R10) |
| ``open_double`` | n+1 | the train ends in an open double (R19) |
| ``open_double_rank`` | n+1 | 1 for the next double to satisfy, 1/2 the one after, … (R21/V-doubles-reverse) |
| ``dead_double`` | n+1 | the train's open double is dead (R22) |
| ``restricting`` | n+1 | one-hot: the open double the seat to act must satisfy now (R20) |
| ``follow_up_train`` | n+1 | one-hot: the train of the double owing a follow-up (R16) |
| ``hand_sizes`` | n | tiles in each hand / hand_size |
| ``hand_values`` | n | R26 pip value of each hand (0|0 at its configured value) / 100 |
| ``first_turn_pending`` | n | the seat has not had its first turn yet |
| ``seat_to_act`` | n | one-hot: the seat to act (all 0 once the match is over) |
| ``phase`` | 3 | the seat to act: [free first turn (R11), follow-up owed (R16), drew since its last play] |
| ``turns_without_play`` | 1 | finished turns in a row without a tile played (R25) / n |
| ``boneyard_size`` | 1 | boneyard tiles / T |
| ``engine`` | N+1 | one-hot engine pip |
| ``round`` | R | one-hot round index of the match |
| ``scores`` | n | match totals so far / 100 |
| ``match_over`` | 1 | 1 once the match is over |

The turn pieces (``drawn_tile``, ``restricting``, ``follow_up_train``, ``seat_to_act``,
``phase``) are 0 once the match is over. Bounds: every entry lies in ``[0, high]`` with
``high`` 1 except ``train_length`` ≤ (T−1)/(N+1), ``hand_sizes`` ≤ (T−1)/hand_size,
``hand_values`` and ``scores`` ≤ (rounds ×) the set's pip total / 100
(:attr:`StateEncoder.high`).

Everything is read through :class:`~mt_env.rules.RoundState`'s public read-only view
(``hand_mask``, ``boneyard_ids``, ``table_mask``, ``drawn_tile``, …) and
:class:`~mt_env.match.Match`'s totals.
"""

from __future__ import annotations

import numpy as np

from .config import RulesConfig
from .match import Match
from .observation import named_pieces
from .tiles import tile_set

STATE_VERSION = 1


class StateEncoder:
    """Builds state vectors (see the module docstring) for one rules configuration."""

    def __init__(self, config: RulesConfig) -> None:
        self.config = config
        n, npip, t, r = config.num_seats, config.max_pip + 1, config.num_tiles, config.num_rounds
        shapes: list[tuple[str, tuple[int, ...]]] = [
            ("hands", (n, t)),
            ("boneyard", (t,)),
            ("boneyard_order", (t,)),
            ("drawn_tile", (t,)),
            ("table", (t,)),
            ("train_end", (n + 1, npip)),
            ("train_length", (n + 1,)),
            ("train_marked", (n,)),
            ("open_double", (n + 1,)),
            ("open_double_rank", (n + 1,)),
            ("dead_double", (n + 1,)),
            ("restricting", (n + 1,)),
            ("follow_up_train", (n + 1,)),
            ("hand_sizes", (n,)),
            ("hand_values", (n,)),
            ("first_turn_pending", (n,)),
            ("seat_to_act", (n,)),
            ("phase", (3,)),
            ("turns_without_play", (1,)),
            ("boneyard_size", (1,)),
            ("engine", (npip,)),
            ("round", (r,)),
            ("scores", (n,)),
            ("match_over", (1,)),
        ]
        self.shapes, self.pieces, self.size = named_pieces(shapes)
        # value = entry * scale for the counted pieces
        self.scale = {
            "boneyard_order": float(t),
            "train_length": float(npip),
            "hand_sizes": float(config.hand_size),
            "hand_values": 100.0,
            "turns_without_play": float(n),
            "boneyard_size": float(t),
            "scores": 100.0,
        }
        self.tiles = tile_set(config.max_pip)
        self._o = {name: s.start for name, s in self.pieces.items()}
        self.high = self._high()

    def _high(self) -> np.ndarray:
        cfg, scale, t = self.config, self.scale, self.config.num_tiles
        pips_total = sum(self.tiles.pips) + cfg.double_blank_value
        high = np.ones(self.size, dtype=np.float64)
        counted = {
            "train_length": (t - 1) / scale["train_length"],
            "hand_sizes": (t - 1) / scale["hand_sizes"],
            "hand_values": pips_total / scale["hand_values"],
            "scores": cfg.num_rounds * pips_total / scale["scores"],
        }
        for name, bound in counted.items():
            high[self.pieces[name]] = max(bound, 1.0) * (1.0 + 1e-6)  # float32 headroom
        return high.astype(np.float32)

    def _bits(self, mask: int, count: int) -> np.ndarray:
        raw = np.frombuffer(mask.to_bytes((count + 7) // 8, "little"), dtype=np.uint8)
        return np.unpackbits(raw, bitorder="little", count=count)

    def encode(self, match: Match) -> np.ndarray:
        """The state vector of the match's current round (hidden tiles included)."""
        st = match.state
        cfg, o, ts = self.config, self._o, self.tiles
        n, t, npip = cfg.num_seats, cfg.num_tiles, cfg.max_pip + 1
        over = match.is_over
        out = np.zeros(self.size, dtype=np.float32)
        # hands (n x T) then the boneyard (T): adjacent pieces, one unpacking
        bone_ids = st.boneyard_ids
        masks = 0
        for k in range(n):
            masks |= st.hand_mask(k) << (k * t)
        masks |= ts.mask_of(bone_ids) << (n * t)
        out[: (n + 1) * t] = self._bits(masks, (n + 1) * t)
        if bone_ids:
            order = out[self.pieces["boneyard_order"]]
            order[list(bone_ids)] = 1.0 - np.arange(len(bone_ids), dtype=np.float32) / t
        out[self.pieces["table"]] = self._bits(st.table_mask, t)
        ones = [o["engine"] + st.engine, o["round"] + min(match.round_index, cfg.num_rounds - 1)]
        inv_pip = 1.0 / self.scale["train_length"]
        for tr in range(n + 1):
            ones.append(o["train_end"] + tr * npip + st.open_end(tr))
            out[o["train_length"] + tr] = st.train_length(tr) * inv_pip
        open_doubles = st.open_doubles
        if cfg.doubles_order == "newest":
            open_doubles.reverse()
        for rank, tr in enumerate(open_doubles):
            ones.append(o["open_double"] + tr)
            out[o["open_double_rank"] + tr] = 1.0 / (1 + rank)
            if st.is_dead_double(tr):
                ones.append(o["dead_double"] + tr)
        inv_hand, inv_value = 1.0 / self.scale["hand_sizes"], 1.0 / self.scale["hand_values"]
        for k in range(n):
            if st.is_marked(k):
                ones.append(o["train_marked"] + k)
            if st.first_turn_pending(k):
                ones.append(o["first_turn_pending"] + k)
            out[o["hand_sizes"] + k] = st.hand_size(k) * inv_hand
            out[o["hand_values"] + k] = st.hand_value(k) * inv_value
        out[o["turns_without_play"]] = min(st.turns_without_play, n) / self.scale[
            "turns_without_play"
        ]
        out[o["boneyard_size"]] = st.boneyard_size / self.scale["boneyard_size"]
        if over:
            ones.append(o["match_over"])
        elif not st.is_over:
            ones.append(o["seat_to_act"] + st.seat)
            p = o["phase"]
            if st.in_free_first_turn:
                ones.append(p)
            follow = st.follow_up_train
            if follow is not None:
                ones += (p + 1, o["follow_up_train"] + follow)
            drawn = st.drawn_tile
            if drawn is not None:
                ones += (p + 2, o["drawn_tile"] + ts.id_of(drawn))
            restricting = st.restricting_train
            if restricting is not None:
                ones.append(o["restricting"] + restricting)
        out[ones] = 1.0
        if match.results:
            inv_score = 1.0 / self.scale["scores"]
            for k, total in enumerate(match.totals):
                out[o["scores"] + k] = total * inv_score
        return out

    def unpack(self, state: np.ndarray) -> dict[str, np.ndarray]:
        """Named, shaped views into a state vector (no copy)."""
        return {name: state[s].reshape(self.shapes[name]) for name, s in self.pieces.items()}
