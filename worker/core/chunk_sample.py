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

import dataclasses
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from worker.core.clauses.base import ClauseKind
from worker.core.clauses.sample import take_features
from worker.core.facts.wkb_arrow import wkb_bytes
from worker.core.model import Batch

__all__ = ["CALLER_SAMPLE_BYTES", "KEEP_SAMPLE_BYTES", "Item", "Keep", "Kept", "keep_for"]

#: A pass's item: features, the batch index of the first, and None (a whole chunk) or the
#: number of features of the chunk they were kept from (:class:`Keep`).
Item = tuple[Batch, int, "int | None"]

#: Most bytes (WKB and attribute values) of the rows the first pass keeps for a second
#: pass (:class:`Kept`); beyond it the second pass reads the batch again. Read at call time.
KEEP_SAMPLE_BYTES = 32 * 1024 * 1024

#: Most bytes of kept rows the second pass measures on the caller's thread rather than on
#: the pool's (:attr:`Kept.for_caller`). A pool thread's first reprojection builds its own
#: pyproj transformer and CRS objects (pyproj keeps them per thread: a PROJ context and a
#: database search each, 5-10 ms): on the 10,000 sampled rows of a million points (0.7 MB)
#: the three threads spent more on building them than on the sample, 30-45 ms of a 1.2 s
#: check (issue 27). A sample of polygons (about 9 MB for 10,000) keeps the threads.
#: Read at call time.
CALLER_SAMPLE_BYTES = 2 * 1024 * 1024


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
        self.bytes += part.attributes.nbytes + wkb_bytes(part.geometries_wkb)
        if self.bytes > KEEP_SAMPLE_BYTES:
            self.items = None
        else:
            self.items.append(item)

    def joined(self) -> list[Item] | None:
        """:attr:`items`, the rows of every chunk made one item when they are few
        (:attr:`for_caller`) and their attribute tables share a schema: the features one
        after the other, the batch index of the first chunk's first feature, the features
        of all those chunks (a second pass's tallies add up per feature,
        :class:`~worker.core.clauses.base.SecondPass`). Measuring 16 kept parts of a
        million points one by one repeated every reading's fixed costs 16 times."""
        items = self.items
        if items is None or len(items) < 2 or not self.for_caller:
            return items
        if any(of is None for _, _, of in items):  # not rows of a Keep: measured as they are
            return items
        parts = [part for part, _, _ in items]
        schema = parts[0].attributes.schema
        if any(not p.attributes.schema.equals(schema, True) for p in parts):
            return items
        return [(_joined(parts), items[0][1], sum(int(of or 0) for _, _, of in items))]

    @property
    def for_caller(self) -> bool:
        """The kept rows are few enough (at most :data:`CALLER_SAMPLE_BYTES`) to be measured
        on the caller's thread alone: the decision is the same on any thread."""
        return self.items is not None and self.bytes <= CALLER_SAMPLE_BYTES


def _joined(parts: list[Batch]) -> Batch:
    """One batch of the features of ``parts`` (same metadata), one after the other: their
    geometries, attribute rows, reader errors (re-indexed), bbox coverings and ids."""
    starts = np.cumsum([0] + [len(p.geometries_wkb) for p in parts[:-1]]).tolist()
    errors = {
        s + i: e for s, p in zip(starts, parts, strict=True) for i, e in p.geometry_errors.items()
    }

    def joined(values: list[tuple[Any, ...] | None]) -> tuple[Any, ...] | None:
        if any(v is None for v in values):
            return None
        return tuple(x for v in values if v is not None for x in v)

    return dataclasses.replace(
        parts[0],
        geometries_wkb=tuple(w for p in parts for w in p.geometries_wkb),
        attributes=pa.concat_tables([p.attributes for p in parts]),
        geometry_errors=errors,
        covering_bbox=joined([p.covering_bbox for p in parts]),
        feature_ids=joined([p.feature_ids for p in parts]),
        coordinate_bounds=None,
    )
