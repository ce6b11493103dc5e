"""``--log-level``, accepted before the command and after it: its values, help text and
type (:mod:`worker.cli.main` adds it to every parser)."""

from __future__ import annotations

import argparse

__all__ = ["LOG_LEVELS", "LOG_LEVEL_HELP", "log_level", "log_level_everywhere"]

#: The levels ``--log-level`` takes (any case).
LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")

#: The help text of ``--log-level`` (every parser).
LOG_LEVEL_HELP = (
    "DEBUG, INFO, WARNING, ERROR (default WARNING; for `run` the worker's own "
    "operational lines, e.g. applied config changes and one line per poll batch, are "
    "shown at INFO); accepted before or after the command"
)


def log_level(text: str) -> str:
    """``--log-level``'s value, upper-cased; argparse turns the error into exit 2 with a
    one-line message (a bad level was a ValueError traceback and exit 1, and for
    ``check`` 1 means quarantined)."""
    level = text.upper()
    if level not in LOG_LEVELS:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a log level; use one of {', '.join(LOG_LEVELS)}"
        )
    return level


def log_level_everywhere(parser: argparse.ArgumentParser) -> None:
    """Accept ``--log-level`` after the command too (``contract-gate run --log-level
    DEBUG``): every subcommand parser gets it, defaulting to what was given before."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in dict.fromkeys(action.choices.values()):
                if not any("--log-level" in a.option_strings for a in sub._actions):
                    sub.add_argument(
                        "--log-level",
                        default=argparse.SUPPRESS,
                        type=log_level,
                        help=LOG_LEVEL_HELP,
                    )
                log_level_everywhere(sub)
