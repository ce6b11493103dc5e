"""One tool of the ``peers`` benchmark on one batch file, as a whole process of its own.

``python -m benchmarks.peers_tools TOOL FILE ALLOWED_TYPE [CONTRACT]`` runs the five checks
(validity, geometry type, bounds inside :data:`~benchmarks.peers_spec.EXTENT`, ``code NOT
IN`` :data:`~benchmarks.peers_spec.CODES`, count) with TOOL and prints one JSON line of
their counts (keys of :meth:`benchmarks.peers_data.Truth.checks`). The parent
(:mod:`benchmarks.peers`) measures the process's wall time and peak RSS. Tools:

- ``duckdb``: DuckDB with the spatial extension loaded from the installed
  ``duckdb-extension-spatial`` package's file (no network: auto-install and auto-load off),
  default threads, one SQL query;
- ``geopandas``: ``read_parquet`` of the whole file, vectorized predicates;
- ``shapely-loop``: per-feature shapely objects, one Parquet row group at a time;
- ``gate-stream``: the worker's by-reference payload path
  (:func:`worker.io.payloads.load_payload_chunked` and
  :func:`worker.core.chunks.evaluate_chunked` on the worker's default pool of
  ``eval_threads`` threads) with CONTRACT (the gate's ``check`` is run as
  its own CLI command, and :func:`gate_counts` reads its JSON).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

from benchmarks.peers_spec import CODES, EXTENT, LIMIT_ENV


def spatial_extension() -> Path:
    """The spatial extension file of the installed ``duckdb-extension-spatial`` package for
    the installed DuckDB version.

    Raises
    ------
    ImportError
        duckdb or duckdb-extension-spatial is not installed (the ``bench`` extra).
    FileNotFoundError
        The package holds no extension built for this DuckDB version (pin both alike).
    """
    import duckdb
    import duckdb_extension_spatial

    root = Path(duckdb_extension_spatial.__file__).parent / "extensions"
    path = root / f"v{duckdb.__version__}" / "spatial.duckdb_extension"
    if not path.is_file():
        built = sorted(p.name for p in root.iterdir()) if root.is_dir() else []
        raise FileNotFoundError(
            f"duckdb-extension-spatial has no extension for DuckDB {duckdb.__version__} "
            f"(it has {built}); install the same version of both (pyproject's bench extra)"
        )
    return path


def _duckdb(path: str, allowed: str) -> dict[str, int]:
    import duckdb

    con = duckdb.connect(
        config={"autoinstall_known_extensions": False, "autoload_known_extensions": False}
    )
    con.execute("SET enable_progress_bar = false")
    con.execute(f"LOAD '{spatial_extension()}'")
    x0, y0, x1, y1 = EXTENT
    codes = ", ".join(f"'{c}'" for c in CODES)
    row = con.execute(
        f"""SELECT count(*),
            count(*) FILTER (NOT ST_IsValid(geometry)),
            count(*) FILTER (ST_GeometryType(geometry) <> '{allowed.upper()}'),
            count(*) FILTER (NOT (ST_XMin(geometry) >= {x0} AND ST_YMin(geometry) >= {y0}
                                  AND ST_XMax(geometry) <= {x1} AND ST_YMax(geometry) <= {y1})),
            count(*) FILTER (code NOT IN ({codes}))
        FROM read_parquet(?)""",
        [path],
    ).fetchone()
    assert row is not None
    return dict(zip(("count", "invalid", "wrong_type", "outside", "bad_code"), row, strict=True))


def _geopandas(path: str, allowed: str) -> dict[str, int]:
    import geopandas

    frame = geopandas.read_parquet(path)
    x0, y0, x1, y1 = EXTENT
    b = frame.geometry.bounds
    inside = (b.minx >= x0) & (b.miny >= y0) & (b.maxx <= x1) & (b.maxy <= y1)
    return {
        "count": len(frame),
        "invalid": int((~frame.geometry.is_valid).sum()),
        "wrong_type": int((frame.geometry.geom_type != allowed).sum()),
        "outside": int((~inside).sum()),
        "bad_code": int((~frame["code"].isin(CODES)).sum()),
    }


def _shapely_loop(path: str, allowed: str) -> dict[str, int]:
    import pyarrow.parquet as pq
    import shapely

    x0, y0, x1, y1 = EXTENT
    codes = set(CODES)
    out = dict.fromkeys(("count", "invalid", "wrong_type", "outside", "bad_code"), 0)
    file = pq.ParquetFile(path)
    for group in range(file.num_row_groups):
        table = file.read_row_group(group, columns=["geometry", "code"])
        for wkb, code in zip(
            table.column("geometry").to_pylist(), table.column("code").to_pylist(), strict=True
        ):
            g = shapely.from_wkb(wkb)
            gx0, gy0, gx1, gy1 = g.bounds
            out["count"] += 1
            out["invalid"] += not g.is_valid
            out["wrong_type"] += g.geom_type != allowed
            out["outside"] += not (gx0 >= x0 and gy0 >= y0 and gx1 <= x1 and gy1 <= y1)
            out["bad_code"] += code not in codes
    return out


def gate_counts(decision_json: dict[str, Any]) -> dict[str, int]:
    """The five counts in the gate's decision JSON (``check --format json`` or
    :func:`worker.io.reports.text.decision_to_json`) on a contract written by
    :func:`benchmarks.peers.contract_text`: its clauses are named after the checks."""
    clauses: dict[str, Any] = {
        c["name"]: c.get("measured") or {} for c in decision_json["versions"][0]["clauses"]
    }
    types = clauses["geometry_types"]
    return {
        "count": int(clauses["size"]),
        "invalid": int(clauses["valid"].get("invalid", 0)),
        "wrong_type": sum(int(v) for v in types.values()) if isinstance(types, dict) else 0,
        "outside": int(clauses["extent"].get("outside", 0)),
        "bad_code": int(clauses["code"].get("unknown_count", 0)),
    }


def gate_stream(path: str, contract: str) -> dict[str, int]:
    """The ``gate-stream`` tool: the GeoParquet batch at ``path`` read as the worker reads
    a by-reference payload (its folder the payload root, the size limit from
    :data:`~benchmarks.peers_spec.LIMIT_ENV` when set) and evaluated in chunks on the
    worker's default pool against the contract file ``contract``; the counts of
    :func:`gate_counts`.

    Raises
    ------
    worker.core.errors.PayloadTooLarge
        The file is over the payload size limit (the gate's default 2 GiB, or the one set).
    """
    from concurrent.futures import ThreadPoolExecutor
    from datetime import datetime, timezone

    import pyarrow as pa

    from worker.core._util.arrow import skip_pandas_probe
    from worker.core._util.malloc import keep_freed_memory
    from worker.core.chunks import ChunkedBatch, evaluate_chunked
    from worker.core.model import ActiveVersion, Batch
    from worker.gate.config import GateConfig
    from worker.io.contract_files import load_contract
    from worker.io.payloads import load_payload_chunked
    from worker.io.payloads.policy import PayloadPolicy
    from worker.io.reports.text import decision_to_json

    skip_pandas_probe()  # as the worker's entry point (`contract-gate run`) does
    keep_freed_memory()  # likewise
    now = datetime.now(timezone.utc)
    uri = Path(path).resolve().as_uri()
    event = Batch(
        batch_id="peers", layer="parcels", producer="bench", data_time=now, produced_at=now,
        declared_crs=None, axis_order="east_north", schema_fields=(), feature_count=0,
        geometries_wkb=(), attributes=pa.table({}), payload_uri=uri,
    )  # fmt: skip
    # the worker's policy: the file's folder is its configured payload root, the limit
    # the worker's setting (`run --max-payload-bytes`, env CONTRACT_GATE_MAX_PAYLOAD_BYTES)
    root = Path(path).resolve().parent.as_uri() + "/"
    policy = PayloadPolicy.from_strings([root], os.environ.get(LIMIT_ENV))
    loaded = load_payload_chunked(uri, event, policy=policy)
    assert isinstance(loaded, ChunkedBatch), "a GeoParquet payload is read in chunks"
    versions = [ActiveVersion(load_contract(Path(contract)), "enforcing")]
    threads = GateConfig().eval_threads  # the worker's default pool (`run --eval-threads`)
    with ThreadPoolExecutor(threads, "gate-eval") as pool:
        decision = evaluate_chunked(loaded, versions, now=now, executor=pool, in_flight=threads)
    return gate_counts(decision_to_json(decision))


def main(argv: list[str]) -> int:
    """Run one tool (see the module docstring); print its counts as one JSON line."""
    tool, path, allowed = argv[:3]
    if tool == "gate-stream":
        counts = gate_stream(path, argv[3])
    else:
        run = {"duckdb": _duckdb, "geopandas": _geopandas, "shapely-loop": _shapely_loop}[tool]
        counts = run(path, allowed)
    print(json.dumps({k: int(v) for k, v in counts.items()}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
