"""``contract-gate contract classify OLD NEW``: the change class between two contract files.

Offline (no Kafka): clause by clause as docs/contracts.md defines the change classes.
"""

from __future__ import annotations

import argparse

from worker.cli.args import completes_paths
from worker.core._util.jsonsafe import dumps_json

__all__ = ["register", "run"]


def register(csub: argparse._SubParsersAction) -> None:
    """Add ``classify`` under ``contract``."""
    p = csub.add_parser(
        "classify",
        help="classify the change between two contract files (offline)",
        description="Compare OLD and NEW clause by clause (docs/contracts.md, change classes) "
        "and print the "
        "change class (major, tightening, minor, none) and every difference. Exit 0; 2 when "
        "OLD and NEW are versions of different layers.",
    )
    completes_paths(p.add_argument("old", help="the previous version's YAML file"))
    completes_paths(p.add_argument("new", help="the new version's YAML file"))
    p.add_argument(
        "--format",
        choices=["text", "json"],
        default="text",
        help="text (default) or json: the class and each difference as one document",
    )


def run(args: argparse.Namespace) -> int:
    """Print the change class of OLD -> NEW and every difference."""
    from worker.core.contracts.classify import (
        classification_to_json,
        classify,
        render_classification,
    )
    from worker.io.contract_files import load_contract

    old, new = load_contract(args.old), load_contract(args.new)
    result = classify(old, new)
    if args.format == "json":
        print(dumps_json(classification_to_json(result), indent=2))
    else:
        print(render_classification(result, f"{old.key} -> {new.key}"))
    return 0
