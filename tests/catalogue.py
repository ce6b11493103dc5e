"""Named geometries, batch/contract builders and real-data readers for the unit tests.

Coordinates are ``east_north`` (x = longitude/easting) unless a name says otherwise.
"""

from __future__ import annotations

import struct
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import shapely

from worker.core.model import ActiveVersion, Batch, Clause, Contract, FieldSpec

__all__ = [
    "ADMIN_BOUNDARIES",
    "ANTIMERIDIAN_PARTS",
    "BOWTIE",
    "EMPTY_POLYGON",
    "EUROPE_BBOX",
    "NAN_VERTEX_WKB",
    "NOW",
    "NYC_BOROUGHS",
    "PARIS",
    "PARIS_3857",
    "PARIS_LAT_FIRST",
    "UNPARSEABLE_WKB",
    "VALID_POLYGON",
    "active",
    "batch_of",
    "clause",
    "contract_of",
    "polygon_wkb",
    "read_geoparquet",
]

NOW = datetime(2024, 6, 1, 12, 0, tzinfo=timezone.utc)

VALID_POLYGON = shapely.box(0.0, 0.0, 1.0, 1.0)
#: Self-intersecting "figure eight": GEOS says Self-intersection[0.5 0.5].
BOWTIE = shapely.Polygon([(0, 0), (1, 1), (1, 0), (0, 1), (0, 0)])
EMPTY_POLYGON = shapely.from_wkt("POLYGON EMPTY")
#: Paris, lon/lat (EPSG:4326 in east_north order), lat/lon (stored latitude-first), metres.
PARIS = shapely.Point(2.3522, 48.8566)
PARIS_LAT_FIRST = shapely.Point(48.8566, 2.3522)
PARIS_3857 = shapely.Point(261845.7, 6250564.3)
EUROPE_BBOX = [-25.0, 34.0, 45.0, 72.0]
#: One feature split at the antimeridian: lon 175..180 and -180..-175.
ANTIMERIDIAN_PARTS = shapely.MultiPolygon(
    [shapely.box(175.0, -5.0, 180.0, 5.0), shapely.box(-180.0, -5.0, -175.0, 5.0)]
)
UNPARSEABLE_WKB = b"\x01\x03\x00\x00"

DATA_DIR = Path(__file__).resolve().parents[1] / "worker" / "data"
ADMIN_BOUNDARIES = DATA_DIR / "admin_boundaries.parquet"
NYC_BOROUGHS = DATA_DIR / "nyc_boroughs.parquet"


def polygon_wkb(coords: list[tuple[float, float]]) -> bytes:
    """Little-endian WKB of a one-ring polygon, written by hand so NaN needs no GEOS."""
    out = struct.pack("<BII", 1, 3, 1) + struct.pack("<I", len(coords))
    return out + b"".join(struct.pack("<dd", x, y) for x, y in coords)


#: A triangle with one NaN vertex (GEOS: Invalid Coordinate).
NAN_VERTEX_WKB = polygon_wkb([(0.0, 0.0), (1.0, float("nan")), (1.0, 0.0), (0.0, 0.0)])


def batch_of(
    geoms: list[Any],
    *,
    crs: str | None = "EPSG:4326",
    axis_order: str = "east_north",
    attributes: pa.Table | None = None,
    schema_fields: tuple[FieldSpec, ...] = (),
    data_time: datetime = NOW,
    feature_count: int | None = None,
) -> Batch:
    """A Batch of ``geoms`` (shapely geometries, WKB bytes or None)."""
    wkb = tuple(g if g is None or isinstance(g, bytes) else shapely.to_wkb(g) for g in geoms)
    if attributes is None:
        attributes = pa.table({"id": pa.array(range(len(geoms)), type=pa.int64())})
    return Batch(
        batch_id="b-1",
        layer="parcels",
        producer="tests",
        data_time=data_time,
        produced_at=data_time,
        declared_crs=crs,
        axis_order=axis_order,  # type: ignore[arg-type]
        schema_fields=schema_fields,
        feature_count=len(geoms) if feature_count is None else feature_count,
        geometries_wkb=wkb,
        attributes=attributes,
    )


def clause(name: str, kind: str, on_break: str = "halt", **params: Any) -> Clause:
    return Clause(name=name, kind=kind, on_break=on_break, params=params)  # type: ignore[arg-type]


def contract_of(*clauses: Clause, version: str = "v1.0", layer: str = "parcels") -> Contract:
    major, minor = (int(x) for x in version[1:].split("."))
    return Contract(
        layer=layer,
        version=version,
        major=major,
        minor=minor,
        cadence="P1D",
        cadence_s=86400.0,
        objective=0.99,
        owner="tests",
        changelog="test contract",
        clauses=tuple(clauses),
        digest=f"digest-{version}",
    )


def active(contract: Contract, mode: str = "enforcing", state: str = "active") -> ActiveVersion:
    return ActiveVersion(contract=contract, mode=mode, state=state)  # type: ignore[arg-type]


def read_geoparquet(path: Path) -> tuple[np.ndarray, pa.Table, list[bytes]]:
    """Geometries, attribute table (without the geometry column) and WKB of a GeoParquet file."""
    table = pq.read_table(path)
    wkb = table.column("geometry").to_pylist()
    geoms = shapely.from_wkb(np.asarray(wkb, dtype=object))
    return geoms, table.drop_columns(["geometry"]), wkb


#: Names a producer of a topic controls (a consumer group id, a declaration, a config
#: record's ``published_by``) that try to forge a terminal line: a newline, a carriage
#: return, an ANSI escape that clears the screen, NUL, a C1 control, 500 characters.
HOSTILE_NAMES = (
    "ci\nESCALATION: forged line",
    "ci\r\x1b[2Jcleared",
    "ci\x00\x85nul",
    "ci" + "x" * 500,
)


def assert_one_line_each(text: str, name: str, lines: int, clipped_at: int = 120) -> None:
    """``text`` has ``lines`` lines and no control character in them, and shows ``name``
    escaped (``\\x0a``) and clipped to ``clipped_at`` characters."""
    assert len(text.split("\n")) == lines, text
    assert not any(ch in text for ch in "\r\x00\x1b\x85"), repr(text)
    shown = "".join(f"\\x{ord(c):02x}" if ord(c) < 32 or 127 <= ord(c) < 160 else c for c in name)
    assert shown[:40] in text
    assert len(shown) <= clipped_at or shown[: clipped_at + 40] not in text
