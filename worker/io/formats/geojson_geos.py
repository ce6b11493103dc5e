"""GEOS's reading of GeoJSON geometry texts, as the whole read (:mod:`.geojson`) and the
streamed read (:mod:`.geojson_fast`) both use it, and the legacy ``crs`` member."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import shapely

from worker.core._util.text import clip
from worker.io.formats.base import _fail, _to_wkb
from worker.io.formats.wkb_writer import geojson_to_wkb

__all__ = ["MAX_GEOMETRY_DEPTH", "geometries_from_texts", "legacy_crs", "too_deep"]


def geometries_from_texts(
    texts: Sequence[str | None],
) -> tuple[tuple[bytes | None, ...], dict[int, str], bool]:
    """WKB per feature (None when the geometry is null or cannot be written as WKB), for
    the latter GEOS's reason, and whether a position has a third element (a height, RFC
    7946 section 3.1.1: the file is then in OGC:CRS84h, see
    :func:`worker.io.formats.geojson._read_geojson`).

    GEOS's GeoJSON reader parses the batch in one vectorized call; a geometry it refuses
    (an open ring: "Points of LinearRing do not form a closed linestring") is written as
    literal WKB by :func:`geojson_to_wkb`, so the defect travels unrepaired to validity (and
    through inline events) and GEOS's WKB reader reports it there. Only an object that is
    not a geometry at all (unknown type, coordinates of the wrong nesting) has no WKB: its
    feature carries GEOS's reason in ``errors`` and counts as an invalid geometry.
    """
    with np.errstate(over="ignore"):  # a number beyond a double: refused below, with a reason
        parsed = shapely.from_geojson(np.asarray(texts, dtype=object), on_invalid="ignore")
    heights = bool(len(parsed)) and bool(shapely.has_z(parsed).any())
    wkb = list(_to_wkb(parsed))
    errors: dict[int, str] = {}
    missing = shapely.is_missing(parsed)
    for i in np.flatnonzero(missing | _padded_z(parsed)):
        idx, text = int(i), texts[int(i)]
        if text is None:
            continue
        try:
            wkb[idx] = geojson_to_wkb(json.loads(text))
        except ValueError as exc:
            wkb[idx] = None
            errors[idx] = f"{_geos_reason(text)} ({exc})" if missing[idx] else str(exc)
    return tuple(wkb), errors, heights


def _padded_z(parsed: np.ndarray) -> np.ndarray:
    """bool (N,): a 3D geometry with a NaN Z. GEOS's GeoJSON reader takes positions of 2
    and 3 numbers mixed in one geometry (RFC 7946 3.1.1 gives every position of a geometry
    the same dimension) and pads the 2D ones with a NaN Z: read literally instead, such a
    geometry is refused with the reason, not reported as a 3D geometry with non-finite
    coordinates. (A NaN written as such is not JSON: the strict reading refuses the
    file.)"""
    out = np.zeros(len(parsed), dtype=bool)
    for i in np.flatnonzero(shapely.has_z(parsed)):
        z = shapely.get_coordinates(parsed[i], include_z=True)[:, 2]
        out[i] = bool(np.isnan(z).any())
    return out


#: Deepest GeometryCollection nesting handed to GEOS (as for WKB, worker.core.facts.wkb_check).
MAX_GEOMETRY_DEPTH = 32


def too_deep(geometry: Any) -> str | None:
    """A reason when a GeoJSON geometry nests collections deeper than
    :data:`MAX_GEOMETRY_DEPTH` (GEOS parses recursively: deep nesting overflows its stack),
    else None. Iterative, so any depth Python's JSON reader produced is safe to walk."""
    stack = [(geometry, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > MAX_GEOMETRY_DEPTH:
            return f"GeometryCollection nests deeper than {MAX_GEOMETRY_DEPTH} levels"
        if isinstance(node, dict) and isinstance(node.get("geometries"), list):
            stack.extend((child, depth + 1) for child in node["geometries"])
    return None


def _geos_reason(text: str) -> str:
    try:
        with np.errstate(over="ignore"):
            shapely.from_geojson(text)
    except shapely.errors.GEOSException as exc:
        return clip(" ".join(str(exc).split()), 200)  # GEOS quotes the number it refused
    return "GEOS could not read the geometry"


#: the legacy ``crs`` member's types GDAL reads (ogrgeojsonreader.cpp) -> the property
#: holding the CRS and what it must be: ``name`` (the 2008 spec), ``link`` (the 2008 spec:
#: its href is resolved as a CRS text, never fetched), ``EPSG`` and ``OGC`` (the drafts
#: before it)
_LEGACY_MEMBER = {
    "name": ("name", "properties.name string"),
    "link": ("href", "properties.href string"),
    "OGC": ("urn", "properties.urn string"),
    "EPSG": ("code", "integer properties.code"),
}


def legacy_crs(path: Path | str, doc: dict[str, Any]) -> str | None:
    """The CRS text the legacy 2008 ``crs`` member states, or None when the file has none
    (it is then RFC 7946 GeoJSON; section 4 removed the member, GDAL and others still write
    it): ``{"type": "name", "properties": {"name": ...}}``, ``link`` (``href``), ``OGC``
    (``urn``) or ``EPSG`` (``code``: ``EPSG:<code>``), as GDAL reads them; a member of no
    type is read as ``name``. :class:`PayloadError` for a member without that property."""
    crs = doc.get("crs")
    if crs is None:
        return None
    kind = crs.get("type") if isinstance(crs, dict) else None
    key, what = _LEGACY_MEMBER.get(kind if isinstance(kind, str) else "", _LEGACY_MEMBER["name"])
    props = crs.get("properties") if isinstance(crs, dict) else None
    value = props.get(key) if isinstance(props, dict) else None
    if key == "code":
        code = str(value).strip() if isinstance(value, (int, str)) else ""
        value = f"EPSG:{code}" if code.isdigit() and not isinstance(value, bool) else None
    if not isinstance(value, str) or not value:
        named = f" of type {kind!r}" if kind in _LEGACY_MEMBER else ""
        raise _fail(path, f"bad CRS: the legacy 'crs' member{named} has no {what}")
    return value
