"""The ``contract-gate`` commands: one module per top-level command, listed in ``COMMANDS``.

Each module exposes ``register(sub)``, which adds the command's parser to the top-level
subparsers with its arguments and its handler (``set_defaults(handler=run)``), and
``run(args) -> int``, which does the work and returns the exit code. A new command is one
module here plus one entry in ``COMMANDS``; what it does with a broker goes in
:mod:`worker.control` or :mod:`worker.ops`, not in the command module. ``COMMANDS`` is in
the order ``contract-gate --help`` lists the commands.
"""

from __future__ import annotations

import argparse
from typing import Protocol

from worker.cli.commands import (
    batch,
    broker,
    check,
    completion,
    consumers,
    contract,
    demo,
    quarantine,
    run,
    topics,
    verify,
)

__all__ = ["COMMANDS", "Command"]


class Command(Protocol):
    """What a command module (or an action module of a command group) exposes."""

    def register(self, sub: argparse._SubParsersAction) -> None:
        """Add the command's parser, arguments and handler to ``sub``."""

    def run(self, args: argparse.Namespace) -> int:
        """Do the command's work; returns the process exit code."""


COMMANDS: dict[str, Command] = {
    "check": check,
    "run": run,
    "topics": topics,
    "contract": contract,
    "consumers": consumers,
    "quarantine": quarantine,
    "verify": verify,
    "broker": broker,
    "batch": batch,
    "demo": demo,
    "completion": completion,
}
