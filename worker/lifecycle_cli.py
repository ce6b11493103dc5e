"""``contract-gate contract`` lifecycle subcommands: classify (offline), evidence, promote, list.

Kept apart from :mod:`worker.cli` so the lifecycle grows without rewriting the shared
entry point; :func:`add_lifecycle_args` registers the subparsers and
:data:`LIFECYCLE_COMMANDS` maps each to its handler (each returns an exit code).
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from typing import Any

__all__ = ["LIFECYCLE_COMMANDS", "add_lifecycle_args"]


def add_lifecycle_args(
    csub: Any, add_kafka_args: Callable[[argparse.ArgumentParser], None]
) -> None:
    """Register ``classify`` (and the Kafka-backed lifecycle actions) under ``contract``."""
    p = csub.add_parser(
        "classify",
        help="classify the change between two contract files (offline)",
        description="Compare OLD and NEW clause by clause (DESIGN.md section 4) and print the "
        "change class (major, tightening, minor, none) and every difference. Exit 0.",
    )
    p.add_argument("old", help="the previous version's YAML file")
    p.add_argument("new", help="the new version's YAML file")
    p.add_argument("--format", choices=["text", "json"], default="text")


def _cmd_classify(args: argparse.Namespace) -> int:
    from worker.classify import classification_to_json, classify, render_classification
    from worker.contracts import load_contract

    old, new = load_contract(args.old), load_contract(args.new)
    result = classify(old, new)
    if args.format == "json":
        print(json.dumps(classification_to_json(result), indent=2))
    else:
        print(render_classification(result, f"{old.key} -> {new.key}"))
    return 0


LIFECYCLE_COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {
    "classify": _cmd_classify,
}
