"""GeoParquet 1.0/1.1 files into :class:`~worker.io.features.base.FeatureData`.

Follows the ``geo`` metadata: ``primary_column``, per-column ``encoding`` (``WKB`` or
GeoArrow native ``point`` ... ``multipolygon``) and ``crs`` (PROJJSON kept as JSON text;
explicit null = unknown, i.e. ``declared_crs=None``; key absent = ``OGC:CRS84``).
Coordinates are always ``east_north`` (the spec says so). Geometry columns and bbox covering
columns are not attributes.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from worker.io.features.base import RFC7946_CRS, FeatureData, _fail
from worker.io.features.wkb import DIMENSIONS, ragged_to_wkb

_NATIVE = {
    "point": "Point",
    "linestring": "LineString",
    "polygon": "Polygon",
    "multipoint": "MultiPoint",
    "multilinestring": "MultiLineString",
    "multipolygon": "MultiPolygon",
}
_NESTING = {
    "point": 0,
    "linestring": 1,
    "multipoint": 1,
    "polygon": 2,
    "multilinestring": 2,
    "multipolygon": 3,
}


def _coords(arr: pa.Array) -> tuple[np.ndarray, str]:
    """Coordinates (M, D) and their GeoArrow dimension name (``xy``, ``xyz``, ``xym``, ``xyzm``).

    Separated coordinates are a struct whose field names spell the dimension; interleaved
    ones a fixed_size_list whose value field is named after it (GeoArrow 0.1), 3 values
    without a telling name being ``xyz``.
    """
    if pa.types.is_struct(arr.type):
        names = "".join(arr.type.field(i).name.lower() for i in range(arr.type.num_fields))
        cols = [c.to_numpy(zero_copy_only=False) for c in arr.flatten()]
        return np.column_stack(cols).astype(float), names
    width = arr.type.list_size  # interleaved: fixed_size_list<double>[2|3|4]
    name = arr.type.value_field.name.lower()
    dims = name if name in DIMENSIONS and len(name) == width else {3: "xyz", 4: "xyzm"}.get(width)
    flat = arr.flatten().to_numpy(zero_copy_only=False).astype(float)
    return flat.reshape(-1, width), dims or "xy"


def _native(path: Path, column: pa.ChunkedArray, encoding: str) -> tuple[bytes | None, ...]:
    """WKB of a GeoArrow native column, written literally (:func:`ragged_to_wkb`):
    ``shapely.from_ragged_array`` would close open rings before validity sees them."""
    arr = column.combine_chunks()
    valid = arr.is_valid().to_numpy(zero_copy_only=False)
    offsets: list[np.ndarray] = []
    level: pa.Array = arr
    try:
        for _ in range(_NESTING[encoding]):
            raw = level.offsets.to_numpy()
            start, end = int(raw[0]), int(raw[-1])
            offsets.append(raw - start)
            level = level.values.slice(start, end - start)
        coords, dims = _coords(level)
        if dims not in DIMENSIONS:
            raise ValueError(f"coordinate fields {dims!r} are not one of {list(DIMENSIONS)}")
        wkb = ragged_to_wkb(_NATIVE[encoding], coords, offsets, dims)
    except (AttributeError, ValueError, IndexError, pa.ArrowException) as exc:
        raise _fail(
            path, f"GeoArrow {encoding} column of type {arr.type} is unreadable: {exc}"
        ) from None
    return tuple(w if ok else None for w, ok in zip(wkb, valid, strict=True))


def _parquet_crs(path: Path, meta: dict[str, Any]) -> str | None:
    if "crs" not in meta:
        return RFC7946_CRS
    crs = meta["crs"]
    if crs is None or isinstance(crs, str):
        return crs
    if isinstance(crs, dict):
        return json.dumps(crs, sort_keys=True)
    raise _fail(path, f"bad CRS: geo metadata crs is a {type(crs).__name__}, not PROJJSON")


def _read_geoparquet(path: Path) -> FeatureData:
    try:
        table = pq.read_table(path)
    except (OSError, pa.ArrowException) as exc:
        raise _fail(path, f"not a readable Parquet file ({exc})") from None
    raw = (table.schema.metadata or {}).get(b"geo")
    try:
        geo = json.loads(raw) if raw else None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise _fail(path, f"the 'geo' metadata is not JSON ({exc})") from None
    if geo is None:  # plain Parquet: a binary 'geometry' column holds WKB, CRS unknown
        if "geometry" not in table.column_names:
            raise _fail(path, "no geometry column: no 'geo' metadata and no 'geometry' column")
        geo = {"primary_column": "geometry", "columns": {"geometry": {"crs": None}}}
    primary = geo.get("primary_column")
    columns = geo.get("columns") or {}
    if primary not in table.column_names or primary not in columns:
        raise _fail(path, f"no geometry column: primary column {primary!r} is missing")
    meta = columns[primary]
    encoding = str(meta.get("encoding", "WKB"))
    col = table.column(primary)
    if encoding.upper() == "WKB":
        if not (pa.types.is_binary(col.type) or pa.types.is_large_binary(col.type)):
            raise _fail(path, f"WKB column {primary!r} has arrow type {col.type}, not binary")
        geoms = tuple(col.to_pylist())
    elif encoding.lower() in _NATIVE:
        geoms = _native(path, col, encoding.lower())
    else:
        raise _fail(path, f"unsupported geometry encoding {encoding!r} of column {primary!r}")
    drop = set(columns) | {
        spec[0]
        for m in columns.values()
        for spec in ((m.get("covering") or {}).get("bbox") or {}).values()
        if isinstance(spec, list) and spec
    }
    attrs = table.drop_columns([c for c in table.column_names if c in drop])
    return FeatureData(geoms, attrs, _parquet_crs(path, meta))
