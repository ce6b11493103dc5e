"""``contract-gate demo``: the whole gate on real data with a broker it starts itself.

The steps are in :mod:`worker.cli.demo` (also used by the integration tests); this module
is the command's arguments and its signal handling.
"""

from __future__ import annotations

import argparse
import signal

from worker.cli.args import positive_seconds

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
        "--timeout-s",
        type=positive_seconds,
        default=90.0,
        help="give up after this many seconds, end to end: broker start, worker, batches "
        "(default 90; the worker and broker are then stopped, exit 2)",
    )
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Run the demo within ``--timeout-s``; SIGTERM stops it (and its broker) with status
    128 + 15, Ctrl-C with ``interrupted`` and 130 (:mod:`worker.cli.interrupt`)."""
    from worker.cli.demo import DemoTimedOut, run_demo

    def _terminate(signum: int, frame: object) -> None:
        raise SystemExit(128 + signum)  # unwinds run_demo's finally: the broker is stopped

    def _deadline(signum: int, frame: object) -> None:
        raise DemoTimedOut(
            f"the demo did not finish within --timeout-s {args.timeout_s:g} s; give it "
            "more time (the first run on 2 cores takes about 30 s) or see --log-level INFO"
        )

    signal.signal(signal.SIGTERM, _terminate)
    previous = signal.signal(signal.SIGALRM, _deadline)
    signal.setitimer(signal.ITIMER_REAL, args.timeout_s)
    try:
        return run_demo(timeout_s=args.timeout_s)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
