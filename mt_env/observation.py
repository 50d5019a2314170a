"""What one seat may know, as a flat float32 vector, and its action mask.

Everything is seen **from the observing seat**: "relative seat" ``r`` is the seat
``r`` places clockwise from the observer (0 = the observer); trains are ordered
own train, then the other seats' trains clockwise, then the Mexican train (index
``n``) — the same order as the action encoding of :mod:`mt_env.actions`.

With ``n`` seats, a double-``N`` set of ``T`` tiles and ``R`` rounds, the vector
is the concatenation of these named pieces (``ObservationEncoder.pieces`` gives
the exact slices; ``unpack`` gives named, shaped views):

| piece | shape | meaning |
|---|---|---|
| ``hand`` | T | 1 for each tile in the observer's hand |
| ``table`` | T | 1 for each tile on the table, engine included |
| ``train_end`` | (n+1, N+1) | one-hot open end pip of each train |
| ``train_length`` | n+1 | tiles in each train / (N+1) |
| ``train_marked`` | n | marker on each personal train (R10) |
| ``mexican_started`` | 1 | the Mexican train has a tile |
| ``open_double`` | n+1 | the train ends in an open double (R19) |
| ``open_double_rank`` | n+1 | 1 for the next double to satisfy, 1/2 the one after, … (R21/V-doubles-reverse), 0 if none |
| ``dead_double`` | n+1 | the train's open double is dead (R22) |
| ``restricting`` | n+1 | one-hot: the open double the observer must satisfy now (R20), if any |
| ``hand_sizes`` | n | tiles in each seat's hand / hand_size |
| ``first_turn_pending`` | n | the seat has not had its first turn yet |
| ``boneyard_size`` | 1 | boneyard tiles / T |
| ``engine`` | N+1 | one-hot engine pip |
| ``round`` | R | one-hot round index of the match |
| ``phase`` | 4 | [observer to act, free first turn, follow-up owed (R16), drawn since its last play] |
| ``follow_up_train`` | n+1 | one-hot: the train of the double owing a follow-up |
| ``scores`` | n | match totals before this round / 100 |

No hidden information enters: other seats' tiles and the boneyard's order never
change the vector (only hand *sizes* and the boneyard *size* do). The phase bits
and the restricting/follow-up pieces describe the seat to act and are filled
only when the observer is that seat. Version: :data:`OBSERVATION_VERSION`.
"""

from __future__ import annotations

import numpy as np

from .config import RulesConfig
from .match import Match
from .rules import RoundState

OBSERVATION_VERSION = 1


class ObservationEncoder:
    """Builds observation vectors and action masks for one rules configuration."""

    def __init__(self, config: RulesConfig) -> None:
        self.config = config
        n, npip, t, r = config.num_seats, config.max_pip + 1, config.num_tiles, config.num_rounds
        shapes: list[tuple[str, tuple[int, ...]]] = [
            ("hand", (t,)),
            ("table", (t,)),
            ("train_end", (n + 1, npip)),
            ("train_length", (n + 1,)),
            ("train_marked", (n,)),
            ("mexican_started", (1,)),
            ("open_double", (n + 1,)),
            ("open_double_rank", (n + 1,)),
            ("dead_double", (n + 1,)),
            ("restricting", (n + 1,)),
            ("hand_sizes", (n,)),
            ("first_turn_pending", (n,)),
            ("boneyard_size", (1,)),
            ("engine", (npip,)),
            ("round", (r,)),
            ("phase", (4,)),
            ("follow_up_train", (n + 1,)),
            ("scores", (n,)),
        ]
        self.shapes = dict(shapes)
        self.pieces: dict[str, slice] = {}
        offset = 0
        for name, shape in shapes:
            size = int(np.prod(shape))
            self.pieces[name] = slice(offset, offset + size)
            offset += size
        self.size = offset
        self.num_actions = (n + 1) * t + 2
        self._nbytes = (t + 7) // 8
        self._o = {name: s.start for name, s in self.pieces.items()}
        self._npip = npip

    def _bits(self, mask: int) -> np.ndarray:
        raw = np.frombuffer(mask.to_bytes(self._nbytes, "little"), dtype=np.uint8)
        return np.unpackbits(raw, bitorder="little", count=self.config.num_tiles)

    def encode(self, match: Match, seat: int) -> np.ndarray:
        """The observation of ``seat`` in the match's current round."""
        st: RoundState = match.state
        cfg = self.config
        n, npip, o = cfg.num_seats, self._npip, self._o
        obs = np.zeros(self.size, dtype=np.float32)
        t = cfg.num_tiles
        obs[o["hand"] : o["hand"] + t] = self._bits(st.hands[seat])
        obs[o["table"] : o["table"] + t] = self._bits(st.table_mask)
        rel = [(seat + r) % n for r in range(n)] + [n]  # relative train -> absolute train
        inv_pip = 1.0 / npip
        open_doubles = st.open_doubles
        if cfg.doubles_order == "newest":
            open_doubles = open_doubles[::-1]
        for r, tr in enumerate(rel):
            obs[o["train_end"] + r * npip + st.open_end(tr)] = 1.0
            obs[o["train_length"] + r] = st.train_length(tr) * inv_pip
            if tr in open_doubles:
                obs[o["open_double"] + r] = 1.0
                obs[o["open_double_rank"] + r] = 1.0 / (1 + open_doubles.index(tr))
                if st.is_dead_double(tr):
                    obs[o["dead_double"] + r] = 1.0
        inv_hand = 1.0 / cfg.hand_size
        for r in range(n):
            k = rel[r]
            obs[o["train_marked"] + r] = st.is_marked(k)
            obs[o["hand_sizes"] + r] = st.hands[k].bit_count() * inv_hand
            obs[o["first_turn_pending"] + r] = st.first_turn_pending(k)
        obs[o["mexican_started"]] = st.mexican_started
        obs[o["boneyard_size"]] = st.boneyard_size / t
        obs[o["engine"] + st.engine] = 1.0
        obs[o["round"] + min(match.round_index, cfg.num_rounds - 1)] = 1.0
        if st.seat == seat and not st.is_over:
            to_rel = (lambda tr: n if tr == n else (tr - seat) % n)
            p = o["phase"]
            obs[p] = 1.0
            obs[p + 1] = st.in_free_first_turn
            obs[p + 2] = st.follow_up_owed
            obs[p + 3] = st.drawn_since_play
            if st.restricting_train is not None:
                obs[o["restricting"] + to_rel(st.restricting_train)] = 1.0
            if st.follow_up_train is not None:
                obs[o["follow_up_train"] + to_rel(st.follow_up_train)] = 1.0
        totals = match.totals if match.results else None
        if totals:
            for r in range(n):
                obs[o["scores"] + r] = totals[rel[r]] / 100.0
        return obs

    def action_mask(self, match: Match, seat: int) -> np.ndarray:
        """int8 mask over actions: exactly the legal moves of ``seat`` (zeros if not to act)."""
        mask = np.zeros(self.num_actions, dtype=np.int8)
        st = match.state
        if st.seat == seat and not match.is_over:
            codec = st.codec
            mask[[codec.to_action(m, seat) for m in st.legal_moves()]] = 1
        return mask

    def unpack(self, obs: np.ndarray) -> dict[str, np.ndarray]:
        """Named, shaped views into an observation vector (no copy)."""
        return {name: obs[s].reshape(self.shapes[name]) for name, s in self.pieces.items()}
