"""Bad input to the rules core gets a clear error, and the state stays whole.

Regression tests for findings of a fuzzing campaign: the legal-move list handed out was
the internal cache (appending to it made ``apply`` accept an illegal move); negative
seats and trains wrapped around in the read-only accessors; numpy scalars were refused
by ``RulesConfig``; float pips were accepted in a ``Deal``.
"""

from __future__ import annotations

import random

import numpy as np
import pytest

from mt_env import (
    Deal,
    DealError,
    IllegalMoveError,
    RoundState,
    RulesConfig,
    determinize,
    random_deal,
)
from mt_env.tiles import tile_set


def fresh(num_seats: int = 3, seed: int = 0) -> RoundState:
    config = RulesConfig(num_seats=num_seats)
    return RoundState(config, random_deal(config, random.Random(seed), config.max_pip))


def test_changing_the_returned_legal_moves_changes_nothing():
    st = fresh()
    legal = st.legal_moves()
    illegal = next(m for m in range(st.codec.num_actions) if m not in legal)
    legal.append(illegal)
    legal.sort(reverse=True)
    assert illegal not in st.legal_moves()
    with pytest.raises(IllegalMoveError, match="not legal"):
        st.apply(illegal)
    total = sum(st.hand_size(k) for k in range(3)) + st.boneyard_size
    st.apply(st.legal_moves()[0])
    assert sum(st.hand_size(k) for k in range(3)) + st.boneyard_size <= total  # conserved


@pytest.mark.parametrize(
    ("accessor", "kind", "bad"),
    [
        ("hand", "seat", -1),
        ("hand_mask", "seat", 3),
        ("hand_size", "seat", -3),
        ("hand_value", "seat", 7),
        ("is_marked", "seat", -1),
        ("first_turn_pending", "seat", 3),
        ("can_play", "seat", 1.0),
        ("open_end", "train", -2),
        ("open_end", "train", 4),
        ("train", "train", -1),
        ("train_ids", "train", 9),
        ("train_length", "train", True),
        ("public", "seat", -1),
        ("is_dead_double", "train", -1),
        ("is_dead_double", "train", 4),
    ],
)
def test_out_of_range_seats_and_trains_are_refused(accessor, kind, bad):
    st = fresh()
    top = 2 if kind == "seat" else 3
    with pytest.raises(ValueError, match=rf"{kind}={bad!r}: expected a {kind} in 0\.\.{top}"):
        getattr(st, accessor)(bad)


def test_numpy_integers_are_valid_seats_and_trains():
    st = fresh()
    assert st.hand(np.int64(1)) == st.hand(1)
    assert st.open_end(np.int8(3)) == st.open_end(3)
    assert st.public(np.int64(0)) == st.public(0)


def test_determinize_refuses_tile_ids_out_of_range():
    """A negative id would index the last tile's bit and then read as "nothing drawn"."""
    st = fresh()
    position = st.public(0)
    hands = [st.hand_mask(k) for k in range(3)]
    bone = list(st.boneyard_ids)
    for bad in (-1, st.tiles.num_tiles, 2.0):
        with pytest.raises(ValueError, match="expected a tile id"):
            determinize(position, hands, [bad, *bone[1:]])
    with pytest.raises(ValueError, match=r"hands\[1\]=None: expected a bitset"):
        determinize(position, [hands[0], None, hands[2]], bone)
    with pytest.raises(ValueError, match=r"hands\[2\]=-1"):
        determinize(position, [hands[0], hands[1], -1], bone)


def test_rules_config_takes_numpy_scalars_as_the_values_they_stand_for():
    plain = RulesConfig(
        num_seats=4, max_pip=12, hand_size=15, follow_up_on_double=True, dead_doubles=False,
        double_blank_value=0, num_rounds=3, first_engine=12,
    )
    numpy = RulesConfig(
        num_seats=np.int64(4), max_pip=np.int32(12), hand_size=np.int16(15),
        follow_up_on_double=np.True_, dead_doubles=np.bool_(False),
        double_blank_value=np.int8(0), num_rounds=np.uint8(3), first_engine=np.int64(12),
        first_turn=np.str_("free"),
    )
    assert numpy == plain
    assert type(numpy.num_seats) is int and type(numpy.follow_up_on_double) is bool
    for field, bad in [("num_seats", np.float64(4)), ("follow_up_on_double", np.int64(1)),
                       ("num_seats", np.True_)]:
        with pytest.raises(ValueError, match=field):
            RulesConfig(**{field: bad})


def test_a_deal_with_float_pips_is_refused():
    ts = tile_set(6)
    tiles = [t for t in ts.tiles if t != (6, 6)]
    hands = [tiles[:7], tiles[7:14]]
    hands[0][0] = (float(hands[0][0][0]), hands[0][0][1])
    with pytest.raises(DealError, match="integer pips"):
        RoundState(RulesConfig(num_seats=2, max_pip=6, hand_size=7),
                   Deal(hands, tiles[14:], engine=6, start_seat=0))
