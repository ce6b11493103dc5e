"""GeoJSON FeatureCollections (RFC 7946) into :class:`~worker.io.formats.base.FeatureData`.

The CRS, from the file (RFC 7946 section 4): ``OGC:CRS84`` (WGS 84 longitude, latitude),
or ``OGC:CRS84h`` when a position has a third element, which RFC 7946 defines as the
height in metres above the WGS 84 ellipsoid (EPSG:4979 ignoring axis order; GDAL exposes
EPSG:4979 for such files since OSGeo/gdal#5557); axis order ``east_north``. A file with the
legacy 2008 ``crs`` member (``{"type": "name", "properties": {"name": ...}}``) states that
CRS itself (``crs_stated``), which is honoured and compared with a producer's declaration.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import shapely

from worker.core._util.text import clip
from worker.core.errors import PayloadCorrupt
from worker.io.formats.base import (
    RFC7946_CRS,
    RFC7946_CRS_3D,
    FeatureData,
    Source,
    _fail,
    _to_wkb,
    canonical_table,
    text_column,
)
from worker.io.formats.strict_json import NotStrictJson, loads_strict
from worker.io.formats.wkb_writer import geojson_to_wkb


def _read_geojson(path: Path | str, data: bytes | None = None) -> FeatureData:
    """The FeatureCollection in ``data`` (default: the bytes of the file ``path``);
    ``path`` names the file in messages."""
    if data is None:
        data = Path(path).read_bytes()
    try:
        doc = loads_strict(data)
    except NotStrictJson as exc:
        raise NotStrictJson(
            f"{path}: not strict JSON, so not GeoJSON (RFC 7946 section 1.4 builds on RFC "
            f"8259): at {exc}; write null for a missing value and one member per name"
        ) from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        from worker.io.formats import formats_read

        raise PayloadCorrupt(f"{path}: not a JSON document ({exc}); {formats_read()}") from None
    except RecursionError:
        raise PayloadCorrupt(
            f"{path}: JSON nested too deeply to read (hundreds of levels of arrays or objects)"
        ) from None
    if not isinstance(doc, dict):
        names = {list: "an array", str: "a string", bool: "a boolean", type(None): "null"}
        what = names.get(type(doc), "a number")
        raise _fail(path, f"not a GeoJSON FeatureCollection: the JSON document is {what}")
    if doc.get("type") != "FeatureCollection":
        kind = doc.get("type")
        raise _fail(
            path,
            "not a GeoJSON FeatureCollection: "
            + (
                'the object has no "type" member'
                if kind is None
                else f'its "type" is {clip(str(kind), 80)!r}'
            ),
        )
    features = doc.get("features")
    if not isinstance(features, list):
        raise _fail(path, "the FeatureCollection has no 'features' list")
    geoms: list[str | None] = []
    props: list[dict[str, Any]] = []
    refused_before_geos: dict[int, str] = {}
    ids: list[str | int | float | None] = []
    for i, feat in enumerate(features):
        if not isinstance(feat, dict) or feat.get("type") != "Feature":
            raise _fail(path, f"features[{i}] is not a GeoJSON Feature")
        g, p = feat.get("geometry"), feat.get("properties")
        if p is not None and not isinstance(p, dict):
            raise _fail(path, f"features[{i}].properties is not an object or null")
        refused = _too_deep(g)
        geoms.append(json.dumps(g) if g is not None and not refused else None)
        props.append(p or {})
        if refused:
            refused_before_geos[i] = refused
        fid = feat.get("id")
        # RFC 7946 section 3.2: a string or a number; anything else names no feature
        ok_id = isinstance(fid, str | int | float) and not isinstance(fid, bool)
        ids.append(fid if ok_id else None)
    wkb, errors, heights = _geometries(geoms)
    errors.update(refused_before_geos)
    legacy = _legacy_crs(path, doc)
    return FeatureData(
        wkb,
        canonical_table(_properties_table(props), path),
        legacy if legacy is not None else RFC7946_CRS_3D if heights else RFC7946_CRS,
        crs_stated=legacy is not None,
        crs_source="legacy GeoJSON 'crs' member" if legacy is not None else "",
        geometry_errors=errors,
        feature_ids=tuple(ids) if any(i is not None for i in ids) else None,
    )


def _geometries(
    texts: Sequence[str | None],
) -> tuple[tuple[bytes | None, ...], dict[int, str], bool]:
    """WKB per feature (None when the geometry is null or cannot be written as WKB), for
    the latter GEOS's reason, and whether a position has a third element (a height, RFC
    7946 section 3.1.1: the file is then in OGC:CRS84h, see :func:`_read_geojson`).

    GEOS's GeoJSON reader parses the batch in one vectorized call; a geometry it refuses
    (an open ring: "Points of LinearRing do not form a closed linestring") is written as
    literal WKB by :func:`geojson_to_wkb`, so the defect travels unrepaired to validity (and
    through inline events) and GEOS's WKB reader reports it there. Only an object that is
    not a geometry at all (unknown type, coordinates of the wrong nesting) has no WKB: its
    feature carries GEOS's reason in ``errors`` and counts as an invalid geometry.
    """
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


def _too_deep(geometry: Any) -> str | None:
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
        shapely.from_geojson(text)
    except shapely.errors.GEOSException as exc:
        return str(exc)
    return "GEOS could not read the geometry"


def _legacy_crs(path: Path | str, doc: dict[str, Any]) -> str | None:
    """The name in the legacy 2008 ``crs`` member (``{"type": "name", "properties":
    {"name": ...}}``; RFC 7946 section 4 removed it, GDAL and others still write it), or
    None when the file has none (it is then RFC 7946 GeoJSON)."""
    crs = doc.get("crs")
    if crs is None:
        return None
    name = crs.get("properties", {}).get("name") if isinstance(crs, dict) else None
    if not isinstance(name, str) or not name:
        raise _fail(path, "bad CRS: the legacy 'crs' member has no properties.name string")
    return name


def _properties_table(props: Sequence[dict[str, Any]]) -> pa.Table:
    """One column per property name (first appearance order), one row per feature.

    A property whose values arrow cannot put in one type (``42`` and ``"see survey"``) is
    read as text with the mix recorded (:func:`~worker.io.formats.base.text_column`): the
    schema clause breaks on it when the contract names the field, and nothing else looks.
    """
    names = list(dict.fromkeys(k for p in props for k in p))
    fields, arrays = [], []
    for name in names:
        values = [p.get(name) for p in props]
        try:
            arr = pa.array(values)
            fields.append(pa.field(name, arr.type))
        except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError) as exc:
            fld, arr = text_column(name, values, str(exc))
            fields.append(fld)
        arrays.append(arr)
    if not names:  # no properties at all: a table of len(props) rows and no columns
        return pa.table({"_": pa.nulls(len(props))}).drop_columns(["_"])
    return pa.Table.from_arrays(arrays, schema=pa.schema(fields))


class GeoJsonReader:
    """The registry entry (:class:`~worker.io.formats.base.Reader`) of GeoJSON: a JSON
    text starting with ``{`` or ``[`` (after an optional UTF-8 BOM and whitespace),
    parsed whole and strictly (:mod:`.strict_json`)."""

    name = "geojson"
    title = "GeoJSON"
    described: tuple[str, ...] = ("GeoJSON",)
    magic = "GeoJSON is a JSON object starting with '{'"
    suffixes: tuple[str, ...] = (".geojson", ".json")
    #: parsed whole, several times its size in memory
    default_limit_bytes = 256 * 1024**2
    by_reference = True
    chunked = False

    def sniff(self, head: bytes, tail: bytes, name: str) -> bool:
        text = head.removeprefix(b"\xef\xbb\xbf").lstrip(b" \t\r\n")
        return text[:1] in (b"{", b"[") or (not text and len(head) >= 4096)

    def read(self, src: Source) -> FeatureData:
        return _read_geojson(src.uri, src.read_all())

    def chunks(self, src: Source, count_nulls: bool = True) -> None:
        return None


READER = GeoJsonReader()
