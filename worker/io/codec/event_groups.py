"""Several events' attribute columns built at once (pure, no Kafka).

Building an event's inline columns (:func:`~worker.io.codec.events.attribute_table`) costs
an Arrow array per column, about 15 us each however few its values: 9% of routing a
one-feature event of five columns. :func:`batches_from_events` builds the columns of the
events that declare the same columns (names and types, in order) once over all their
values and gives each event its rows (a zero-copy slice), the same table as its own.
Events whose columns cannot be built together are built alone, so a bad value is
reported as alone, naming the event's own row.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa

from worker.core.model import Batch
from worker.io.codec.events import attribute_table, batch_from_event

__all__ = ["batches_from_events"]


def batches_from_events(records: Sequence[Mapping[str, Any]]) -> list[Batch | Exception]:
    """:func:`~worker.io.codec.events.batch_from_event` of each decoded BatchArrival
    record, in order: its Batch, or the exception it raises (a :class:`DecodeError`, or
    whatever Arrow raised, e.g. an integer beyond 64 bits), for the caller to handle as
    the event's own."""
    tables: dict[int, pa.Table] = {}
    groups: dict[tuple[tuple[str, str], ...], list[int]] = {}
    for i, r in enumerate(records):
        if (key := _columns_key(r)) is not None:
            groups.setdefault(key, []).append(i)
    for members in groups.values():
        if len(members) > 1:
            tables.update(_built_together([records[i] for i in members], members))
    out: list[Batch | Exception] = []
    for i, r in enumerate(records):
        try:
            out.append(batch_from_event(r, tables.get(i)))
        except Exception as exc:  # the event's own failure, handled as when decoded alone
            out.append(exc)
    return out


def _columns_key(record: Mapping[str, Any]) -> tuple[tuple[str, str], ...] | None:
    """The (name, type) of each inline column of ``record``, or None when its columns are
    built alone: no inline features, a payload URI too, no columns, duplicate names, or a
    column whose length is not the geometries' (each an error it reports itself)."""
    feats = record.get("features")
    if feats is None or record.get("payload_uri") is not None or not feats["columns"]:
        return None
    n = len(feats["geometry_wkb"])
    columns = feats["columns"]
    key = tuple((c["name"], c["type"]) for c in columns)
    if len({name for name, _ in key}) != len(key) or any(len(c["values"]) != n for c in columns):
        return None
    return key


def _built_together(records: list[Mapping[str, Any]], members: list[int]) -> dict[int, pa.Table]:
    """``{index: table}`` of ``records`` (same columns), built as one table and sliced;
    nothing when some value does not fit its column (each event is then built alone)."""
    counts = [len(r["features"]["geometry_wkb"]) for r in records]
    merged = [
        {**c, "values": list(itertools.chain.from_iterable(
            r["features"]["columns"][k]["values"] for r in records))}
        for k, c in enumerate(records[0]["features"]["columns"])
    ]  # fmt: skip
    try:
        whole = attribute_table(merged, sum(counts))
    except Exception:  # a bad value: every event is built alone and reports its own
        return {}
    starts = itertools.accumulate(counts, initial=0)
    return {i: whole.slice(a, n) for i, a, n in zip(members, starts, counts, strict=False)}
