"""The geometry column of a (Geo)Parquet file: which column, its encoding, CRS and edge
model, from the GeoParquet ``geo`` metadata (GeoParquet 1.0/1.1 specification, "Column
metadata") completed by the Parquet GEOMETRY/GEOGRAPHY logical types
(:mod:`worker.io.formats.parquet_geo`; Parquet format 2.11, GeoParquet 2.0), and the
features of a table read with it (:func:`_features`).

``crs``: PROJJSON kept as JSON text; explicit null = unknown (``declared_crs=None``); key
absent = ``OGC:CRS84``. ``edges`` ``planar`` or ``spherical`` and ``orientation`` are read
and carried, never applied here; a value the spec does not define makes the file
unreadable: its geometries have no known meaning.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from worker.core.facts.wkb_arrow import WkbTuple
from worker.io.formats.base import RFC7946_CRS, FeatureData, _fail, canonical_table, canonical_type
from worker.io.formats.geoarrow import NATIVE_ENCODINGS, native_to_wkb

__all__ = ["METADATA_NAME", "_GeoColumn", "_features", "_geo_column"]

#: How messages of the core name this metadata (``Batch.metadata_name``): "GeoParquet
#: edges: spherical", "the declared GeoParquet orientation", "the file says GeoParquet
#: version ...". GEOMETRY/GEOGRAPHY logical types are read into the same metadata.
METADATA_NAME = "GeoParquet"


def _parquet_crs(path: Path | str, meta: dict[str, Any]) -> str | None:
    if "crs" not in meta:
        return RFC7946_CRS
    crs = meta["crs"]
    if crs is None or isinstance(crs, str):
        return crs
    if isinstance(crs, dict):
        return json.dumps(crs, sort_keys=True)
    raise _fail(path, f"bad CRS: geo metadata crs is a {type(crs).__name__}, not PROJJSON")


_EDGES = ("planar", "spherical")
_ORIENTATIONS = ("counterclockwise",)


def _edge_model(path: Path | str, primary: str, meta: dict[str, Any]) -> tuple[str, str | None]:
    edges = meta.get("edges", "planar")
    orientation = meta.get("orientation")
    if edges not in _EDGES:
        raise _fail(
            path,
            f"unsupported GeoParquet edges {edges!r} of column {primary!r}: GeoParquet 1.1 "
            f"defines {list(_EDGES)}, so the geometries have no known meaning",
        )
    if orientation is not None and orientation not in _ORIENTATIONS:
        raise _fail(
            path,
            f"unsupported GeoParquet orientation {orientation!r} of column {primary!r}: "
            f"GeoParquet 1.1 defines {list(_ORIENTATIONS)} or no orientation",
        )
    return str(edges), orientation


#: JSON type names of the values ``json.loads`` gives, for refusals.
_JSON_KINDS = {dict: "a JSON object", list: "an array", str: "a string", bool: "a boolean",
               int: "a number", float: "a number", type(None): "null"}  # fmt: skip


def _object(path: Path | str, value: Any, where: str) -> dict[str, Any]:
    """``value`` when it is a JSON object, else the refusal naming ``where`` and its kind."""
    if not isinstance(value, dict):
        kind = _JSON_KINDS.get(type(value), type(value).__name__)
        raise _fail(path, f"the 'geo' metadata{where} is {kind}, not a JSON object")
    return value


def _geo_metadata(path: Path | str, raw: bytes | None) -> dict[str, Any] | None:
    """The ``geo`` metadata decoded, None when absent, with the shape every later step
    reads checked once (GeoParquet 1.1 "File metadata"): an object, its ``columns`` an
    object of column objects, a column's ``covering`` and ``covering.bbox`` objects.

    Raises
    ------
    PayloadError
        Not JSON, nested too deep to decode, or a member of the wrong JSON type (named:
        ``columns.geometry.covering``).
    """
    if not raw:
        return None
    try:
        geo = json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise _fail(path, f"the 'geo' metadata is not JSON ({exc})") from None
    except RecursionError:  # a few hundred levels: the metadata needs 4
        raise _fail(path, "the 'geo' metadata nests deeper than JSON is read") from None
    geo = _object(path, geo, "")
    columns = _object(path, geo.get("columns") or {}, ": columns")
    for name, meta in columns.items():
        where = f": columns.{name}"
        covering = _object(path, meta, where).get("covering")
        if covering is not None:
            bbox = _object(path, covering, f"{where}.covering").get("bbox")
            if bbox is not None:
                _object(path, bbox, f"{where}.covering.bbox")
    return geo


def _storage_type(typ: pa.DataType) -> pa.DataType:
    """``typ``, or its storage type when it is an extension type (a Parquet GEOMETRY
    column reads as ``geoarrow.wkb`` when a GeoArrow package registered that type)."""
    return typ.storage_type if isinstance(typ, pa.ExtensionType) else typ


def _with_logical(
    path: Path | str, name: str, meta: dict[str, Any], typed: dict[str, Any] | None
) -> dict[str, Any]:
    """The ``geo`` column metadata ``meta`` completed by the column's logical type
    ``typed``: its CRS where ``geo`` states none, its edge model where ``geo`` leaves the
    default; a ``geo`` key that contradicts the type's edges makes the file unreadable."""
    if typed is None or typed is meta:
        return meta
    if "edges" in meta and meta["edges"] != typed["edges"]:
        raise _fail(
            path,
            f"column {name!r}: the GeoParquet metadata says edges {meta['edges']!r} but its "
            f"Parquet logical type {typed['logical_type']} says {typed['edges']!r}",
        )
    out = {**meta, "edges": typed["edges"], "logical_type": typed["logical_type"]}
    if "crs" not in meta and "crs" in typed:
        out["crs"] = typed["crs"]
        out["crs_from_type"] = True
    return out


def _covering_bbox(
    table: pa.Table, meta: dict[str, Any]
) -> tuple[tuple[float, float, float, float] | None, ...] | None:
    """The rows of the 1.1 ``covering.bbox`` column (``{"xmin": [column, field], ...}``);
    None when there is none or it does not name a readable numeric struct field."""
    spec = (meta.get("covering") or {}).get("bbox")
    if not isinstance(spec, dict):
        return None
    cols = []
    for key in ("xmin", "ymin", "xmax", "ymax"):
        ref = spec.get(key)
        if not (isinstance(ref, list) and len(ref) == 2 and ref[0] in table.column_names):
            return None
        struct = table.column(ref[0]).combine_chunks()
        if not pa.types.is_struct(struct.type) or struct.type.get_field_index(ref[1]) < 0:
            return None
        values = struct.field(ref[1])
        if not (pa.types.is_floating(values.type) or pa.types.is_integer(values.type)):
            return None
        present = np.asarray(struct.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
        nums = values.cast(pa.float64()).fill_null(np.nan).to_numpy(zero_copy_only=False)
        cols.append(np.where(present, nums, np.nan))
    box = np.column_stack(cols)
    rows: list[tuple[float, float, float, float] | None] = []
    for x0, y0, x1, y1 in box.tolist():
        finite = not np.isnan([x0, y0, x1, y1]).any()
        rows.append((x0, y0, x1, y1) if finite else None)
    return tuple(rows)


@dataclass(frozen=True)
class _GeoColumn:
    """What the ``geo`` metadata says about a file's primary geometry column."""

    primary: str
    encoding: str
    meta: dict[str, Any]
    drop: frozenset[str]
    crs: str | None
    edges: str
    orientation: str | None
    #: the file's ``version`` and the column's ``bbox`` and ``geometry_types``, as written
    claims: dict[str, Any] = field(default_factory=dict)

    @property
    def crs_stated(self) -> bool:
        """The ``geo`` metadata states a CRS (a non-null ``crs``), rather than leaving
        the GeoParquet default (key absent: ``OGC:CRS84``) or saying unknown (null)."""
        return self.meta.get("crs") is not None

    @property
    def crs_source(self) -> str:
        """Where the file states its CRS (see :attr:`FeatureData.crs_source`)."""
        if not self.crs_stated:
            return ""
        typed = self.meta.get("logical_type")
        if typed and self.meta.get("crs_from_type"):
            return f"Parquet {str(typed).split('(')[0].upper()} logical type"
        return "GeoParquet metadata"


def _geo_column(
    path: Path | str, schema: pa.Schema, logical: dict[str, Any] | None = None
) -> _GeoColumn:
    """The primary geometry column of a file with arrow ``schema``: its ``geo`` metadata,
    completed by the Parquet GEOMETRY/GEOGRAPHY logical types ``logical``
    (:func:`~worker.io.formats.parquet_geo.logical_geo_columns`; GeoParquet 2.0: they are
    the encoding and the ``geo`` key is optional); plain Parquet with neither: a binary
    ``geometry`` column holds WKB, CRS unknown."""
    logical = logical or {}
    geo = _geo_metadata(path, (schema.metadata or {}).get(b"geo"))
    if geo is None and logical:  # Parquet 2.11 logical types, no GeoParquet metadata
        first = "geometry" if "geometry" in logical else next(iter(logical))
        geo = {"primary_column": first, "columns": logical}
    if geo is None:  # plain Parquet: a binary 'geometry' column holds WKB, CRS unknown
        if "geometry" not in schema.names:
            raise _fail(path, "no geometry column: no 'geo' metadata and no 'geometry' column")
        geo = {"primary_column": "geometry", "columns": {"geometry": {"crs": None}}}
    primary = geo.get("primary_column")
    columns = {**logical, **(geo.get("columns") or {})}
    if primary not in schema.names or primary not in columns:
        raise _fail(path, f"no geometry column: primary column {primary!r} is missing")
    meta = _with_logical(path, str(primary), columns[primary], logical.get(str(primary)))
    encoding = str(meta.get("encoding", "WKB"))
    typ = _storage_type(schema.field(primary).type)
    if encoding.upper() == "WKB":
        # a dictionary-encoded column (written from a pandas categorical), a large or a
        # view binary column (Polars) reads as its values: to_pylist() gives bytes
        if not pa.types.is_binary(canonical_type(typ)):
            raise _fail(path, f"WKB column {primary!r} has arrow type {typ}, not binary")
    elif encoding.lower() not in NATIVE_ENCODINGS:
        raise _fail(path, f"unsupported geometry encoding {encoding!r} of column {primary!r}")
    drop = set(columns) | {
        spec[0]
        for m in columns.values()
        for spec in ((m.get("covering") or {}).get("bbox") or {}).values()
        if isinstance(spec, list) and spec
    }
    edges, orientation = _edge_model(path, str(primary), meta)
    claims: dict[str, Any] = {
        "version": geo.get("version"),
        **{k: meta[k] for k in ("bbox", "geometry_types") if k in meta},
    }
    return _GeoColumn(
        str(primary),
        encoding,
        meta,
        frozenset(drop),
        _parquet_crs(path, meta),
        edges,
        orientation,
        claims,
    )


def _features(path: Path | str, table: pa.Table, geo: _GeoColumn) -> FeatureData:
    """The features of ``table`` (the whole file or some of its rows)."""
    col = table.column(geo.primary)
    if isinstance(col.type, pa.ExtensionType):  # GeoArrow registered in this process
        col = pa.chunked_array([c.storage for c in col.chunks], col.type.storage_type)
    envelope = None
    if geo.encoding.upper() == "WKB":
        # one Arrow chunk (a row group's slice): kept beside its values (WkbTuple), so a
        # batch of points is read from the array's buffers
        one = col.num_chunks == 1 and col.type in (pa.binary(), pa.large_binary())
        geoms = WkbTuple(col.chunk(0)) if one else tuple(col.to_pylist())
    else:
        types = geo.meta.get("geometry_types")
        stated = [t for t in types if isinstance(t, str)] if isinstance(types, list) else []
        geoms, envelope = native_to_wkb(path, col, geo.encoding.lower(), stated)
    attrs = table.drop_columns([c for c in table.column_names if c in geo.drop])
    return FeatureData(
        geoms,
        canonical_table(attrs, path),
        geo.crs,
        edges=geo.edges,
        orientation=geo.orientation,
        covering_bbox=_covering_bbox(table, geo.meta),
        coordinate_bounds=envelope,
        crs_stated=geo.crs_stated,
        crs_source=geo.crs_source,
        file_claims=geo.claims,
        metadata_name=METADATA_NAME,
    )
