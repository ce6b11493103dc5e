"""The ``contract-gate`` command line (also ``python -m worker``).

Commands, one module each in :mod:`worker.cli.commands` (``COMMANDS``): ``check``
(offline), ``run`` (the worker), ``topics create``, ``contract`` (init, publish,
classify, evidence, promote, list, review, retire), ``consumers``, ``quarantine``,
``verify``, ``broker`` (the embedded broker), ``batch publish``, ``demo``. Every command that talks
to Kafka takes the same connection settings (flags or environment; secrets are never
printed). Errors of this package are reported as one line on stderr with exit code 2;
with ``--format json`` as one JSON object ``{"error", "field", "fix"}`` instead
(:mod:`worker.cli.output`), argument errors too. ``completion bash|zsh`` prints a shell
completion script generated from this parser (:mod:`worker.cli.completion`).
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import sys
from collections.abc import Iterator, Sequence
from contextvars import ContextVar
from typing import Any, NoReturn

from worker import __version__
from worker.cli.args import EXIT_BAD_INPUT, EXIT_BROKEN_PIPE, EXIT_INTERNAL, exit_status_epilog
from worker.cli.commands import COMMANDS
from worker.cli.interrupt import Interrupts
from worker.cli.log_args import LOG_LEVEL_HELP, log_level, log_level_everywhere
from worker.cli.output import (
    argument_error_document,
    argv_wants_json,
    error_document,
    print_error,
    wants_json,
)
from worker.cli.parser_tree import subcommands, walk
from worker.core._util.arrow import skip_pandas_probe
from worker.core._util.malloc import keep_freed_memory
from worker.core._util.text import clip
from worker.core.errors import BrokerError, ContractGateError

__all__ = ["COMMANDS", "build_parser", "command_named", "main"]

#: Whether the arguments being parsed ask for ``--format json`` (argument errors are then
#: one JSON object on stderr); set by :func:`main` before parsing.
_JSON_ERRORS: ContextVar[bool] = ContextVar("json_errors", default=False)


class GateParser(argparse.ArgumentParser):
    """An argument parser whose errors are one line: what is wrong and where the help is
    (argparse's default prints the whole usage block first)."""

    def error(self, message: str) -> NoReturn:
        if _JSON_ERRORS.get():
            print_error(True, argument_error_document(self.prog, message), str)
            self.exit(2)
        self.exit(2, f"{self.prog}: error: {message} (see `{self.prog} --help`)\n")

    def parse_known_args(  # type: ignore[override]
        self, args: Any = None, namespace: Any = None
    ) -> tuple[argparse.Namespace, list[str]]:
        """As argparse's, but arguments this parser does not know are an error here, so
        ``contract-gate check --bogus`` points to ``contract-gate check --help`` (argparse
        hands them up to the top-level parser, whose message names the top-level help)."""
        known, extras = super().parse_known_args(args, namespace)
        if extras:
            self.error(f"unrecognized arguments: {' '.join(extras)}")
        return known, extras


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The argument parser of every command: each module of ``COMMANDS`` registers its own;
    with ``only`` (a name of ``COMMANDS``), of that command alone (its module alone is
    imported; its parsing, help and errors are those of the whole tree)."""
    parser = GateParser(
        prog="contract-gate",
        description=(
            "Guard spatial data layers with versioned data contracts: evaluate batches "
            "against every active contract version, admit or quarantine them."
        ),
    )
    parser.add_argument("--log-level", default=None, type=log_level, help=LOG_LEVEL_HELP)
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in [only] if only is not None else COMMANDS:
        COMMANDS[name].register(sub)
    log_level_everywhere(parser)
    for _, leaf in walk(parser, "contract-gate"):
        if not subcommands(leaf):
            leaf.epilog = exit_status_epilog(leaf)
    parser.set_defaults(root_parser=parser)  # `completion` writes the script of the tree
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``contract-gate``; returns the process exit code.

    Ctrl-C ends any command but ``broker`` (whose normal stop it is) with the one line
    ``interrupted`` and status 130 (:mod:`worker.cli.interrupt`).
    """
    skip_pandas_probe()  # pyarrow would import pandas (not used) on its first list
    keep_freed_memory()  # large arrays reused, not mapped and faulted in again per chunk
    raw = sys.argv[1:] if argv is None else list(argv)
    token = _JSON_ERRORS.set(argv_wants_json(raw))
    try:
        args = build_parser(command_named(raw)).parse_args(raw)
    finally:
        _JSON_ERRORS.reset(token)
    level = (args.log_level or "WARNING").upper()
    logging.getLogger("librdkafka").setLevel(
        logging.DEBUG if level == "DEBUG" else logging.CRITICAL
    )
    logging.basicConfig(level=level, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    if args.log_level is None and args.command == "run":
        logging.getLogger("worker").setLevel(logging.INFO)  # the worker's operational lines
    if getattr(args, "stops_on_sigint", False):
        return _run(args, None)
    stops = Interrupts()
    args.interrupts = stops
    with stops.watching():
        try:
            code = _run(args, stops)
        except BaseException as exc:  # Ctrl-C, or whatever a C call raised because of it
            status = stops.exit_status(exc)
            if status is None:
                raise
            return status
        status = stops.exit_status(None)  # a command that stopped quietly on SIGINT
        return code if status is None else status


def command_named(raw: Sequence[str]) -> str | None:
    """The command ``raw`` runs, when only its parser is needed to parse ``raw``: the first
    argument, after top-level ``--log-level LEVEL`` options, names a command other than
    ``completion`` (whose script is generated from every command's parser). None (every
    parser) when another top-level option comes first (``--help`` lists every command)
    or the name is no command's (the error lists them)."""
    rest = list(raw)
    while rest and (rest[0] == "--log-level" or rest[0].startswith("--log-level=")):
        del rest[: 2 if rest[0] == "--log-level" else 1]
    if not rest or rest[0] not in COMMANDS or rest[0] == "completion":
        return None
    return rest[0]


def _run(args: argparse.Namespace, stops: Interrupts | None) -> int:
    """The command's handler, its errors as one line on stderr (none after Ctrl-C: the
    caller prints ``interrupted``)."""
    try:
        with _kafka_errors_mapped():  # a client error nothing below gave context to
            return int(args.handler(args))
    except ContractGateError as exc:  # BrokerError included
        if stops is not None and stops.received.is_set():
            raise
        _report(args, exc)
        return EXIT_BAD_INPUT
    except BrokenPipeError:
        return _broken_pipe()
    except Exception as exc:  # a bug: one line and EXIT_INTERNAL, never exit 1 (a decision)
        if stops is not None and stops.received.is_set():
            raise
        # the worker's traceback goes to its log at ERROR: a crash in a pod cannot be
        # rerun with --log-level DEBUG; a one-shot command's is there at DEBUG
        logged = args.command == "run"
        level = logging.ERROR if logged else logging.DEBUG
        logging.getLogger(__name__).log(level, "internal error", exc_info=True)
        _report(args, InternalError(exc, traceback_logged=logged))
        return EXIT_INTERNAL


class InternalError(ContractGateError):
    """An exception no layer translated (a bug), as the one line a command prints."""

    def __init__(self, exc: Exception, *, traceback_logged: bool = False) -> None:
        what = clip(" ".join(str(exc).split()), 300)
        fix = (
            "report it with the traceback logged above and the input"
            if traceback_logged
            else "rerun with --log-level DEBUG for the traceback, and report it with the input"
        )
        super().__init__(
            f"internal error (a bug of contract-gate): {type(exc).__name__}: {what}; {fix}",
            fix=fix,
        )


def _broken_pipe() -> int:
    """The reader of our output went away (e.g. `| head`): stop quietly, as a shell tool
    would; stdout points at /dev/null so the interpreter's final flush cannot fail."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    return EXIT_BROKEN_PIPE


@contextlib.contextmanager
def _kafka_errors_mapped() -> Iterator[None]:
    """:func:`worker.kafka.clients.map_kafka_errors` around a command, with confluent_kafka
    imported only when the command made a client (``check`` never does: 0.1-0.2 s less)."""
    try:
        yield
    except Exception:
        if "confluent_kafka" not in sys.modules:  # no client, so no Kafka error
            raise
        from worker.kafka.clients import map_kafka_errors

        with map_kafka_errors():
            raise


def _report(args: argparse.Namespace, exc: ContractGateError) -> None:
    """The error on stderr: one line, or with ``--format json`` one JSON object."""
    name = f"contract-gate {args.command}"
    doc = error_document(exc)
    if isinstance(exc, BrokerError) and exc.detail is not None and str(exc) == exc.detail:
        # librdkafka's text alone, e.g. an unknown --kafka-property refused when a client
        # is built
        fix = "check --bootstrap-servers, --kafka-property and CONTRACT_GATE_KAFKA_* settings"
        doc = {"error": f"Kafka error: {exc}", "field": "--kafka-property", "fix": fix}
        print_error(wants_json(args), doc, lambda: f"{name}: Kafka error: {exc}; {fix}")
        return
    print_error(wants_json(args), doc, lambda: f"{name}: error: {exc}")


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
