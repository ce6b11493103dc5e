"""GeoParquet 1.0/1.1 files into :class:`~worker.io.formats.base.FeatureData`.

Follows the ``geo`` metadata: ``primary_column``, per-column ``encoding`` (``WKB`` or
GeoArrow native ``point`` ... ``multipolygon``) and ``crs`` (PROJJSON kept as JSON text;
explicit null = unknown, i.e. ``declared_crs=None``; key absent = ``OGC:CRS84``).
Coordinates are always ``east_north`` (the spec says so). Geometry columns and bbox covering
columns are not attributes.

The metadata that changes what the geometries mean is read and carried, never applied here
(no reader repairs or reorients geometry): ``edges`` (``planar`` or ``spherical``),
``orientation`` (``counterclockwise``) and the 1.1 ``covering.bbox`` column's values, which
the core compares with the geometries. A value the spec does not define for ``edges`` or
``orientation`` makes the file unreadable: its geometries have no known meaning.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from worker.core.errors import PayloadCorrupt, PayloadError, PayloadUnavailable
from worker.io.formats.base import (
    RFC7946_CRS,
    FeatureData,
    Source,
    _fail,
    canonical_table,
    canonical_type,
    scrub,
)
from worker.io.formats.geoarrow import NATIVE_ENCODINGS, native_to_wkb


def parquet_read_error(name: Path | str, exc: BaseException) -> PayloadError:
    """The error for a failed Parquet read: :class:`PayloadUnavailable` (transient) when
    the storage failed (an S3/network error), else :class:`PayloadCorrupt` (not Parquet,
    truncated, a bad footer or page)."""
    text = scrub(exc)
    if isinstance(exc, OSError) and ("AWS Error" in text or "curl" in text.lower()):
        return PayloadUnavailable(f"{name}: read failed ({text})", transient=True)
    return PayloadCorrupt(f"{name}: not a readable Parquet file ({text})")


def _parquet_crs(path: Path | str, meta: dict[str, Any]) -> str | None:
    if "crs" not in meta:
        return RFC7946_CRS
    crs = meta["crs"]
    if crs is None or isinstance(crs, str):
        return crs
    if isinstance(crs, dict):
        return json.dumps(crs, sort_keys=True)
    raise _fail(path, f"bad CRS: geo metadata crs is a {type(crs).__name__}, not PROJJSON")


#: Read buffer of a GeoParquet file read in chunks (:func:`open_geoparquet_chunks`).
READ_BUFFER_BYTES = 8 * 1024 * 1024

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


def _geo_column(path: Path | str, schema: pa.Schema) -> _GeoColumn:
    """The primary geometry column of a file with arrow ``schema`` (its ``geo`` metadata;
    plain Parquet: a binary ``geometry`` column holds WKB, CRS unknown)."""
    raw = (schema.metadata or {}).get(b"geo")
    try:
        geo = json.loads(raw) if raw else None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise _fail(path, f"the 'geo' metadata is not JSON ({exc})") from None
    if geo is None:  # plain Parquet: a binary 'geometry' column holds WKB, CRS unknown
        if "geometry" not in schema.names:
            raise _fail(path, "no geometry column: no 'geo' metadata and no 'geometry' column")
        geo = {"primary_column": "geometry", "columns": {"geometry": {"crs": None}}}
    primary = geo.get("primary_column")
    columns = geo.get("columns") or {}
    if primary not in schema.names or primary not in columns:
        raise _fail(path, f"no geometry column: primary column {primary!r} is missing")
    meta = columns[primary]
    encoding = str(meta.get("encoding", "WKB"))
    typ = schema.field(primary).type
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
    claims = {
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
    envelope = None
    if geo.encoding.upper() == "WKB":
        geoms = tuple(col.to_pylist())
    else:
        geoms, envelope = native_to_wkb(path, col, geo.encoding.lower())
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
        file_claims=geo.claims,
    )


def _read_geoparquet(path: Path | str, source: pa.NativeFile | None = None) -> FeatureData:
    """The GeoParquet file ``source`` (default: the file ``path``); ``path`` names the file
    in messages."""
    # no pre-buffering and no reader threads on a Python file object (the local files:
    # pa.PythonFile): Arrow's threads that read through it take the GIL, and one still
    # doing so when the interpreter exits is ended inside Arrow ("terminate called without
    # an active exception", SIGABRT): exit 134 for about 1 in 5 `check` runs that exited
    # soon after reading without either, and still 1 in ~40 under load with threads. The
    # chunked path reads without threads too (use_threads=False).
    python_file = isinstance(source, pa.PythonFile)
    try:
        table = pq.read_table(
            source if source is not None else path,
            pre_buffer=not python_file,
            use_threads=not python_file,
        )
    except (OSError, pa.ArrowException) as exc:
        raise parquet_read_error(path, exc) from None
    return _features(path, table, _geo_column(path, table.schema))


@dataclass(frozen=True)
class GeoParquetChunks:
    """A GeoParquet file opened for reading in chunks: the attribute schema (an empty
    table), the CRS claim and edge model of its geometry column, the rows (from the
    footer), the null count of every attribute column (the footer's statistics, else a
    read of that column alone, one row group at a time), and :meth:`chunks`."""

    path: str
    file: pq.ParquetFile
    geo: _GeoColumn
    attributes: pa.Table
    rows: int
    null_counts: dict[str, int]

    @property
    def declared_crs(self) -> str | None:
        return self.geo.crs

    @property
    def crs_stated(self) -> bool:
        return self.geo.crs_stated

    @property
    def edges(self) -> str:
        return self.geo.edges

    @property
    def orientation(self) -> str | None:
        return self.geo.orientation

    @property
    def file_claims(self) -> dict[str, Any]:
        return self.geo.claims

    def chunk_rows(self, rows: int, max_bytes: int) -> int:
        """Rows per chunk: ``rows``, fewer when that many rows of the file's average
        uncompressed size (footer: row groups' ``total_byte_size`` / rows) exceed
        ``max_bytes``; at least 1."""
        md = self.file.metadata
        size = sum(md.row_group(i).total_byte_size for i in range(md.num_row_groups))
        per_row = size / md.num_rows if md.num_rows else 0.0
        fit = int(max_bytes // per_row) if per_row > 0 else rows
        return max(1, min(rows, fit))

    def chunks(self, rows: int, start_row: int = 0) -> Iterator[FeatureData]:
        """The features, ``rows`` at a time (at most; a chunk never spans row groups), in
        file order, from the chunk starting at row ``start_row`` (a chunk boundary of an
        earlier pass with the same ``rows``: row groups before it are not read).

        Raises
        ------
        PayloadError
            A row group that cannot be read or decoded (``parquet_read_error``) or a
            GeoArrow column that is unreadable.
        """
        # one row group at a time: iter_batches over the whole file keeps (pyarrow 26)
        # memory of the row groups it has read, RSS grew with the file (+230 MB over 9
        # row groups of 24 MB); per row group it stays flat
        md = self.file.metadata
        first = 0  # row index of the group's first row
        try:
            for group in range(md.num_row_groups):
                size = md.row_group(group).num_rows
                if first + size <= start_row:
                    first += size
                    continue
                for rb in self.file.iter_batches(
                    batch_size=rows, row_groups=[group], use_threads=False
                ):
                    first += rb.num_rows
                    if first > start_row:
                        yield _features(self.path, pa.Table.from_batches([rb]), self.geo)
        except (OSError, pa.ArrowException) as exc:
            raise parquet_read_error(self.path, exc) from None


def _null_counts(path: str, pf: pq.ParquetFile, names: list[str]) -> dict[str, int]:
    md = pf.metadata
    leaves = {md.schema.column(i).path: i for i in range(md.num_columns)}
    out: dict[str, int] = {}
    for name in names:
        total: int | None = 0
        i = leaves.get(name)
        for rg in range(md.num_row_groups):
            stats = md.row_group(rg).column(i).statistics if i is not None else None
            if total is None or stats is None or not stats.has_null_count:
                total = None
                break
            total += stats.null_count
        if total is None:  # no statistics (or a nested column): count the column itself
            try:
                total = sum(
                    pf.read_row_group(rg, columns=[name], use_threads=False).column(name).null_count
                    for rg in range(md.num_row_groups)
                )
            except (OSError, pa.ArrowException) as exc:
                raise parquet_read_error(path, exc) from None
        out[name] = total
    return out


def open_geoparquet_chunks(
    path: Path | str, source: pa.NativeFile, *, count_nulls: bool = True
) -> GeoParquetChunks:
    """Open the GeoParquet file ``source`` for :meth:`GeoParquetChunks.chunks`: reads the
    footer and checks the ``geo`` metadata, no rows (but see the null counts; without
    ``count_nulls`` they are left empty).

    Raises
    ------
    PayloadError
        As :func:`_read_geoparquet` for a footer or ``geo`` metadata it cannot use.
    """
    try:
        # pages streamed through a READ_BUFFER_BYTES buffer, not a whole column chunk read
        # ahead (pre_buffer): a file written as one 419 MB row group peaked at 611 MiB
        # RSS read ahead, 187 MiB streamed
        pf = pq.ParquetFile(source, buffer_size=READ_BUFFER_BYTES, pre_buffer=False)
        schema = pf.schema_arrow
    except (OSError, pa.ArrowException) as exc:
        raise parquet_read_error(path, exc) from None
    geo = _geo_column(path, schema)
    empty = schema.empty_table()
    attrs = canonical_table(
        empty.drop_columns([c for c in empty.column_names if c in geo.drop]), path
    )
    counts = _null_counts(str(path), pf, attrs.column_names) if count_nulls else {}
    return GeoParquetChunks(str(path), pf, geo, attrs, pf.metadata.num_rows, counts)


class GeoParquetReader:
    """The registry entry (:class:`~worker.io.formats.base.Reader`) of (Geo)Parquet:
    ``PAR1`` at both ends (Apache Parquet file format); read whole or in chunks."""

    name = "parquet"
    title = "Parquet"
    described: tuple[str, ...] = ("GeoParquet",)
    magic = "Parquet starts and ends with the PAR1 magic bytes"
    default_limit_bytes = 2 * 1024**3
    by_reference = True
    chunked = True

    def sniff(self, head: bytes, tail: bytes, name: str) -> bool:
        """PAR1 at the start and the end; a ``.parquet``/``.geoparquet`` name without it
        or a file without the closing magic is corrupt (raises)."""
        if head.startswith(b"PAR1"):
            if tail != b"PAR1":
                raise PayloadCorrupt(
                    f"{name}: not a readable Parquet file (truncated or corrupt: it starts "
                    "with the PAR1 magic bytes but does not end with them)"
                )
            return True
        if name.lower().rstrip("/").endswith((".parquet", ".geoparquet")):
            raise PayloadCorrupt(
                f"{name}: not a Parquet file (the file does not start with the PAR1 magic bytes)"
            )
        return False

    def read(self, src: Source) -> FeatureData:
        return _read_geoparquet(src.uri, src.file)

    def chunks(self, src: Source, count_nulls: bool = True) -> GeoParquetChunks:
        return open_geoparquet_chunks(src.uri, src.file, count_nulls=count_nulls)


READER = GeoParquetReader()
