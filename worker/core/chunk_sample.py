"""The rows of a chunked batch a second pass reads, kept by the first pass (pure).

A broken extent clause's diagnoses read an evenly spaced sample of the batch
(:attr:`worker.core.clauses.base.SecondPass.rows`), whose rows the batch's feature count
decides. When that count is known before the first pass (a file's footer:
:attr:`worker.core.chunks.ChunkedBatch.rows`), the first pass takes those rows of each
chunk while it holds it (:class:`Keep`, on any thread), and :class:`Kept` collects them in
batch order, at most :data:`KEEP_SAMPLE_BYTES` of them: the second pass then measures the
kept rows instead of reading the batch again (issue 27: the read took 11.5% of a
million-polygon check).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

import numpy as np

from worker.core.clauses.base import ClauseKind
from worker.core.clauses.sample import take_features
from worker.core.model import Batch

__all__ = ["KEEP_SAMPLE_BYTES", "Item", "Keep", "Kept", "keep_for"]

#: A pass's item: features, the batch index of the first, and None (a whole chunk) or the
#: number of features of the chunk they were kept from (:class:`Keep`).
Item = tuple[Batch, int, "int | None"]

#: Most bytes (WKB and attribute values) of the rows the first pass keeps for a second
#: pass (:class:`Kept`); beyond it the second pass reads the batch again. Read at call time.
KEEP_SAMPLE_BYTES = 32 * 1024 * 1024


@dataclass(frozen=True)
class Keep:
    """The rows of each chunk a second pass reads (``rows(offset, count, total)``, as
    :attr:`SecondPass.rows <worker.core.clauses.base.SecondPass>`) in a batch of ``total``
    features. Called with a chunk and the batch index of its first feature, it gives the
    :data:`Item` of those rows (the chunk itself when every row is read)."""

    rows: Callable[[int, int, int], np.ndarray]
    total: int

    def __call__(self, chunk: Batch, offset: int) -> Item:
        count = len(chunk.geometries_wkb)
        rows = self.rows(offset, count, self.total)
        return (chunk if rows.size == count else take_features(chunk, rows)), offset, count


def keep_for(kinds: Iterable[ClauseKind | None], total: int | None) -> Keep | None:
    """What the first pass keeps for the second passes of ``kinds`` (None: an unknown
    kind) in a batch of ``total`` features: None when ``total`` is unknown before reading,
    or when no kind with a second pass, or more than one way of choosing rows, names the
    rows it reads (then the second pass reads the batch again)."""
    ways = {
        (k.second_pass.rows, k.second_pass.measure_rows)
        for k in kinds
        if k is not None and k.second_pass is not None
    }
    if total is None or len(ways) != 1:
        return None
    rows, measure = ways.pop()
    return None if rows is None or measure is None else Keep(rows, total)


class Kept:
    """The kept rows of every chunk, in batch order (:meth:`add` on one thread);
    :attr:`items` becomes None once they take more than :data:`KEEP_SAMPLE_BYTES`."""

    def __init__(self) -> None:
        self.items: list[Item] | None = []
        self.bytes = 0

    def add(self, item: Item) -> None:
        """Keep ``item`` (rows of the next chunk), unless the rows kept so far, with it,
        take more than :data:`KEEP_SAMPLE_BYTES` (then none are kept any more)."""
        if self.items is None:
            return
        part = item[0]
        self.bytes += part.attributes.nbytes + sum(len(w) for w in part.geometries_wkb if w)
        if self.bytes > KEEP_SAMPLE_BYTES:
            self.items = None
        else:
            self.items.append(item)
