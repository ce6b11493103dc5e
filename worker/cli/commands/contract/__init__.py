"""``contract-gate contract``: the lifecycle of contract versions, one module per action.

``ACTIONS`` lists them in the order ``contract-gate contract --help`` shows them: init
(a draft from sample batches, offline), publish (to the config topic), classify
(offline), evidence, promote, list, review (offline), retire. Each action module exposes
``register(csub)`` and ``run(args) -> int`` as a command module does; :func:`run` hands
the parsed arguments to the action named.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from worker.cli.commands.contract import (
    classify,
    evidence,
    init,
    list_versions,
    promote,
    publish,
    retire,
    review,
)

if TYPE_CHECKING:
    from worker.cli.commands import Command

__all__ = ["ACTIONS", "register", "run"]

ACTIONS: dict[str, Command] = {
    "init": init,
    "publish": publish,
    "classify": classify,
    "evidence": evidence,
    "promote": promote,
    "list": list_versions,
    "review": review,
    "retire": retire,
}


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``contract`` and every action of ``ACTIONS`` under it."""
    p = sub.add_parser(
        "contract",
        help="contract versions: init, publish, classify, review, evidence, promote, list, retire",
    )
    p.set_defaults(handler=run)
    csub = p.add_subparsers(dest="contract_command", required=True, metavar="ACTION")
    for action in ACTIONS.values():
        action.register(csub)


def run(args: argparse.Namespace) -> int:
    """Run the action ``args.contract_command`` names; returns its exit code."""
    return ACTIONS[args.contract_command].run(args)
