"""Save a picture of a Mexican Train table: ``render_mode="rgb_array"`` (needs Pillow).

Plays random legal moves with a fixed seed until an interesting position of the second
round — the seat to act must satisfy an open double and can, a train carries a marker —
and writes the picture to a PNG (default ``table.png``).

    python examples/table_picture.py /tmp/table.png
"""

from __future__ import annotations

import random
import sys

import numpy as np
from PIL import Image

from mt_env.aec import raw_env


def interesting(e) -> bool:
    st = e.match.state
    legal = st.legal_moves()
    plays = [m for m in legal if m < st.codec.draw]
    return (
        e.match.round_index >= 1
        and st.restricting_train is not None
        and len(plays) >= 2
        and any(st.is_marked(k) for k in range(st.num_seats))
        and st.mexican_started
    )


def main(path: str = "table.png", seed: int = 0) -> None:
    e = raw_env(num_seats=4, render_mode="rgb_array")
    rng = random.Random(seed)
    e.reset(seed=seed)
    while not interesting(e):
        if e.match.is_over:
            e.reset()
        legal = np.flatnonzero(e.observe(e.agent_selection)["action_mask"])
        e.step(int(legal[rng.randrange(len(legal))]))
    picture = e.render()
    Image.fromarray(picture).save(path)
    print(f"{path}: {picture.shape[1]}x{picture.shape[0]} px")
    e.render_mode = "ansi"
    print(e.render())


if __name__ == "__main__":
    main(*sys.argv[1:2])
