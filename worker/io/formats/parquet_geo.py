"""The Parquet format's own geospatial logical types: GEOMETRY and GEOGRAPHY.

Parquet format 2.11 (``LogicalTypes.md``, section "Geospatial Types") annotates a
``BYTE_ARRAY`` column of WKB with ``GEOMETRY(crs)`` (planar edges) or
``GEOGRAPHY(crs, algorithm)`` (edges interpolated by ``algorithm``: ``SPHERICAL`` by
default, or ``VINCENTY``, ``THOMAS``, ``ANDOYER``, ``KARNEY`` on the ellipsoid). ``crs`` is
optional and defaults to ``OGC:CRS84``; when present it is ``srid:<id>`` (an EPSG code by
the usual convention), ``projjson:<key>`` (the PROJJSON held under ``key`` in the file's
key-value metadata) or a CRS text itself (PROJJSON, WKT, ``AUTH:CODE``). GeoParquet 2.0
makes these logical types the geometry encoding, the ``geo`` metadata optional.

pyarrow (>= 21; 26 here) exposes the annotation as the column's
``ParquetLogicalType``, whose text is ``Geometry(crs=...)`` or
``Geography(crs=..., algorithm=...)``; its JSON form carries no algorithm, so the text is
what is read.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from worker.io.formats.base import _fail

__all__ = ["EDGE_ALGORITHMS", "logical_geo_columns"]

#: The GEOGRAPHY edge algorithms of Parquet format 2.11 (EdgeInterpolationAlgorithm) and
#: the edge model each is evaluated as; None: the gate has no kernel for it (refused).
EDGE_ALGORITHMS: dict[str, str | None] = {
    "spherical": "spherical",
    "vincenty": None,
    "thomas": None,
    "andoyer": None,
    "karney": None,
}


def _crs(path: Path | str, text: str, kv: Mapping[bytes, bytes]) -> str | None:
    """The CRS text of a logical type's ``crs`` parameter (None: absent, the default)."""
    text = text.strip()
    if not text:
        return None
    if text.lower().startswith("srid:"):
        code = text[5:].strip()
        if not code.isdigit():
            raise _fail(path, f"bad CRS: Parquet crs {text!r} is not srid:<integer>")
        return f"EPSG:{code}"
    if text.lower().startswith("projjson:"):
        key = text[9:].strip()
        found = kv.get(key.encode())
        if found is None:
            raise _fail(
                path,
                f"bad CRS: Parquet crs {text!r} names the file metadata key {key!r}, "
                "which the file does not hold",
            )
        return found.decode("utf-8", "replace")
    return text


def _parse(path: Path | str, text: str, kv: Mapping[bytes, bytes]) -> dict[str, Any] | None:
    """The ``geo``-style column metadata (``encoding``, ``crs`` when stated, ``edges``,
    ``logical_type``) of a logical type's text, or None when it is not geospatial."""
    if text.startswith("Geometry(") and text.endswith(")"):
        crs_text, algorithm = text[len("Geometry(crs=") : -1], None
        edges: str | None = "planar"
    elif text.startswith("Geography(") and text.endswith(")"):
        inner = text[len("Geography(crs=") : -1]
        crs_text, sep, algorithm = inner.rpartition(", algorithm=")
        if not sep:
            crs_text, algorithm = inner, "spherical"
        algorithm = algorithm.strip().lower() or "spherical"
        if algorithm not in EDGE_ALGORITHMS:
            raise _fail(path, f"unknown Parquet GEOGRAPHY edge algorithm {algorithm!r}")
        edges = EDGE_ALGORITHMS[algorithm]
        if edges is None:
            raise _fail(
                path,
                f"unsupported edge algorithm: Parquet GEOGRAPHY edges interpolated by "
                f"{algorithm.upper()} (ellipsoidal) are not evaluated by this gate, and "
                "judging them planar or spherical would misread the geometries; the "
                f"algorithms evaluated are {[k for k, v in EDGE_ALGORITHMS.items() if v]}",
            )
    else:
        return None
    meta: dict[str, Any] = {"encoding": "WKB", "edges": str(edges), "logical_type": text}
    if algorithm is not None:
        meta["algorithm"] = algorithm
    crs = _crs(path, crs_text, kv)
    if crs is not None:
        meta["crs"] = crs
        meta["crs_from_type"] = True
    return meta


def logical_geo_columns(path: Path | str, pf: pq.ParquetFile) -> dict[str, Any]:
    """The top-level GEOMETRY and GEOGRAPHY columns of the Parquet file ``pf``, as
    ``{name: column metadata}`` in the vocabulary of the GeoParquet ``geo`` key (so the
    same code follows both): ``encoding`` WKB, ``crs`` only when the type states one (the
    default is ``OGC:CRS84``, as for an absent GeoParquet ``crs``; ``projjson:<key>``
    resolved against the file's key-value metadata), ``edges`` ``planar`` (GEOMETRY) or
    ``spherical`` (GEOGRAPHY, SPHERICAL).

    Raises
    ------
    PayloadError
        A GEOGRAPHY column whose algorithm the gate cannot evaluate, or a ``crs``
        parameter that names nothing (``projjson:`` without its key, a bad ``srid:``).
    """
    kv: Mapping[bytes, bytes] = pf.metadata.metadata or {}
    out: dict[str, Any] = {}
    for i in range(len(pf.schema)):
        col = pf.schema.column(i)
        if "." in col.path:
            continue
        meta = _parse(path, str(col.logical_type), kv)
        if meta is not None:
            out[col.name] = meta
    return out
