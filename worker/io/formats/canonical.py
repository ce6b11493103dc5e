"""The canonical batch: attribute columns in the plain Arrow types every clause knows,
their text valid UTF-8. Applied by every reader (:func:`canonical_table`), so the core
never sees a format-specific representation (Arrow columnar format: view, large,
dictionary and run-end encoded layouts hold the same values as the plain ones).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from worker.core._util.text import clip
from worker.core.errors import PayloadCorrupt

__all__ = ["MAX_NESTING", "UndecodableText", "canonical_table", "canonical_type", "nesting"]

#: Deepest nesting of lists, structs and maps in one attribute (as geometry collections
#: and contract YAML are bounded at 32 levels): the type walks here, arrow's and the
#: reports' recurse, and a GeoJSON property 700 lists deep raised RecursionError.
MAX_NESTING = 32


class UndecodableText(PayloadCorrupt):
    """A text column holding bytes that are not UTF-8 after the reader decoded the file
    (Arrow strings are UTF-8 by definition): the file's encoding is not the one its
    format's rule names. Never handed to an evaluator."""


def canonical_type(t: pa.DataType) -> pa.DataType:
    """The plain Arrow counterpart of ``t``, the type every clause kernel knows.

    ``string_view`` and ``large_string`` -> ``string``; ``binary_view`` and
    ``large_binary`` -> ``binary``; ``list_view``, ``large_list_view`` and ``large_list``
    -> ``list``; a dictionary or run-end encoded type -> its value type; struct fields,
    list items and map keys and items likewise, at any depth (``list<string_view>`` ->
    ``list<string>``). Any other type is returned as it is. Polars, DuckDB and pyarrow
    21+ write view types to Parquet (Arrow columnar format, "Variable-size Binary View
    Layout"); pandas categoricals become dictionaries.
    """
    if pa.types.is_dictionary(t) or pa.types.is_run_end_encoded(t):
        return canonical_type(t.value_type)
    if pa.types.is_string_view(t) or pa.types.is_large_string(t):
        return pa.string()
    if pa.types.is_binary_view(t) or pa.types.is_large_binary(t):
        return pa.binary()
    if any(check(t) for check in _LISTS):
        return pa.list_(t.value_field.with_type(canonical_type(t.value_type)))
    if pa.types.is_fixed_size_list(t):
        return pa.list_(t.value_field.with_type(canonical_type(t.value_type)), t.list_size)
    if pa.types.is_map(t):
        key = t.key_field.with_type(canonical_type(t.key_type))
        return pa.map_(key, t.item_field.with_type(canonical_type(t.item_type)), t.keys_sorted)
    if pa.types.is_struct(t):
        fields = [t.field(i) for i in range(t.num_fields)]
        return pa.struct([f.with_type(canonical_type(f.type)) for f in fields])
    return t


_LISTS = (
    pa.types.is_list,
    pa.types.is_large_list,
    pa.types.is_list_view,
    pa.types.is_large_list_view,
)


def canonical_table(
    table: pa.Table, where: Path | str, text_fix: str = "write the file's text as UTF-8"
) -> pa.Table:
    """``table`` with every column of its :func:`canonical_type` and its text checked.

    The one place where a reader's columns become the canonical batch: every reader
    applies it to the attributes it returns, so no clause meets a type its kernels lack
    (``pyarrow.compute.is_in`` has no ``string_view`` kernel: "evaluation error:
    ArrowNotImplementedError"). Field names, nullability and metadata are kept; values
    are unchanged (``to_pylist()`` is equal before and after).

    Raises
    ------
    PayloadCorrupt
        A column whose lists, structs and maps nest deeper than :data:`MAX_NESTING`.
    UndecodableText
        A text column (also inside a list, struct or map) with bytes that are not UTF-8,
        naming the file, the column, the first such row and its bytes (clipped), and
        ``text_fix`` (the reader's way of declaring the encoding).
    """
    columns, changed = [], False
    for f, col in zip(table.schema, table.columns, strict=True):
        _check_nesting(where, f)
        target = canonical_type(f.type)
        if target != f.type:
            col, changed = _cast(col, target), True
        _check_text(where, f.name, col, text_fix)
        columns.append(col)
    if not changed:
        return table
    fields = [f.with_type(c.type) for f, c in zip(table.schema, columns, strict=True)]
    return pa.Table.from_arrays(columns, schema=pa.schema(fields, table.schema.metadata))


def nesting(t: pa.DataType) -> int:
    """Levels of lists, structs and maps in ``t`` (0 for a flat type), counted without
    recursion (a type of any depth is safe to measure)."""
    depth, level = 0, [t]
    while level:
        level = [c.field(i).type for c in level for i in range(c.num_fields)]
        depth += 1 if level else 0
    return depth


def _check_nesting(where: Path | str, f: pa.Field) -> None:
    depth = nesting(f.type)
    if depth > MAX_NESTING:
        raise PayloadCorrupt(
            f"{where}: attribute {clip(f.name, 60)!r} nests lists and objects {depth} levels "
            f"deep, more than the {MAX_NESTING} an attribute may have; flatten it, or write "
            "it as a JSON text string"
        )


def _cast(col: pa.ChunkedArray, target: pa.DataType) -> pa.ChunkedArray:
    """``col`` as ``target``, chunk by chunk. Runs and list views at the top are rebuilt
    here: no cast kernel decodes runs, and pyarrow 26 casts ``list_view`` to ``list``
    with an offsets buffer one entry short (an invalid array). Any cast result that is
    not a valid array is rebuilt from the values."""
    return pa.chunked_array([_cast_chunk(c, target) for c in col.chunks], target)


def _cast_chunk(chunk: pa.Array, target: pa.DataType) -> pa.Array:
    source = chunk
    if pa.types.is_run_end_encoded(chunk.type):
        chunk = pc.run_end_decode(chunk)
    if pa.types.is_list_view(chunk.type) or pa.types.is_large_list_view(chunk.type):
        chunk = _list_of_view(chunk)
    try:
        out = chunk if chunk.type == target else chunk.cast(target)
        out.validate()
    except (pa.ArrowNotImplementedError, pa.ArrowInvalid):  # e.g. runs inside a struct
        return pa.array(source.to_pylist(), target)
    return out


def _list_of_view(chunk: pa.Array) -> pa.Array:
    """A ``list`` array of the values of a ``list_view`` one (views may overlap or leave
    gaps, so the values are taken row by row)."""
    valid = np.asarray(chunk.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
    starts = chunk.offsets.to_numpy(zero_copy_only=False).astype(np.int64)
    sizes = np.where(valid, chunk.sizes.fill_null(0).to_numpy(zero_copy_only=False), 0)
    ends = np.cumsum(sizes)
    index = np.repeat(starts - (ends - sizes), sizes) + np.arange(int(ends[-1]) if len(ends) else 0)
    offsets = pa.array(np.concatenate([[0], ends]).astype(np.int64), pa.int64())
    values = chunk.values
    values = _cast_chunk(values, canonical_type(values.type)).take(pa.array(index, pa.int64()))
    mask = pa.array(~valid)
    return pa.LargeListArray.from_arrays(offsets, values, mask=mask)


def _has_text(t: pa.DataType) -> bool:
    if pa.types.is_string(t):
        return True
    return any(_has_text(t.field(i).type) for i in range(t.num_fields))


def _check_text(where: Path | str, name: str, col: pa.ChunkedArray, fix: str) -> None:
    """Raise :class:`UndecodableText` when a text value of ``col`` is not UTF-8."""
    if not _has_text(col.type):
        return
    for chunk in col.chunks:
        try:
            chunk.validate(full=True)  # checks every string is UTF-8
        except pa.ArrowInvalid:
            break
    else:
        return
    row, raw = _first_bad_row(col)
    at = f"row {row} ({clip(repr(raw), 60)})" if row is not None else "a nested value"
    raise UndecodableText(
        f"{where}: column {clip(name, 80)!r} holds text that is not UTF-8 at {at}: the "
        f"bytes are in another encoding than the file says; {fix}"
    )


def _first_bad_row(col: pa.ChunkedArray) -> tuple[int | None, bytes]:
    if not pa.types.is_string(col.type):
        return None, b""
    for i, value in enumerate(col.cast(pa.binary()).to_pylist()):
        if value is not None:
            try:
                value.decode("utf-8")
            except UnicodeDecodeError:
                return i, value
    return None, b""
