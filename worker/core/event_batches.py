"""The Batch of a decoded event: its fields written at once, its rows a window (pure).

**Fields written at once.** A frozen dataclass's ``__init__`` writes each of its fields
with a call of its own (``object.__setattr__``): a :class:`~worker.core.model.Batch` of 22
fields took about 2.7 us to build, once per event. :func:`event_batch` writes them into
the new instance's ``__dict__`` at once (1.5 us), as ``copy.copy`` builds a copy: the
same fields, values and defaults (each default factory called anew), the instance as
frozen as any other (its ``__setattr__`` still refuses), its fields read as fast.

**Rows cut on first read.**
A poll batch's small events of one set of columns get their attribute tables built as
one table (:func:`worker.io.codec.event_groups.batches_from_events`). Each event's Batch
used to hold its own slice of it (a ``Table.slice`` per event, about 1 us made and
freed), and the group evaluating them joined those slices again (``concat_tables`` of
128 one-row tables, a column of 128 chunks). A :class:`RowsBatch` holds its rows as a
:class:`Rows` window of the joined table instead: its ``attributes`` are cut on first read
(a batch evaluated alone, a record that reads them), and
:func:`joined_attributes` hands a group of consecutive windows of one table its rows as
one slice of that table, in one chunk. The rows, the schema and every value are those of
the batch's own slice.

**Trailing fields.** An event's ``edges``, ``orientation`` and ``feature_ids`` checked
(:func:`checked_edges`, ...), as :func:`worker.io.codec.events.batch_from_event` reads them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import MISSING, fields
from typing import Any

import pyarrow as pa

from worker.core._util.text import clip
from worker.core.errors import DecodeError
from worker.core.model import Batch

__all__ = [
    "MAX_FEATURE_ID_CHARS", "Rows", "RowsBatch", "cap_feature_id", "checked_edges",
    "checked_feature_ids", "checked_orientation", "event_batch", "joined_attributes",
]  # fmt: skip

#: Batch's fields with a plain default, and those with a default factory.
_DEFAULTS = {f.name: f.default for f in fields(Batch) if f.default is not MISSING}
_FACTORIES = tuple(
    (f.name, f.default_factory) for f in fields(Batch) if f.default_factory is not MISSING
)
_NAMES = frozenset(f.name for f in fields(Batch))


def event_batch(**values: Any) -> Batch:
    """``Batch(**values)``, its fields written at once: ``values`` and the defaults of the
    fields not given; a :class:`RowsBatch` when ``attributes`` is a :class:`Rows` window.

    Raises
    ------
    TypeError
        A field without a default missing from ``values``, or a name that is not a field.
    """
    cls = RowsBatch if type(values.get("attributes")) is Rows else Batch
    batch = object.__new__(cls)
    own = batch.__dict__
    own.update(_DEFAULTS)
    own.update(values)  # (not as keywords: a copy of values)
    for name, factory in _FACTORIES:
        if name not in values:
            own[name] = factory()
    if own.keys() != _NAMES:
        raise TypeError(f"Batch takes its fields, not {sorted(values)}")
    if cls is RowsBatch:
        object.__setattr__(batch, "_rows", own.pop("attributes"))
    return batch


class Rows:
    """Rows ``start`` to ``start + count`` of ``table`` (a window; nothing is cut)."""

    __slots__ = ("count", "start", "table")

    def __init__(self, table: pa.Table, start: int, count: int) -> None:
        self.table = table
        self.start = start
        self.count = count

    def cut(self) -> pa.Table:
        """The window's rows as a table (a zero-copy slice of :attr:`table`)."""
        return self.table.slice(self.start, self.count)


class _Attributes:
    """:attr:`RowsBatch.attributes`: the table set, a :class:`Rows` window cut (and kept)
    on first read."""

    def __get__(self, batch: Any, owner: type | None = None) -> Any:
        if batch is None:
            return self
        value = batch._rows
        if type(value) is Rows:
            value = value.cut()
            object.__setattr__(batch, "_rows", value)  # (a race cuts twice, equal tables)
        return value

    def __set__(self, batch: Any, value: Any) -> None:
        object.__setattr__(batch, "_rows", value)


class RowsBatch(Batch):
    """A :class:`~worker.core.model.Batch` built with a :class:`Rows` window (or a table)
    as its ``attributes``: the same fields, the window cut on first read. It equals the
    Batch of the same fields, and copies and pickles as one."""

    __slots__ = ("_rows",)
    _rows: Any  # the table, or the window not cut yet
    attributes = _Attributes()

    @property
    def rows(self) -> Rows | None:
        """The window not cut yet, else None."""
        value = self._rows
        return value if type(value) is Rows else None

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Batch):
            return NotImplemented
        return _values(self) == _values(other)

    __hash__ = None  # type: ignore[assignment]  # as Batch's: a table is not hashable

    def __reduce__(self) -> tuple[Any, ...]:
        return Batch, _values(self)


def _values(batch: Batch) -> tuple[Any, ...]:
    """The values of ``batch``'s fields, in order."""
    return tuple(getattr(batch, f.name) for f in fields(Batch))


def joined_attributes(batches: Sequence[Batch]) -> pa.Table | None:
    """The attribute rows of ``batches`` (one or more) one after the other: one slice of
    one table when they are consecutive :class:`Rows` windows of it (not cut yet), else
    their tables joined; None when the tables differ in schema (field metadata included)
    or a table's rows are not its batch's features."""
    joined = _windows_joined(batches)
    if joined is not None:
        return joined
    first = batches[0].attributes.schema
    for b in batches:
        table = b.attributes
        if table.num_rows != len(b.geometries_wkb) or not table.schema.equals(first, True):
            return None
    return pa.concat_tables([b.attributes for b in batches])


def _windows_joined(batches: Sequence[Batch]) -> pa.Table | None:
    """:func:`joined_attributes` of consecutive windows of one table, else None."""
    first = batches[0]
    rows = first.rows if isinstance(first, RowsBatch) else None
    if rows is None:
        return None
    table, start = rows.table, rows.start
    at = start
    for b in batches:
        w = b.rows if isinstance(b, RowsBatch) else None
        if w is None or w.table is not table or w.start != at:
            return None
        if w.count != len(b.geometries_wkb):  # a table's rows are its batch's features
            return None
        at += w.count
    return table.slice(start, at - start)


# -- an event's trailing fields, checked (the event is untrusted) --------------------------

#: Longest feature id carried in an event, in characters (longer ones are clipped).
MAX_FEATURE_ID_CHARS = 256


def checked_feature_ids(value: Any, n: int) -> tuple[str | int | float | None, ...] | None:
    """The event's feature ids, checked: one per geometry; strings clipped to
    :data:`MAX_FEATURE_ID_CHARS` (the event is untrusted).

    Raises
    ------
    DecodeError
        Not one id per geometry.
    """
    if value is None:
        return None
    if len(value) != n:
        raise DecodeError(f"feature_ids has {len(value)} ids for {n} geometries")
    return tuple(cap_feature_id(v) if isinstance(v, str) else v for v in value)


def cap_feature_id(text: str) -> str:
    """A feature id as sent or read (untrusted) cut to at most
    :data:`MAX_FEATURE_ID_CHARS` characters, the cut marked by a final "…" (idempotent: a
    capped id read back stays as it is)."""
    if len(text) <= MAX_FEATURE_ID_CHARS:
        return text
    return text[: MAX_FEATURE_ID_CHARS - 1] + "…"


def checked_edges(value: Any) -> str:
    """An event's ``edges``: null or ``planar`` is ``"planar"``, else ``"spherical"`` or
    :class:`DecodeError`."""
    if value in (None, "planar"):
        return "planar"
    if value != "spherical":
        raise DecodeError(f"edges {clip(str(value), 40)!r}: expected null, planar or spherical")
    return "spherical"


def checked_orientation(value: Any) -> str | None:
    """An event's ``orientation``: None or ``"counterclockwise"``, else :class:`DecodeError`."""
    if value is not None and value != "counterclockwise":
        raise DecodeError(
            f"orientation {clip(str(value), 40)!r}: expected null or counterclockwise"
        )
    return None if value is None else "counterclockwise"
