"""``contract-gate demo``: the whole gate on real data with a broker it starts itself.

The steps are in :mod:`worker.cli.demo` (also used by the integration tests); this module
is the command's arguments and its signal handling.
"""

from __future__ import annotations

import argparse
import signal
import threading

from worker.cli.args import non_negative_seconds, positive_seconds

__all__ = ["register", "run"]

#: The signal the demo's deadline timer sends to the main thread.
DEADLINE_SIGNAL = signal.SIGUSR1


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
        "(default 90, plus --serve-s; the worker and broker are then stopped, exit 2)",
    )
    p.add_argument(
        "--serve-s",
        type=non_negative_seconds,
        default=0.0,
        help="keep the worker and its operator page (address printed) up this many seconds "
        "after the results (default 0: the page lives while the demo runs)",
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
            "more time (a run takes 15 to 30 s on 2 cores) or see --log-level INFO"
        )

    signal.signal(signal.SIGTERM, _terminate)
    # a timer thread signals the main thread: SIGUSR1, as SIGALRM's timer is the file
    # readers' parse budget; a real signal also cuts short a wait in a system call
    previous = signal.signal(DEADLINE_SIGNAL, _deadline)
    main_id = threading.main_thread().ident
    assert main_id is not None
    budget_s = args.timeout_s + args.serve_s  # the page is served as long as asked
    timer = threading.Timer(budget_s, signal.pthread_kill, (main_id, DEADLINE_SIGNAL))
    timer.daemon = True
    timer.start()
    try:
        return run_demo(timeout_s=args.timeout_s, serve_s=args.serve_s)
    finally:
        timer.cancel()
        signal.signal(DEADLINE_SIGNAL, previous)
