"""GeoPackage values of another storage class than their column's type, read as the file
holds them (field case N05b's kind: a column mixing value types).

SQLite types values, not columns: an INTEGER column can store the text ``'seven'`` or the
real 2.5, which GeoPackage 1.3 (section 1.1.1.1.3, "data types") forbids and GDAL reads
coerced (``0``, ``2``) with a warning, so a clause would judge a value the file does not
hold. :func:`mixed_columns` finds such columns with one aggregate query and reads each as
text with the mix recorded (:func:`worker.io.formats.base.text_column`), as the GeoJSON
reader reads a property mixing JSON types: ungoverned it passes, a schema clause names the
mix, a domain clause compares the values as written.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Collection
from pathlib import Path

import pyarrow as pa

from worker.io.formats.base import text_column

__all__ = ["mixed_columns", "sql_name"]

#: GeoPackage data type (table 1, without a size) -> the SQLite storage classes its
#: values may have (besides null); a REAL column stores an integer as given by some tools
_STORAGE = {
    **dict.fromkeys(("BOOLEAN", "TINYINT", "SMALLINT", "MEDIUMINT", "INT", "INTEGER"),
                    ("integer",)),
    **dict.fromkeys(("FLOAT", "DOUBLE", "REAL"), ("real", "integer")),
    **dict.fromkeys(("TEXT", "DATE", "DATETIME"), ("text",)),
    "BLOB": ("blob",),
}  # fmt: skip


def sql_name(name: object) -> str:
    """``name`` (a table or column name a file holds) as an SQLite identifier: in double
    quotes, a double quote doubled (SQL-92 delimited identifier)."""
    return '"' + str(name).replace('"', '""') + '"'


def _storage(declared: str) -> tuple[str, ...] | None:
    return _STORAGE.get(declared.split("(")[0].strip().upper())


def mixed_columns(
    path: Path, table: str, names: Collection[str]
) -> dict[str, tuple[pa.Field, pa.Array]]:
    """The columns of GeoPackage ``path``'s feature table ``table`` (among ``names``, the
    attribute columns GDAL read) holding a value of another storage class than the column's
    GeoPackage type allows, each as (field, array) of :func:`text_column`, rows in feature
    id order (GDAL's). Empty when there is none, when the table has no integer primary key,
    or when SQLite cannot read the file (GDAL's reading then stands)."""
    try:
        with sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True) as con:
            return _mixed(con, table, names)
    except sqlite3.Error:
        return {}


def _mixed(
    con: sqlite3.Connection, table: str, names: Collection[str]
) -> dict[str, tuple[pa.Field, pa.Array]]:
    info = con.execute(f"PRAGMA table_info({sql_name(table)})").fetchall()
    keys = [row[1] for row in info if row[5] == 1 and str(row[2]).upper() == "INTEGER"]
    checked = [
        (row[1], str(row[2]), storage)
        for row in info
        if row[1] in names and (storage := _storage(str(row[2]))) is not None
    ]
    if len(keys) != 1 or not checked:
        return {}
    counts = ", ".join(
        f"sum(typeof({sql_name(n)}) NOT IN ({', '.join(repr(c) for c in (*s, 'null'))}))"
        for n, _, s in checked
    )
    found = con.execute(f"SELECT {counts} FROM {sql_name(table)}").fetchone()
    out: dict[str, tuple[pa.Field, pa.Array]] = {}
    for (name, declared, _), n in zip(checked, found, strict=True):
        if not n:
            continue
        rows = con.execute(
            f"SELECT {sql_name(name)} FROM {sql_name(table)} ORDER BY {sql_name(keys[0])}"
        )
        boolean = declared.split("(")[0].strip().upper() == "BOOLEAN"
        values = [bool(v) if boolean and isinstance(v, int) else v for (v,) in rows]
        reason = f"GeoPackage column declared {declared} holds {n} values of another type"
        out[name] = text_column(name, values, reason)
    return out
