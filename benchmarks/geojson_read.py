"""The ``geojson`` group (issue 27): the gate's streamed GeoJSON read against GDAL's.

The batch is the peers polygons (:func:`benchmarks.peers_data.write_batch`, seeded, 20-80
vertices, a few percent bowties and MultiPolygons, five attributes) written as a GeoJSON
FeatureCollection, one feature a line (as GDAL writes it). Each round runs, as processes of
their own (peak RSS of that process alone, :func:`benchmarks.peers_run.run_measured`):

- ``gate``: the reader ``check`` and the worker use (the file opened for chunks, then every
  chunk read: :func:`worker.io.payloads.read_batch_file_chunked`);
- ``gdal``: ``pyogrio.read_arrow`` of the same file (GDAL's GeoJSON driver into Arrow).

Each process prints its feature count and the seconds of the read alone (imports left
out); the rows compare the medians of the read times (target <= 1.2x GDAL's) and the
gate's peak RSS (target <= 400 MiB). ``python -m benchmarks.geojson_read gate|gdal PATH``
is one such process.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import pyarrow.parquet as pq
import shapely

from benchmarks.common import Row
from benchmarks.peers import DATA_DIR_ENV
from benchmarks.peers_data import write_batch
from benchmarks.peers_run import run_measured

FEATURES = 190_000
QUICK_FEATURES = 2_000
RATIO_TARGET = 1.2
RSS_TARGET_MIB = 400.0


def write_geojson(path: Path, n: int, seed: int = 27) -> int:
    """Write ``n`` seeded peers polygons as GeoJSON at ``path`` (via their GeoParquet file,
    one row group at a time); return the feature count."""
    parquet = path.with_suffix(".parquet")
    write_batch(parquet, n, polygons=True, seed=seed)
    pf = pq.ParquetFile(parquet)
    with path.open("w", encoding="utf-8") as out:
        out.write('{"type": "FeatureCollection", "features": [\n')
        sep = ""
        for group in range(pf.num_row_groups):
            table = pf.read_row_group(group)
            geoms = shapely.from_wkb(table.column("geometry").to_numpy(zero_copy_only=False))
            texts = shapely.to_geojson(geoms)
            props = table.drop_columns(["geometry"]).to_pylist()
            for text, p in zip(texts, props, strict=True):
                out.write(f'{sep}{{"type": "Feature", "properties": {json.dumps(p)}, '
                          f'"geometry": {text}}}')  # fmt: skip
                sep = ",\n"
        out.write("\n]}\n")
    parquet.unlink()
    return n


def _read(tool: str, path: str) -> dict[str, float]:
    """One process's read: the feature count and the seconds it took."""
    if tool == "gdal":
        import pyogrio

        t0 = time.perf_counter()
        _, table = pyogrio.read_arrow(path)
        return {"count": table.num_rows, "read_s": time.perf_counter() - t0}
    from worker.core.chunks import ChunkedBatch
    from worker.io.payloads import read_batch_file_chunked

    t0 = time.perf_counter()
    batch = read_batch_file_chunked(path, layer="parcels")
    if not isinstance(batch, ChunkedBatch):
        raise SystemExit(f"{path}: read whole, not in chunks")
    count = sum(len(c.geometries_wkb) for c in batch.chunks())
    return {"count": count, "read_s": time.perf_counter() - t0}


def run(quick: bool, features: int | None = None, rounds: int | None = None) -> list[Row]:
    """The ``geojson`` group: interleaved rounds (default 3, quick 1) of both reads of one
    seeded file; prints each tool's times and RSS and the load averages."""
    n = features or (QUICK_FEATURES if quick else FEATURES)
    rounds = rounds or (1 if quick else 3)
    with tempfile.TemporaryDirectory(prefix="geojson-") as scratch:
        kept = os.environ.get(DATA_DIR_ENV)
        folder = Path(scratch if quick or not kept else kept)
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"polygons-{n}.geojson"
        if not path.is_file():
            write_geojson(path, n)
        size_mib = path.stat().st_size / 1024**2
        before = os.getloadavg()
        times: dict[str, list[float]] = {"gate": [], "gdal": []}
        rss: dict[str, list[int]] = {"gate": [], "gdal": []}
        for _ in range(rounds):
            for tool in times:
                argv = [sys.executable, "-m", "benchmarks.geojson_read", tool, str(path)]
                got = run_measured(argv)
                rss_kib, doc = got.rss_kib, got.doc
                if doc["count"] != n:
                    raise RuntimeError(f"{tool} read {doc['count']} features of {n}")
                times[tool].append(float(doc["read_s"]))
                rss[tool].append(rss_kib)
        after = os.getloadavg()
    gate_s, gdal_s = (statistics.median(times[t]) for t in ("gate", "gdal"))
    gate_mib, gdal_mib = (max(rss[t]) / 1024 for t in ("gate", "gdal"))
    print(f"geojson: {n:,} polygons, {size_mib:,.0f} MiB; read s gate {times['gate']}, "
          f"gdal {times['gdal']}; peak RSS MiB gate {gate_mib:.0f}, gdal {gdal_mib:.0f}; "
          f"load average before {before[0]:.2f}, after {after[0]:.2f}", flush=True)  # fmt: skip
    name = f"GeoJSON read, {n:,} polygons: gate / pyogrio.read_arrow (s)"
    return [
        Row(name, gate_s, gdal_s, "s", RATIO_TARGET, higher_is_better=False),
        Row(f"GeoJSON read, {n:,} polygons: gate peak RSS", gate_mib, None, "MiB",
            RSS_TARGET_MIB, higher_is_better=False, note=f"GDAL {gdal_mib:.0f} MiB"),
    ]  # fmt: skip


if __name__ == "__main__":
    print(json.dumps(_read(sys.argv[1], sys.argv[2])))
