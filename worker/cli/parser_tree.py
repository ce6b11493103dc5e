"""The parser tree of the command line, read for tests and generated reference pages.

argparse keeps a parser's arguments and subcommands in private attributes (``_actions``,
``_SubParsersAction``, ``_choices_actions``) with no public accessor; this module is the one
place that reads them.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterator

__all__ = ["arguments", "is_subcommands", "subcommand_help", "subcommands", "walk"]


def arguments(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    """Every argument of ``parser`` in the order it was added (``-h`` first).

    Parameters
    ----------
    parser : argparse.ArgumentParser

    Returns
    -------
    list[argparse.Action]
        Options, positionals and the subcommands action, if any.
    """
    return list(parser._actions)


def is_subcommands(action: argparse.Action) -> bool:
    """Whether ``action`` is the subcommands action of a parser (``add_subparsers``)."""
    return isinstance(action, argparse._SubParsersAction)


def subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    """The subcommands of ``parser``, name -> parser, in registration order.

    Parameters
    ----------
    parser : argparse.ArgumentParser

    Returns
    -------
    dict[str, argparse.ArgumentParser]
        Empty for a parser without subcommands.
    """
    out: dict[str, argparse.ArgumentParser] = {}
    for action in arguments(parser):
        if isinstance(action, argparse._SubParsersAction):
            out.update(action.choices)
    return out


def subcommand_help(parser: argparse.ArgumentParser) -> dict[str, str | None]:
    """The help line of each subcommand of ``parser``, as ``--help`` lists it.

    Parameters
    ----------
    parser : argparse.ArgumentParser

    Returns
    -------
    dict[str, str | None]
        Subcommand name -> its ``help=`` text (None when it has none).
    """
    out: dict[str, str | None] = {}
    for action in arguments(parser):
        if isinstance(action, argparse._SubParsersAction):
            out.update((a.dest, a.help) for a in action._choices_actions)
    return out


def walk(
    parser: argparse.ArgumentParser, path: str = "contract-gate"
) -> Iterator[tuple[str, argparse.ArgumentParser]]:
    """Every parser of the tree with its command path, depth first, in registration order.

    Parameters
    ----------
    parser : argparse.ArgumentParser
        The root of the tree walked.
    path : str
        The command path of ``parser`` (``contract-gate``).

    Yields
    ------
    tuple[str, argparse.ArgumentParser]
        ``("contract-gate contract publish", parser)`` and so on, ``parser`` first.
    """
    yield path, parser
    for name, sub in subcommands(parser).items():
        yield from walk(sub, f"{path} {name}")
