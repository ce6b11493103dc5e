"""Numeric DBF fields holding text, read as the file holds them (field case N05b's kind:
a column mixing value types, through a shapefile).

A dBase ``N`` or ``F`` field is text of a fixed width; GDAL reads ``sev`` or ``n/a`` in
it as 0 with a warning ("parsed incompletely"), so a clause would judge a number the file
does not hold. :func:`mixed_number_fields` finds such fields with one vectorised test of
the record bytes and reads each as text with the mix recorded
(:func:`worker.io.formats.base.text_column`), as the GeoJSON reader reads a property mixing
JSON types, and the GeoPackage reader a column of mixed storage classes
(:mod:`.gpkg_types`).
"""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path

import numpy as np
import pyarrow as pa

from worker.io.formats.base import text_column
from worker.io.formats.sidecars import open_sidecar

__all__ = ["mixed_number_fields"]

#: Whether each byte value may be part of a number in a numeric DBF field (blank is null;
#: ``*`` fills a value too wide for its field): a table, indexed by the record bytes.
_NUMBER_BYTE = np.zeros(256, dtype=bool)
_NUMBER_BYTE[np.frombuffer(b"0123456789 .+-eE*", dtype=np.uint8)] = True


def _dbf(path: Path, member: str | None) -> bytes | None:
    """The bytes of the DBF beside ``path`` (or beside the ``.shp`` ``member`` of the zip
    ``path``), or None when there is none."""
    with open_sidecar(path, member, ".dbf") as fh:
        return None if fh is None else fh.read()


def _fields(data: bytes, start: int, encoding: str) -> list[tuple[str, str, int, int, int]]:
    """(name, type letter, offset in the record, width, decimals) of each field descriptor
    (32 bytes each from byte 32 to the 0x0D terminator)."""
    out, offset = [], 1  # a record starts with its deletion flag
    for at in range(32, start - 31, 32):
        d = data[at : at + 32]
        if d[0] == 0x0D:
            break
        name = d[:11].split(b"\0")[0].decode(encoding, "replace")
        out.append((name, chr(d[11]), offset, d[16], d[17]))
        offset += d[16]
    return out


def _value(text: str, decimals: int) -> int | float | str | None:
    """The number ``text`` (a DBF cell, stripped) is, as GDAL reads it (``nan``, ``inf``
    as written by GDAL included), the text itself when it is none, None when blank."""
    if not text:
        return None
    try:
        return float(text) if decimals or not text.lstrip("+-").isdigit() else int(text)
    except ValueError:
        return text


def mixed_number_fields(
    path: Path, member: str | None, encoding: str, names: Collection[str], rows: int
) -> dict[str, tuple[pa.Field, pa.Array]]:
    """The numeric fields (among ``names``) of the shapefile ``path``'s DBF holding a value
    that is not a number, each as (field, array) of :func:`text_column`, text decoded as
    ``encoding`` (the one GDAL read the file with). Empty when there is none, or when the
    DBF's live records are not the ``rows`` GDAL read (its reading then stands)."""
    data = _dbf(path, member)
    if data is None or len(data) < 32:
        return {}
    count = int.from_bytes(data[4:8], "little")
    start, size = int.from_bytes(data[8:10], "little"), int.from_bytes(data[10:12], "little")
    fields = [f for f in _fields(data, start, encoding) if f[1] in "NF" and f[0] in names]
    if not fields or size == 0 or len(data) < start + count * size:
        return {}
    records = np.frombuffer(data, np.uint8, count * size, start).reshape(count, size)
    records = records[records[:, 0] != ord("*")]  # deleted records: GDAL skips them
    if len(records) != rows:
        return {}
    out: dict[str, tuple[pa.Field, pa.Array]] = {}
    for name, _, offset, width, decimals in fields:
        cells = records[:, offset : offset + width]
        suspects = np.flatnonzero(~_NUMBER_BYTE[cells].all(axis=1))
        texts = {int(i): bytes(cells[i]).decode(encoding, "replace").strip() for i in suspects}
        bad = sum(isinstance(_value(t, decimals), str) for t in texts.values())
        if not bad:  # only numbers GDAL reads as such (nan, inf)
            continue
        values = [_value(bytes(c).decode(encoding, "replace").strip(), decimals) for c in cells]
        reason = f"numeric DBF field holding {bad} values that are not numbers"
        out[name] = text_column(name, values, reason)
    return out
