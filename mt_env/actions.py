"""The move and action encoding: one formula, documented here and nowhere else.

With ``T`` tiles in the set (ids from :mod:`mt_env.tiles`) and ``n`` seats there
are ``n + 1`` trains: trains ``0..n-1`` are the seats' personal trains and train
``n`` is the Mexican train (R8). Every decision is one integer in
``0 .. T*(n+1)+1``::

    play(tile, train) = tile * (n + 1) + train
    draw              = T * (n + 1)
    pass              = T * (n + 1) + 1

The rules core speaks **moves**, whose ``train`` is absolute (seat index, or
``n`` for the Mexican train). The environments speak **actions**, the same
formula with the train counted *relative to the acting seat* — 0 is the actor's
own train, 1 the next seat clockwise, …, ``n`` still the Mexican train — so a
policy sees the same action for "my own train" whatever seat it sits in. Draw and
pass are the same integers in both. :meth:`MoveCodec.to_action` and
:meth:`MoveCodec.to_move` convert; nothing else does. Hot loops use the same formula as
the tables ``move_of[tile][train]``, ``tile_of[move]`` and ``train_of[move]``.
"""

from __future__ import annotations

from functools import cache

from .tiles import format_tile, tile_set


class MoveCodec:
    """Encode/decode moves and actions for ``num_seats`` seats and a double-``max_pip`` set."""

    __slots__ = (
        "num_seats",
        "num_trains",
        "num_tiles",
        "draw",
        "pass_",
        "num_actions",
        "tiles",
        "move_of",
        "tile_of",
        "train_of",
    )

    def __init__(self, num_seats: int, max_pip: int) -> None:
        self.tiles = tile_set(max_pip)
        self.num_seats = num_seats
        self.num_trains = num_seats + 1
        self.num_tiles = self.tiles.num_tiles
        self.draw = self.num_tiles * self.num_trains
        self.pass_ = self.draw + 1
        self.num_actions = self.draw + 2
        # The formula as lookup tables, for hot loops (the rules core, search rollouts):
        # move_of[tile][train] = play(tile, train); tile_of/train_of invert it for plays.
        n1 = self.num_trains
        self.move_of = tuple(
            tuple(tile * n1 + train for train in range(n1)) for tile in range(self.num_tiles)
        )
        self.tile_of = tuple(move // n1 for move in range(self.draw))
        self.train_of = tuple(move % n1 for move in range(self.draw))

    # -- moves (absolute trains) -------------------------------------------------
    def play(self, tile: int, train: int) -> int:
        if not (0 <= tile < self.num_tiles and 0 <= train < self.num_trains):
            raise ValueError(
                f"play(tile={tile}, train={train}): expected tile in 0..{self.num_tiles - 1} "
                f"and train in 0..{self.num_trains - 1}"
            )
        return tile * self.num_trains + train

    def split(self, move: int) -> tuple[int, int]:
        """``(tile, train)`` of a play; ValueError for draw, pass or an out-of-range integer."""
        if not isinstance(move, int) or isinstance(move, bool) or not 0 <= move < self.draw:
            raise ValueError(f"{move!r} is not a play: expected an int in 0..{self.draw - 1}")
        return divmod(move, self.num_trains)

    # -- actions (trains relative to the acting seat) ---------------------------------
    def to_action(self, move: int, seat: int) -> int:
        if move >= self.draw:
            return move
        tile, train = divmod(move, self.num_trains)
        if train < self.num_seats:
            train = (train - seat) % self.num_seats
        return tile * self.num_trains + train

    def to_move(self, action: int, seat: int) -> int:
        if action >= self.draw:
            return action
        tile, train = divmod(action, self.num_trains)
        if train < self.num_seats:
            train = (train + seat) % self.num_seats
        return tile * self.num_trains + train

    # -- text -------------------------------------------------------------------
    def describe(self, move: int) -> str:
        """``'play 3|12 on seat 2'``, ``'play 0|5 on Mexican'``, ``'draw'``, ``'pass'``."""
        if move == self.draw:
            return "draw"
        if move == self.pass_:
            return "pass"
        tile, train = self.split(move)
        where = "Mexican" if train == self.num_seats else f"seat {train}"
        return f"play {format_tile(self.tiles.tiles[tile])} on {where}"


@cache
def move_codec(num_seats: int, max_pip: int) -> MoveCodec:
    """The shared codec of ``num_seats`` seats and a double-``max_pip`` set (its tables are
    built once; a codec is immutable in use)."""
    return MoveCodec(num_seats, max_pip)
