"""GeoArrow native geometry columns (https://geoarrow.org, ``point`` ... ``multipolygon``
encodings, separated or interleaved coordinates) written as literal WKB.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pyarrow as pa

from worker.io.formats.base import _fail
from worker.io.formats.wkb_writer import DIMENSIONS, ragged_to_wkb

__all__ = ["NATIVE_ENCODINGS", "coordinates_envelope", "native_to_wkb"]


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


_COORDS = "a struct of x, y[, z][, m] numbers or a fixed_size_list of 2 to 4 numbers"


def _number(typ: pa.DataType) -> bool:
    return bool(pa.types.is_floating(typ) or pa.types.is_integer(typ))


def _is_list(typ: pa.DataType) -> bool:
    return bool(pa.types.is_list(typ) or pa.types.is_large_list(typ))


def _layout_problem(typ: pa.DataType, encoding: str) -> str | None:
    """Why ``typ`` is not the Arrow layout of ``encoding`` (``_NESTING[encoding]`` lists
    around coordinates: :data:`_COORDS`), None when it is."""
    want = _NESTING[encoding]
    for depth in range(want):
        if not _is_list(typ):
            return f"it nests {depth} list(s), not {want}"
        typ = typ.value_type
    if _is_list(typ):
        return f"it nests more than {want} list(s)"
    if pa.types.is_struct(typ):
        fields = [typ.field(i).type for i in range(typ.num_fields)]
        ok = 2 <= len(fields) <= 4 and all(map(_number, fields))
    else:
        fixed = pa.types.is_fixed_size_list(typ)
        ok = fixed and 2 <= typ.list_size <= 4 and _number(typ.value_type)
    if ok:
        return None
    return f"its coordinates are {typ}"


def _stated_dims(types: Sequence[str]) -> str | None:
    """``xym`` or ``xyz`` when every GeoParquet ``geometry_types`` entry names M or Z alone
    (``Point M``), else None."""
    suffixes = {t.rsplit(" ", 1)[-1] if " " in t else "" for t in types}
    return {"M": "xym", "Z": "xyz"}.get(suffixes.pop()) if len(suffixes) == 1 else None


def _coords(arr: pa.Array, types: Sequence[str] = ()) -> tuple[np.ndarray, str]:
    """Coordinates (M, D) and their GeoArrow dimension name (``xy``, ``xyz``, ``xym``, ``xyzm``).

    Separated coordinates are a struct whose field names spell the dimension; interleaved
    ones a fixed_size_list whose value field is named after it (GeoArrow 0.1). Parquet
    keeps no name for a list's values (``element``): 3 values without a telling name are
    what the column's ``types`` (GeoParquet ``geometry_types``) state, ``xym`` for ``Point
    M``, else ``xyz``.
    """
    if pa.types.is_struct(arr.type):
        names = "".join(arr.type.field(i).name.lower() for i in range(arr.type.num_fields))
        cols = [c.to_numpy(zero_copy_only=False) for c in arr.flatten()]
        return np.column_stack(cols).astype(float), names
    width = arr.type.list_size  # interleaved: fixed_size_list<double>[2|3|4]
    name = arr.type.value_field.name.lower()
    if name in DIMENSIONS and len(name) == width:
        dims: str | None = name
    else:
        dims = (_stated_dims(types) or "xyz") if width == 3 else {4: "xyzm"}.get(width)
    flat = arr.flatten().to_numpy(zero_copy_only=False).astype(float)
    return flat.reshape(-1, width), dims or "xy"


Envelope = tuple[float, float, float, float]


def coordinates_envelope(coords: np.ndarray) -> Envelope | None:
    """(minx, miny, maxx, maxy) of GeoArrow coordinates (M, D), read from the coordinate
    arrays themselves, NaN ignored; None without a finite-or-infinite value."""
    if coords.size == 0:
        return None
    # column by column: numpy's axis-0 reduction of an (M, D) block is several times slower
    # (the same change as the claims bbox of WKB points, stop 35)
    xs, ys = coords[:, 0], coords[:, 1]
    if np.isnan(xs).all() or np.isnan(ys).all():
        return None
    return (
        float(np.nanmin(xs)),
        float(np.nanmin(ys)),
        float(np.nanmax(xs)),
        float(np.nanmax(ys)),
    )


def native_to_wkb(
    path: Path | str, column: pa.ChunkedArray, encoding: str, types: Sequence[str] = ()
) -> tuple[tuple[bytes | None, ...], Envelope | None]:
    """WKB of a GeoArrow native column, written literally (:func:`ragged_to_wkb`), its
    dimension read from the coordinates (``types``, the column's ``geometry_types``, only
    where they cannot say it: :func:`_coords`):
    ``shapely.from_ragged_array`` would close open rings before validity sees them; and
    the envelope of its coordinate arrays (:func:`coordinates_envelope`; null rows may hold values:
    only meaningful when every row has a geometry)."""
    arr = column.combine_chunks()
    problem = _layout_problem(arr.type, encoding)
    if problem is not None:
        layout = "list<" * _NESTING[encoding] + "coordinates" + ">" * _NESTING[encoding]
        raise _fail(
            path,
            f"GeoArrow {encoding} column of type {arr.type} is not the {encoding} layout "
            f"({layout}, coordinates being {_COORDS}): {problem}",
        )
    valid = arr.is_valid().to_numpy(zero_copy_only=False)
    offsets: list[np.ndarray] = []
    level: pa.Array = arr
    try:
        for _ in range(_NESTING[encoding]):
            raw = level.offsets.to_numpy()
            start, end = int(raw[0]), int(raw[-1])
            offsets.append(raw - start)
            level = level.values.slice(start, end - start)
        coords, dims = _coords(level, types)
        if dims not in DIMENSIONS:
            raise ValueError(f"coordinate fields {dims!r} are not one of {list(DIMENSIONS)}")
        wkb = ragged_to_wkb(NATIVE_ENCODINGS[encoding], coords, offsets, dims)
    except (AttributeError, ValueError, IndexError, pa.ArrowException) as exc:
        raise _fail(
            path, f"GeoArrow {encoding} column of type {arr.type} is unreadable: {exc}"
        ) from None
    geoms = tuple(w if ok else None for w, ok in zip(wkb, valid, strict=True))
    return geoms, coordinates_envelope(coords)


#: The GeoArrow native encodings read.
NATIVE_ENCODINGS = _NATIVE
