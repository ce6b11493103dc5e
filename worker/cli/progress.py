"""Progress of long offline work on stderr, for a person at a terminal.

``check`` of a chunked file redraws one status line (features read of the file's count,
chunks, rate); ``batch publish`` shows a line per stage (read, sent) with its duration and rate.
Nothing is printed when stderr is not a terminal (a pipe, a log file, CI) or with
``--quiet``, so scripted output is unchanged.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from worker.core.chunks import ChunkedBatch
    from worker.core.model import Batch

__all__ = ["add_quiet_arg", "chunks_with_progress", "shows_progress", "stage_line"]


def add_quiet_arg(p: argparse.ArgumentParser) -> None:
    """Add ``--quiet``: no progress on stderr (results, warnings and errors still print)."""
    p.add_argument(
        "--quiet",
        action="store_true",
        help="no progress on stderr (progress is shown only when stderr is a terminal)",
    )


def shows_progress(args: argparse.Namespace, stream: TextIO | None = None) -> bool:
    """True when ``stream`` (stderr by default) is a terminal and ``--quiet`` was not given."""
    stream = stream or sys.stderr
    if getattr(args, "quiet", False):
        return False
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # a closed or fake stream
        return False


def chunks_with_progress(loaded: ChunkedBatch, label: str, stream: TextIO) -> ChunkedBatch:
    """``loaded`` whose every pass over its chunks redraws one status line on ``stream``
    (at most every :data:`REDRAW_S` seconds): features read of the file's count, chunks so
    far, features per second; the line is cleared when the pass ends."""
    chunks = loaded.chunks
    total = loaded.batch.feature_count
    passes = [0]

    def with_line() -> Iterator[Batch]:
        passes[0] += 1
        line = _StatusLine(stream, label if passes[0] == 1 else f"{label} (pass {passes[0]})")
        read = 0
        try:
            for n, chunk in enumerate(chunks(), start=1):
                read += len(chunk.geometries_wkb)
                line.draw(read, total, n)
                yield chunk
        finally:
            line.clear()

    return dataclasses.replace(loaded, chunks=with_line)


#: Seconds between two redraws of a status line.
REDRAW_S = 0.2


class _StatusLine:
    """One line redrawn in place (carriage return) on a terminal."""

    def __init__(self, stream: TextIO, label: str) -> None:
        self.stream, self.label = stream, label
        self.started = time.monotonic()
        self.drawn_at = 0.0
        self.width = 0

    def draw(self, read: int, total: int, chunks: int) -> None:
        now = time.monotonic()
        if now - self.drawn_at < REDRAW_S:
            return
        self.drawn_at = now
        rate = read / max(now - self.started, 1e-6)
        of = f" of {total:,} ({read / total:.0%})" if total else ""
        text = f"{self.label}: {read:,}{of} features read, {chunks} chunks, {rate:,.0f} features/s"
        self.width = max(self.width, len(text))
        self.stream.write("\r" + text.ljust(self.width))
        self.stream.flush()

    def clear(self) -> None:
        if self.width:
            self.stream.write("\r" + " " * self.width + "\r")
            self.stream.flush()


def stage_line(
    stream: TextIO, what: str, count: int, started: float, unit: str = "features"
) -> None:
    """One line ``<what>: <count> <unit> in <s> s (<rate> <unit>/s)`` on ``stream``;
    ``started`` is the stage's ``time.monotonic()``."""
    elapsed = max(time.monotonic() - started, 1e-6)
    print(
        f"{what}: {count:,} {unit} in {elapsed:.1f} s ({count / elapsed:,.0f} {unit}/s)",
        file=stream,
        flush=True,
    )
