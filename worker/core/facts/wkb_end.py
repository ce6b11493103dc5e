"""Where a WKB value ends: bytes after its geometry make the value invalid (pure).

GEOS's WKB reader stops where the geometry's structure ends and ignores the rest:
``POINT (1 2)`` written as WKB with ``b"junk"`` appended reads as ``POINT (1 2)``. PostGIS
(``ST_GeomFromWKB``), GDAL, DuckDB spatial and GeoArrow decoders refuse such a value or read
something else, and a value that two readers read differently is corrupt data. So every
value must end exactly where its geometry ends (OGC 06-103r4 section 8.2: a WKB geometry is
its header and its body, nothing after).

Where a value ends is known exactly by the structural walk
(:func:`worker.core.facts.wkb_check.wkb_survey`, which walks headers and counts), but a
walk costs Python per value. The gate walks every value that may hold nested geometries
anyway; the single geometries (Point, LineString, Polygon), which GEOS parses unwalked, are
screened here instead, vectorized: each value's length against the size its parsed
geometry implies (:func:`wkb_sizes`: header, EWKB SRID, counts, coordinates of the
header's dimension). Only the values whose sizes disagree are walked (:func:`size_suspects`
finds them; the walk is the authority). The screen may name a sound value (a Polygon whose
lone ring is empty, which GEOS reads as ``POLYGON EMPTY``), never miss one with trailing
bytes: a sound single geometry's size is exactly the one computed.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import shapely

from worker.core.facts.wkb_arrow import WkbTuple, arrow_lengths
from worker.core.facts.wkb_check import trailing_reason, wkb_survey

__all__ = [
    "size_suspects", "trailing_bytes", "trailing_reason", "walked_faults", "wkb_lengths",
    "wkb_sizes",
]  # fmt: skip

_POINT, _LINE, _POLYGON = 1, 2, 3


def wkb_lengths(values: Sequence[bytes | None] | np.ndarray) -> np.ndarray:
    """int64 (N,): the length in bytes of each value, -1 for None and for a value that is
    not ``bytes`` (read from the Arrow offsets of a
    :class:`~worker.core.facts.wkb_arrow.WkbTuple`: no Python per value)."""
    if isinstance(values, WkbTuple):
        return arrow_lengths(values)
    n = len(values)
    if n and all(type(v) is bytes for v in (values[0], values[-1])):
        try:
            return np.fromiter(map(len, values), dtype=np.int64, count=n)
        except TypeError:  # None among them
            pass
    sizes = (len(v) if type(v) is bytes else -1 for v in values)
    return np.fromiter(sizes, dtype=np.int64, count=n)


def wkb_sizes(
    geoms: np.ndarray, base: np.ndarray, srid: np.ndarray, has_z: np.ndarray, has_m: np.ndarray
) -> np.ndarray:
    """int64 (K,): the bytes of the WKB of each single geometry ``geoms`` (object (K,), as
    GEOS read it) whose header says ``base`` (int (K,): 1 Point, 2 LineString, 3 Polygon),
    ``srid`` (bool (K,): an EWKB SRID follows the type code), ``has_z`` and ``has_m`` (bool
    (K,)); -1 for another base type (no size computed: such a value is walked).

    A point is its header and one coordinate (``POINT EMPTY`` is written as NaN
    coordinates, the same size); a LineString its header, a count and its coordinates; a
    Polygon its header, a ring count, a count per ring and its coordinates (an empty one
    has no ring). Two shapely counts over all of ``geoms`` (``get_num_coordinates``,
    ``get_num_interior_rings``: 0 for the other types and None) and arithmetic, no fancy
    indexing (about 10 ms per 100,000 polygons); the headers' dimension, since GEOS reads
    the coordinates that the header declares.
    """
    coords = np.asarray(shapely.get_num_coordinates(geoms), dtype=np.int64)
    holes = np.asarray(shapely.get_num_interior_rings(geoms), dtype=np.int64)
    point = np.add(has_z, has_m, dtype=np.int64)
    point += 2
    point *= 8  # bytes of one coordinate
    polygon = base == _POLYGON
    out = coords * point  # the coordinates of a LineString or Polygon
    out += 9  # header and count
    out += 4 * polygon * (np.maximum(holes, 0) + (coords > 0))  # a count per ring
    out = np.where(base == _POINT, point + 5, out)
    out += 4 * srid
    out[(base != _POINT) & (base != _LINE) & ~polygon] = -1
    return out


def size_suspects(
    lengths: np.ndarray,
    geoms: np.ndarray,
    headers: tuple[np.ndarray, ...],
) -> np.ndarray:
    """int (K,), ascending: the rows whose single geometry GEOS read (``geoms``, object
    (N,), None where it read none) from a value whose length (``lengths``, int64 (N,), see
    :func:`wkb_lengths`) is not the size that geometry implies (:func:`wkb_sizes`);
    ``headers``: :func:`~worker.core.facts.wkb_header.wkb_headers` of the values. Rows
    that may nest (collections) are not screened: they are walked anyway."""
    present, single, has_z, has_m, base, srid = headers[:6]
    if not len(geoms):
        return np.zeros(0, dtype=np.intp)
    screened = single & present & ~np.asarray(shapely.is_missing(geoms), dtype=bool)
    return np.flatnonzero(screened & (wkb_sizes(geoms, base, srid, has_z, has_m) != lengths))


def walked_faults(
    values: Sequence[bytes | None], rows: np.ndarray
) -> tuple[dict[int, str], dict[int, str]]:
    """Index -> reason of each of ``values``' ``rows`` (int (K,)) that fails the structural
    walk (:func:`~worker.core.facts.wkb_check.wkb_survey`): (structural problems, which
    GEOS must not parse; bytes after the end of the geometry). One walk of each value."""
    refused: dict[int, str] = {}
    trailing: dict[int, str] = {}
    for i in rows.tolist():
        problem, extra = wkb_survey(values[i])
        if problem:
            refused[i] = problem
        elif extra:
            trailing[i] = extra
    return refused, trailing


def trailing_bytes(
    values: Sequence[bytes | None], geoms: np.ndarray, headers: tuple[np.ndarray, ...]
) -> dict[int, str]:
    """Index -> reason (:func:`trailing_reason`) of each single geometry GEOS read
    (``geoms``, object (N,)) from a value of ``values`` with bytes after its end: the
    :func:`size_suspects`, walked. A batch of sound single geometries is not walked."""
    suspects = size_suspects(wkb_lengths(values), geoms, headers)
    return walked_faults(values, suspects)[1]
