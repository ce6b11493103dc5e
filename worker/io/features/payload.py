"""Batch files and by-reference payloads into :class:`worker.core.model.Batch`.

Geometries become WKB ``bytes`` (None for a missing geometry), one per feature, in file
order; attributes become a pyarrow Table with one row per feature, same order. Every failure
raises :class:`worker.core.errors.PayloadError` naming the file and the problem.
"""

from __future__ import annotations

import os
import uuid
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path
from urllib.parse import unquote, urlparse

import pyarrow as pa

from worker.core.errors import PayloadError
from worker.core.model import AXIS_ORDERS, Batch
from worker.io.features.base import FeatureData, _fail, derive_schema
from worker.io.features.geojson import _read_geojson
from worker.io.features.geoparquet import _read_geoparquet
from worker.io.features.ogr import ogr_format, read_ogr

__all__ = ["load_payload", "read_batch_file", "read_features"]


def read_features(path: str | Path) -> FeatureData:
    """Read the geometries, attributes and CRS claim of a batch file: GeoJSON, GeoParquet,
    or through pyogrio (an optional extra) Shapefile, zipped Shapefile, GeoPackage and
    FlatGeobuf (:mod:`.ogr`).

    The format is chosen by the leading bytes (``PAR1`` Parquet, the shapefile, zip, SQLite
    and FlatGeobuf magic numbers), else the suffix; anything else is read as GeoJSON.

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
    ogr = ogr_format(p, head + _more(p))
    try:
        if ogr is not None:
            return read_ogr(p, ogr)
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


def _more(p: Path) -> bytes:
    """Bytes 4..16 of the file (the GeoPackage/SQLite magic is 16 bytes long)."""
    try:
        with p.open("rb") as fh:
            return fh.read(16)[4:]
    except OSError:
        return b""


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
        geometry_errors=data.geometry_errors,
        edges=data.edges,
        orientation=data.orientation,
        covering_bbox=data.covering_bbox,
        feature_ids=data.feature_ids,
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
        geometry_errors=data.geometry_errors,
        edges=data.edges,
        orientation=data.orientation,
        covering_bbox=data.covering_bbox,
        feature_ids=data.feature_ids,
    )
