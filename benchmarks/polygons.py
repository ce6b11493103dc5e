"""A seeded GeoParquet batch of many realistic polygons, for timing ``check`` at scale.

``python -m benchmarks.polygons OUT.parquet [ROWS]`` writes ROWS (default 300,000) star-shaped
polygons of 20-80 vertices in longitude/latitude (GeoParquet 1.0, WKB, no CRS: OGC:CRS84),
about 2% bowties (invalid), 1% outside the extent [-10, 35, 40, 70], five attribute
columns (``fid``, ``code`` of which 0.5% are not in a..e, ``name``, ``area_class``,
``population``) and row groups of 65,536 rows. The writer holds one row group at a time.
``CONTRACT`` is a contract for it (the checks of issue 27: CRS, extent, types, validity,
domain, count), written beside the file as ``OUT.contract.yaml``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import shapely

__all__ = ["CONTRACT", "ROW_GROUP_ROWS", "polygons", "write_polygons"]

ROW_GROUP_ROWS = 65_536
EXTENT = (-10.0, 35.0, 40.0, 70.0)
CONTRACT = f"""layer: parcels
version: v1
cadence: PT6H
objective: 0.99
owner: benchmarks
changelog: the checks of issue 27 on the generated polygons
clauses:
  - {{name: srid, kind: crs, expect: "OGC:CRS84"}}
  - {{name: extent, kind: extent, region: {list(EXTENT)}}}
  - {{name: types, kind: geometry_type, allowed: [Polygon]}}
  - {{name: valid, kind: validity, max_invalid_fraction: 0.05}}
  - {{name: code, kind: domain, column: code, values: {{a: a, b: b, c: c, d: d, e: e}}}}
  - {{name: count, kind: feature_count, min: 1}}
"""


def polygons(rng: np.random.Generator, n: int) -> np.ndarray:
    """``n`` star-shaped polygons (20-80 vertices, about 0.01 degree across) as shapely
    geometries: 2% bowties (two vertices swapped), 1% centred outside :data:`EXTENT`."""
    x0, y0, x1, y1 = EXTENT
    cx = rng.uniform(x0 + 0.1, x1 - 0.1, n)
    cy = rng.uniform(y0 + 0.1, y1 - 0.1, n)
    out = rng.random(n) < 0.01
    cx[out] += x1 - x0 + 5.0
    sizes = rng.integers(20, 81, n)
    ring = np.repeat(np.arange(n), sizes)
    start = np.concatenate(([0], np.cumsum(sizes)[:-1]))
    k = np.arange(len(ring)) - np.repeat(start, sizes)
    angle = 2 * np.pi * k / np.repeat(sizes, sizes)
    radius = 0.005 * rng.uniform(0.6, 1.0, len(ring))
    xy = np.column_stack((cx[ring] + radius * np.cos(angle), cy[ring] + radius * np.sin(angle)))
    bow = np.flatnonzero(rng.random(n) < 0.02)
    a, b = start[bow] + 2, start[bow] + 7
    xy[a], xy[b] = xy[b].copy(), xy[a].copy()
    closed = np.repeat(np.arange(n), sizes + 1)
    first = np.concatenate(([0], np.cumsum(sizes + 1)[:-1]))
    coords = np.empty((len(closed), 2))
    body = np.ones(len(closed), dtype=bool)
    body[first + sizes] = False
    coords[body] = xy
    coords[first + sizes] = xy[start]
    return shapely.polygons(shapely.linearrings(coords, indices=closed))


def write_polygons(path: Path, rows: int, seed: int = 27) -> int:
    """Write the batch of ``rows`` polygons to ``path``; returns the file's bytes."""
    rng = np.random.default_rng(seed)
    geo = {
        "version": "1.0.0",
        "primary_column": "geometry",
        "columns": {"geometry": {"encoding": "WKB", "geometry_types": ["Polygon"]}},
    }
    writer = None
    try:
        for first in range(0, rows, ROW_GROUP_ROWS):
            n = min(ROW_GROUP_ROWS, rows - first)
            codes = rng.choice(np.array(list("abcde")), n)
            codes[rng.random(n) < 0.005] = "x"
            table = pa.table(
                {
                    "fid": pa.array(np.arange(first, first + n)),
                    "code": pa.array(codes),
                    "name": pa.array([f"parcel {i}" for i in range(first, first + n)]),
                    "area_class": pa.array(rng.integers(1, 6, n).astype(np.int32)),
                    "population": pa.array(rng.uniform(0, 5000, n)),
                    "geometry": pa.array(shapely.to_wkb(polygons(rng, n)), pa.binary()),
                }
            )
            if writer is None:
                schema = table.schema.with_metadata({"geo": json.dumps(geo)})
                writer = pq.ParquetWriter(path, schema)
            writer.write_table(table.cast(writer.schema), row_group_size=ROW_GROUP_ROWS)
    finally:
        if writer is not None:
            writer.close()
    return path.stat().st_size


if __name__ == "__main__":
    target = Path(sys.argv[1])
    size = write_polygons(target, int(sys.argv[2]) if len(sys.argv) > 2 else 300_000)
    target.with_suffix(".contract.yaml").write_text(CONTRACT, encoding="utf-8")
    print(f"{target}: {size / 2**20:.0f} MiB")
