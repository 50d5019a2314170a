"""``train.py``'s command, paused at a chosen point, for the kill and signal tests
(tests/test_train_failures.py): a deterministic moment to kill it at, no sleeps.

    python tests/train_driver.py POINT COUNT -- TRAIN.PY ARGUMENTS

At the COUNT-th time this process reaches POINT it prints ``PAUSED POINT COUNT`` and blocks
reading stdin (the test then signals or kills it; end of stdin lets it go on):

- ``cloning``: the teacher's demonstrations reported their first decisions (the rollout
  worker processes are alive);
- ``update``: a PPO update is done, before its log row;
- ``logged``: an update's log row is on disk, before its checkpoint;
- ``replace``: a ``checkpoint.pt`` write is on disk as a temp file, not yet renamed;
- ``busy-worker`` (no train.py arguments): a rollout worker's parent-death guard is armed
  in a child process that then waits on nothing its parent could close.
"""

from __future__ import annotations

import os
import sys
import threading
from pathlib import Path


def pause(point: str, count: int) -> None:
    print(f"PAUSED {point} {count}", flush=True)
    sys.stdin.readline()


def busy_worker(parent_pid: int, conn) -> None:
    from mt_env.agents.ppo import rollout

    rollout._die_with_parent(parent_pid)
    conn.send("armed")
    threading.Event().wait()  # busy forever: only the parent-death guard can end it


def main() -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    import train
    from mt_env.agents.ppo import checkpoint, runs

    point, count, sep, *args = sys.argv[1:]
    assert sep == "--", "usage: train_driver.py POINT COUNT -- ARGS"
    count, seen = int(count), [0]

    def reached() -> bool:
        seen[0] += 1
        return seen[0] == count

    if point == "busy-worker":
        import multiprocessing as mp

        ctx = mp.get_context("spawn")
        parent_end, child_end = ctx.Pipe()
        ctx.Process(target=busy_worker, args=(os.getpid(), child_end), daemon=True).start()
        assert parent_end.recv() == "armed"
        pause(point, count)
        return
    if point == "cloning":
        demonstrations = train.demonstrations

        class Bar:  # the progress bar of the recorded decisions
            def __init__(self, **kwargs) -> None:
                pass

            def update(self, n: int = 1) -> None:
                if reached():
                    pause(point, count)

            def close(self) -> None:
                pass

        train.demonstrations = lambda *a, progress=None, **k: demonstrations(*a, progress=Bar, **k)
    elif point == "update":
        ppo_update = train.ppo_update

        def update(*a, **k):
            out = ppo_update(*a, **k)
            if reached():
                pause(point, count)
            return out

        train.ppo_update = update
    elif point == "logged":
        write = runs.UpdateLog.write

        def logged(self, row):
            write(self, row)
            if reached():
                pause(point, count)

        runs.UpdateLog.write = logged
    elif point == "replace":
        real_os = checkpoint.os

        class PausingOs:
            def __getattr__(self, name):
                return getattr(real_os, name)

            def replace(self, src, dst):
                if Path(dst).name == "checkpoint.pt" and reached():
                    pause(point, count)
                real_os.replace(src, dst)

        checkpoint.os = PausingOs()
    else:
        raise SystemExit(f"unknown point {point!r}")
    train.cli(args)


if __name__ == "__main__":  # worker processes import this file too (spawn): only main runs it
    main()
