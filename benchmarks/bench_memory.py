"""Peak memory of evaluating a large by-reference GeoParquet payload, chunked vs whole.

Writes a GeoParquet file of about ``--mb`` megabytes (uncompressed) from the real NYC
boroughs geometries (EPSG:2263) repeated, every 1000th feature with an unknown BoroCode
(so the contract's domain clause breaks, with offenders), then evaluates it against the
shipped ``nyc_boroughs.v1`` contract (with ``--region`` plus a region coverage clause),
each evaluation in a fresh child process that reports its peak RSS (``VmHWM`` of
``/proc/self/status``: the high-water mark of the child's own address space; ``ru_maxrss``
would carry over the parent's peak across ``exec`` on Linux) and its decision. Prints file
size, rows, and peak RSS chunked (:func:`worker.io.payloads.load_payload_chunked`, the
worker's path; one thread, and ``threads``: the chunks measured on
:data:`EVAL_THREADS` threads) vs whole (:func:`worker.io.payloads.load_payload`). Run:
``python benchmarks/bench_memory.py [--mb 400] [--whole]``. The child mode
(``--evaluate PATH --mode chunked|threads|whole``) prints one JSON line; the test
``tests/io/test_chunked_memory.py`` uses it.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

REPO = Path(__file__).resolve().parents[1]
SOURCE = REPO / "worker" / "data" / "nyc_boroughs.parquet"
CONTRACT = REPO / "worker" / "data" / "contracts" / "nyc_boroughs.v1.yaml"
ROW_GROUP_ROWS = 100
#: Threads (and chunks in flight) of the ``threads`` mode: ``GateConfig().eval_threads``.
EVAL_THREADS = 2
NOW = datetime(2026, 11, 29, 7, 0, tzinfo=timezone.utc)


def write_big_geoparquet(
    path: Path, target_mb: int, row_group_rows: int = ROW_GROUP_ROWS
) -> tuple[int, int]:
    """Write the NYC boroughs repeated to about ``target_mb`` MB (no compression, so the
    file size is the data's); every 1000th row's BoroCode is 9 (not a borough), row groups
    of ``row_group_rows``. Returns (rows, file bytes). The writer holds one row group."""
    src = pq.read_table(SOURCE)
    per_copy = src.nbytes
    total = max(1, target_mb * 1024 * 1024 // per_copy) * src.num_rows
    copies = pa.concat_tables([src] * (row_group_rows // src.num_rows + 1))
    rows = 0
    with pq.ParquetWriter(path, src.schema, compression="none") as writer:
        while rows < total:
            take = min(row_group_rows, total - rows)
            part = copies.slice(0, take)
            index = pa.array(range(rows, rows + take))
            bad = pc.equal(pc.multiply(pc.divide(index, 1000), 1000), index)  # int division
            codes = pc.if_else(bad, pa.scalar(9, pa.int64()), part.column("BoroCode"))
            part = part.set_column(part.schema.get_field_index("BoroCode"), "BoroCode", codes)
            writer.write_table(part, row_group_size=row_group_rows)
            rows += take
    return rows, path.stat().st_size


def peak_rss_kb() -> int:
    """Peak resident set of this process's address space, KiB.

    ``VmHWM`` from ``/proc/self/status`` where there is one: unlike ``ru_maxrss``, it starts
    afresh at ``exec`` (Linux records the old address space's peak into ``ru_maxrss``, so a
    child spawned by a 600 MiB test runner would report at least 600 MiB).
    """
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    except OSError:
        pass
    return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)


def _evaluate(path: Path, mode: str, region: bool) -> dict[str, object]:
    from worker.core.chunks import ChunkedBatch, evaluate_chunked
    from worker.core.evaluate import evaluate
    from worker.core.model import ActiveVersion, Batch, Clause
    from worker.io.contract_files import load_contract
    from worker.io.payloads import load_payload, load_payload_chunked
    from worker.io.payloads.policy import PayloadPolicy

    base_kb = peak_rss_kb()
    contract = load_contract(CONTRACT)
    if region:
        area = Clause("nyc_area", "coverage", params={"region": [909000, 110000, 1068000, 275000]})
        contract = replace(contract, clauses=(*contract.clauses, area))
    versions = [ActiveVersion(contract, "enforcing", "active")]
    rows = pq.ParquetFile(path).metadata.num_rows
    event = Batch(
        batch_id="big",
        layer=contract.layer,
        producer="bench",
        data_time=NOW,
        produced_at=NOW,
        declared_crs="EPSG:2263",
        axis_order="east_north",
        schema_fields=(),
        feature_count=rows,
        geometries_wkb=(),
        attributes=pa.table({}),
        payload_uri=path.as_uri(),
    )
    policy = PayloadPolicy.from_strings([str(path.parent)], max_payload_bytes="2GB")
    started = time.perf_counter()
    if mode in ("chunked", "threads"):
        loaded = load_payload_chunked(path.as_uri(), event, policy=policy)
        assert isinstance(loaded, ChunkedBatch)
        threads = EVAL_THREADS if mode == "threads" else 1
        with ThreadPoolExecutor(threads) as pool:
            decision = evaluate_chunked(loaded, versions, now=NOW, executor=pool, in_flight=threads)
    else:
        decision = evaluate(load_payload(path.as_uri(), event, policy=policy), versions, now=NOW)
    seconds = time.perf_counter() - started
    peak_kb = peak_rss_kb()
    return {
        "mode": mode,
        "rows": rows,
        "file_bytes": path.stat().st_size,
        "seconds": round(seconds, 2),
        "peak_rss_mb": round(peak_kb / 1024, 1),
        "rss_before_mb": round(base_kb / 1024, 1),
        "decision": decision.decision,
        "broken": [r.clause for r in decision.reasons],
        "results": {r.name: r.result for v in decision.verdicts for r in v.clauses},
        "measured": {r.name: r.measured for v in decision.verdicts for r in v.clauses},
    }


def run_child(
    path: Path, mode: str, region: bool = False, timeout_s: float = 600.0
) -> dict[str, object]:
    """Evaluate ``path`` in a fresh Python process; its report (see :func:`_evaluate`)."""
    cmd = [sys.executable, str(Path(__file__).resolve()), "--evaluate", str(path), "--mode", mode]
    out = subprocess.run(
        [*cmd, *(["--region"] if region else [])],
        capture_output=True,
        text=True,
        timeout=timeout_s,
        check=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mb", type=int, default=400, help="file size to generate, MB")
    ap.add_argument("--whole", action="store_true", help="also evaluate the whole batch")
    ap.add_argument("--row-group-rows", type=int, default=ROW_GROUP_ROWS, help="rows per row group")
    ap.add_argument(
        "--region",
        action="store_true",
        help="add a coverage clause with a region (the union of the repeated boroughs is "
        "slow: GEOS overlays coincident polygons; about 100 s for 400 MB)",
    )
    ap.add_argument("--evaluate", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--mode", choices=("chunked", "threads", "whole"), default="chunked")
    args = ap.parse_args()
    if args.evaluate is not None:
        print(json.dumps(_evaluate(args.evaluate, args.mode, args.region)))
        return
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "big.parquet"
        started = time.perf_counter()
        rows, size = write_big_geoparquet(path, args.mb, args.row_group_rows)
        groups = pq.ParquetFile(path).metadata.num_row_groups
        print(
            f"generated {size / 1e6:.0f} MB, {rows} rows, {groups} row groups in "
            f"{time.perf_counter() - started:.1f} s"
        )
        for mode in ("chunked", "threads", "whole") if args.whole else ("chunked", "threads"):
            r = run_child(path, mode, args.region)
            print(
                f"{mode:8s} peak RSS {r['peak_rss_mb']} MB (before evaluating "
                f"{r['rss_before_mb']} MB), {r['seconds']} s, {r['decision']}, "
                f"broken {r['broken']}"
            )


if __name__ == "__main__":
    main()
