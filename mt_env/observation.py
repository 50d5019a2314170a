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
| ``voids`` | (n, N+1) | 1 for each pip the seat is publicly known to hold none of, from its draws and passes (:attr:`mt_env.rules.RoundState.voids`) |

No hidden information enters: other seats' tiles and the boneyard's order never
change the vector (only hand *sizes* and the boneyard *size* do, and the voids, which
every seat infers alike from the draws and passes it sees). The phase bits
and the restricting/follow-up pieces describe the seat to act and are filled
only when the observer is that seat. Version: :data:`OBSERVATION_VERSION` (2 added
``voids``, at the end: a version-1 vector is the first ``size - n(N+1)`` entries of a
version-2 one).

The counted pieces are scaled by :attr:`ObservationEncoder.scale` (declared once, used
by both directions). Decoding lives here too: :meth:`ObservationEncoder.decode` turns an
observation and its mask back into a :class:`SeatView` of plain ints, bitsets and lists
for scripted agents, and :meth:`ObservationEncoder.position` into a
:class:`mt_env.rules.PublicPosition` for :func:`mt_env.rules.determinize`.
:class:`ObservationTracker` gives ``encode``'s vectors, bit for bit, for one match
followed move by move, rewriting only what each move changed (the AEC env's observations).
"""

from __future__ import annotations

from itertools import compress
from operator import ne

import numpy as np

from .actions import move_codec
from .config import RulesConfig
from .match import Match
from .rules import HIDDEN_DRAW, PublicPosition, RoundState
from .tiles import tile_set

OBSERVATION_VERSION = 2


def named_pieces(
    shapes: list[tuple[str, tuple[int, ...]]],
) -> tuple[dict[str, tuple[int, ...]], dict[str, slice], int]:
    """A flat vector laid out as named pieces in order: their shapes, their slices, the size."""
    pieces: dict[str, slice] = {}
    offset = 0
    for name, shape in shapes:
        size = int(np.prod(shape))
        pieces[name] = slice(offset, offset + size)
        offset += size
    return dict(shapes), pieces, offset


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
            ("voids", (n, npip)),
        ]
        self.shapes, self.pieces, self.size = named_pieces(shapes)
        # value = entry * scale for the counted pieces (the others are 0/1 or one-hot)
        self.scale = {
            "train_length": float(npip),
            "hand_sizes": float(config.hand_size),
            "boneyard_size": float(t),
            "scores": 100.0,
        }
        self.num_actions = (n + 1) * t + 2
        self._o = {name: s.start for name, s in self.pieces.items()}
        # the pieces after train_end, as slices of decode()'s list of the rest
        self._rest_start = rest = self.pieces["train_length"].start
        self._rest_slices = {
            name: slice(sl.start - rest, sl.stop - rest)
            for name, sl in self.pieces.items()
            if sl.start >= rest
        }
        self._npip = npip
        # per observer: relative train -> absolute train, and back
        self._rel = [[(seat + r) % n for r in range(n)] + [n] for seat in range(n)]
        self._to_rel = [[(tr - seat) % n for tr in range(n)] + [n] for seat in range(n)]
        codec = move_codec(n, config.max_pip)
        self.codec = codec
        self.tiles = tile_set(config.max_pip)
        # per seat: move -> action, as lists (action_mask writes a few entries one by one)
        self._move_to_action = [
            [codec.to_action(m, seat) for m in range(self.num_actions)] for seat in range(n)
        ]
        self.high = self._high()

    def _high(self) -> np.ndarray:
        """Upper bounds of every entry (the lower bound is 0 everywhere)."""
        cfg, scale = self.config, self.scale
        high = np.ones(self.size, dtype=np.float64)
        t = cfg.num_tiles
        pips_total = sum(tile_set(cfg.max_pip).pips) + cfg.double_blank_value
        counted = {
            "train_length": (t - 1) / scale["train_length"],  # every tile but the engine
            "hand_sizes": (t - 1) / scale["hand_sizes"],  # draws can grow a hand (R18)
            "scores": cfg.num_rounds * pips_total / scale["scores"],  # at most the set a round
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
        return self.encode_round(
            match.state, seat, match.round_index, match.totals if match.results else None
        )

    def encode_round(
        self, st: RoundState, seat: int, round_index: int, totals: list[int] | None
    ) -> np.ndarray:
        """The observation of ``seat`` in round ``round_index`` (0-based) played as ``st``,
        the match totals before it being ``totals`` (by seat; None in the first round): what
        :meth:`encode` gives for a match in that state, for code that plays rounds without a
        :class:`~mt_env.match.Match` (a search's imagined worlds)."""
        cfg = self.config
        n, npip, o, t = cfg.num_seats, self._npip, self._o, cfg.num_tiles
        obs = np.zeros(self.size, dtype=np.float32)
        # hand and table are adjacent pieces: one unpacking fills both
        obs[: 2 * t] = self._bits(st.hand_mask(seat) | st.table_mask << t, 2 * t)
        # the per-seat and per-train lists in one read (method calls per entry cost more)
        sizes, ends, lengths, marked, pending = st.public_lists()
        rel = self._rel[seat]  # relative train -> absolute train
        ones = [o["engine"] + st.engine, o["round"] + min(round_index, cfg.num_rounds - 1)]
        end0, len0 = o["train_end"], o["train_length"]
        inv_pip = 1.0 / self.scale["train_length"]
        for r, tr in enumerate(rel):
            ones.append(end0 + r * npip + ends[tr])
            obs[len0 + r] = lengths[tr] * inv_pip
        inv_hand = 1.0 / self.scale["hand_sizes"]
        hs, marked0, first0 = o["hand_sizes"], o["train_marked"], o["first_turn_pending"]
        for r in range(n):
            k = rel[r]
            if marked >> k & 1:
                ones.append(marked0 + r)
            if pending[k]:
                ones.append(first0 + r)
            obs[hs + r] = sizes[k] * inv_hand
        if lengths[n]:
            ones.append(o["mexican_started"])
        obs[o["boneyard_size"]] = st.boneyard_size / self.scale["boneyard_size"]
        voids = st.voids
        if any(voids):
            for r in range(n):
                self._void_ones(ones, r, voids[rel[r]])
        self._observer_pieces(obs, ones, st, seat)
        obs[ones] = 1.0
        if totals is not None:
            sc, inv_score = o["scores"], 1.0 / self.scale["scores"]
            for r in range(n):
                obs[sc + r] = totals[rel[r]] * inv_score
        return obs

    def _void_ones(self, ones: list[int], row: int, pips: int) -> None:
        """Append the indices of row ``row`` of the ``voids`` piece that ``pips`` (a
        bitset over pips) sets."""
        start = self._o["voids"] + row * self._npip
        while pips:
            low = pips & -pips
            ones.append(start + low.bit_length() - 1)
            pips ^= low

    def _observer_pieces(self, obs: np.ndarray, ones: list[int], st: RoundState, seat: int) -> None:
        """The pieces that are neither the observer's own tiles nor a rotation of pieces
        every seat sees alike: the open doubles (their order and deadness, relative to
        ``seat``) and, when ``seat`` is to act, the phase, follow-up and restricting
        pieces. Writes the scaled entries into ``obs`` and appends the indices of the
        1-entries to ``ones``; shared by :meth:`encode` and :class:`ObservationTracker`
        so that both fill them alike."""
        o = self._o
        open_doubles = st.open_doubles
        if open_doubles:
            if self.config.doubles_order == "newest":
                open_doubles.reverse()
            to_rel = self._to_rel[seat]
            for k, tr in enumerate(open_doubles):
                r = to_rel[tr]
                ones.append(o["open_double"] + r)
                obs[o["open_double_rank"] + r] = 1.0 / (1 + k)
                if st.is_dead_double(tr):
                    ones.append(o["dead_double"] + r)
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

    def action_mask(self, match: Match, seat: int) -> np.ndarray:
        """int8 mask over actions: exactly the legal moves of ``seat`` (zeros if not to act)."""
        return self.round_action_mask(match.state, seat)

    def round_action_mask(self, st: RoundState, seat: int) -> np.ndarray:
        """:meth:`action_mask` for a round played as ``st`` (see :meth:`encode_round`)."""
        mask = np.zeros(self.num_actions, dtype=np.int8)
        if st.seat == seat and not st.is_over:
            # A seat has a few legal moves: one write each costs less than turning the
            # list into an index array for one fancy-index write.
            to_action = self._move_to_action[seat]
            for move in st.legal_moves():
                mask[to_action[move]] = 1
        return mask

    def unpack(self, obs: np.ndarray) -> dict[str, np.ndarray]:
        """Named, shaped views into an observation vector (no copy)."""
        return {name: obs[s].reshape(self.shapes[name]) for name, s in self.pieces.items()}

    # ------------------------------------------------------------------ decoding
    def _mask(self, bits: np.ndarray) -> int:
        return int.from_bytes(np.packbits(bits > 0.5, bitorder="little").tobytes(), "little")

    def decode(self, obs: np.ndarray, action_mask: np.ndarray) -> SeatView:
        """The observer's view in plain Python values (the inverse of :meth:`encode`).

        Seats and trains stay relative to the observer; ``plays`` lists the legal plays
        of the mask as ``(action, tile, relative train)`` through the action codec.
        (Hand and table are unpacked as bits and the trains' ends by one argmax; the few
        dozen numbers after them are read from one Python list, where numpy calls would
        cost more than the work.)"""
        n, npip, t = self.config.num_seats, self._npip, self.config.num_tiles
        v = SeatView()
        both = self._mask(obs[: 2 * t])  # hand and table are adjacent pieces
        v.hand, v.table = both & ((1 << t) - 1), both >> t
        v.ends = obs[self.pieces["train_end"]].reshape(n + 1, npip).argmax(axis=1).tolist()
        rest = obs[self._rest_start :].tolist()
        at = self._rest_slices

        def piece(name: str) -> list[float]:
            return rest[at[name]]

        def count(name: str) -> list[int]:
            scale = self.scale[name]
            return [round(x * scale) for x in rest[at[name]]]

        def first_max(values: list[float]) -> int:
            return values.index(max(values))

        def one_hot(name: str) -> int:  # the index set, or -1 if none is
            values = rest[at[name]]
            return first_max(values) if max(values) > 0.5 else -1

        v.lengths = count("train_length")
        v.marked = [x > 0.5 for x in piece("train_marked")]
        v.mexican_started = piece("mexican_started")[0] > 0.5
        v.open_double = [x > 0.5 for x in piece("open_double")]
        rank = piece("open_double_rank")
        v.open_order = sorted((k for k, x in enumerate(rank) if x > 0), key=lambda k: -rank[k])
        v.dead_double = [x > 0.5 for x in piece("dead_double")]
        v.restricting = one_hot("restricting")
        v.hand_sizes = count("hand_sizes")
        v.first_pending = [x > 0.5 for x in piece("first_turn_pending")]
        v.boneyard = count("boneyard_size")[0]
        v.engine = first_max(piece("engine"))
        v.round_index = first_max(piece("round"))
        v.to_act, v.free_first, v.follow_up, v.drawn = (x > 0.5 for x in piece("phase"))
        v.follow_up_train = one_hot("follow_up_train")
        v.totals = count("scores")
        v.voids = [self._mask(row) for row in obs[self.pieces["voids"]].reshape(n, npip)]
        self._set_legal(v, action_mask)
        return v

    def _set_legal(self, v: SeatView, action_mask: np.ndarray) -> None:
        """The view's legal plays (``(action, tile, relative train)``), draw and pass, from
        the mask through the action codec."""
        legal = np.flatnonzero(action_mask).tolist()
        codec = self.codec
        v.plays = [(a, *codec.split(a)) for a in legal if a < codec.draw]
        v.can_draw = codec.draw in legal
        v.can_pass = codec.pass_ in legal

    def view(self, match: Match, seat: int, action_mask: np.ndarray) -> SeatView:
        """``decode(encode(match, seat), action_mask)`` built from the match directly: the
        same values (a test holds them equal), without the vector in between. For code
        that holds the match and hands scripted agents their seat's view (the trainer's
        rollouts, tournaments): see :class:`mt_env.agents.base.ViewAgent`."""
        st: RoundState = match.state
        cfg = self.config
        n = cfg.num_seats
        rel = self._rel[seat]  # relative train -> absolute train (the Mexican train last)
        seats = rel[:n]  # relative seat -> absolute seat
        to_rel = self._to_rel[seat]
        sizes, ends, lengths, marked, pending = st.public_lists()
        v = SeatView()
        v.hand, v.table = st.hand_mask(seat), st.table_mask
        v.ends = [ends[tr] for tr in rel]
        v.lengths = [lengths[tr] for tr in rel]
        v.marked = [bool(marked >> k & 1) for k in seats]
        v.mexican_started = st.mexican_started
        open_doubles = st.open_doubles
        if cfg.doubles_order == "newest":
            open_doubles.reverse()
        v.open_double = [False] * (n + 1)
        v.dead_double = [False] * (n + 1)
        for tr in open_doubles:
            v.open_double[to_rel[tr]] = True
            v.dead_double[to_rel[tr]] = st.is_dead_double(tr)
        v.open_order = [to_rel[tr] for tr in open_doubles]
        v.hand_sizes = [sizes[k] for k in seats]
        v.first_pending = [pending[k] for k in seats]
        v.boneyard = st.boneyard_size
        v.engine = st.engine
        v.round_index = min(match.round_index, cfg.num_rounds - 1)
        v.to_act = st.seat == seat and not st.is_over
        v.free_first = v.to_act and st.in_free_first_turn
        follow = st.follow_up_train if v.to_act else None
        v.follow_up = follow is not None
        v.follow_up_train = -1 if follow is None else to_rel[follow]
        v.drawn = v.to_act and st.drawn_since_play
        restricting = st.restricting_train if v.to_act else None
        v.restricting = -1 if restricting is None else to_rel[restricting]
        totals = list(match.totals) if match.results else [0] * n
        v.totals = totals[seat:] + totals[:seat]
        voids = st.voids
        v.voids = [voids[k] for k in seats]
        self._set_legal(v, action_mask)
        return v

    def position(self, v: SeatView) -> PublicPosition:
        """The :class:`~mt_env.rules.PublicPosition` a decoded view shows, in the
        observer's frame: the observer is seat 0 and to act, seat ``r`` is ``r`` places
        clockwise, so moves of a determinized state equal the observer's actions.

        An observation does not record three things, which the position then fills as
        follows: the order of the tiles in each train (``trains=None``); R25's count of
        turns in a row without a play (0: a blocked round is only found once every seat
        has failed again); and, in a turn that played two doubles, the earlier one (only
        the double owing the follow-up is kept). The drawn tile is known when it can be
        played (the mask shows it); after a draw that fits nowhere it is
        ``HIDDEN_DRAW`` and :func:`~mt_env.rules.determinize` needs it named.
        ValueError if the observer is not to act."""
        if not v.to_act:
            raise ValueError("position: the observer is not the seat to act in this observation")
        oldest = self.config.doubles_order == "oldest"
        follow = v.follow_up_train
        if v.free_first:
            turn_plays = v.lengths[0]  # only the observer plays on its own train then (R11)
        else:
            turn_plays = 1 if v.follow_up else 0
        if not v.drawn:
            drawn = -1
        elif v.plays:
            drawn = v.plays[0][1]  # after a draw only the drawn tile may be played (R17)
        else:
            drawn = HIDDEN_DRAW
        return PublicPosition(
            config=self.config,
            observer=0,
            hand=v.hand,
            hand_sizes=tuple(v.hand_sizes),
            boneyard_size=v.boneyard,
            engine=v.engine,
            table=v.table,
            ends=tuple(v.ends),
            lengths=tuple(v.lengths),
            trains=None,
            marked=tuple(v.marked),
            open_doubles=tuple(v.open_order if oldest else v.open_order[::-1]),
            first_pending=tuple(v.first_pending),
            out_seats=tuple(k for k, size in enumerate(v.hand_sizes) if size == 0),
            seat=0,
            turn_plays=turn_plays,
            drawn=drawn,
            follow_up=follow,
            turn_doubles=(follow,) if follow >= 0 else (),
            no_play_turns=0,
            turns_completed=0,
            voids=tuple(v.voids),
        )


class ObservationTracker:
    """:meth:`ObservationEncoder.encode` for one match followed move by move, faster: the
    same vectors, bit for bit (a test holds them equal over random games).

    Most of an observation is a *rotation* of pieces every seat sees alike (each train's
    end and length, markers, hand sizes, first-turn flags, scores; the table, boneyard
    size, engine and round as they are) and the observer's hand. ``encode`` rebuilds
    them entry by entry, in Python, for every call; here they are kept in one vector:
    the pieces in the absolute frame (the layout of seat 0's observation), then one
    hand block per seat. Each call

    - compares the state's public lists, the table, the voids and the observer's hand
      with the copies this vector was built from and rewrites only the entries that
      differ: a move changes one train, one hand size, one tile, now and then a marker,
      a first-turn flag or a seat's voids, so a handful of writes instead of about
      ``4n`` and an unpacking;
    - rotates it into the observer's frame with one precomputed gather
      (``ndarray.take``), which also returns the new array a caller may keep or change;
    - fills the pieces that depend on the observer and the turn (open doubles, phase,
      follow-up, restricting) as ``encode`` does, through the shared
      :meth:`ObservationEncoder._observer_pieces`.

    The vector is rebuilt from scratch (by ``encode`` for seat 0; the hand blocks
    emptied, to be filled at each seat's next call) whenever the match, its round state
    (a new round, or a state replaced from outside) or its number of finished rounds
    (the scores; the match's end keeps the last round's state) is not the one it was
    built for. Everything else it holds is compared by value on every call, so it stays
    exact however the state got there. The AEC env keeps one per env: a match's
    observations are asked for after every move.
    """

    def __init__(self, encoder: ObservationEncoder) -> None:
        self.encoder = encoder
        cfg = encoder.config
        n, npip, o, size = cfg.num_seats, encoder._npip, encoder._o, encoder.size
        t = cfg.num_tiles
        zero = size  # the vector's entry after the pieces, always 0
        self._hand0 = hand0 = size + 1  # seat k's hand block starts at hand0 + k * t
        # perm[seat][i]: the entry of the vector that is entry i of seat's observation;
        # the pieces _observer_pieces writes gather the zero entry
        perms = []
        for seat in range(n):
            rel = encoder._rel[seat]
            perm = np.full(size, zero, dtype=np.intp)
            perm[:t] = np.arange(hand0 + seat * t, hand0 + (seat + 1) * t)
            for name in ("table", "mexican_started", "boneyard_size", "engine", "round"):
                sl = encoder.pieces[name]
                perm[sl] = np.arange(sl.start, sl.stop)
            for r, tr in enumerate(rel):
                src, dst = o["train_end"] + tr * npip, o["train_end"] + r * npip
                perm[dst : dst + npip] = np.arange(src, src + npip)
                perm[o["train_length"] + r] = o["train_length"] + tr
            for name in ("train_marked", "hand_sizes", "first_turn_pending", "scores"):
                for r in range(n):
                    perm[o[name] + r] = o[name] + rel[r]
            for r in range(n):
                src, dst = o["voids"] + rel[r] * npip, o["voids"] + r * npip
                perm[dst : dst + npip] = np.arange(src, src + npip)
            perms.append(perm)
        self._perm = perms
        self._t = t
        self._trains = range(n + 1)
        self._seats = range(n)
        self._inv_pip = 1.0 / encoder.scale["train_length"]
        self._inv_hand = 1.0 / encoder.scale["hand_sizes"]
        self._match: Match | None = None  # what the vector was built for, and from
        self._state: RoundState | None = None
        self._num_results = -1
        self._vec = np.zeros(hand0 + n * t, dtype=np.float32)
        self._hands = [0] * n  # the hand each seat's block holds (a bitset)
        self._table = 0
        self._ends: list[int] = []
        self._lengths: list[int] = []
        self._sizes: list[int] = []
        self._marked = 0
        self._pending: list[bool] = []
        self._boneyard = -1
        self._voids: tuple[int, ...] = ()

    def _rebuild(self, match: Match, st: RoundState) -> None:
        """The vector from scratch, and the copies of what it was built from."""
        vec, hand0 = self._vec, self._hand0
        vec[: hand0 - 1] = self.encoder.encode(match, 0)
        vec[hand0:] = 0.0
        self._hands = [0] * len(self._hands)
        sizes, ends, lengths, marked, pending = st.public_lists()
        self._match, self._state, self._num_results = match, st, len(match.results)
        self._table = st.table_mask
        self._ends, self._lengths, self._sizes = ends[:], lengths[:], sizes
        self._marked, self._pending, self._boneyard = marked, pending[:], st.boneyard_size
        self._voids = st.voids

    @staticmethod
    def _set_bits(vec: np.ndarray, start: int, new: int, old: int) -> None:
        """Entries ``start + i`` of ``vec`` for the bits ``i`` that differ between the
        bitsets ``old`` (what they hold) and ``new``: 1.0 where ``new`` has the bit."""
        flips = new ^ old
        while flips:
            low = flips & -flips
            vec[start + low.bit_length() - 1] = 1.0 if new & low else 0.0
            flips ^= low

    def _update(self, st: RoundState) -> None:
        """Rewrite the entries of the vector whose source changed since the last call
        (same state object): the same expressions as ``encode``'s, so the same bits."""
        enc, vec, o = self.encoder, self._vec, self.encoder._o
        table = st.table_mask
        if table != self._table:
            self._set_bits(vec, o["table"], table, self._table)
            self._table = table
        sizes, ends, lengths, marked, pending = st.public_lists()
        if ends != self._ends:
            old, end0, npip = self._ends, o["train_end"], enc._npip
            for tr in compress(self._trains, map(ne, ends, old)):
                vec[end0 + tr * npip + old[tr]] = 0.0
                vec[end0 + tr * npip + ends[tr]] = 1.0
            self._ends = ends[:]
        if lengths != self._lengths:
            old, len0, inv_pip = self._lengths, o["train_length"], self._inv_pip
            for tr in compress(self._trains, map(ne, lengths, old)):
                vec[len0 + tr] = lengths[tr] * inv_pip
            vec[o["mexican_started"]] = 1.0 if lengths[-1] else 0.0
            self._lengths = lengths[:]
        if sizes != self._sizes:
            hs, inv_hand, old = o["hand_sizes"], self._inv_hand, self._sizes
            for k in compress(self._seats, map(ne, sizes, old)):
                vec[hs + k] = sizes[k] * inv_hand
            self._sizes = sizes
        if marked != self._marked:
            self._set_bits(vec, o["train_marked"], marked, self._marked)
            self._marked = marked
        if pending != self._pending:
            first0, old = o["first_turn_pending"], self._pending
            for k in compress(self._seats, map(ne, pending, old)):
                vec[first0 + k] = 1.0 if pending[k] else 0.0
            self._pending = pending[:]
        boneyard = st.boneyard_size
        if boneyard != self._boneyard:
            vec[o["boneyard_size"]] = boneyard / enc.scale["boneyard_size"]
            self._boneyard = boneyard
        voids = st.voids
        if voids is not self._voids:  # a new tuple each time a seat's voids change
            npip = enc._npip
            for k in compress(self._seats, map(ne, voids, self._voids)):
                self._set_bits(vec, o["voids"] + k * npip, voids[k], self._voids[k])
            self._voids = voids

    def encode(self, match: Match, seat: int) -> np.ndarray:
        """``encoder.encode(match, seat)``: the same vector (a new array each call)."""
        st = match.state
        if (
            st is not self._state
            or match is not self._match
            or (len(match.results) != self._num_results)
        ):
            self._rebuild(match, st)
        else:
            self._update(st)
        hand = st.hand_mask(seat)
        if hand != self._hands[seat]:
            self._set_bits(self._vec, self._hand0 + seat * self._t, hand, self._hands[seat])
            self._hands[seat] = hand
        obs = self._vec.take(self._perm[seat])
        ones: list[int] = []
        self.encoder._observer_pieces(obs, ones, st, seat)
        if ones:
            obs[ones] = 1.0
        return obs


class SeatView:
    """One observation decoded (:meth:`ObservationEncoder.decode`): all trains and seats
    relative to the observer (0 = its own, ``n`` = the Mexican train)."""

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
        "to_act",
        "free_first",
        "follow_up",
        "drawn",
        "follow_up_train",
        "totals",
        "voids",
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
    to_act: bool  # the observer is the seat to act
    free_first: bool  # the observer is in its free first turn (R11)
    follow_up: bool  # the observer owes a follow-up to a double (R16)
    drawn: bool  # the observer drew since its last play
    follow_up_train: int  # relative train of the double owing the follow-up, or -1
    totals: list[int]  # match totals before this round, per relative seat
    voids: list[int]  # per relative seat: bitset of the pips it is known to lack
    plays: list[tuple[int, int, int]]  # legal plays as (action, tile id, relative train)
    can_draw: bool
    can_pass: bool
