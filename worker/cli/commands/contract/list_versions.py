"""``contract-gate contract list [LAYER]``: contract versions with mode, state, class, age
and escalations (:func:`worker.control.lifecycle.list_versions`).
"""

from __future__ import annotations

import argparse

from worker.cli.args import add_kafka_args, add_now, now_of, settings_from_args
from worker.cli.output import add_format, print_json, wants_json

__all__ = ["register", "run"]


def register(csub: argparse._SubParsersAction) -> None:
    """Add ``list`` under ``contract``."""
    p = csub.add_parser(
        "list",
        help="list contract versions with mode, state, class, age and escalations",
        description="List the contract versions of every layer (or LAYER) read from the "
        "config topic, with mode, state, change class, age and escalations.",
    )
    add_kafka_args(p)
    p.add_argument("layer", nargs="?", help="only this layer")
    add_now(p)
    add_format(p, "every version with mode, state, class, age; escalations; broken histories")


def run(args: argparse.Namespace) -> int:
    """Print the contract versions of every layer, or of LAYER."""
    from worker.control.listing import list_versions, versions_to_json

    if wants_json(args):
        print_json(versions_to_json(settings_from_args(args), args.layer, now_of(args)))
    else:
        print(list_versions(settings_from_args(args), args.layer, now_of(args)))
    return 0
