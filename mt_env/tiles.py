"""Tiles of a double-N set as small integer ids, with lookup tables built once.

A tile ``a|b`` (``a <= b``, R1) gets the id of its position in the enumeration
``for a in 0..N: for b in a..N``. Hands, the boneyard mask and the per-pip masks
are Python ints used as bitsets over those ids: "which tiles in my hand join
open end 7" is one ``&``.

This module holds no rule beyond R1 and R26's pip values; it is imported by the
rules core, the observation codec and the agents alike.
"""

from __future__ import annotations

import numbers
from functools import cache

SET_SIZES = (6, 9, 12, 15, 18)  # R1


class TileSet:
    """Lookup tables for one double-N set (R1). Build with :func:`tile_set`."""

    __slots__ = (
        "max_pip",
        "num_tiles",
        "tiles",
        "low",
        "high",
        "pips",
        "is_double",
        "double_of",
        "pip_mask",
        "bit",
        "full_mask",
        "_index",
    )

    def __init__(self, max_pip: int) -> None:
        if max_pip not in SET_SIZES:
            raise ValueError(f"max_pip={max_pip!r}: a set is double-N with N in {SET_SIZES} (R1)")
        self.max_pip = max_pip
        self.tiles: tuple[tuple[int, int], ...] = tuple(
            (a, b) for a in range(max_pip + 1) for b in range(a, max_pip + 1)
        )
        self.num_tiles = len(self.tiles)
        self.low = tuple(a for a, _ in self.tiles)
        self.high = tuple(b for _, b in self.tiles)
        self.pips = tuple(a + b for a, b in self.tiles)
        self.is_double = tuple(a == b for a, b in self.tiles)
        self._index = {t: i for i, t in enumerate(self.tiles)}
        self.double_of = tuple(self._index[(p, p)] for p in range(max_pip + 1))
        self.bit = tuple(1 << i for i in range(self.num_tiles))
        self.pip_mask = tuple(
            sum(1 << i for i, (a, b) in enumerate(self.tiles) if p in (a, b))
            for p in range(max_pip + 1)
        )
        self.full_mask = (1 << self.num_tiles) - 1

    def id_of(self, tile: tuple[int, int] | list[int]) -> int:
        """The id of tile ``(a, b)`` in either orientation; ValueError if not in the set."""
        try:
            a, b = tile
            if a.__class__ is not int or b.__class__ is not int:  # plain ints: the usual case
                if not (_is_pip(a) and _is_pip(b)):  # 6.0 would hash like 6: refuse it
                    raise TypeError
                a, b = int(a), int(b)
            key = (a, b) if a <= b else (b, a)
            return self._index[key]
        except (TypeError, ValueError, KeyError):
            raise ValueError(
                f"{tile!r} is not a tile of the double-{self.max_pip} set: "
                f"expected a pair (a, b) of integer pips in 0..{self.max_pip}"
            ) from None

    def mask_of(self, ids) -> int:
        m = 0
        for i in ids:
            m |= 1 << i
        return m

    def ids_in(self, mask: int) -> list[int]:
        """Ids of the tiles in a bitset, ascending."""
        out = []
        while mask:
            low = mask & -mask
            out.append(low.bit_length() - 1)
            mask ^= low
        return out

    def __repr__(self) -> str:
        return f"TileSet(double-{self.max_pip}, {self.num_tiles} tiles)"


def _is_pip(v) -> bool:
    """An integer (numpy's too), not a bool or a float."""
    return isinstance(v, numbers.Integral) and not isinstance(v, bool)


@cache
def tile_set(max_pip: int) -> TileSet:
    """The shared, immutable tables of the double-``max_pip`` set."""
    return TileSet(max_pip)


def format_tile(tile: tuple[int, int]) -> str:
    return f"{tile[0]}|{tile[1]}"
