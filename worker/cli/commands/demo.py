"""``contract-gate demo``: the whole gate on real data with a broker it starts itself.

The steps are in :mod:`worker.cli.demo` (also used by the integration tests); this module
is the command's arguments and its signal handling.
"""

from __future__ import annotations

import argparse
import signal

__all__ = ["register", "run"]


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``demo`` and its arguments."""
    p = sub.add_parser(
        "demo",
        help="run the demo on real data with an embedded broker",
        description="Start a broker (KAFKA_BOOTSTRAP_SERVERS, Docker, or embedded "
        "Tansu), publish contracts and real batches, run the worker, print the results.",
    )
    p.add_argument(
        "--timeout-s", type=float, default=90.0, help="give up after this long (default 90)"
    )
    p.add_argument(
        "--serve-s",
        type=float,
        default=0.0,
        help="keep the worker and its operator page (address printed) up this many seconds "
        "after the results (default 0: the page lives while the demo runs)",
    )
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Run the demo; SIGTERM stops it (and its broker) with status 128 + 15."""
    from worker.cli.demo import run_demo

    def _terminate(signum: int, frame: object) -> None:
        raise SystemExit(128 + signum)  # unwinds run_demo's finally: the broker is stopped

    signal.signal(signal.SIGTERM, _terminate)
    return run_demo(timeout_s=args.timeout_s, serve_s=args.serve_s)
