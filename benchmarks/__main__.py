"""``python -m benchmarks [--quick] [--only GROUP ...]``: run, print the figures table.

Exit 0 when every target is met, 1 when one is missed (the table says which).
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time

from benchmarks import broker, geojson_read, offline, peers
from benchmarks.common import Row, render
from worker.kafka.broker_route import start_broker

#: Group name -> what it measures (``--help``) and how it runs.
HELP = {
    "evaluate": "evaluate() vs its GEOS floor; cost of 2 and 4 active versions / 1",
    "python-loop": "evaluate() vs a per-feature Python loop (polygons, points)",
    "worker": "the worker on the broker vs a transactional copy (1, 100, 1000 features/event)",
    "scale-out": "2 worker processes / 1 in one consumer group",
    "startup": "start-up with 1,000 contract versions on the config topic",
    "rss": "peak RSS at event 200,000 / at event 10,000 of a paced stream",
    "peers": "check and the streamed worker path vs DuckDB spatial, geopandas, a shapely loop",
    "geojson": "the streamed GeoJSON read vs pyogrio.read_arrow (GDAL), 190,000 polygons",
}
GROUPS = {
    "evaluate": lambda b, q: offline.evaluate_vs_floor(q),
    "python-loop": lambda b, q: offline.vs_python_loop(q),
    "worker": broker.worker_vs_floor,
    "scale-out": broker.scale_out,
    "startup": broker.startup,
    "rss": broker.rss_over_stream,
    "peers": lambda b, q: peers.run(q),
    "geojson": lambda b, q: geojson_read.run(q),
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Benchmarks of the gate against the floor of the same work on the same\n"
        "input, measured side by side in one run; prints figures, ratios and PASS/FAIL.\n"
        "Exit 0 when every target is met, 1 when one is missed.\n\ngroups:\n"
        + "\n".join(f"  {name:<12} {text}" for name, text in HELP.items()),
    )
    parser.add_argument(
        "--quick",
        action="store_true",
        help="tiny sizes: a smoke run whose figures mean nothing (always exit 0)",
    )
    parser.add_argument(
        "--only",
        nargs="+",
        choices=list(GROUPS),
        default=None,
        metavar="GROUP",
        help=f"groups to run (default all): {', '.join(GROUPS)}",
    )
    parser.add_argument(
        "--peers-features",
        type=int,
        default=int(os.environ.get("BENCH_PEERS_FEATURES", "0")) or None,
        metavar="N",
        help=f"features in each peers batch (env BENCH_PEERS_FEATURES; default "
        f"{peers.FEATURES:,}, --quick {peers.QUICK_FEATURES:,}); env {peers.DATA_DIR_ENV}=DIR "
        "keeps the generated files there between runs",
    )
    parser.add_argument(
        "--peers-rounds",
        type=int,
        default=None,
        metavar="N",
        help="interleaved rounds of the peers group (default 3, --quick 1)",
    )
    parser.add_argument(
        "--peers-batches",
        nargs="+",
        choices=list(peers.BATCHES),
        default=list(peers.BATCHES),
        metavar="BATCH",
        help=f"batches of the peers group (default both): {', '.join(peers.BATCHES)}",
    )
    args = parser.parse_args(argv)
    names = args.only or list(GROUPS)
    groups = {
        **GROUPS,
        "peers": lambda b, q: peers.run(
            q, args.peers_features, args.peers_rounds, args.peers_batches
        ),
    }
    print(
        f"machine: {platform.machine()}, {_cores()} cores, Python {platform.python_version()}"
        + (" (quick: sizes too small for the figures to mean anything)" if args.quick else ""),
        flush=True,
    )
    running = start_broker() if set(names) & {"worker", "scale-out", "startup", "rss"} else None
    rows: list[Row] = []
    try:
        if running is not None:
            print(f"broker: {running.kind} at {running.bootstrap_servers}", flush=True)
        for name in names:
            t0 = time.monotonic()
            print(f"running {name} ...", file=sys.stderr, flush=True)
            got = groups[name](running.bootstrap_servers if running else "", args.quick)
            rows += got
            for line in render(got).splitlines()[2:]:  # every row of the group, no header
                print(f"  {line}", file=sys.stderr)
            print(f"  {name}: {time.monotonic() - t0:.0f} s", file=sys.stderr, flush=True)
    finally:
        if running is not None:
            running.stop()
    print(render(rows))
    failed = [r.name for r in rows if not r.passed]
    print(f"{len(rows) - len(failed)} of {len(rows)} targets met")
    return 1 if failed and not args.quick else 0


def _cores() -> int:
    return len(os.sched_getaffinity(0))


if __name__ == "__main__":
    raise SystemExit(main())
