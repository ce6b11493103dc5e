"""The attribute schema of a GeoJSON file learned piece by piece (:mod:`.geojson_stream`).

The whole read (:func:`worker.io.formats.geojson._properties_table`) types each property
by arrow's inference over all its values. Read in pieces, :class:`PropertyTypes` infers
each piece's type and merges them as arrow's inference over all the values would
(:meth:`_Seen.merged`: pyarrow's permissive unification of the pieces' types, which
stop 35's differential tests found equal to the inference over thousands of generated
columns, except an integer beyond 2**53 meeting a double, or an integer beyond int64
meeting anything else, which the inference refuses); a column the inference refuses,
or a piece arrow cannot type, makes the property text with its JSON types recorded
(:func:`~worker.io.formats.base.text_column`), as the whole read does. Only the text
column's unread ``reason`` metadata may name another conflict than the whole read's.
Nulls are counted per property (a missing member counts as null).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from worker.core.model import VALUE_KINDS_KEY
from worker.io.formats.base import canonical_table, text_column
from worker.io.formats.canonical import MAX_NESTING, nesting

__all__ = ["BOOLS_AMONG_NUMBERS", "PropertyTypes", "TooDeep", "coerced_bools"]


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

    #: the first value of each piece type, in the order the types were first seen
    firsts: dict[pa.DataType, Any] = field(default_factory=dict)
    #: leaf paths (see :func:`_leaves`) where an integer beyond 2**53 was seen
    big_ints: set[tuple[str | None, ...]] = field(default_factory=set)

    def take(self, name: str, values: list[Any]) -> None:
        """One piece's values of this property (None for null or missing). Raises TooDeep
        when they nest deeper than :data:`~.canonical.MAX_NESTING`."""
        self.nulls += values.count(None)
        for kind in set(map(type, values)) - self.exemplars.keys() - {type(None)}:
            self.exemplars[kind] = next(v for v in values if type(v) is kind)
        if self.reason:
            return
        try:
            arr = pa.array(values)
        except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError) as exc:
            self.reason = str(exc)
            return
        t = arr.type
        if nesting(t) > MAX_NESTING:
            raise TooDeep(name)
        if coerced_bools(values, t):
            self.reason = BOOLS_AMONG_NUMBERS
            return
        if t == pa.null():
            return
        if "int64" in str(t):
            self.big_ints |= _big_int_paths(arr)
        if t not in self.types:
            self.types.append(t)
            self.firsts[t] = next(v for v in values if v is not None)

    def merged(self) -> pa.DataType | None:
        """The whole file's type, None for text: arrow's inference over all the values,
        found from the pieces' types (pyarrow's permissive unification: null widens, int64
        and double give double, structs take every member), except where the inference
        refuses what the unification takes: an integer beyond 2**53 where another piece
        has a double (no double holds it exactly), or a uint64 (an integer beyond int64)
        beside any other type."""
        if self.reason:
            return None
        if not self.types:
            return pa.null()
        if all(t == self.types[0] for t in self.types):
            return self.types[0]
        by_path: dict[tuple[str | None, ...], set[pa.DataType]] = {}
        for t in self.types:
            for path, leaf in _leaves(t):
                by_path.setdefault(path, set()).add(leaf)
        for path, kinds in by_path.items():
            kinds.discard(pa.null())
            if pa.uint64() in kinds and len(kinds) > 1:
                return None
            if path in self.big_ints and pa.float64() in kinds:
                return None
        try:
            schemas = [pa.schema([("v", t)]) for t in self.types]
            return pa.unify_schemas(schemas, promote_options="permissive").field("v").type
        except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError):
            return None


#: The step of a path into a list's items (None: no JSON member name is None).
_ITEM = None


def _leaves(t: pa.DataType) -> list[tuple[tuple[str | None, ...], pa.DataType]]:
    """(path, type) of each leaf of ``t``: a struct member adds its name, a list
    :data:`_ITEM`."""
    out: list[tuple[tuple[str | None, ...], pa.DataType]] = []
    stack: list[tuple[tuple[str | None, ...], pa.DataType]] = [((), t)]
    while stack:
        path, node = stack.pop()
        if pa.types.is_struct(node):
            stack.extend(
                ((*path, node.field(i).name), node.field(i).type) for i in range(node.num_fields)
            )
        elif pa.types.is_list(node) or pa.types.is_large_list(node):
            stack.append(((*path, _ITEM), node.value_type))
        else:
            out.append((path, node))
    return out


def coerced_bools(values: Sequence[Any], t: pa.DataType) -> bool:
    """Whether arrow's inference of ``values`` (JSON values) as ``t`` turned a boolean into
    a number: it types ``[1.5, true]`` as double ``[1.5, 1.0]`` (and refuses ``[1, true]``),
    also inside structs and lists. The readers then read the column as text, values of two
    JSON types. A flat column costs one pass over the values' types."""
    numeric = {
        p for p, leaf in _leaves(t) if pa.types.is_floating(leaf) or pa.types.is_integer(leaf)
    }
    if not numeric:
        return False
    return any(bool in set(map(type, _at(values, path))) for path in numeric)


def _at(values: Sequence[Any], path: tuple[str | None, ...]) -> Sequence[Any]:
    """The values at ``path`` (see :func:`_leaves`) under each of ``values``: one list
    comprehension per step, no Python call per value."""
    for step in path:
        if step is _ITEM:
            values = [x for v in values if type(v) is list for x in v]
        else:
            values = [v.get(step) for v in values if type(v) is dict]
    return values


#: The reason a column of booleans among numbers is text (:func:`coerced_bools`).
BOOLS_AMONG_NUMBERS = "booleans among numbers (arrow would read true as 1)"


def _big_int_paths(arr: pa.Array) -> set[tuple[str | None, ...]]:
    """Leaf paths of ``arr`` holding an int64 beyond +-2**53 (vectorized per leaf)."""
    found: set[tuple[str | None, ...]] = set()
    stack: list[tuple[tuple[str | None, ...], pa.Array]] = [((), arr)]
    while stack:
        path, node = stack.pop()
        t = node.type
        if pa.types.is_struct(t):
            stack.extend(((*path, t.field(i).name), node.field(i)) for i in range(t.num_fields))
        elif pa.types.is_list(t) or pa.types.is_large_list(t):
            stack.append(((*path, _ITEM), node.flatten()))
        elif t == pa.int64() and node.null_count < len(node):
            extremes = pc.min_max(node)
            if max(-extremes["min"].as_py(), extremes["max"].as_py()) > _EXACT_INT:
                found.add(path)
    return found


#: Largest integer every smaller one of which a double holds exactly (IEEE 754).
_EXACT_INT = 2**53


def _no_rows(fld: pa.Field) -> pa.Field:
    """``fld`` with the per-row JSON kinds of a table of no rows."""
    if not fld.metadata or VALUE_KINDS_KEY not in fld.metadata:
        return fld
    return fld.with_metadata({**fld.metadata, VALUE_KINDS_KEY: b""})


def _refusal(seen: _Seen) -> str:
    """Arrow's refusal of one value of each JSON type, in the order first seen: the
    whole read's reason when its first value of each type comes first."""
    for values in (list(seen.exemplars.values()), list(seen.firsts.values())):
        try:
            if coerced_bools(values, pa.array(values).type):
                return BOOLS_AMONG_NUMBERS
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
            s.take(name, [p.get(name) for p in props])
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
        """The attribute columns of the whole file, no rows (canonical types). A text
        column's JSON kinds, one per row (:data:`VALUE_KINDS_KEY`), are none: a clause
        measuring this table (the domain clause does, before the chunks) then finds the
        column mixed, as in each chunk, not plain text."""
        fields = [_no_rows(self._field(n)) for n in self.seen]
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
