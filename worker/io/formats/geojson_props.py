"""The attribute schema of a GeoJSON file learned piece by piece (:mod:`.geojson_stream`).

The whole read (:func:`worker.io.formats.geojson._properties_table`) types each property
by arrow's inference over all its values. Read in pieces, :class:`PropertyTypes` infers
each piece's type and merges them: the same type (a piece of nulls only adds none) stays;
``int64`` and ``double`` give ``double`` (arrow's inference over both); any other
disagreement, or a piece arrow cannot type, makes the property text with its JSON types
recorded (:func:`~worker.io.formats.base.text_column`), as the whole read does with
values of several JSON types. Structs or lists whose members differ between pieces are
text here where the whole read may find one wider type (a known difference, rare in
GeoJSON properties). Nulls are counted per property (a missing member counts as null).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from worker.core.model import VALUE_KINDS_KEY
from worker.io.formats.base import canonical_table, text_column
from worker.io.formats.canonical import MAX_NESTING, nesting

__all__ = ["PropertyTypes", "TooDeep"]


class TooDeep(ValueError):
    """A piece's property nests deeper than :data:`~.canonical.MAX_NESTING`: the stream
    gives the file to the whole read, whose refusal names it."""


@dataclass
class _Seen:
    """One property over the pieces read so far."""

    types: list[pa.DataType] = field(default_factory=list)
    nulls: int = 0
    reason: str = ""
    #: one value of each Python type seen (the JSON types of a text column)
    exemplars: dict[type, Any] = field(default_factory=dict)

    def merged(self) -> pa.DataType | None:
        """The whole file's type, None for text (values of several JSON types)."""
        if self.reason:
            return None
        if not self.types:
            return pa.null()
        if all(t == self.types[0] for t in self.types):
            return self.types[0]
        if set(self.types) == {pa.int64(), pa.float64()}:
            return pa.float64()
        return None


def _refusal(seen: _Seen) -> str:
    """Arrow's refusal of one value of each JSON type, in the order first seen: the
    whole read's reason when its first value of each type comes first."""
    try:
        pa.array(list(seen.exemplars.values()))
    except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError) as exc:
        return str(exc)
    return "the pieces of the file have different types"


@dataclass
class PropertyTypes:
    """Property names (first appearance order), types and null counts of a file."""

    seen: dict[str, _Seen] = field(default_factory=dict)
    rows: int = 0

    def observe(self, props: Sequence[dict[str, Any]]) -> None:
        """Take in one piece of features' properties (one mapping per feature)."""
        names = dict.fromkeys(k for p in props for k in p)
        for name in self.seen:
            if name not in names:
                self.seen[name].nulls += len(props)
        for name in names:
            s = self.seen.get(name)
            if s is None:  # null in every feature before this piece
                s = self.seen[name] = _Seen(nulls=self.rows)
            values = [p.get(name) for p in props]
            s.nulls += values.count(None)
            for kind in set(map(type, values)) - s.exemplars.keys() - {type(None)}:
                s.exemplars[kind] = next(v for v in values if type(v) is kind)
            if s.reason:
                continue
            try:
                t = pa.array(values).type
            except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError) as exc:
                s.reason = str(exc)
                continue
            if nesting(t) > MAX_NESTING:
                raise TooDeep(name)
            if t != pa.null() and t not in s.types:
                s.types.append(t)
        self.rows += len(props)

    def null_counts(self, rows: int) -> dict[str, int]:
        """Nulls of each property over the ``rows`` features read."""
        return {name: s.nulls for name, s in self.seen.items()}

    def _field(self, name: str) -> pa.Field:
        s = self.seen[name]
        t = s.merged()
        if t is not None:
            return pa.field(name, t)
        return text_column(name, list(s.exemplars.values()), s.reason or _refusal(s))[0]

    def empty(self, path: str) -> pa.Table:
        """The attribute columns of the whole file, no rows (canonical types)."""
        fields = [self._field(n) for n in self.seen]
        return canonical_table(pa.schema(fields).empty_table(), path)

    def table(self, props: Sequence[dict[str, Any]], path: str) -> pa.Table:
        """One chunk's properties (a mapping per feature) as the whole file's columns."""
        if not self.seen:
            return pa.table({"_": pa.nulls(len(props))}).drop_columns(["_"])
        fields, arrays = [], []
        for name in self.seen:
            values = [p.get(name) for p in props]
            fld = self._field(name)
            if fld.metadata and VALUE_KINDS_KEY in fld.metadata:
                own, arr = text_column(name, values)
                meta = dict(fld.metadata)
                meta[VALUE_KINDS_KEY] = own.metadata[VALUE_KINDS_KEY]
                fld = fld.with_metadata(meta)
            else:
                arr = pa.array(values, type=fld.type)
            fields.append(fld)
            arrays.append(arr)
        return canonical_table(pa.Table.from_arrays(arrays, schema=pa.schema(fields)), path)
