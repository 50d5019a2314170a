"""A text picture of a match, for people: ``render_text(match, seat=None) -> str``
(:mod:`mt_env.picture` draws the same table as an image).

What lives here: formatting only. It reads the rules core's public, read-only view
(:class:`~mt_env.rules.RoundState` properties, :class:`~mt_env.match.Match` totals) and
decides nothing. It shows one seat's hand — the seat to act unless ``seat`` is given —
so it is a picture for a person at that seat (or a spectator), not an observation.

Example (4 seats, round 1)::

    Mexican Train - round 1 of 13, engine 12|12 (double-12 set, 4 seats)
    Seat 2 to act (ordinary turn); must satisfy the open double on seat 0
    Trains (* = marker: open to every seat; tiles from the engine outward):
      seat 0   *  12|5 5|3 3|3
      seat 1      12|0
      seat 2      (empty)
      seat 3   *  (empty)
      Mexican     12|7
    Open doubles (next to satisfy first): 3|3 on seat 0 (restricts)
    Hands: seat 0 12, seat 1 14, seat 2 15, seat 3 15 tiles
    Boneyard: 31 tiles
    Scores so far: seat 0 0, seat 1 0, seat 2 0, seat 3 0
    Seat 2's hand (15): 0|1 0|3 ...
"""

from __future__ import annotations

from .match import Match
from .tiles import format_tile

MARKER = "*"


def train_name(state, train: int) -> str:
    """``"Mexican"`` or ``"seat k"``."""
    return "Mexican" if train == state.mexican_train else f"seat {train}"


def _chain(tiles) -> str:
    return " ".join(format_tile(t) for t in tiles) if tiles else "(empty)"


def turn_line(state) -> str:
    """Who acts and what constrains the move (shared with :mod:`mt_env.picture`)."""
    s = state.seat
    what = "free first turn: own train only" if state.in_free_first_turn else "ordinary turn"
    notes = []
    if state.follow_up_owed:
        notes.append(f"must follow up the double on {train_name(state, state.follow_up_train)}")
    elif state.restricting_train is not None:
        notes.append(
            f"must satisfy the open double on {train_name(state, state.restricting_train)}"
        )
    if state.drawn_tile is not None:
        notes.append(f"drew {format_tile(state.drawn_tile)}")
    line = f"Seat {s} to act ({what})"
    return line + ("; " + "; ".join(notes) if notes else "")


def render_text(match: Match, seat: int | None = None) -> str:
    """A readable picture of the match's current round; shows ``seat``'s hand (default:
    the seat to act)."""
    state = match.state
    cfg = match.config
    n = cfg.num_seats
    over = match.is_over
    lines = [
        f"Mexican Train - round {match.round_index + 1} of {cfg.num_rounds}, engine "
        f"{state.engine}|{state.engine} (double-{cfg.max_pip} set, {n} seats)"
    ]
    if over:
        last = match.results[-1]
        how = (
            f"seat(s) {', '.join(map(str, last.out_seats))} went out"
            if last.end_reason == "out"
            else "blocked"
        )
        lines.append(f"Match over: the last round ended {how}")
    elif state.is_over:  # not reachable through Match (it deals on), kept for safety
        lines.append(f"Round over ({state.end_reason})")
    else:
        lines.append(turn_line(state))

    lines.append(f"Trains ({MARKER} = marker: open to every seat; tiles from the engine outward):")
    width = max(len("Mexican"), len(f"seat {n - 1}"))
    for tr in range(n + 1):
        mark = MARKER if tr < n and state.is_marked(tr) else " "
        lines.append(f"  {train_name(state, tr):<{width}}  {mark}  {_chain(state.train(tr))}")

    od = state.open_doubles
    if cfg.doubles_order == "newest":  # V-doubles-reverse: newest is satisfied first
        od = od[::-1]
    if od:
        restricting = None if over else state.restricting_train
        parts = []
        for tr in od:
            end = state.open_end(tr)
            tags = []
            if tr == restricting:
                tags.append("restricts")
            if state.is_dead_double(tr):
                tags.append("dead")
            tag = f" ({', '.join(tags)})" if tags else ""
            parts.append(f"{end}|{end} on {train_name(state, tr)}{tag}")
        lines.append("Open doubles (next to satisfy first): " + ", ".join(parts))
    else:
        lines.append("Open doubles: none")

    sizes = ", ".join(f"seat {k} {state.hand_size(k)}" for k in range(n))
    lines.append(f"Hands: {sizes} tiles")
    lines.append(f"Boneyard: {state.boneyard_size} tiles")
    totals = match.totals
    label = "Final scores" if over else "Scores so far"
    lines.append(f"{label}: " + ", ".join(f"seat {k} {totals[k]}" for k in range(n)))
    if over:
        places = match.places()
        lines.append("Places: " + ", ".join(f"seat {k} {places[k]}" for k in range(n)))
    shown = state.seat if seat is None else seat
    if not 0 <= shown < n:
        raise ValueError(f"seat={seat!r}: expected a seat in 0..{n - 1} or None")
    hand = state.hand(shown)
    lines.append(f"Seat {shown}'s hand ({len(hand)}): {_chain(hand) if hand else '(empty)'}")
    return "\n".join(lines)
