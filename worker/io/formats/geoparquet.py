"""GeoParquet 1.0/1.1/2.0 and Parquet 2.11 geospatial files into
:class:`~worker.io.formats.base.FeatureData`.

The CRS and edge model come from the ``geo`` metadata and, where it is absent or silent,
from the column's Parquet GEOMETRY/GEOGRAPHY logical type (:mod:`.parquet_geo`: ``crs``
defaults to ``OGC:CRS84``, GEOGRAPHY edges to spherical).

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

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from worker.core.errors import PayloadCorrupt, PayloadError, PayloadUnavailable
from worker.io.formats.base import (
    FeatureData,
    Source,
    canonical_table,
    scrub,
)
from worker.io.formats.geo_column import METADATA_NAME, _features, _geo_column, _GeoColumn
from worker.io.formats.parquet_geo import logical_geo_columns


def parquet_read_error(name: Path | str, exc: BaseException) -> PayloadError:
    """The error for a failed Parquet read: :class:`PayloadUnavailable` (transient) when
    the storage failed (an S3/network error), else :class:`PayloadCorrupt` (not Parquet,
    truncated, a bad footer or page)."""
    text = scrub(exc)
    if isinstance(exc, OSError) and ("AWS Error" in text or "curl" in text.lower()):
        return PayloadUnavailable(f"{name}: read failed ({text})", transient=True)
    return PayloadCorrupt(f"{name}: not a readable Parquet file ({text})")


#: Read buffer of a GeoParquet file read in chunks (:func:`open_geoparquet_chunks`).
READ_BUFFER_BYTES = 8 * 1024 * 1024


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
        pf = pq.ParquetFile(source if source is not None else path, pre_buffer=not python_file)
        table = pf.read(use_threads=not python_file)
    except (OSError, pa.ArrowException) as exc:
        raise parquet_read_error(path, exc) from None
    return _features(path, table, _geo_column(path, table.schema, logical_geo_columns(path, pf)))


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
    def crs_source(self) -> str:
        return self.geo.crs_source

    @property
    def edges(self) -> str:
        return self.geo.edges

    @property
    def orientation(self) -> str | None:
        return self.geo.orientation

    @property
    def file_claims(self) -> dict[str, Any]:
        return self.geo.claims

    @property
    def metadata_name(self) -> str:
        return METADATA_NAME

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
    geo = _geo_column(path, schema, logical_geo_columns(path, pf))
    empty = pa.Table.from_batches([], schema=schema)  # empty_table() imports pandas (~0.5 s)
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
    suffixes: tuple[str, ...] = (".parquet", ".geoparquet")
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
        if name.lower().rstrip("/").endswith(self.suffixes):
            raise PayloadCorrupt(
                f"{name}: not a Parquet file (the file does not start with the PAR1 magic bytes)"
            )
        return False

    def read(self, src: Source) -> FeatureData:
        return _read_geoparquet(src.uri, src.file)

    def chunks(self, src: Source, count_nulls: bool = True) -> GeoParquetChunks:
        return open_geoparquet_chunks(src.uri, src.file, count_nulls=count_nulls)


READER = GeoParquetReader()
