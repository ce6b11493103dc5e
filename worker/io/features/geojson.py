"""GeoJSON FeatureCollections (RFC 7946) into :class:`~worker.io.features.base.FeatureData`.

CRS ``OGC:CRS84`` and axis order ``east_north``, unless the file carries the legacy 2008
``crs`` member (``{"type": "name", "properties": {"name": ...}}``), which is honoured.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import shapely

from worker.io.features.base import RFC7946_CRS, FeatureData, _fail, _to_wkb


def _read_geojson(path: Path) -> FeatureData:
    try:
        doc = json.loads(path.read_bytes())
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise _fail(path, f"not a JSON document ({exc})") from None
    if not isinstance(doc, dict) or doc.get("type") != "FeatureCollection":
        kind = doc.get("type") if isinstance(doc, dict) else type(doc).__name__
        raise _fail(path, f"not a GeoJSON FeatureCollection (type is {kind!r})")
    features = doc.get("features")
    if not isinstance(features, list):
        raise _fail(path, "the FeatureCollection has no 'features' list")
    geoms: list[str | None] = []
    props: list[dict[str, Any]] = []
    for i, feat in enumerate(features):
        if not isinstance(feat, dict) or feat.get("type") != "Feature":
            raise _fail(path, f"features[{i}] is not a GeoJSON Feature")
        g, p = feat.get("geometry"), feat.get("properties")
        if g is not None and not isinstance(g, dict):
            raise _fail(path, f"features[{i}].geometry is not an object or null")
        if p is not None and not isinstance(p, dict):
            raise _fail(path, f"features[{i}].properties is not an object or null")
        geoms.append(json.dumps(g) if g is not None else None)
        props.append(p or {})
    try:
        parsed = shapely.from_geojson(np.asarray(geoms, dtype=object))
    except shapely.errors.GEOSException:
        for i, g in enumerate(geoms):
            try:
                shapely.from_geojson(g)
            except shapely.errors.GEOSException as exc:
                raise _fail(path, f"features[{i}].geometry is not valid GeoJSON ({exc})") from None
        raise
    return FeatureData(_to_wkb(parsed), _properties_table(path, props), _legacy_crs(path, doc))


def _legacy_crs(path: Path, doc: dict[str, Any]) -> str:
    crs = doc.get("crs")
    if crs is None:
        return RFC7946_CRS
    name = crs.get("properties", {}).get("name") if isinstance(crs, dict) else None
    if not isinstance(name, str) or not name:
        raise _fail(path, "bad CRS: the legacy 'crs' member has no properties.name string")
    return name


def _properties_table(path: Path, props: Sequence[dict[str, Any]]) -> pa.Table:
    names = list(dict.fromkeys(k for p in props for k in p))
    arrays = {}
    for name in names:
        try:
            arrays[name] = pa.array([p.get(name) for p in props])
        except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
            raise _fail(path, f"property {name!r} mixes value types ({exc})") from None
    if not names:  # no properties at all: a table of len(props) rows and no columns
        return pa.table({"_": pa.nulls(len(props))}).drop_columns(["_"])
    return pa.table(arrays)
