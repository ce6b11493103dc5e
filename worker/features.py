"""Read batch files (GeoJSON, GeoParquet) into :class:`worker.model.Batch`.

Conventions written down once:

* Geometries become WKB ``bytes`` (None for a missing geometry), one per feature, in file
  order; attributes become a pyarrow Table with one row per feature, same order.
* GeoJSON follows RFC 7946: CRS ``OGC:CRS84`` and axis order ``east_north``, unless the
  caller overrides them (``crs=``, ``axis_order=``) or the file carries the legacy 2008
  ``crs`` member (``{"type": "name", "properties": {"name": ...}}``), which is honoured.
* GeoParquet follows the ``geo`` metadata (spec 1.0/1.1): ``primary_column``, per-column
  ``encoding`` (``WKB`` or GeoArrow native ``point`` ... ``multipolygon``) and ``crs``
  (PROJJSON kept as JSON text; explicit null = unknown, i.e. ``declared_crs=None``;
  key absent = ``OGC:CRS84``). Coordinates are always ``east_north`` (the spec says so).
  Geometry columns and bbox covering columns are not attributes.

Every failure raises :class:`worker.errors.PayloadError` naming the file and the problem.
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import shapely

from worker.errors import PayloadError
from worker.model import AXIS_ORDERS, Batch, FieldSpec

__all__ = ["FeatureData", "derive_schema", "load_payload", "read_batch_file", "read_features"]

RFC7946_CRS = "OGC:CRS84"
_NATIVE = {
    "point": shapely.GeometryType.POINT,
    "linestring": shapely.GeometryType.LINESTRING,
    "polygon": shapely.GeometryType.POLYGON,
    "multipoint": shapely.GeometryType.MULTIPOINT,
    "multilinestring": shapely.GeometryType.MULTILINESTRING,
    "multipolygon": shapely.GeometryType.MULTIPOLYGON,
}
_NESTING = {
    "point": 0,
    "linestring": 1,
    "multipoint": 1,
    "polygon": 2,
    "multilinestring": 2,
    "multipolygon": 3,
}


@dataclass(frozen=True)
class FeatureData:
    """The content of a batch file: geometries, attributes and the file's own CRS claim."""

    geometries_wkb: tuple[bytes | None, ...]
    attributes: pa.Table
    declared_crs: str | None
    axis_order: str = "east_north"


def derive_schema(table: pa.Table) -> tuple[FieldSpec, ...]:
    """Logical schema of an attribute table (:data:`worker.model.FIELD_TYPES`).

    Integer types of any width -> ``integer``; floating -> ``double``; string and
    large_string -> ``string``; bool -> ``boolean``; timestamp -> ``timestamp``; date32/64
    -> ``date``; binary types -> ``binary``; dictionary types map by their value type; an
    all-null column (arrow type ``null``) -> ``string``. ``nullable`` is True when the column
    holds a null.

    Raises
    ------
    ValueError
        A column has a type with no logical equivalent (struct, list, map, decimal...).
    """
    out = []
    for f, col in zip(table.schema, table.columns, strict=True):
        t = f.type.value_type if pa.types.is_dictionary(f.type) else f.type
        out.append(FieldSpec(f.name, _logical(f.name, t), col.null_count > 0))
    return tuple(out)


def _logical(name: str, t: pa.DataType) -> str:
    checks = [
        (pa.types.is_boolean, "boolean"),
        (pa.types.is_integer, "integer"),
        (pa.types.is_floating, "double"),
        (lambda x: pa.types.is_string(x) or pa.types.is_large_string(x), "string"),
        (pa.types.is_timestamp, "timestamp"),
        (pa.types.is_date, "date"),
        (lambda x: pa.types.is_binary(x) or pa.types.is_large_binary(x), "binary"),
        (pa.types.is_null, "string"),
    ]
    for check, logical in checks:
        if check(t):
            return logical
    raise ValueError(f"column {name!r} has arrow type {t}, which has no logical field type")


def _fail(path: Path | str, what: str) -> PayloadError:
    return PayloadError(f"{path}: {what}")


def _to_wkb(geoms: Any) -> tuple[bytes | None, ...]:
    return tuple(shapely.to_wkb(np.asarray(geoms, dtype=object)).tolist()) if len(geoms) else ()


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


def _coords(arr: pa.Array) -> np.ndarray:
    if pa.types.is_struct(arr.type):
        return np.column_stack(
            [arr.field(i).to_numpy(zero_copy_only=False) for i in range(arr.type.num_fields)]
        )
    width = arr.type.list_size  # interleaved: fixed_size_list<double>[2|3|4]
    return arr.flatten().to_numpy(zero_copy_only=False).reshape(-1, width)


def _native(path: Path, column: pa.ChunkedArray, encoding: str) -> tuple[bytes | None, ...]:
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
        coords = _coords(level)
        geoms = shapely.from_ragged_array(_NATIVE[encoding], coords, tuple(reversed(offsets)))
    except (AttributeError, ValueError, pa.ArrowException) as exc:
        raise _fail(
            path, f"GeoArrow {encoding} column of type {arr.type} is unreadable: {exc}"
        ) from None
    geoms = np.where(valid, geoms, None)
    return _to_wkb(geoms)


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


def read_features(path: str | Path) -> FeatureData:
    """Read the geometries, attributes and CRS claim of a GeoJSON or GeoParquet file.

    The format is chosen by the leading bytes (``PAR1`` is Parquet), not the suffix.

    Raises
    ------
    PayloadError
        Missing or unreadable file, not JSON, not a FeatureCollection, no geometry column,
        a malformed CRS, an unsupported encoding.
    """
    p = Path(path)
    try:
        with p.open("rb") as fh:
            head = fh.read(4)
    except OSError as exc:
        raise _fail(p, f"cannot open the batch file ({exc.strerror or exc})") from None
    if head != b"PAR1" and p.suffix.lower() in (".parquet", ".geoparquet"):
        raise _fail(p, "not a Parquet file (the file does not start with the PAR1 magic bytes)")
    try:
        return _read_geoparquet(p) if head == b"PAR1" else _read_geojson(p)
    except PayloadError:
        raise
    except (
        ValueError,
        TypeError,
        AttributeError,
        KeyError,
        OverflowError,
        pa.ArrowException,
    ) as exc:
        # malformed content the readers did not anticipate (e.g. an integer beyond int64,
        # `geo` metadata that is JSON but not an object): a clear PayloadError, never a crash
        raise _fail(p, f"cannot read the batch file: {type(exc).__name__}: {exc}") from None


def read_batch_file(
    path: str | Path,
    *,
    layer: str,
    crs: str | None = None,
    axis_order: str | None = None,
    data_time: datetime | None = None,
    batch_id: str | None = None,
    producer: str = "contract-gate-cli",
) -> Batch:
    """Read a GeoJSON FeatureCollection or a GeoParquet file as one :class:`Batch`.

    Parameters
    ----------
    path : str or Path
        The batch file.
    layer : str
        The layer the batch belongs to.
    crs, axis_order : str, optional
        Override the file's CRS claim / axis order (``east_north`` or ``north_east``).
    data_time : datetime, optional
        Time of the data (UTC); default the file's modification time.
    batch_id : str, optional
        Default a new uuid4.
    producer : str
        Producer name recorded in the batch.

    Raises
    ------
    PayloadError
        See :func:`read_features`; also a bad ``axis_order`` value or a naive ``data_time``.
    """
    p = Path(path)
    data = read_features(p)
    if axis_order is not None and axis_order not in AXIS_ORDERS:
        raise _fail(p, f"bad axis order {axis_order!r}: expected one of {AXIS_ORDERS}")
    if data_time is None:
        data_time = datetime.fromtimestamp(os.stat(p).st_mtime, tz=timezone.utc)
    elif data_time.tzinfo is None:
        raise _fail(p, "data_time must be timezone-aware (UTC)")
    try:
        fields = derive_schema(data.attributes)
    except ValueError as exc:
        raise _fail(p, str(exc)) from None
    return Batch(
        batch_id=batch_id or str(uuid.uuid4()),
        layer=layer,
        producer=producer,
        data_time=data_time,
        produced_at=datetime.now(timezone.utc),
        declared_crs=crs if crs is not None else data.declared_crs,
        axis_order=axis_order or data.axis_order,  # type: ignore[arg-type]
        schema_fields=fields,
        feature_count=len(data.geometries_wkb),
        geometries_wkb=data.geometries_wkb,
        attributes=data.attributes,
    )


def _uri_path(uri: str) -> Path:
    parsed = urlparse(uri)
    if parsed.scheme == "file":
        if parsed.netloc not in ("", "localhost"):
            raise PayloadError(f"{uri}: file URI on a remote host {parsed.netloc!r}")
        return Path(unquote(parsed.path))
    if parsed.scheme and len(parsed.scheme) > 1:  # one letter: a Windows drive
        raise PayloadError(f"{uri}: unsupported payload URI scheme {parsed.scheme!r}")
    return Path(uri)


def load_payload(
    uri: str,
    event: Batch | None = None,
    *,
    layer: str | None = None,
    crs: str | None = None,
    axis_order: str | None = None,
    data_time: datetime | None = None,
    batch_id: str | None = None,
    producer: str = "contract-gate-cli",
) -> Batch:
    """Load the features at an event's ``payload_uri``.

    Parameters
    ----------
    uri : str
        ``file://`` URI or plain path of a GeoParquet or GeoJSON file.
    event : Batch, optional
        The decoded event (metadata, usually no inline features). When given, the result
        is the event with the file's geometries and attributes: the event's metadata wins
        (``declared_crs`` and ``axis_order`` are the producer's declaration, the file's own
        CRS claim is ignored; ``schema_fields`` are derived from the file's columns,
        whatever the event declared; ``feature_count`` stays the declared count).
    layer, crs, axis_order, data_time, batch_id, producer
        Without ``event``: as for :func:`read_batch_file` (``layer`` is then required).

    Returns
    -------
    Batch
        With ``payload_uri`` set to ``uri``.

    Raises
    ------
    PayloadError
        Bad URI, no event and no layer, or any failure of :func:`read_features`.
    """
    path = _uri_path(uri)
    if event is None:
        if layer is None:
            raise PayloadError(f"{uri}: load_payload needs the decoded event or a layer")
        batch = read_batch_file(
            path,
            layer=layer,
            crs=crs,
            axis_order=axis_order,
            data_time=data_time,
            batch_id=batch_id,
            producer=producer,
        )
        return replace(batch, payload_uri=uri)
    data = read_features(path)
    # The schema is the file's, not the event's declaration: the file is what is evaluated
    # (a fresh-user session had a retyped column admitted by reference while `check` of the
    # same file broke the schema clause).
    try:
        fields = derive_schema(data.attributes)
    except ValueError as exc:
        raise PayloadError(f"{uri}: {exc}") from None
    return replace(
        event,
        geometries_wkb=data.geometries_wkb,
        attributes=data.attributes,
        schema_fields=fields,
        payload_uri=uri,
    )
