"""The headers of a GeoPackage layer's geometry blobs, checked against the layer (pure I/O
over the file with the standard library's ``sqlite3``; GeoPackage 1.3, OGC 12-128r18,
section 2.1.3.1.1 "BLOB Format").

GDAL reads a GeoPackage geometry as the WKB after its blob header and keeps nothing of
the header: the blob's own SRS id, its envelope and its empty flag go unread, and the WKB
is passed on as stored, PostGIS's extended flags too. Each of these is a statement of the
file about one feature, and :func:`blob_findings` reads them beside GDAL:

* the WKB must be standard WKB: a PostGIS EWKB type code with the ``0x20000000`` flag (an
  SRID follows the code) or ``0x40000000`` (M) is not GeoPackage (GDAL passes it
  through and GEOS reads it; a reader of the standard reads 4 bytes of SRID as
  coordinates, or no type at all): the feature's geometry is unreadable, naming the flag
  and the ISO code to write. The ``0x80000000`` Z flag alone is admitted: it is also
  the pre-ISO "2.5D" code of OGC 99-049 that GDAL, GEOS, JTS and PostGIS all read as Z
  (and shapely 2 writes by default), so a reader of the format reads what was meant;
* the blob's SRS id must be the layer's (``gpkg_geometry_columns.srs_id``): a feature
  whose header states another SRS (the file's own statement, T09's rule) has coordinates
  the layer's CRS does not locate; unreadable, naming both (nothing is reprojected);
* a blob flagged empty must hold an empty geometry (a reader that trusts the flag sees
  nothing where GDAL reads a shape); unreadable, naming the flag;
* the envelope (kinds 1-4; its X and Y ranges) is the feature's bounding box as the file
  states it, the one spatial indexes and filters read: it is carried as the batch's
  per-feature covering box (``Batch.covering_bbox``, as GeoParquet's bbox covering
  column), and one that does not bound its geometry is reported by the extent clause
  without breaking it (readers filtering by it would skip the feature). For a blob
  without an envelope (kind 0, allowed) GDAL's ``ST_MinX``... give its geometry's bounds.

A blob that is not a GeoPackage geometry at all (no ``GP`` magic, an unknown version or
envelope kind, too short for its header) GDAL reads as null; its reason is said here.
"""

from __future__ import annotations

import sqlite3
import struct
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa
import shapely

from worker.core.facts.wkb_arrow import WkbTuple, arrow_heads
from worker.core.facts.wkb_check import wkb_problem
from worker.io.formats.gpkg_types import sql_name

__all__ = ["BlobFindings", "blob_findings"]

#: Doubles of the envelope of each envelope contents indicator (GeoPackage 1.3, 2.1.3.1.1).
_ENVELOPE_DOUBLES = {0: 0, 1: 4, 2: 6, 3: 6, 4: 8}
_EWKB_FLAGS = ((0x20000000, "SRID"), (0x40000000, "M"), (0x80000000, "Z"))
_REFUSED_FLAGS = 0x20000000 | 0x40000000  # (Z alone: the 2.5D code every reader reads)
_U32 = {"<": struct.Struct("<I").unpack_from, ">": struct.Struct(">I").unpack_from}


@dataclass(frozen=True)
class BlobFindings:
    """What the blob headers of a layer state about its features, by row (0-based, the
    order of the fids given to :func:`blob_findings`): ``errors`` maps a row whose
    geometry is to be read as unreadable to its reason; ``envelopes`` holds one
    ``(xmin, ymin, xmax, ymax)`` per row, the header's (GDAL's ``ST_MinX``... read it; a
    blob without one: its geometry's bounds; None for a null or unreadable geometry)."""

    errors: dict[int, str] = field(default_factory=dict)
    envelopes: tuple[tuple[float, float, float, float] | None, ...] | None = None


def blob_findings(path: Path, fids: np.ndarray, wkb: pa.Array) -> BlobFindings | None:
    """The findings of the geometry blobs of the one feature layer of the GeoPackage at
    ``path``, for the rows GDAL read: their ``fids`` (int (N,)) and WKB (``wkb``, binary,
    one chunk).

    One columnar read of every header through GDAL's GeoPackage SQL functions
    (``ST_SRID``, ``ST_IsEmpty``, ``ST_MinX``...: the header's SRS id, empty flag and
    envelope), the EWKB flags from the WKB GDAL read; the few rows that break a rule
    (and those GDAL read as null) are then read whole for their reasons. Returns None when
    the file cannot be read this way (a layer that is a view, no one
    ``gpkg_geometry_columns`` row, an SQL error): GDAL's reading then stands alone.
    """
    import pyogrio  # (the optional extra: its caller has read the file with it)

    if not len(fids):
        return BlobFindings()
    try:
        with sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True) as con:
            rows = con.execute(
                "SELECT table_name, column_name, srs_id FROM gpkg_geometry_columns"
            ).fetchall()
        if len(rows) != 1:
            return None
        table, column, layer_srs_id = sql_name(rows[0][0]), sql_name(rows[0][1]), int(rows[0][2])
        _, stats = pyogrio.read_arrow(
            path,
            sql=f"SELECT rowid + 0 AS row_id, ST_SRID({column}) AS srs, ST_IsEmpty({column}) "
            f"AS empty, ST_MinX({column}) AS x0, ST_MinY({column}) AS y0, ST_MaxX({column}) "
            f"AS x1, ST_MaxY({column}) AS y1 FROM {table} ORDER BY rowid",
            sql_dialect="SQLITE",
        )
    except Exception:  # sqlite3.Error, pyogrio.errors.DataSourceError, GDAL errors
        return None
    ids = stats.column("row_id").to_numpy()
    at = np.searchsorted(ids, np.asarray(fids, dtype=np.int64))
    if (
        len(fids) != len(wkb)
        or (at >= len(ids)).any()
        or (ids[at.clip(0, len(ids) - 1)] != fids).any()
    ):
        return None

    def column_at(name: str) -> np.ndarray:  # float (N,), NaN for null, in the fids' order
        values = stats.column(name).to_numpy(zero_copy_only=False)
        return np.asarray(values, dtype=float)[at]

    srs = np.nan_to_num(column_at("srs"), nan=layer_srs_id)  # (null: unreadable)
    flagged = column_at("empty") == 1
    nulls = np.asarray(wkb.is_null().to_numpy(zero_copy_only=False), dtype=bool)
    suspects = np.flatnonzero(
        nulls | (srs != layer_srs_id) | (flagged & ~nulls) | _ewkb_refused(wkb)
    )
    errors = _reasons(path, table, column, layer_srs_id, fids[suspects].tolist())
    found = {int(row): errors[int(fids[row])] for row in suspects if int(fids[row]) in errors}
    box = [column_at(n) for n in ("x0", "y0", "x1", "y1")]
    envelopes: list[tuple[float, float, float, float] | None]
    envelopes = list(zip(*(b.tolist() for b in box), strict=True))
    for row in [*np.flatnonzero(np.isnan(box[0])).tolist(), *found]:
        envelopes[row] = None
    return BlobFindings(found, tuple(envelopes))


def _ewkb_refused(wkb: pa.Array) -> np.ndarray:
    """bool (N,): the WKB value's type code carries EWKB's SRID or M flag (its high byte,
    the last of the code in NDR, the first in XDR)."""
    heads = arrow_heads(WkbTuple(wkb), 5)
    high = np.where(heads[:, 0] == 1, heads[:, 4], heads[:, 1])
    return np.asarray(high & (_REFUSED_FLAGS >> 24) != 0)


def _reasons(
    path: Path, table: str, column: str, layer_srs_id: int, fids: list[int]
) -> dict[int, str]:
    """fid -> why its blob is unreadable, of the blobs of ``fids`` (a null blob: none)."""
    out: dict[int, str] = {}
    with sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True) as con:
        for start in range(0, len(fids), 500):  # (SQLite's bound variables)
            part = fids[start : start + 500]
            marks = ", ".join("?" * len(part))
            for fid, blob in con.execute(
                f"SELECT rowid, {column} FROM {table} WHERE rowid IN ({marks})", part
            ):
                if isinstance(blob, bytes):
                    reason = _blob_reason(blob, layer_srs_id)
                    if reason is not None:
                        out[int(fid)] = reason
    return out


def _blob_reason(blob: bytes, layer_srs_id: int) -> str | None:
    """Why the blob's geometry is unreadable as the file states it, or None."""
    if len(blob) < 8 or blob[:2] != b"GP":
        return "not a GeoPackage geometry blob (it does not start with 'GP')"
    if blob[2] != 0:
        return f"GeoPackage geometry blob of version {blob[2]} (1.x writes 0)"
    flags = blob[3]
    order = "<" if flags & 1 else ">"
    kind = (flags >> 1) & 7
    if kind not in _ENVELOPE_DOUBLES:
        return f"GeoPackage geometry blob of envelope kind {kind} (0-4 are defined)"
    start = 8 + 8 * _ENVELOPE_DOUBLES[kind]
    if len(blob) < start + 5:
        return (
            f"GeoPackage geometry blob of {len(blob)} bytes: its header (envelope kind "
            f"{kind}) and a WKB header need {start + 5}"
        )
    wkb = blob[start:]
    blob_srs_id = struct.unpack_from(f"{order}i", blob, 4)[0]
    if wkb[0] > 1:
        return None  # (GDAL's and the WKB check's to judge: an invalid byte order)
    code = _U32["<" if wkb[0] == 1 else ">"](wkb, 1)[0]
    ewkb = [name for bit, name in _EWKB_FLAGS if code & bit]
    if code & _REFUSED_FLAGS:
        base = code & 0x0FFFFFFF
        iso = base + 1000 * (("Z" in ewkb) + 2 * ("M" in ewkb))
        flags_named = f"{' and '.join(ewkb)} flag{'s' if len(ewkb) > 1 else ''}"
        return (
            f"the GeoPackage blob holds EWKB (type code {code:#010x}, the EWKB "
            f"{flags_named}): GeoPackage stores ISO WKB after its header (type code {iso})"
        )
    if blob_srs_id != layer_srs_id:
        return (
            f"its GeoPackage blob header states SRS id {blob_srs_id} in a layer of SRS id "
            f"{layer_srs_id} (gpkg_geometry_columns): the layer's CRS does not locate it"
        )
    if flags & 0x10 and wkb_problem(wkb) is None and _has_coordinates(wkb):
        return (
            "its GeoPackage blob header flags it empty but its WKB has coordinates (a "
            "reader trusting the flag sees nothing)"
        )
    return None


def _has_coordinates(wkb: bytes) -> bool:
    """The (structurally sound) WKB value holds a non-empty geometry, by GEOS."""
    try:
        return not shapely.is_empty(shapely.from_wkb(wkb))
    except shapely.errors.GEOSException:
        return False  # (unreadable: GEOS's reason is said on the geometry)
