"""File-system swaps racing a reader (issue 31), shared by the unit, integration and fault
tests: an attacker who can write inside a payload root swaps what a path names between a
benign file and one outside the root, as fast as it can.

Two ways, both atomic: ``exchange`` swaps two names with ``renameat2(RENAME_EXCHANGE)``
(a directory of the path and a symbolic link to a directory outside: the swap that made
a check-then-open reader read the outside file, 80 times in 3000 opens), ``relink``
points a symbolic link at one target and then the other (``rename`` of a fresh link over
it: the issue's description). :class:`Swapper` runs them in a child process
(``python -m tests.swaps``), stopped by its own process id.

``python -m tests.swaps exchange A B [exchange A B | relink LINK T1 T2 ...]`` loops over
the swaps given until killed.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
import sys
import time
from collections.abc import Sequence

__all__ = ["SECRET", "Swapper", "exchange", "feature_collection", "relink"]

#: The value only the outside files hold: it must never reach a record, a log or a result.
SECRET = "TOP-SECRET-VALUE"

_RENAME_EXCHANGE = 2  # linux/fs.h
_AT_FDCWD = -100
_libc = ctypes.CDLL(None, use_errno=True)


def exchange(a: str, b: str) -> None:
    """Swap the names ``a`` and ``b`` atomically (``renameat2(2)``, ``RENAME_EXCHANGE``)."""
    if _libc.renameat2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE):
        code = ctypes.get_errno()
        raise OSError(code, os.strerror(code), a)


def relink(link: str, target: str) -> None:
    """Point the symbolic link ``link`` at ``target`` atomically (a new link renamed over)."""
    fresh = f"{link}.swap"
    with contextlib.suppress(FileNotFoundError):
        os.unlink(fresh)
    os.symlink(target, fresh)
    os.replace(fresh, link)


def feature_collection(continent: str) -> str:
    """A GeoJSON FeatureCollection of one admin-boundaries point whose ``continent`` (a
    domain-governed column of the demo contract) is ``continent``."""
    return (
        '{"type": "FeatureCollection", "features": [{"type": "Feature", '
        '"geometry": {"type": "Point", "coordinates": [1, 2]}, '
        f'"properties": {{"continent": "{continent}"}}}}]}}'
    )


def _loop(plan: Sequence[tuple[str, ...]]) -> None:
    flip = 0
    while True:
        for step in plan:
            if step[0] == "exchange":
                exchange(step[1], step[2])
            else:
                relink(step[1], step[2 + flip % 2])
        flip += 1


def _parse(argv: Sequence[str]) -> list[tuple[str, ...]]:
    plan: list[tuple[str, ...]] = []
    args = list(argv)
    while args:
        kind = args.pop(0)
        n = {"exchange": 2, "relink": 3}[kind]
        plan.append((kind, *args[:n]))
        del args[:n]
    return plan


class Swapper:
    """The swaps of ``plan`` (``("exchange", a, b)``, ``("relink", link, t1, t2)``) looped
    in a child process until :meth:`stop`; a context manager."""

    def __init__(self, plan: Sequence[tuple[str, ...]]) -> None:
        argv = [sys.executable, "-m", "tests.swaps"]
        for step in plan:
            argv += list(step)
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
        self.proc = subprocess.Popen(argv, env=env, stderr=subprocess.PIPE)
        time.sleep(0.2)
        if self.proc.poll() is not None:
            raise RuntimeError(f"the swapper ended at once: {self.proc.stderr.read()!r}")  # type: ignore[union-attr]

    def stop(self) -> None:
        """End the child by its process id (SIGKILL: it holds nothing) and reap it."""
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait(timeout=10)
        if self.proc.stderr is not None:
            self.proc.stderr.close()

    def __enter__(self) -> Swapper:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


if __name__ == "__main__":
    _loop(_parse(sys.argv[1:]))
