"""``contract-gate contract list [LAYER]``: contract versions with mode, state, class, age
and escalations (:func:`worker.control.lifecycle.list_versions`).
"""

from __future__ import annotations

import argparse

from worker.cli.args import add_kafka_args, add_now, now_of, settings_from_args

__all__ = ["register", "run"]


def register(csub: argparse._SubParsersAction) -> None:
    """Add ``list`` under ``contract``."""
    p = csub.add_parser(
        "list",
        help="list contract versions with mode, state, class, age and escalations",
    )
    add_kafka_args(p)
    p.add_argument("layer", nargs="?", help="only this layer")
    add_now(p)


def run(args: argparse.Namespace) -> int:
    """Print the contract versions of every layer, or of LAYER."""
    from worker.control.lifecycle import list_versions

    print(list_versions(settings_from_args(args), args.layer, now_of(args)))
    return 0
