"""The geometry-type vocabulary and WKB coordinate dimensions (core.geometry_types)."""

from __future__ import annotations

import struct

import numpy as np

from worker.core.geometry_types import (
    GEOMETRY_TYPES,
    TYPE_NAME_TABLE,
    geometry_type_index,
    geometry_type_names,
    wkb_dimensions,
)


def _point_wkb(order: str, code: int, *coords: float, srid: int | None = None) -> bytes:
    head = struct.pack(f"{order}BI", 1 if order == "<" else 0, code)
    if srid is not None:
        head += struct.pack(f"{order}I", srid)
    return head + struct.pack(f"{order}{len(coords)}d", *coords)


# (WKB, has_z, has_m): ISO codes (1001 = Point Z, 2001 = Point M, 3001 = Point ZM, as in
# GeoParquet files) and PostGIS EWKB flags (0x80000000 Z, 0x40000000 M, 0x20000000 SRID)
HEADERS = [
    (_point_wkb("<", 1, 1, 2), False, False),
    (_point_wkb("<", 1001, 1, 2, 3), True, False),
    (_point_wkb("<", 2001, 1, 2, 3), False, True),
    (_point_wkb(">", 3001, 1, 2, 3, 4), True, True),
    (_point_wkb(">", 0x80000001, 1, 2, 3), True, False),
    (_point_wkb("<", 0x40000001, 1, 2, 3), False, True),
    (_point_wkb("<", 0xE0000001, 1, 2, 3, 4, srid=4326), True, True),
    (b"\x01\x03", False, False),
]


def test_wkb_dimensions_reads_iso_codes_and_ewkb_flags() -> None:
    z, m = wkb_dimensions([h for h, _, _ in HEADERS] + [None])
    assert z.tolist() == [hz for _, hz, _ in HEADERS] + [False]
    assert m.tolist() == [hm for _, _, hm in HEADERS] + [False]


def test_type_names_and_their_table_rows() -> None:
    # shapely type ids: 0 Point, 3 Polygon, 6 MultiPolygon, 7 GeometryCollection; -1 none
    ids = np.array([0, 3, 6, 7, -1, 2])
    z = np.array([False, True, False, True, True, False])
    m = np.array([False, False, True, True, False, False])
    names = geometry_type_names(ids, z, m)
    assert names.tolist() == [
        "Point",
        "Polygon Z",
        "MultiPolygon M",
        "GeometryCollection ZM",
        None,
        "LineString",  # a LinearRing is written as the LineString it is
    ]
    assert TYPE_NAME_TABLE[geometry_type_index(ids, z, m)].tolist() == names.tolist()
    assert set(GEOMETRY_TYPES) == set(TYPE_NAME_TABLE[1:])
