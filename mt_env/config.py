"""The rules configuration: seats, set, hand size, every variant of docs/rules.md, match length.

``RulesConfig`` is frozen and validated on construction; an invalid value raises
``ValueError`` naming the field, the value and what is allowed. Fields left as
``None`` are resolved by the defaults of R3 and R5, so ``RulesConfig(num_seats=4)``
is the standard 4-seat double-12 game with 15 tiles each.

| field | default | alternative (rule id) |
|---|---|---|
| ``first_turn`` | ``"free"`` (R11–R13) | ``"single"`` (V-first-turn-single), ``"draw"`` (V-first-turn-draw) |
| ``follow_up_on_double`` | ``False`` (R16) | ``True`` (V-follow-up-on-double) |
| ``doubles_order`` | ``"oldest"`` (R21) | ``"newest"`` (V-doubles-reverse) |
| ``dead_doubles`` | ``True`` (R22) | ``False`` |
| ``double_blank_value`` | ``50`` (R26) | ``0`` (V-blank-zero) |
| ``engine_source`` | ``"hand"`` (R6) | ``"aside"`` (V-engine-aside) |
| ``scoring`` | ``"penalty"`` (R26–R28) | ``"positive"`` (V-positive-score) |
| ``num_rounds`` | N+1 (R5) | any 1..first_engine+1 |
| ``first_engine`` | N (R5) | any pip 0..N: round k's engine is ``first_engine - k`` |
"""

from __future__ import annotations

import dataclasses
import numbers
from dataclasses import dataclass

from .tiles import SET_SIZES

# R3: (min seats, max seats) -> (set, tiles each)
_R3_TABLE = (
    (2, 3, 9, 15),
    (4, 4, 12, 15),
    (5, 6, 12, 12),
    (7, 8, 12, 11),
    (9, 12, 15, 11),
    (13, 14, 18, 11),
)
# R3's V-deal fallback (seed 003): set -> {seats: tiles each}
_V_DEAL = {
    12: {2: 16, 3: 16, 4: 15, 5: 14, 6: 12, 7: 10, 8: 9},
    9: {2: 15, 3: 13, 4: 10},
}

FIRST_TURN_MODES = ("free", "single", "draw")
DOUBLES_ORDERS = ("oldest", "newest")
ENGINE_SOURCES = ("hand", "aside")
SCORINGS = ("penalty", "positive")

# Every alternative to a default rule, as RulesConfig overrides (docs/rules.md has the
# table): the variant ids, plus R22's switch, which has no id of its own.
VARIANTS: dict[str, dict[str, object]] = {
    "V-first-turn-single": {"first_turn": "single"},
    "V-first-turn-draw": {"first_turn": "draw"},
    "V-follow-up-on-double": {"follow_up_on_double": True},
    "V-doubles-reverse": {"doubles_order": "newest"},
    "no-dead-doubles": {"dead_doubles": False},
    "V-blank-zero": {"double_blank_value": 0},
    "V-engine-aside": {"engine_source": "aside"},
    "V-positive-score": {"scoring": "positive"},
}


def _r3_row(num_seats: int) -> tuple[int, int]:
    for lo, hi, max_pip, hand in _R3_TABLE:
        if lo <= num_seats <= hi:
            return max_pip, hand
    raise AssertionError(num_seats)


def default_hand_size(num_seats: int, max_pip: int) -> int:
    """R3's hand size for a set the user picked, or ValueError asking for one."""
    table_set, table_hand = _r3_row(num_seats)
    if max_pip == table_set:
        return table_hand
    if max_pip == 6 and num_seats <= 4:
        return 7
    v_deal = _V_DEAL.get(max_pip, {})
    if num_seats in v_deal:
        return v_deal[num_seats]
    raise ValueError(
        f"hand_size: R3 gives no default for {num_seats} seats with a double-{max_pip} set; "
        f"pass hand_size explicitly"
    )


def check_choice(field: str, value, allowed) -> None:
    """ValueError naming ``field``, ``value`` and ``allowed`` unless ``value`` is one of them."""
    if value not in allowed:
        raise ValueError(f"{field}={value!r}: expected one of {allowed}")


@dataclass(frozen=True)
class RulesConfig:
    """Every rule option of docs/rules.md. See the module docstring for the table."""

    num_seats: int = 4
    max_pip: int | None = None
    hand_size: int | None = None
    first_turn: str = "free"
    follow_up_on_double: bool = False
    doubles_order: str = "oldest"
    dead_doubles: bool = True
    double_blank_value: int = 50
    engine_source: str = "hand"
    scoring: str = "penalty"
    num_rounds: int | None = None
    first_engine: int | None = None

    def __post_init__(self) -> None:
        self._normalise_scalars()

        def is_int(v) -> bool:
            return isinstance(v, int) and not isinstance(v, bool)

        if not is_int(self.num_seats) or not 2 <= self.num_seats <= 14:
            raise ValueError(f"num_seats={self.num_seats!r}: expected an int in 2..14 (R2)")
        n = self.num_seats
        if self.max_pip is None:
            object.__setattr__(self, "max_pip", _r3_row(n)[0])
        elif self.max_pip not in SET_SIZES or not is_int(self.max_pip):
            raise ValueError(f"max_pip={self.max_pip!r}: expected one of {SET_SIZES} (R1)")
        if self.hand_size is None:
            object.__setattr__(self, "hand_size", default_hand_size(n, self.max_pip))
        elif not is_int(self.hand_size) or self.hand_size < 1:
            raise ValueError(f"hand_size={self.hand_size!r}: expected a positive int")
        check_choice("first_turn", self.first_turn, FIRST_TURN_MODES)
        check_choice("doubles_order", self.doubles_order, DOUBLES_ORDERS)
        check_choice("engine_source", self.engine_source, ENGINE_SOURCES)
        check_choice("scoring", self.scoring, SCORINGS)
        if not is_int(self.double_blank_value) or self.double_blank_value not in (50, 0):
            raise ValueError(
                f"double_blank_value={self.double_blank_value!r}: expected 50 (R26) or 0 "
                f"(V-blank-zero)"
            )
        for flag in ("follow_up_on_double", "dead_doubles"):
            if not isinstance(getattr(self, flag), bool):
                raise ValueError(f"{flag}={getattr(self, flag)!r}: expected True or False")
        num_tiles = (self.max_pip + 1) * (self.max_pip + 2) // 2
        dealable = num_tiles - 1 if self.engine_source == "aside" else num_tiles
        if n * self.hand_size > dealable:
            raise ValueError(
                f"hand_size={self.hand_size}: {n} seats x {self.hand_size} tiles need "
                f"{n * self.hand_size}, but the double-{self.max_pip} set holds {dealable} "
                f"dealable tiles (R3)"
            )
        if self.engine_source == "hand" and self.hand_size < 2:
            raise ValueError(
                "hand_size=1: with the engine dealt from the hand (R6) the start seat could "
                "place its only tile; expected hand_size >= 2"
            )
        if self.first_engine is None:
            object.__setattr__(self, "first_engine", self.max_pip)
        elif not is_int(self.first_engine) or not 0 <= self.first_engine <= self.max_pip:
            raise ValueError(
                f"first_engine={self.first_engine!r}: expected a pip in 0..{self.max_pip}"
            )
        most = self.first_engine + 1
        if self.num_rounds is None:
            object.__setattr__(self, "num_rounds", most)
        elif not is_int(self.num_rounds) or not 1 <= self.num_rounds <= most:
            raise ValueError(
                f"num_rounds={self.num_rounds!r}: expected an int in 1..{most} "
                f"(engines run down from {self.first_engine} to 0, R5)"
            )

    def _normalise_scalars(self) -> None:
        """Accept numpy's integer and bool scalars (``np.int64(4)``, ``np.True_``) as the
        Python values they stand for; anything else is left for the checks to judge."""
        for f in dataclasses.fields(self):
            v = getattr(self, f.name)
            if isinstance(v, bool | str) or v is None:
                continue
            if isinstance(v, numbers.Integral):
                object.__setattr__(self, f.name, int(v))
            elif getattr(getattr(v, "dtype", None), "kind", None) == "b":  # a numpy bool
                object.__setattr__(self, f.name, bool(v))

    @property
    def num_tiles(self) -> int:
        return (self.max_pip + 1) * (self.max_pip + 2) // 2

    @property
    def num_trains(self) -> int:
        """One personal train per seat plus the Mexican train (R8)."""
        return self.num_seats + 1

    def engine_of_round(self, round_index: int) -> int:
        """The engine pip of round ``round_index`` (0-based), R5."""
        return self.first_engine - round_index

    def replace(self, **changes) -> RulesConfig:
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> RulesConfig:
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - names)
        if unknown:
            raise ValueError(f"unknown rules option(s) {unknown}: expected some of {sorted(names)}")
        return cls(**data)
