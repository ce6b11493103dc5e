"""``contract-gate contract evidence LAYER VERSION``: the observing evidence of a version.

Read from the evaluations topic (:func:`worker.control.lifecycle.gather_evidence`) and
printed as text, JSON or one HTML page.
"""

from __future__ import annotations

import argparse
import sys

from worker.cli.args import (
    add_kafka_args,
    add_now,
    completes_paths,
    now_of,
    settings_from_args,
    write_output,
)
from worker.core._util.jsonsafe import dumps_json

__all__ = ["register", "run"]


def register(csub: argparse._SubParsersAction) -> None:
    """Add ``evidence`` under ``contract``."""
    p = csub.add_parser(
        "evidence",
        help="summarise the observing evidence of a version (evaluations topic)",
        description="Span covered versus the cadence, batches evaluated, attainment against "
        "the objective, and the batches the version would have rejected.",
    )
    add_kafka_args(p)
    p.add_argument("layer")
    p.add_argument("version", help="e.g. v1.1 (v1 means v1.0)")
    p.add_argument(
        "--format",
        choices=["text", "json", "html"],
        default="text",
        help="html: one self-contained page with an SVG timeline",
    )
    completes_paths(p.add_argument("--output", "-o", help="write to this file instead of stdout"))
    add_now(p)


def run(args: argparse.Namespace) -> int:
    """Print (or write to ``--output``) the observing evidence of the version."""
    from worker.control.lifecycle import gather_evidence
    from worker.io.reports.evidence import (
        evidence_to_json,
        render_evidence_html,
        render_evidence_text,
    )

    evidence = gather_evidence(settings_from_args(args), args.layer, args.version, now_of(args))
    if args.format == "json":
        text = dumps_json(evidence_to_json(evidence), indent=2, default=str)
    elif args.format == "html":
        text = render_evidence_html(evidence)
    else:
        text = render_evidence_text(evidence)
    if args.output:
        write_output(args.output, text)  # an unwritable --output was an OSError traceback
        # with json, stdout holds JSON only: the file is the document, the line goes aside
        print(f"wrote {args.output}", file=sys.stderr if args.format == "json" else sys.stdout)
    else:
        print(text)
    return 0
