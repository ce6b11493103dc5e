"""Domain codes against a column read as text because its values mix JSON types (pure).

A GeoJSON property holding ``1`` in one feature and ``"A"`` in another cannot be one
arrow type, so the reader keeps it as text (``"1"``, ``"A"``) and records each row's JSON
type (:data:`worker.core.model.VALUE_KINDS_KEY`). Compared as text, the number ``1``
matched the string code ``"1"``: a fresh-user session saw such a batch pass a domain
clause, against the rule that strings and numbers are never coerced. Here each value is
compared as the producer wrote it: strings with string codes, integers with integer
codes, whole doubles with integer codes too (JSON has one number type), anything else
with nothing.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from worker.core.model import VALUE_KINDS_KEY, VALUE_TYPES_KEY

__all__ = ["JsonText", "MixedColumn", "mixed_column", "unknown_mixed"]


class JsonText(str):
    """A list or object value kept as its JSON text: equal to no string code."""


@dataclass(frozen=True)
class MixedColumn:
    """A text column's rows as written: ``values`` (list, None for null; lists and
    objects stay JSON text) and ``types`` (the JSON types present, e.g. ``integer,
    string``)."""

    values: list[Any]
    types: str


def mixed_column(field: pa.Field, col: pa.ChunkedArray | pa.Array) -> MixedColumn | None:
    """The rows of ``col`` as written, when ``field`` carries one JSON type per row
    (:data:`~worker.core.model.VALUE_KINDS_KEY`, one letter per row of ``col``); else None.
    """
    meta = field.metadata or {}
    kinds = meta.get(VALUE_KINDS_KEY)
    if kinds is None or len(kinds) != len(col):
        return None
    values: list[Any] = []
    for text, kind in zip(col.to_pylist(), kinds.decode("ascii", "replace"), strict=True):
        if text is None or kind == "s":
            values.append(text)
            continue
        if kind in "lo":
            values.append(JsonText(text))
            continue
        try:
            values.append(json.loads(text))
        except (TypeError, ValueError):  # not written by the reader: keep the text
            values.append(text)
    types = meta.get(VALUE_TYPES_KEY, b"").decode("utf-8", "replace").replace(",", ", ")
    return MixedColumn(values, types)


def unknown_mixed(column: MixedColumn, codes: Iterable[Any]) -> tuple[np.ndarray, list[Any]]:
    """bool (N,) of the non-null values that are no code, compared as written, and the
    first 10 distinct of them in order of appearance."""
    strings = {c for c in codes if type(c) is str}
    integers = {c for c in codes if type(c) is int}
    floats = {c for c in codes if type(c) is float}
    mask = np.zeros(len(column.values), dtype=bool)
    shown: dict[tuple[type, Any], Any] = {}  # keyed by type too: True == 1 in a dict
    for i, v in enumerate(column.values):
        if v is None or _known(v, strings, integers, floats):
            continue
        mask[i] = True
        if len(shown) < 10:
            shown.setdefault((type(v), v), v)
    return mask, list(shown.values())


def _known(v: Any, strings: set[str], integers: set[int], floats: set[float]) -> bool:
    if type(v) is str:
        return v in strings
    if type(v) is int:
        return v in integers or float(v) in floats
    if type(v) is float:
        whole = math.isfinite(v) and v == math.floor(v)
        return v in floats or (whole and int(v) in integers)
    return False  # booleans, lists, objects: no code is one (no coercion)
