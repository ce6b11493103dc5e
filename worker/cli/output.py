"""``--format text|json`` of every printing command, and errors as one JSON document.

Every command that prints a result takes ``--format`` (:func:`add_format`); with ``json``
it prints one JSON document on stdout (shapes in docs/reference-json-output.md) and, when
it fails, one JSON object on stderr instead of the error line, with the same exit code::

    {"error": "<the one-line message>", "field": "<field or flag, or null>", "fix": "<fix or null>"}

The translation is done once, at the command line's edge (:func:`worker.cli.main.main`
and :class:`worker.cli.main.GateParser`), for every error of the package
(:class:`worker.core.errors.ContractGateError`) and every argument error.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Callable, Sequence
from typing import Any

from worker.core._util.jsonsafe import dumps_json

__all__ = [
    "add_format",
    "argument_error_document",
    "argv_wants_json",
    "error_document",
    "print_error",
    "print_json",
    "wants_json",
]

_FLAG = re.compile(r"(?<![\w-])(--[a-z][a-z0-9-]*)")
_ARGUMENT = re.compile(r"^argument ([^:]+): ")
_NAMED = re.compile(r"^(?:the following arguments are required|unrecognized arguments): ([^, ]+)")


def add_format(
    p: argparse.ArgumentParser,
    what: str,
    *,
    choices: Sequence[str] = ("text", "json"),
) -> None:
    """Add ``--format`` (default ``text``) to ``p``; ``what`` says what the JSON document
    holds (shown in ``--help``)."""
    p.add_argument(
        "--format",
        choices=list(choices),
        default="text",
        help=f"text (default) or json: {what} (docs/reference-json-output.md); errors are "
        'then one JSON object {"error", "field", "fix"} on stderr',
    )


def wants_json(args: argparse.Namespace) -> bool:
    """Whether the parsed command was given ``--format json``."""
    return getattr(args, "format", None) == "json"


def argv_wants_json(argv: Sequence[str]) -> bool:
    """Whether raw arguments ask for ``--format json`` (read before parsing, so that an
    argument error is a JSON document too)."""
    items = list(argv)
    for i, item in enumerate(items):
        if item == "--format=json" or (item == "--format" and items[i + 1 : i + 2] == ["json"]):
            return True
    return False


def print_json(doc: Any, *, indent: int | None = 2) -> None:
    """Print ``doc`` as one JSON document on stdout (no NaN; dates as ISO 8601 text)."""
    print(dumps_json(doc, indent=indent, default=str), flush=True)


def _fix_of(message: str) -> str | None:
    """The fix a message states after its last ``"; "`` outside brackets (this package's
    messages say what is wrong, then what to do), or None."""
    depth, cut = 0, -1
    for i, ch in enumerate(message):
        depth += (ch in "([{") - (ch in ")]}")
        if depth == 0 and message.startswith("; ", i):
            cut = i
    return message[cut + 2 :].strip() or None if cut > 0 else None


def error_document(exc: BaseException) -> dict[str, str | None]:
    """The ``{"error", "field", "fix"}`` object of an error of this package.

    ``field`` and ``fix`` are the error's own (:class:`worker.core.errors.ContractGateError`
    ``field=``/``fix=``, set where it is raised; either may be None). Only an error that
    states neither gets guessed ones, as a fallback: ``field`` the first ``--flag`` its
    message names and ``fix`` the clause after its last ``"; "`` outside brackets, each
    None when there is none.
    """
    message = str(exc)
    field, fix = getattr(exc, "field", None), getattr(exc, "fix", None)
    if field is None and fix is None:
        flag = _FLAG.search(message)
        field, fix = (flag.group(1) if flag else None), _fix_of(message)
    return {"error": message, "field": field, "fix": fix}


def argument_error_document(prog: str, message: str) -> dict[str, str | None]:
    """The ``{"error", "field", "fix"}`` object of an argparse error of ``prog``: the field
    is the argument argparse names (``--format``, ``--layer``, ``file``)."""
    found = _ARGUMENT.match(message) or _NAMED.match(message)
    field = found.group(1).split("/")[0].strip() if found else None
    return {"error": f"{prog}: {message}", "field": field, "fix": f"see `{prog} --help`"}


def print_error(as_json: bool, doc: dict[str, str | None], line: Callable[[], str]) -> None:
    """Print an error on stderr: ``doc`` as one JSON line when ``as_json``, else ``line()``."""
    text = dumps_json(doc) if as_json else line()
    print(text, file=sys.stderr, flush=True)
