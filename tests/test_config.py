"""RulesConfig: R1–R3 defaults, validation of every field, capacity (R3, V-engine-aside),
num_rounds / first_engine (R5) and from_dict."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest

from mt_env import RulesConfig
from mt_env.config import VARIANTS
from mt_env.tiles import SET_SIZES, tile_set

# R3's table, written out from docs/rules.md: players -> (set, tiles each)
R3_TABLE = {
    2: (9, 15),
    3: (9, 15),
    4: (12, 15),
    5: (12, 12),
    6: (12, 12),
    7: (12, 11),
    8: (12, 11),
    9: (15, 11),
    10: (15, 11),
    11: (15, 11),
    12: (15, 11),
    13: (18, 11),
    14: (18, 11),
}


# ---------------------------------------------------------------- R1 / R2 / R3 defaults
@pytest.mark.parametrize("n,size", [(6, 28), (9, 55), (12, 91), (15, 136), (18, 190)])
def test_R1_set_sizes(n, size):
    """R1: a double-N set holds (N+1)(N+2)/2 tiles a|b with 0 <= a <= b <= N."""
    ts = tile_set(n)
    assert ts.num_tiles == size == len(set(ts.tiles))
    assert all(0 <= a <= b <= n for a, b in ts.tiles)
    cfg = RulesConfig(num_seats=2, max_pip=n, hand_size=5)
    assert cfg.num_tiles == size


@pytest.mark.parametrize("players", range(2, 15))
def test_R3_default_table(players):
    """R2/R3: every seat count 2..14 gets the table's set and hand size."""
    cfg = RulesConfig(num_seats=players)
    assert (cfg.max_pip, cfg.hand_size) == R3_TABLE[players]
    assert cfg.num_trains == players + 1  # R8: one personal train each + the Mexican train


@pytest.mark.parametrize("players", range(2, 15))
def test_R3_table_set_picked_gives_table_hand(players):
    """R3: the user picks the table's own set and no hand size -> the table's hand size."""
    max_pip, hand = R3_TABLE[players]
    assert RulesConfig(num_seats=players, max_pip=max_pip).hand_size == hand


@pytest.mark.parametrize("players", [2, 3, 4])
def test_R3_double_six_gives_seven(players):
    """R3: a double-6 set with 2–4 players -> 7 tiles each."""
    assert RulesConfig(num_seats=players, max_pip=6).hand_size == 7


@pytest.mark.parametrize(
    "players,max_pip,hand",
    [
        # V-deal (seed 003), where the R3 table's set differs from the picked set:
        (2, 12, 16),
        (3, 12, 16),
        (4, 9, 10),
        # the table wins over V-deal where the picked set is the table's set:
        (4, 12, 15),
        (5, 12, 12),
        (6, 12, 12),
        (7, 12, 11),
        (8, 12, 11),
        (2, 9, 15),
        (3, 9, 15),
    ],
)
def test_R3_V_deal_fallback(players, max_pip, hand):
    """R3 / V-deal: table first, then double-6 rule, then V-deal's table."""
    assert RulesConfig(num_seats=players, max_pip=max_pip).hand_size == hand


@pytest.mark.parametrize(
    "players,max_pip",
    [
        (5, 6),
        (8, 6),
        (2, 15),
        (2, 18),
        (4, 15),
        (5, 9),
        (9, 12),
        (14, 12),
        (13, 15),
        (9, 18),
        (12, 18),
        (14, 9),
    ],
)
def test_R3_no_default_asks_for_hand_size(players, max_pip):
    """R3: no table row, no double-6 rule, no V-deal entry -> an error asking for hand_size."""
    with pytest.raises(ValueError, match="hand_size") as err:
        RulesConfig(num_seats=players, max_pip=max_pip)
    assert str(players) in str(err.value) and f"double-{max_pip}" in str(err.value)
    # ... and with the hand size given explicitly the configuration is fine
    assert RulesConfig(num_seats=players, max_pip=max_pip, hand_size=3).hand_size == 3


def test_explicit_hand_size_overrides_default():
    assert RulesConfig(num_seats=4, hand_size=9).hand_size == 9
    assert RulesConfig(num_seats=4, max_pip=6, hand_size=5).hand_size == 5


# ---------------------------------------------------------------- invalid values
def _raises_naming(field, allowed, **kwargs):
    with pytest.raises(ValueError) as err:
        RulesConfig(**kwargs)
    msg = str(err.value)
    assert field in msg, msg
    for a in allowed:
        assert a in msg, (a, msg)
    return msg


@pytest.mark.parametrize("value", [0, 1, 15, 100, -2, "4", 4.0, None, True])
def test_num_seats_invalid(value):
    _raises_naming("num_seats", ["2..14"], num_seats=value)


@pytest.mark.parametrize("value", [0, 5, 7, 8, 10, 20, -6, "12", 12.0, True])
def test_max_pip_invalid(value):
    _raises_naming("max_pip", [str(s) for s in SET_SIZES], num_seats=4, max_pip=value)


@pytest.mark.parametrize("value", [0, -1, 2.5, "7", True])
def test_hand_size_invalid(value):
    _raises_naming("hand_size", ["positive"], num_seats=4, hand_size=value)


@pytest.mark.parametrize(
    "field,allowed,bad",
    [
        ("first_turn", ["free", "single", "draw"], ["Free", "", "double", None, 0]),
        ("doubles_order", ["oldest", "newest"], ["old", "Oldest", None, 1]),
        ("engine_source", ["hand", "aside"], ["boneyard", "", None]),
        ("scoring", ["penalty", "positive"], ["negative", "Penalty", None]),
        ("double_blank_value", ["50", "0"], [1, 25, -50, 100, "50", None]),
    ],
)
def test_choice_fields_invalid(field, allowed, bad):
    for value in bad:
        _raises_naming(field, allowed, num_seats=4, **{field: value})


def test_double_blank_value_rejects_bool_and_float():
    """R26 / V-blank-zero: the double-blank counts 50 or 0 — an int. The config treats bools
    and floats as non-ints for every other int field (num_seats=True, max_pip=12.0 raise), so
    False / 0.0 / 50.0 must be rejected too, naming the field."""
    for value in (False, 0.0, 50.0):
        _raises_naming("double_blank_value", ["50", "0"], num_seats=4, double_blank_value=value)


@pytest.mark.parametrize("field", ["follow_up_on_double", "dead_doubles"])
@pytest.mark.parametrize("value", [0, 1, "yes", "True", None])
def test_flags_invalid(field, value):
    _raises_naming(field, ["True", "False"], num_seats=4, **{field: value})


def test_valid_choices_accepted():
    for ft in ("free", "single", "draw"):
        assert RulesConfig(first_turn=ft).first_turn == ft
    for order in ("oldest", "newest"):
        assert RulesConfig(doubles_order=order).doubles_order == order
    for src in ("hand", "aside"):
        assert RulesConfig(engine_source=src).engine_source == src
    for sc in ("penalty", "positive"):
        assert RulesConfig(scoring=sc).scoring == sc
    assert RulesConfig(double_blank_value=0).double_blank_value == 0
    cfg = RulesConfig()
    assert (cfg.first_turn, cfg.follow_up_on_double, cfg.doubles_order, cfg.dead_doubles) == (
        "free",
        False,
        "oldest",
        True,
    )
    assert (cfg.double_blank_value, cfg.engine_source, cfg.scoring) == (50, "hand", "penalty")


# ---------------------------------------------------------------- capacity (R3, V-engine-aside)
def test_capacity_exact_fit_and_one_over():
    """R3: n * hand_size may use the whole set (engine dealt from the hand, R6), no more."""
    assert RulesConfig(num_seats=2, max_pip=6, hand_size=14).hand_size == 14  # 28 of 28
    assert RulesConfig(num_seats=4, max_pip=6, hand_size=7).hand_size == 7  # 28 of 28
    msg = _raises_naming("hand_size", ["28"], num_seats=2, max_pip=6, hand_size=15)
    assert "30" in msg  # 2 x 15 = 30 tiles needed
    _raises_naming("hand_size", ["136"], num_seats=14, max_pip=15, hand_size=10)  # 140 > 136
    assert RulesConfig(num_seats=14, max_pip=18, hand_size=13).hand_size == 13  # 182 <= 190
    _raises_naming("hand_size", ["190"], num_seats=14, max_pip=18, hand_size=14)  # 196 > 190


def test_capacity_V_engine_aside_removes_the_engine():
    """V-engine-aside: the engine is taken out before the deal, so one tile fewer is dealable."""
    RulesConfig(num_seats=2, max_pip=6, hand_size=13, engine_source="aside")  # 26 <= 27
    msg = _raises_naming(
        "hand_size", ["27"], num_seats=2, max_pip=6, hand_size=14, engine_source="aside"
    )
    assert "28" in msg  # 2 x 14
    _raises_naming("hand_size", ["27"], num_seats=4, max_pip=6, hand_size=7, engine_source="aside")
    _raises_naming(
        "hand_size", ["90"], num_seats=5, max_pip=12, hand_size=19, engine_source="aside"
    )
    RulesConfig(num_seats=5, max_pip=12, hand_size=18, engine_source="aside")  # 90 <= 90


# ---------------------------------------------------------------- R5: num_rounds, first_engine
@pytest.mark.parametrize("max_pip", SET_SIZES)
def test_R5_default_rounds_and_engines(max_pip):
    cfg = RulesConfig(num_seats=2, max_pip=max_pip, hand_size=5)
    assert cfg.first_engine == max_pip
    assert cfg.num_rounds == max_pip + 1
    assert [cfg.engine_of_round(k) for k in range(cfg.num_rounds)] == list(range(max_pip, -1, -1))


def test_R5_shorter_match_and_chosen_engine():
    cfg = RulesConfig(num_seats=4, num_rounds=3)
    assert [cfg.engine_of_round(k) for k in range(3)] == [12, 11, 10]
    cfg = RulesConfig(num_seats=4, first_engine=5)
    assert cfg.num_rounds == 6 and cfg.engine_of_round(5) == 0
    cfg = RulesConfig(num_seats=4, first_engine=0, num_rounds=1)
    assert cfg.engine_of_round(0) == 0
    cfg = RulesConfig(num_seats=4, first_engine=7, num_rounds=8)
    assert cfg.engine_of_round(7) == 0


@pytest.mark.parametrize("value", [0, -1, 14, 100, True, 2.0, "3"])
def test_num_rounds_invalid(value):
    _raises_naming("num_rounds", ["1..13"], num_seats=4, num_rounds=value)


def test_num_rounds_bounded_by_first_engine():
    _raises_naming("num_rounds", ["1..4"], num_seats=4, first_engine=3, num_rounds=5)
    assert RulesConfig(num_seats=4, first_engine=3, num_rounds=4).num_rounds == 4


@pytest.mark.parametrize("value", [-1, 13, 18, True, 6.0, "6"])
def test_first_engine_invalid(value):
    _raises_naming("first_engine", ["0..12"], num_seats=4, first_engine=value)


# ---------------------------------------------------------------- from_dict / to_dict
def test_from_dict_round_trip():
    cfg = RulesConfig(
        num_seats=3,
        max_pip=12,
        hand_size=10,
        first_turn="draw",
        follow_up_on_double=True,
        doubles_order="newest",
        dead_doubles=False,
        double_blank_value=0,
        engine_source="aside",
        scoring="positive",
        num_rounds=4,
        first_engine=9,
    )
    assert RulesConfig.from_dict(cfg.to_dict()) == cfg
    assert RulesConfig.from_dict({"num_seats": 5}) == RulesConfig(num_seats=5)


def test_from_dict_rejects_unknown_keys():
    with pytest.raises(ValueError) as err:
        RulesConfig.from_dict({"num_seats": 4, "hand_sise": 7, "colour": "red"})
    msg = str(err.value)
    assert "hand_sise" in msg and "colour" in msg
    assert "hand_size" in msg  # names what is allowed


def test_from_dict_validates_values():
    with pytest.raises(ValueError, match="first_turn"):
        RulesConfig.from_dict({"first_turn": "twice"})


def test_config_is_frozen():
    cfg = RulesConfig()
    with pytest.raises(dataclasses.FrozenInstanceError):
        cfg.num_seats = 5  # type: ignore[misc]
    assert cfg.replace(num_seats=5).max_pip == 12 and cfg.num_seats == 4


def test_the_variants_table_names_every_variant_of_the_rulebook():
    """mt_env.config.VARIANTS holds every V- id of docs/rules.md that an option selects
    (V-deal is R3's automatic fallback, not an option); each override changes exactly the
    option it names away from its default."""
    rulebook = (Path(__file__).resolve().parents[1] / "docs" / "rules.md").read_text()
    ids = set(re.findall(r"\bV-[a-z0-9-]+\b", rulebook)) - {"V-deal"}
    assert ids == {k for k in VARIANTS if k.startswith("V-")}
    default = RulesConfig(num_seats=4)
    for overrides in VARIANTS.values():
        config = RulesConfig(num_seats=4, **overrides)
        changed = {f for f in overrides if getattr(config, f) != getattr(default, f)}
        assert changed == set(overrides)
