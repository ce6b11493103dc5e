"""The geometry-type vocabulary of contracts and WKB coordinate dimensions (pure).

Type names with their coordinate dimension (``Polygon``, ``Point Z``, ``MultiPolygon
ZM``: the ``geometry_types`` names) from shapely type ids and dimension flags, by
one table lookup per batch; the Z and M flags read from WKB headers (ISO 19125-1 and
PostGIS EWKB) where shapely cannot tell.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import shapely

__all__ = [
    "BASE_TYPES",
    "DIMENSIONS",
    "GEOMETRY_TYPES",
    "TYPE_NAME_TABLE",
    "geometry_type_index",
    "geometry_type_names",
    "has_m",
    "wkb_dimensions",
]

#: OGC Simple Features geometry types, indexed by shapely's type id (LinearRing, id 2,
#: has no WKB code of its own and is named as the LineString it is written as).
BASE_TYPES: tuple[str, ...] = (
    "Point",
    "LineString",
    "LineString",
    "Polygon",
    "MultiPoint",
    "MultiLineString",
    "MultiPolygon",
    "GeometryCollection",
)

#: Coordinate dimension suffixes of the ``geometry_types`` vocabulary (the simple
#: features type names of ISO 19125-1 with a dimension suffix): none = XY, `` Z`` = XYZ,
#: `` M`` = XYM, `` ZM`` = XYZM.
DIMENSIONS: tuple[str, ...] = ("", " Z", " M", " ZM")

#: The ``geometry_types`` vocabulary: every base type with every dimension,
#: e.g. ``Polygon`` (XY only), ``Polygon Z``, ``Polygon M``, ``Polygon ZM``.
GEOMETRY_TYPES: tuple[str, ...] = tuple(
    base + dim for base in dict.fromkeys(BASE_TYPES) for dim in DIMENSIONS
)

_EWKB_Z, _EWKB_M, _EWKB_SRID = 0x80000000, 0x40000000, 0x20000000

#: None, then the name of each (shapely type id, dimension) pair, id-major: the table that
#: :func:`geometry_type_index` indexes.
TYPE_NAME_TABLE = np.array([None, *(b + d for b in BASE_TYPES for d in DIMENSIONS)], dtype=object)


def wkb_dimensions(wkb: Any) -> tuple[np.ndarray, np.ndarray]:
    """(has_z, has_m), each bool (N,), read from the header of each WKB value.

    The header is the byte-order byte and the uint32 geometry type code. Both conventions
    are read: ISO WKB (ISO 19125-1 / OGC Simple Features 1.2.1 section 8.2.3: type code
    + 1000 for Z, + 2000 for M, + 3000 for ZM, e.g. 1001 = Point Z, 2003 = Polygon M) and
    PostGIS EWKB (flags 0x80000000 = Z, 0x40000000 = M, 0x20000000 = an SRID follows).
    None and values shorter than 5 bytes give False. Used where shapely cannot say
    (``shapely.has_m`` needs shapely >= 2.1 and GEOS >= 3.12; older GEOS drops M on read).
    """
    values = list(wkb)
    z = np.zeros(len(values), dtype=bool)
    m = np.zeros(len(values), dtype=bool)
    for i, raw in enumerate(values):
        if raw is None or len(raw) < 5 or raw[0] not in (0, 1):
            continue
        code = int.from_bytes(raw[1:5], "little" if raw[0] == 1 else "big")
        iso = ((code & ~(_EWKB_Z | _EWKB_M | _EWKB_SRID)) // 1000) % 4
        z[i] = bool(code & _EWKB_Z) or iso in (1, 3)
        m[i] = bool(code & _EWKB_M) or iso in (2, 3)
    return z, m


def has_m(geoms: np.ndarray, wkb: Any = None) -> np.ndarray:
    """bool (N,): geometries with M values; shapely.has_m when this shapely/GEOS has it,
    else the WKB headers (``wkb``; all False without them: such a GEOS keeps no M)."""
    geos_has_m = getattr(shapely, "has_m", None)
    if geos_has_m is not None:
        try:
            return np.asarray(geos_has_m(geoms), dtype=bool)
        except shapely.errors.UnsupportedGEOSVersionError:
            pass
    if wkb is None:
        return np.zeros(len(geoms), dtype=bool)
    return wkb_dimensions(wkb)[1]


def geometry_type_index(type_ids: np.ndarray, has_z: np.ndarray, has_m: np.ndarray) -> np.ndarray:
    """int (N,): the row of :data:`TYPE_NAME_TABLE` naming each geometry's type with its
    coordinate dimension; 0 (None) where ``type_ids`` is -1 (missing or unparseable).
    Inputs are the shapely type ids and dimension flags. A clause that tests names against
    a list tests the table's few rows once and indexes the result (no string comparison
    per feature)."""
    ids = np.asarray(type_ids, dtype=int)
    dim = np.asarray(has_z, dtype=int) + 2 * np.asarray(has_m, dtype=int)
    return np.where(ids >= 0, 1 + ids * len(DIMENSIONS) + dim, 0)


def geometry_type_names(type_ids: np.ndarray, has_z: np.ndarray, has_m: np.ndarray) -> np.ndarray:
    """object (N,): the ``geometry_types`` name of each geometry, e.g.
    ``"Polygon"`` (XY), ``"Point Z"``, ``"MultiPolygon ZM"``; None where ``type_ids`` is -1
    (missing or unparseable). Inputs are the shapely type ids and dimension flags."""
    return TYPE_NAME_TABLE[geometry_type_index(type_ids, has_z, has_m)]
