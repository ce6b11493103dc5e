"""The ``contract-gate`` commands: one module per top-level command, listed in ``COMMANDS``.

Each module exposes ``register(sub)``, which adds the command's parser to the top-level
subparsers with its arguments and its handler (``set_defaults(handler=run)``), and
``run(args) -> int``, which does the work and returns the exit code. A new command is one
module here plus its name in ``_NAMES``; what it does with a broker goes in
:mod:`worker.control` or :mod:`worker.ops`, not in the command module. ``COMMANDS`` is in
the order ``contract-gate --help`` lists the commands.
"""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Iterator, Mapping
from typing import Protocol, cast

__all__ = ["COMMANDS", "Command"]


class Command(Protocol):
    """What a command module (or an action module of a command group) exposes."""

    def register(self, sub: argparse._SubParsersAction) -> None:
        """Add the command's parser, arguments and handler to ``sub``."""

    def run(self, args: argparse.Namespace) -> int:
        """Do the command's work; returns the process exit code."""


#: The command modules' names, in the order ``contract-gate --help`` lists them.
_NAMES = (
    "check",
    "run",
    "topics",
    "contract",
    "consumers",
    "quarantine",
    "verify",
    "broker",
    "batch",
    "demo",
    "completion",
)


class _Commands(Mapping[str, Command]):
    """The command modules by name, each imported when first looked up: a command run
    imports its own module, not every command's (``check`` paid about 30 ms of CPU for
    the others' imports, issue 27)."""

    def __getitem__(self, name: str) -> Command:
        if name not in _NAMES:
            raise KeyError(name)
        return cast(Command, importlib.import_module(f"{__name__}.{name}"))

    def __iter__(self) -> Iterator[str]:
        return iter(_NAMES)

    def __len__(self) -> int:
        return len(_NAMES)


#: Every command module by name (imported on lookup), in ``contract-gate --help``'s order.
COMMANDS: Mapping[str, Command] = _Commands()
