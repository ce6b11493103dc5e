"""``python -m benchmarks [--quick] [--only GROUP ...]``: run, print the figures table."""

from __future__ import annotations

import argparse
import platform
import sys
import time

from benchmarks import broker, offline
from benchmarks.common import Row, render
from worker.kafka.broker import start_broker

GROUPS = {
    "evaluate": lambda b, q: offline.evaluate_vs_floor(q),
    "python-loop": lambda b, q: offline.vs_python_loop(q),
    "worker": broker.worker_vs_floor,
    "scale-out": broker.scale_out,
    "startup": broker.startup,
    "rss": broker.rss_over_stream,
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks",
        description="Benchmarks of the gate against the floor of the same work on the same "
        "input, measured side by side in one run; prints figures, ratios and PASS/FAIL.",
    )
    parser.add_argument("--quick", action="store_true", help="tiny sizes (a smoke run)")
    parser.add_argument(
        "--only", nargs="+", choices=sorted(GROUPS), default=None, help="groups to run"
    )
    args = parser.parse_args(argv)
    names = args.only or list(GROUPS)
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
            got = GROUPS[name](running.bootstrap_servers if running else "", args.quick)
            rows += got
            print(render(got).splitlines()[-1] if got else "", file=sys.stderr)
            print(f"  {name}: {time.monotonic() - t0:.0f} s", file=sys.stderr, flush=True)
    finally:
        if running is not None:
            running.stop()
    print(render(rows))
    failed = [r.name for r in rows if not r.passed]
    print(f"{len(rows) - len(failed)} of {len(rows)} targets met")
    return 0


def _cores() -> int:
    import os

    return len(os.sched_getaffinity(0))


if __name__ == "__main__":
    raise SystemExit(main())
