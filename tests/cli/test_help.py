"""``--help`` of every command and action, pinned byte for byte (tests/cli/data/help.txt),
and every argument's destination, default, choices and arity (tests/cli/data/actions.txt).

The files were written from the parser before the commands moved to
:mod:`worker.cli.commands`; they prove that a move changes no flag, default or help text.
Regenerate them only when a change of the command line is intended::

    PYTHONPATH=$PWD python -m tests.cli.test_help

argparse formats help differently across Python versions (3.13 writes ``-o, --output
OUTPUT``), so the comparison runs on the version the file was written with.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from worker.cli.main import build_parser
from worker.cli.parser_tree import arguments, is_subcommands, walk

HELP_FILE = Path(__file__).resolve().parent / "data" / "help.txt"
ACTIONS_FILE = HELP_FILE.with_name("actions.txt")
#: The terminal width the texts are formatted for (argparse reads ``COLUMNS``).
COLUMNS = "80"
#: The line that opens each text in the file: ``MARK + "contract-gate check --help"``.
MARK = "######## "
PYTHON = f"python {sys.version_info.major}.{sys.version_info.minor}"


def parsers(
    parser: argparse.ArgumentParser, path: str = "contract-gate"
) -> Iterator[tuple[str, argparse.ArgumentParser]]:
    """Every parser of the tree with its command path, depth first, in registration order."""
    yield from walk(parser, path)


def help_texts() -> dict[str, str]:
    """``{"contract-gate check --help": text, ...}`` as the parser formats them now."""
    previous = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = COLUMNS
    try:
        return {f"{path} --help": p.format_help() for path, p in parsers(build_parser())}
    finally:
        if previous is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = previous


def action_lines() -> list[str]:
    """One line per argument of every parser: its flags, destination, default, choices,
    arity and whether it is required (what a help text may not show)."""
    lines = []
    for path, parser in parsers(build_parser()):
        for a in arguments(parser):
            flags = ",".join(a.option_strings) or a.metavar or a.dest
            lines.append(
                f"{path}: {flags} dest={a.dest} default={a.default!r} const={a.const!r} "
                f"nargs={a.nargs!r} choices={_choices(a)} required={a.required} "
                f"metavar={a.metavar!r}"
            )
    return lines


def _choices(action: argparse.Action) -> str:
    if is_subcommands(action):
        return repr(list(action.choices))  # the subparsers themselves are compared above
    return repr(action.choices)


def render(texts: dict[str, str]) -> str:
    """The file's content: a version line, then each text after its mark line."""
    return f"{PYTHON}\n" + "".join(f"{MARK}{key}\n{text}" for key, text in texts.items())


def read(content: str) -> tuple[str, dict[str, str]]:
    """The Python version and the texts of a file written by :func:`render`."""
    version, _, rest = content.partition("\n")
    texts: dict[str, str] = {}
    for chunk in rest.split(MARK)[1:]:
        key, _, text = chunk.partition("\n")
        texts[key] = text
    return version, texts


def test_every_help_text_is_byte_identical_to_the_pinned_one() -> None:
    version, pinned = read(HELP_FILE.read_text(encoding="utf-8"))
    if version != PYTHON:
        pytest.skip(f"help texts pinned with {version}; argparse formats them differently")
    now = help_texts()
    assert list(now) == list(pinned)  # the same commands and actions, in the same order
    for key, text in now.items():
        assert text == pinned[key], key


def test_every_argument_is_as_pinned() -> None:
    # flags, destinations, defaults, choices and arity: the parsed values of every command
    pinned = ACTIONS_FILE.read_text(encoding="utf-8").splitlines()
    assert action_lines() == pinned


def test_no_help_text_contains_the_mark() -> None:
    assert not any(MARK in text for text in help_texts().values())


if __name__ == "__main__":  # pragma: no cover - regenerates the pinned file
    HELP_FILE.parent.mkdir(exist_ok=True)
    HELP_FILE.write_text(render(help_texts()), encoding="utf-8")
    ACTIONS_FILE.write_text("\n".join(action_lines()) + "\n", encoding="utf-8")
    print(f"wrote {len(help_texts())} help texts to {HELP_FILE}, arguments to {ACTIONS_FILE}")


def _commands() -> list[tuple[str, argparse.ArgumentParser]]:
    from worker.cli.parser_tree import subcommands

    return [(path, p) for path, p in walk(build_parser()) if not subcommands(p)]


@pytest.mark.parametrize(("path", "parser"), _commands(), ids=[p for p, _ in _commands()])
def test_every_commands_help_says_what_it_does(path: str, parser: argparse.ArgumentParser) -> None:
    """Stop 38: ``topics create``, ``contract publish``, ``contract list``, ``consumers
    declare`` and ``batch publish`` had no description: their ``--help`` listed options
    only (the one line of each showed in the parent's list alone), and ``topics create``
    did not say it exits 1 on a config topic that is not compacted."""
    assert parser.description and len(parser.description) > 40, path
    shown = " ".join(parser.format_help().split())
    assert " ".join(parser.description.split()[:6]) in shown, path


@pytest.mark.parametrize(("path", "parser"), _commands(), ids=[p for p, _ in _commands()])
def test_every_commands_help_states_its_exit_statuses(
    path: str, parser: argparse.ArgumentParser
) -> None:
    # found by a new-user session: 13 of 22 commands (contract publish, promote, list,
    # consumers status, quarantine show, batch publish, ...) said nothing of their exit
    # status, and none of the exit of a bug or of Ctrl-C; scripts had to guess
    shown = " ".join(parser.format_help().split())
    if parser.get_default("stops_on_sigint"):  # `broker`: Ctrl-C is its normal stop
        assert "Exit status: 0 when stopped with Ctrl-C or SIGTERM" in shown, path
    elif "Exit " in (parser.description or ""):  # the command states its own codes
        assert "Exit status otherwise: 2 on bad input" in shown, path
    else:
        assert "Exit status: 0 when done, 2 on bad input" in shown, path
    assert "70 on an internal error (a bug" in shown, path
    assert ("130 on Ctrl-C" in shown) != bool(parser.get_default("stops_on_sigint")), path
