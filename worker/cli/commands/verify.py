"""``contract-gate verify overlap LAYER``: the gate's mechanisms checked on a live cluster.

The checks are :func:`worker.ops.verify.verify_overlap`; exit 0 when every applicable one
passes, 1 when one fails, 3 when nothing could be verified.
"""

from __future__ import annotations

import argparse

from worker.cli.args import add_kafka_args
from worker.core._util.jsonsafe import dumps_json
from worker.ops.verify import render_report, report_to_json, verify_overlap

__all__ = ["register", "run"]


# -- command line ----------------------------------------------------------------------------


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``verify`` and its check ``overlap LAYER [--format text|json]``."""
    p = sub.add_parser(
        "verify",
        help="check the gate's mechanisms against a live cluster",
        description="Run checks against a live cluster and print pass/fail with figures.",
    )
    p.set_defaults(handler=run)
    s = p.add_subparsers(dest="verify_command", required=True, metavar="CHECK")
    o = s.add_parser(
        "overlap",
        help="identical twin, stricter observing version, undeclared reader, major overlap",
        description="For LAYER: an identical observing twin shows the same attainment as "
        "its original over the same batches; a stricter observing version records breaches "
        "while the batches are still admitted; an undeclared reader is counted against the "
        "oldest active version; during a major overlap both majors are evaluated on every "
        "batch, each with its own attainment. A check whose situation does not exist is "
        "reported as not applicable; one without evidence yet (e.g. the stricter version "
        "never fired) as inconclusive. Exit 0 when every applicable check passes, 1 when one "
        "fails, 3 (INCONCLUSIVE) when nothing could be verified, 2 on errors.",
    )
    add_kafka_args(o)
    o.add_argument("layer", metavar="LAYER")
    o.add_argument(
        "--format", choices=["text", "json"], default="text", help="text (default) or json"
    )


def run(args: argparse.Namespace) -> int:
    """Run the checks and print the report; returns its exit code."""
    from worker.cli.args import settings_from_args

    report = verify_overlap(settings_from_args(args), args.layer)
    if args.format == "json":
        print(dumps_json(report_to_json(report), indent=2, default=str))
    else:
        print(render_report(report))
    return report.exit_code
