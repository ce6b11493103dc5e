"""GeoJSON FeatureCollections read in bounded pieces (issue 27), for chunked evaluation.

One streamed pass reads the features array a piece at a time (about
:data:`~.geojson_split.PIECE_BYTES`, cut between two features: :mod:`.geojson_split`),
parses each piece with simdjson (pysimdjson), converts its features
:data:`PARSE_ROWS` at a time (WKB by :class:`~.geojson_fast.Geometries`, the properties'
types by :class:`~.geojson_props.PropertyTypes`) and appends them to a temporary Arrow
IPC spool file (WKB, the reason of a geometry without WKB, each feature's properties as
minified JSON, its id). What the evaluation needs before the first chunk (feature count,
attribute schema and null counts of the whole file, the CRS: the legacy ``crs`` member,
or ``OGC:CRS84h`` when any position has a height) is known at the end of that pass;
:meth:`GeoJsonChunks.chunks` then reads the spool one chunk at a time. Peak memory is one
piece and one chunk whatever the file's size; the spool takes about the WKB's size on disk
(``TMPDIR``) and is deleted with the last reference to its :class:`GeoJsonChunks`.

Why this way, measured on 20,000 seeded polygons of 20-80 vertices (44 MB; CPU seconds on
this 2-core machine under the load of other sessions; ``benchmarks/geojson_read.py`` has
the 190,000 of issue 27): ``pyogrio.read_arrow`` (GDAL) 1.2-1.9 s; ``json.loads`` 2.8 s,
``orjson.loads`` 1.5 s, ijson's yajl2 C backend 1.3 s (each builds 2.2 million Python
floats; GEOS's GeoJSON reader on each geometry's text then takes 2.4 s more); simdjson
0.17 s to parse, its coordinates taken as float64 buffers without Python numbers. GDAL
itself is not used: it keeps one of repeated member names, accepts ``NaN``, and is what
this reader is measured against. Reading the file twice (a first pass for schema and CRS,
a second for the chunks) would double the cost: hence the spool.

The rules of the whole read (:mod:`.geojson`) hold, and where the stream cannot vouch
for one it gives the file back to that read (:func:`open_geojson_chunks` returns None,
the caller reads it whole, so refusals and their messages are the whole read's own): a
member name repeated in any object, ``NaN``/``Infinity``, a number beyond double
precision or an integer beyond 64 bits, a ``\\u`` escape of a UTF-16 surrogate, JSON
that simdjson refuses, a top level it cannot split, a document that is not a
FeatureCollection, a feature that is not a Feature or whose properties are not an
object. Per-feature findings (a geometry without WKB, an open ring, a collection nested
too deeply) stay per feature, unrepaired.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import tempfile
import weakref
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import simdjson

from worker.core.errors import PayloadError
from worker.io.formats.base import RFC7946_CRS, RFC7946_CRS_3D, FeatureData, Source
from worker.io.formats.geojson_fast import Geometries
from worker.io.formats.geojson_geos import legacy_crs
from worker.io.formats.geojson_props import PropertyTypes
from worker.io.formats.geojson_split import Unstreamable, edges, feature_parts, pieces, split
from worker.io.formats.strict_json import NotStrictJson

__all__ = ["PARSE_ROWS", "GeoJsonChunks", "open_geojson_chunks"]

#: Features converted at a time in the streamed pass.
PARSE_ROWS = 8192
#: Read size of the streamed pass.
READ_BYTES = 1024 * 1024

_SPOOL_SCHEMA = pa.schema(
    [("wkb", pa.binary()), ("error", pa.string()), ("props", pa.binary()), ("id", pa.string())]
)


@dataclass
class GeoJsonChunks:
    """A GeoJSON file read once into a spool (:class:`~worker.io.formats.base.ChunkedFile`):
    what the whole file says (rows, attribute schema, null counts, CRS) and its chunks."""

    path: str
    spool: str
    attributes: pa.Table
    rows: int
    null_counts: dict[str, int]
    declared_crs: str | None
    crs_stated: bool
    crs_source: str
    spool_bytes: int
    has_ids: bool
    types: PropertyTypes = field(repr=False)
    edges: str = "planar"
    orientation: str | None = None
    metadata_name: str = ""

    def __post_init__(self) -> None:
        weakref.finalize(self, _unlink, self.spool)

    @property
    def file_claims(self) -> dict[str, Any]:
        return {}

    def chunk_rows(self, rows: int, max_bytes: int) -> int:
        """Rows per chunk: ``rows``, fewer when that many rows of the spool's average
        size exceed ``max_bytes``; at least 1."""
        per_row = self.spool_bytes / self.rows if self.rows else 0.0
        fit = int(max_bytes // per_row) if per_row > 0 else rows
        return max(1, min(rows, fit))

    def chunks(self, rows: int, start_row: int = 0) -> Iterator[FeatureData]:
        """The features, ``rows`` at a time (the last chunk may hold fewer), in file
        order, from row ``start_row``. Raises PayloadError when the spool is gone."""
        try:
            source = pa.OSFile(self.spool)  # not mapped: pages read stay out of RSS
        except OSError as exc:
            raise PayloadError(f"{self.path}: the spool of the read is gone ({exc})") from None
        with source:
            spool = pa.ipc.open_file(source)
            pending: list[pa.RecordBatch] = []
            held, skip = 0, start_row
            for i in range(spool.num_record_batches):
                rb = spool.get_batch(i)
                if skip >= rb.num_rows:
                    skip -= rb.num_rows
                    continue
                rb, skip = rb.slice(skip), 0
                pending.append(rb)
                held += rb.num_rows
                while held >= rows:
                    table = pa.Table.from_batches(pending)
                    yield self._features(table.slice(0, rows))
                    rest = table.slice(rows)
                    pending, held = rest.to_batches(), rest.num_rows
            if held:
                yield self._features(pa.Table.from_batches(pending))

    def _features(self, table: pa.Table) -> FeatureData:
        texts = table.column("props").to_pylist()
        parsed: Any = simdjson.Parser().parse(b"[" + b",".join(texts) + b"]")
        props: list[dict[str, Any]] = parsed.as_list()
        errors = {i: e for i, e in enumerate(table.column("error").to_pylist()) if e is not None}
        ids = [None if t is None else json.loads(t) for t in table.column("id").to_pylist()]
        return FeatureData(
            tuple(table.column("wkb").to_pylist()),
            self.types.table(props, self.path),
            self.declared_crs,
            crs_stated=self.crs_stated,
            crs_source=self.crs_source,
            geometry_errors=errors,
            feature_ids=tuple(ids) if self.has_ids else None,
        )


def _unlink(path: str) -> None:
    with contextlib.suppress(OSError):
        os.unlink(path)


#: Files read into a spool, by (name, size, modification time): a second pass over the
#: chunks (the evaluation opens the file again) reuses the spool while the first lives.
_SPOOLS: weakref.WeakValueDictionary[tuple[str, int, str], GeoJsonChunks] = (
    weakref.WeakValueDictionary()
)


def open_geojson_chunks(src: Source, count_nulls: bool = True) -> GeoJsonChunks | None:
    """The GeoJSON file ``src`` read once, streamed, into a spool for
    :meth:`GeoJsonChunks.chunks`; None when the file is to be read whole (see the module
    docstring: the whole read then refuses it or reads it as it always has). A file read
    before (same name, size and modification time) whose spool still lives is not read
    again; a source without a modification time is always read. ``count_nulls`` is
    accepted for the reader protocol (they are always counted).

    Raises
    ------
    PayloadError
        The legacy ``crs`` member without a name (as the whole read); a spool that cannot
        be written.
    """
    size = src.file.size()
    mtime = getattr(src, "mtime", None)
    # without a modification time, a name and size do not say the bytes are the same: an
    # object rewritten at the same size is read again, never served from another's spool
    key = None if mtime is None else (src.uri, size, str(mtime))
    cached = None if key is None else _SPOOLS.get(key)
    if cached is not None and os.path.exists(cached.spool):
        return cached
    try:
        head, tail = edges(src.file, size)
        found = split(head, tail, size)
        if found is None:
            return None
        start, end, doc = found
        if doc.get("type") != "FeatureCollection":
            return None
        opened = _stream(src, start, end, doc)
    except (Unstreamable, NotStrictJson, RecursionError, ValueError):
        return None
    except OSError as exc:
        raise PayloadError(f"{src.uri}: cannot spool the GeoJSON read ({exc})") from None
    if key is not None:
        _SPOOLS[key] = opened
    return opened


def _stream(src: Source, start: int, end: int, doc: dict[str, Any]) -> GeoJsonChunks:
    legacy = legacy_crs(src.uri, doc)
    fd, spool = tempfile.mkstemp(prefix="contract-gate-geojson-", suffix=".arrow")
    os.close(fd)
    pass_ = _Pass(PropertyTypes())
    try:
        with pa.OSFile(spool, "wb") as sink, pa.ipc.new_file(sink, _SPOOL_SCHEMA) as writer:
            for array in pieces(src.file, start, end):
                features = iter(array)
                while piece := list(itertools.islice(features, PARSE_ROWS)):
                    writer.write_batch(pass_.convert(piece))
                del array, features
            if not pass_.rows:
                writer.write_batch(pass_.convert([]))
    except BaseException:
        _unlink(spool)
        raise
    return GeoJsonChunks(
        path=src.uri,
        spool=spool,
        attributes=pass_.types.empty(src.uri),
        rows=pass_.rows,
        null_counts=pass_.types.null_counts(pass_.rows),
        declared_crs=legacy
        if legacy is not None
        else RFC7946_CRS_3D
        if pass_.heights
        else RFC7946_CRS,
        crs_stated=legacy is not None,
        crs_source="legacy GeoJSON 'crs' member" if legacy is not None else "",
        spool_bytes=os.path.getsize(spool),
        has_ids=pass_.has_ids,
        types=pass_.types,
    )


@dataclass
class _Pass:
    """What the streamed pass has learned so far."""

    types: PropertyTypes
    rows: int = 0
    heights: bool = False
    has_ids: bool = False

    def convert(self, piece: list[Any]) -> pa.RecordBatch:
        """Parsed features (simdjson values) as a spool record batch."""
        geoms = Geometries()
        props: list[dict[str, Any]] = []
        texts: list[bytes] = []
        ids: list[str | None] = []
        for feat in piece:
            if not isinstance(feat, simdjson.Object):
                raise Unstreamable("not a Feature")
            feature_parts(feat, geoms, props, texts, ids)
        wkb, errors, heights = geoms.wkb()
        self.heights = self.heights or heights
        self.has_ids = self.has_ids or any(i is not None for i in ids)
        self.types.observe(props)
        self.rows += len(props)
        return pa.record_batch(
            [
                pa.array(wkb, pa.binary()),
                pa.array([errors.get(i) for i in range(len(props))], pa.string()),
                pa.array(texts, pa.binary()),
                pa.array(ids, pa.string()),
            ],
            schema=_SPOOL_SCHEMA,
        )
