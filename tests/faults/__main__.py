"""``python -m tests.faults [--quick]``: run the fault suite and print its figures table.

Starts the broker as the tests do (``KAFKA_BOOTSTRAP_SERVERS``, else Docker, else the
embedded Tansu broker on a free loopback port, stopped at the end). Exit 0 when every
scenario passes (rows marked INFO measure the broker and never fail the run).
"""

from __future__ import annotations

import argparse
import sys
import time

from tests.faults.suite import render, scenarios
from worker.kafka.broker_route import start_broker


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.faults", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="the short CI subset")
    parser.add_argument("--only", help="run the scenarios whose key contains this text")
    args = parser.parse_args()
    broker = start_broker()
    rows = []
    started = time.monotonic()
    try:
        for key, run in scenarios(args.quick):
            if args.only and args.only not in key:
                continue
            print(f"running: {key} ...", file=sys.stderr, flush=True)
            rows.append(run(broker.bootstrap_servers))
            print(render(rows[-1:]).splitlines()[-1], file=sys.stderr, flush=True)
    finally:
        broker.stop()
    print(render(rows))
    print(f"\n{len(rows)} scenarios in {time.monotonic() - started:.0f} s ({broker.kind} broker)")
    return 0 if all(r.ok or r.informational for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
