"""``contract-gate batch publish``: a batch file announced as a batch-arrival event.

Inline features, or by reference (``--by-reference``, ``--upload``) to a location under the
workers' ``--payload-root``.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import asdict

from worker.cli.args import add_kafka_args, completes_paths, parse_time, settings_from_args
from worker.cli.output import add_format, print_json, wants_json
from worker.cli.payload_args import add_payload_args, file_policy
from worker.cli.progress import add_quiet_arg, shows_progress, stage_line
from worker.io.formats import formats_named

__all__ = ["register", "run"]


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``batch`` and its action ``publish``."""
    p = sub.add_parser("batch", help="publish batch-arrival events")
    bsub = p.add_subparsers(dest="batch_command", required=True, metavar="ACTION")
    bp = bsub.add_parser(
        "publish",
        help="publish a batch file as a batch-arrival event",
        description="Publish a batch file to the batches topic as a batch-arrival event: its "
        "features inline, or by reference (--by-reference, --upload) to a location under "
        "the workers' --payload-root.",
    )
    add_kafka_args(bp)
    completes_paths(
        bp.add_argument(
            "file",
            help=f"{formats_named()} file (those read through GDAL with the formats extra)",
        )
    )
    bp.add_argument(
        "--layer",
        required=True,
        type=_layer_name,
        help="layer the batch belongs to (the record key): letters, digits, '.', '_' and '-', "
        "as a contract's layer",
    )
    bp.add_argument(
        "--crs",
        help="declared CRS, e.g. EPSG:2263 (default: the file's, or its format's default)",
    )
    bp.add_argument(
        "--axis-order",
        choices=["east_north", "north_east"],
        help="how x/y are stored (default east_north: x is longitude/easting)",
    )
    bp.add_argument(
        "--data-time",
        type=parse_time,
        help="time the data describes, ISO 8601 with offset; freshness is measured from it "
        "(default: the file's modification time)",
    )
    bp.add_argument("--batch-id", help="batch identifier (default: a new UUID)")
    bp.add_argument(
        "--producer", default="contract-gate-cli", help="producer name (default contract-gate-cli)"
    )
    bp.add_argument(
        "--by-reference",
        action="store_true",
        help="send payload_uri (a file:// URI of the file's absolute path, or FILE itself "
        "when it is a file:// or s3:// URI; it must lie under the workers' --payload-root) "
        "instead of inline features",
    )
    bp.add_argument(
        "--upload",
        metavar="URI",
        help="copy FILE to s3://bucket/prefix/ (or file:///dir/) as <batch id>/<file name> "
        "first and announce that copy (implies --by-reference)",
    )
    add_payload_args(bp, roots=False)
    add_format(bp, "the batch id, layer, feature count, topic, partition, offset, payload_uri")
    add_quiet_arg(bp)
    p.set_defaults(handler=run)


def _layer_name(text: str) -> str:
    """``--layer`` of ``batch publish``: a name a contract can carry, else exit 2 (a batch
    of layer "bad layer/../x" was published though no contract can govern it)."""
    from worker.core.contracts.schema import layer_name_pattern

    if not layer_name_pattern().search(text):
        raise argparse.ArgumentTypeError(
            f"{text[:200]!r} is not a layer name: use letters, digits, '.', '_' and '-' (at "
            "most 200), as a contract's layer"
        )
    return text


def run(args: argparse.Namespace) -> int:
    """Publish the batch-arrival event and print its summary."""
    from worker.control.publish import publish_batch_file

    settings = settings_from_args(args)
    progress = shows_progress(args)  # stage lines on a terminal's stderr
    if progress:
        print(f"batch publish: reading {args.file} ...", file=sys.stderr, flush=True)
    published = publish_batch_file(
        settings,
        args.file,
        layer=args.layer,
        crs=args.crs,
        axis_order=args.axis_order,
        data_time=args.data_time,
        batch_id=args.batch_id,
        producer=args.producer,
        by_reference=args.by_reference,
        upload=args.upload,
        policy=file_policy(args),
        warn=lambda line: print(line, file=sys.stderr),
        on_stage=(
            (lambda what, n, t0: stage_line(sys.stderr, f"batch publish: {what}", n, t0))
            if progress
            else (lambda *_: None)
        ),
    )
    if wants_json(args):
        print_json(asdict(published))
    else:
        print(published.summary)
    return 0
