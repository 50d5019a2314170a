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

from .actions import MoveCodec
from .config import RulesConfig
from .match import Match
from .rules import RoundState
from .tiles import tile_set

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
        self._o = {name: s.start for name, s in self.pieces.items()}
        self._npip = npip
        # per observer: relative train -> absolute train, and back
        self._rel = [[(seat + r) % n for r in range(n)] + [n] for seat in range(n)]
        self._to_rel = [[(tr - seat) % n for tr in range(n)] + [n] for seat in range(n)]
        codec = MoveCodec(n, config.max_pip)
        self._move_to_action = [
            np.array([codec.to_action(m, seat) for m in range(self.num_actions)], dtype=np.intp)
            for seat in range(n)
        ]
        self.high = self._high()

    def _high(self) -> np.ndarray:
        """Upper bounds of every entry (the lower bound is 0 everywhere)."""
        cfg = self.config
        high = np.ones(self.size, dtype=np.float64)
        t, npip = cfg.num_tiles, cfg.max_pip + 1
        pips_total = sum(tile_set(cfg.max_pip).pips) + cfg.double_blank_value
        counted = {
            "train_length": (t - 1) / npip,  # every tile but the engine on one train
            "hand_sizes": (t - 1) / cfg.hand_size,  # draws can grow a hand (R18)
            "scores": cfg.num_rounds * pips_total * 0.01,  # a round scores at most the set
        }
        for name, bound in counted.items():
            # a hair of headroom: values are computed in float64, then rounded to float32
            high[self.pieces[name]] = bound * (1.0 + 1e-6)
        return high.astype(np.float32)

    def _bits(self, mask: int, count: int) -> np.ndarray:
        raw = np.frombuffer(mask.to_bytes((count + 7) // 8, "little"), dtype=np.uint8)
        return np.unpackbits(raw, bitorder="little", count=count)

    def encode(self, match: Match, seat: int) -> np.ndarray:
        """The observation of ``seat`` in the match's current round."""
        st: RoundState = match.state
        cfg = self.config
        n, npip, o, t = cfg.num_seats, self._npip, self._o, cfg.num_tiles
        obs = np.zeros(self.size, dtype=np.float32)
        # hand and table are adjacent pieces: one unpacking fills both
        obs[: 2 * t] = self._bits(st.hands[seat] | st.table_mask << t, 2 * t)
        rel = self._rel[seat]  # relative train -> absolute train
        ones = [o["engine"] + st.engine, o["round"] + min(match.round_index, cfg.num_rounds - 1)]
        end0, len0 = o["train_end"], o["train_length"]
        inv_pip = 1.0 / npip
        for r, tr in enumerate(rel):
            ones.append(end0 + r * npip + st.open_end(tr))
            obs[len0 + r] = st.train_length(tr) * inv_pip
        open_doubles = st.open_doubles
        if open_doubles:
            if cfg.doubles_order == "newest":
                open_doubles.reverse()
            to_rel = self._to_rel[seat]
            for k, tr in enumerate(open_doubles):
                r = to_rel[tr]
                ones.append(o["open_double"] + r)
                obs[o["open_double_rank"] + r] = 1.0 / (1 + k)
                if st.is_dead_double(tr):
                    ones.append(o["dead_double"] + r)
        inv_hand = 1.0 / cfg.hand_size
        hs, marked0, first0 = o["hand_sizes"], o["train_marked"], o["first_turn_pending"]
        for r in range(n):
            k = rel[r]
            if st.is_marked(k):
                ones.append(marked0 + r)
            if st.first_turn_pending(k):
                ones.append(first0 + r)
            obs[hs + r] = st.hands[k].bit_count() * inv_hand
        if st.mexican_started:
            ones.append(o["mexican_started"])
        obs[o["boneyard_size"]] = st.boneyard_size / t
        if st.seat == seat and not st.is_over:
            to_rel = self._to_rel[seat]
            p = o["phase"]
            ones.append(p)
            if st.in_free_first_turn:
                ones.append(p + 1)
            follow = st.follow_up_train
            if follow is not None:
                ones += (p + 2, o["follow_up_train"] + to_rel[follow])
            if st.drawn_since_play:
                ones.append(p + 3)
            restricting = st.restricting_train
            if restricting is not None:
                ones.append(o["restricting"] + to_rel[restricting])
        obs[ones] = 1.0
        if match.results:
            totals = match.totals
            sc = o["scores"]
            for r in range(n):
                obs[sc + r] = totals[rel[r]] * 0.01
        return obs

    def action_mask(self, match: Match, seat: int) -> np.ndarray:
        """int8 mask over actions: exactly the legal moves of ``seat`` (zeros if not to act)."""
        mask = np.zeros(self.num_actions, dtype=np.int8)
        st = match.state
        if st.seat == seat and not match.is_over:
            mask[self._move_to_action[seat][st.legal_moves()]] = 1
        return mask

    def unpack(self, obs: np.ndarray) -> dict[str, np.ndarray]:
        """Named, shaped views into an observation vector (no copy)."""
        return {name: obs[s].reshape(self.shapes[name]) for name, s in self.pieces.items()}
