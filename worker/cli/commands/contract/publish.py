"""``contract-gate contract publish``: a contract version to the config topic.

The change is classified and the lifecycle policy applied (:mod:`worker.control.publish`);
``--dry-run`` writes nothing.
"""

from __future__ import annotations

import argparse

from worker.cli.args import add_kafka_args, completes_paths, settings_from_args
from worker.cli.output import add_format, print_json, wants_json
from worker.cli.signing_args import add_signing_args

__all__ = ["register", "run"]


def register(csub: argparse._SubParsersAction) -> None:
    """Add ``publish`` under ``contract``."""
    cp = csub.add_parser(
        "publish",
        help="publish a contract version to the config topic",
        description="Publish a contract version to the config topic: its change against the "
        "layer's published history is classified and the lifecycle policy applied (a new "
        "major is published observing beside the enforcing one); --dry-run writes nothing.",
    )
    add_kafka_args(cp)
    add_signing_args(cp, sign=True)
    completes_paths(cp.add_argument("file", help="contract YAML file"))
    cp.add_argument(
        "--mode",
        choices=["enforcing", "observing"],
        default=None,
        help="default: the document's `mode`, else enforcing",
    )
    cp.add_argument("--published-by", default=None, help="publisher name (default: $USER)")
    cp.add_argument(
        "--dry-run", action="store_true", help="classify and apply the policy, write nothing"
    )
    add_format(cp, "the version, its class, the outcome, the records written, notes, warnings")


def run(args: argparse.Namespace) -> int:
    """Publish (or with ``--dry-run`` only classify) the version and print the summary."""
    from worker.cli.lifecycle_output import publish_json, publish_text
    from worker.control.publish import publish_contract

    settings = settings_from_args(args)
    result = publish_contract(
        settings,
        args.file,
        mode=args.mode,
        published_by=args.published_by,
        dry_run=args.dry_run,
    )
    if wants_json(args):
        print_json(publish_json(result))
    else:
        print(publish_text(result))
    return 0
