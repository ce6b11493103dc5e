"""Several events' attribute columns built at once (pure, no Kafka).

Building an event's inline columns (:func:`~worker.io.codec.events.attribute_table`) costs
an Arrow array per column, about 15 us each however few its values: 9% of routing a
one-feature event of five columns. :func:`batches_from_events` builds the columns of the
events that declare the same columns (names and types, in order) once over all their
values and gives each event its rows (a zero-copy slice), the same table as its own.
Events whose columns cannot be built together are built alone, so a bad value is
reported as alone, naming the event's own row.

With ``derive_schemas`` each inline batch carries the schema of the columns sent
(:func:`~worker.core.columns.derive_schema`, what the gate judges instead of the
producer's declaration), derived once per group: the names and logical types from the
group's table, each event's nullability from its rows' nulls (8% of routing a
one-feature event was deriving its schema and replacing its batch).
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

import numpy as np
import pyarrow as pa

from worker.core.columns import derive_schema
from worker.core.event_batches import Rows
from worker.core.model import Batch, FieldSpec
from worker.io.codec.events import attribute_table, batch_from_event

__all__ = ["batches_from_events"]


def batches_from_events(
    records: Sequence[Mapping[str, Any]], *, derive_schemas: bool = False
) -> list[Batch | Exception]:
    """:func:`~worker.io.codec.events.batch_from_event` of each decoded BatchArrival
    record, in order: its Batch, or the exception it raises (a :class:`DecodeError`, or
    whatever Arrow raised, e.g. an integer beyond 64 bits), for the caller to handle as
    the event's own. ``derive_schemas``: an inline batch's ``schema_fields`` are
    ``derive_schema`` of its attribute table (a batch by reference keeps the declared)."""
    tables: dict[int, tuple[Rows, tuple[FieldSpec, ...] | None]] = {}
    groups: dict[tuple[tuple[str, str], ...], list[int]] = {}
    distinct: dict[tuple[tuple[str, str], ...], bool] = {}  # per key: names distinct
    for i, r in enumerate(records):
        if (key := _columns_key(r, distinct)) is not None:
            groups.setdefault(key, []).append(i)
    for members in groups.values():
        if len(members) > 1:
            built = _built_together([records[i] for i in members], members, derive_schemas)
            tables.update(built)
    out: list[Batch | Exception] = []
    for i, r in enumerate(records):
        table, fields = tables.get(i, (None, None))
        try:
            batch = batch_from_event(r, table, fields)
            if derive_schemas and fields is None and r["features"] is not None:
                batch = replace(batch, schema_fields=derive_schema(batch.attributes))
            out.append(batch)
        except Exception as exc:  # the event's own failure, handled as when decoded alone
            out.append(exc)
    return out


def _columns_key(
    record: Mapping[str, Any], distinct: dict[tuple[tuple[str, str], ...], bool]
) -> tuple[tuple[str, str], ...] | None:
    """The (name, type) of each inline column of ``record``, or None when its columns are
    built alone: no inline features, a payload URI too, no columns, duplicate names, or a
    column whose length is not the geometries' (each an error it reports itself).
    ``distinct`` keeps, per key seen, whether its names are distinct (checked once)."""
    feats = record.get("features")
    if feats is None or record.get("payload_uri") is not None:
        return None
    columns = feats["columns"]
    if not columns:
        return None
    n = len(feats["geometry_wkb"])
    key = tuple([(c["name"], c["type"]) for c in columns if len(c["values"]) == n])
    if len(key) != len(columns):
        return None
    ok = distinct.get(key)
    if ok is None:
        ok = distinct[key] = len({name for name, _ in key}) == len(key)
    return key if ok else None


def _built_together(
    records: list[Mapping[str, Any]], members: list[int], derive: bool
) -> dict[int, tuple[Rows, tuple[FieldSpec, ...] | None]]:
    """``{index: (table, schema or None)}`` of ``records`` (same columns), built as one
    table and sliced, with each slice's ``derive_schema`` when ``derive``; nothing when
    some value does not fit its column (each event is then built alone)."""
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
    starts = list(itertools.accumulate(counts, initial=0))
    fields = _segment_schemas(whole, np.asarray(starts)) if derive else [None] * len(counts)
    return {
        i: (Rows(whole, a, n), f)
        for i, a, n, f in zip(members, starts, counts, fields, strict=False)
    }


def _segment_schemas(whole: pa.Table, starts: np.ndarray) -> list[tuple[FieldSpec, ...]]:
    """``derive_schema`` of each slice ``starts[i]`` to ``starts[i + 1]`` of ``whole``:
    the names and logical types of the whole table's, a field nullable in a slice holding
    a null; slices with the same nullability share one tuple."""
    base = derive_schema(whole)
    nulls = []
    for spec, column in zip(base, whole.columns, strict=True):
        if not spec.nullable:  # no null in the whole table: none in any slice
            nulls.append(np.zeros(len(starts) - 1, dtype=bool))
            continue
        mask = column.is_null().to_numpy(zero_copy_only=False)
        total = np.concatenate(([0], np.cumsum(mask, dtype=np.int64)))
        nulls.append(total[starts[1:]] - total[starts[:-1]] > 0)
    shared: dict[tuple[bool, ...], tuple[FieldSpec, ...]] = {}
    out = []
    for pattern in zip(*(n.tolist() for n in nulls), strict=True) if nulls else ():
        fields = shared.get(pattern)
        if fields is None:
            fields = shared[pattern] = tuple(
                replace(spec, nullable=null) for spec, null in zip(base, pattern, strict=True)
            )
        out.append(fields)
    return out or [()] * (len(starts) - 1)
