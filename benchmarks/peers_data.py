"""The seeded batches of the ``peers`` benchmark (issue 27), written as GeoParquet.

Two batches over one extent (:data:`EXTENT`, longitude/latitude degrees, OGC:CRS84):

- polygons: star-shaped rings of 20-80 vertices about 1-4 km across; :data:`BOWTIE_FRACTION`
  of them are self-intersecting bowties (invalid), :data:`MULTI_FRACTION` are two-part
  MultiPolygons (a type the contract does not allow);
- points.

In both, :data:`OUTSIDE_FRACTION` of the features lie wholly outside the extent (east of
it) and :data:`EDGE_FRACTION` touch its eastern edge exactly (x == EXTENT[2]): those are
inside (a region holds its boundary, as the contract docs say), so a tool that tests
``x < xmax`` instead of ``x <= xmax`` counts them outside and disagrees.
:data:`BAD_CODE_FRACTION` of the ``code`` values are outside :data:`CODES`. Five attribute
columns (``id``, ``code``, ``name``, ``population``, ``measured_m``), row groups of
:data:`ROW_GROUP` rows, written one row group at a time (memory bounded by a row group).
Every count the tools must find is returned by :func:`write_batch` (the truth).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import shapely

from benchmarks.peers_spec import CODES, EXTENT

__all__ = ["CODES", "EXTENT", "Truth", "write_batch"]

ROW_GROUP = 65_536
BOWTIE_FRACTION = 0.03
MULTI_FRACTION = 0.005
OUTSIDE_FRACTION = 0.01
EDGE_FRACTION = 0.001
BAD_CODE_FRACTION = 0.005


@dataclass(frozen=True)
class Truth:
    """What every tool must count on a written batch (features)."""

    count: int
    invalid: int
    wrong_type: int
    outside: int
    bad_code: int
    edge: int  # inside, on the extent's eastern edge (not a check: what a strict `<` miscounts)

    def checks(self) -> dict[str, int]:
        """The five checks' counts, by name (the tools report the same keys)."""
        return {
            "count": self.count,
            "invalid": self.invalid,
            "wrong_type": self.wrong_type,
            "outside": self.outside,
            "bad_code": self.bad_code,
        }


def _kinds(rng: np.random.Generator, n: int, polygons: bool) -> np.ndarray:
    """Per feature: 0 ordinary, 1 outside, 2 on the edge, 3 bowtie, 4 multipolygon."""
    u = rng.random(n)
    kind = np.zeros(n, np.int8)
    cuts = [OUTSIDE_FRACTION, EDGE_FRACTION]
    cuts += [BOWTIE_FRACTION, MULTI_FRACTION] if polygons else []
    lo = 0.0
    for k, frac in enumerate(cuts, start=1):
        kind[(u >= lo) & (u < lo + frac)] = k
        lo += frac
    return kind


def _centres(rng: np.random.Generator, kind: np.ndarray, margin: float) -> np.ndarray:
    """Centres inside the extent (``margin`` degrees from its edges), east of it when
    outside; those on the edge are placed by the callers."""
    x0, y0, x1, y1 = EXTENT
    n = len(kind)
    cx = rng.uniform(x0 + margin, x1 - margin, n)
    cy = rng.uniform(y0 + margin, y1 - margin, n)
    out = kind == 1
    cx[out] = rng.uniform(x1 + 1.0, x1 + 5.0, int(out.sum()))
    return np.column_stack([cx, cy])


def _ring(rng: np.random.Generator, centre: np.ndarray, kind: int, size: float) -> np.ndarray:
    """One closed ring (vertices x 2) of 20-80 vertices: star-shaped (valid), or a bowtie."""
    n = int(rng.integers(20, 81))
    if kind == 3:  # a figure of eight: two lobes crossing at the centre
        t = np.linspace(0.0, 2 * np.pi, n, endpoint=False)
        xy = np.column_stack([np.sin(t), np.sin(t) * np.cos(t)]) * size
    else:
        t = np.sort(rng.uniform(0.0, 2 * np.pi, n))
        r = size * rng.uniform(0.6, 1.0, n)
        if kind == 2:  # the farthest-east vertex lies exactly on the extent's edge
            t[0], r[0] = 0.0, size
        xy = np.column_stack([np.cos(t) * r, np.sin(t) * r])
    ring = xy + centre
    if kind == 2:
        ring[0, 0] = EXTENT[2]
    return np.vstack([ring, ring[:1]])


def _polygon_wkb(rng: np.random.Generator, kind: np.ndarray) -> list[bytes]:
    size = rng.uniform(0.005, 0.02, len(kind))
    centres = _centres(rng, kind, 0.1)
    edge = kind == 2
    centres[edge, 0] = EXTENT[2] - size[edge]
    geoms = []
    for c, k, s in zip(centres, kind, size, strict=True):
        ring = shapely.Polygon(_ring(rng, c, int(k), float(s)))
        if k == 4:
            other = shapely.Polygon(_ring(rng, c + 3 * s, 0, float(s)))
            ring = shapely.MultiPolygon([ring, other])
        geoms.append(ring)
    return list(shapely.to_wkb(np.array(geoms, dtype=object)))


def _point_wkb(rng: np.random.Generator, kind: np.ndarray) -> list[bytes]:
    centres = _centres(rng, kind, 0.0)
    centres[kind == 2, 0] = EXTENT[2]
    return list(shapely.to_wkb(shapely.points(centres)))


def _attributes(rng: np.random.Generator, start: int, n: int) -> tuple[pa.Table, int]:
    code = np.array(CODES, dtype=object)[rng.integers(0, len(CODES), n)]
    bad = rng.random(n) < BAD_CODE_FRACTION
    code[bad] = "unknown"
    table = pa.table(
        {
            "id": pa.array(np.arange(start, start + n, dtype=np.int64)),
            "code": pa.array(code, pa.string()),
            "name": pa.array([f"parcel {i}" for i in range(start, start + n)], pa.string()),
            "population": pa.array(rng.integers(0, 5_000, n)),
            "measured_m": pa.array(rng.uniform(0.0, 1e4, n)),
        }
    )
    return table, int(bad.sum())


def _geo_metadata(polygons: bool) -> bytes:
    types = ["Polygon", "MultiPolygon"] if polygons else ["Point"]
    x0, y0, x1, y1 = EXTENT
    meta = {
        "version": "1.0.0",
        "primary_column": "geometry",
        "columns": {
            "geometry": {
                "encoding": "WKB",
                "geometry_types": types,
                "bbox": [x0 - 0.1, y0 - 0.1, x1 + 5.1, y1 + 0.1],
            }
        },
    }
    return json.dumps(meta).encode()


def write_batch(path: Path, n: int, *, polygons: bool, seed: int = 27) -> Truth:
    """Write ``n`` seeded features (polygons or points) as GeoParquet at ``path``, one row
    group of :data:`ROW_GROUP` rows at a time; return the counts every tool must find."""
    rng = np.random.default_rng(seed)
    counts = np.zeros(5, np.int64)  # outside, edge, bowtie, multi, bad code
    writer: pq.ParquetWriter | None = None
    try:
        for start in range(0, n, ROW_GROUP):
            size = min(ROW_GROUP, n - start)
            kind = _kinds(rng, size, polygons)
            wkb = (_polygon_wkb if polygons else _point_wkb)(rng, kind)
            table, bad = _attributes(rng, start, size)
            table = table.append_column("geometry", pa.array(wkb, pa.binary()))
            if writer is None:
                schema = table.schema.with_metadata({b"geo": _geo_metadata(polygons)})
                writer = pq.ParquetWriter(path, schema, compression="snappy")
            writer.write_table(table.replace_schema_metadata(writer.schema.metadata))
            counts += [*(int((kind == k).sum()) for k in (1, 2, 3, 4)), bad]
    finally:
        if writer is not None:
            writer.close()
    outside, edge, bowtie, multi, bad = (int(c) for c in counts)
    return Truth(n, bowtie, multi, outside, bad, edge)


__all__ = ["CODES", "EXTENT", "ROW_GROUP", "Truth", "write_batch"]
