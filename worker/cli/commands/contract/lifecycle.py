"""``contract-gate contract`` lifecycle subcommands: classify (offline), evidence, promote, list.

Kept apart from :mod:`worker.cli.main` so the lifecycle grows without rewriting the shared
entry point; :func:`add_lifecycle_args` registers the subparsers and
:data:`LIFECYCLE_COMMANDS` maps each to its handler (each returns an exit code).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from datetime import datetime, timezone
from typing import Any

from worker.cli.args import write_output
from worker.core._util.jsonsafe import dumps_json

__all__ = ["LIFECYCLE_COMMANDS", "add_lifecycle_args"]


def add_lifecycle_args(
    csub: Any, add_kafka_args: Callable[[argparse.ArgumentParser], None]
) -> None:
    """Register ``classify`` (and the Kafka-backed lifecycle actions) under ``contract``."""
    p = csub.add_parser(
        "classify",
        help="classify the change between two contract files (offline)",
        description="Compare OLD and NEW clause by clause (docs/contracts.md, change classes) "
        "and print the "
        "change class (major, tightening, minor, none) and every difference. Exit 0; 2 when "
        "OLD and NEW are versions of different layers.",
    )
    p.add_argument("old", help="the previous version's YAML file")
    p.add_argument("new", help="the new version's YAML file")
    p.add_argument(
        "--format",
        choices=["text", "json"],
        default="text",
        help="text (default) or json: the class and each difference as one document",
    )

    p = csub.add_parser(
        "evidence",
        help="summarise the observing evidence of a version (evaluations topic)",
        description="Span covered versus the cadence, batches evaluated, attainment against "
        "the objective, and the batches the version would have rejected.",
    )
    add_kafka_args(p)
    p.add_argument("layer")
    p.add_argument("version", help="e.g. v1.1 (v1 means v1.0)")
    p.add_argument(
        "--format",
        choices=["text", "json", "html"],
        default="text",
        help="html: one self-contained page with an SVG timeline",
    )
    p.add_argument("--output", "-o", help="write to this file instead of stdout")
    _add_now(p)

    p = csub.add_parser(
        "promote",
        help="promote an observing version to enforcing after one cadence cycle of evidence",
        description="Refused while the observing evidence spans less than one cadence cycle. "
        "Shows the batches the version would have rejected and asks to confirm; on promotion "
        "the version becomes enforcing and supersedes the earlier revisions of its major.",
    )
    add_kafka_args(p)
    p.add_argument("layer")
    p.add_argument("version")
    p.add_argument("--yes", action="store_true", help="do not ask for confirmation")
    _add_now(p)

    p = csub.add_parser(
        "list",
        help="list contract versions with mode, state, class, age and escalations",
    )
    add_kafka_args(p)
    p.add_argument("layer", nargs="?", help="only this layer")
    _add_now(p)

    from worker.cli.commands.contract.review import add_review_args

    add_review_args(csub)


def _add_now(p: argparse.ArgumentParser) -> None:
    from worker.cli.args import parse_time

    p.add_argument(
        "--now",
        type=parse_time,
        help="the time to judge spans and ages at (default: now), for reproducible runs",
    )


def _now(args: argparse.Namespace) -> datetime:
    value: datetime = args.now or datetime.now(timezone.utc)
    return value


def _settings(args: argparse.Namespace) -> Any:
    from worker.cli.args import settings_from_args

    return settings_from_args(args)


def _cmd_evidence(args: argparse.Namespace) -> int:
    from worker.control.lifecycle import gather_evidence
    from worker.io.reports.evidence import (
        evidence_to_json,
        render_evidence_html,
        render_evidence_text,
    )

    evidence = gather_evidence(_settings(args), args.layer, args.version, _now(args))
    if args.format == "json":
        text = dumps_json(evidence_to_json(evidence), indent=2, default=str)
    elif args.format == "html":
        text = render_evidence_html(evidence)
    else:
        text = render_evidence_text(evidence)
    if args.output:
        write_output(args.output, text)  # a fresh-user finding: an OSError traceback
        print(f"wrote {args.output}")
    else:
        print(text)
    return 0


def _ask(question: str) -> bool:
    if not sys.stdin.isatty():
        print(question + "(no terminal to answer; pass --yes)", file=sys.stderr)
        return False
    return input(question).strip().lower() in ("y", "yes")


def _cmd_promote(args: argparse.Namespace) -> int:
    from worker.control.lifecycle import promote

    print(
        promote(
            _settings(args), args.layer, args.version, now=_now(args), yes=args.yes, confirm=_ask
        )
    )
    return 0


def _cmd_list(args: argparse.Namespace) -> int:
    from worker.control.lifecycle import list_versions

    print(list_versions(_settings(args), args.layer, _now(args)))
    return 0


def _cmd_classify(args: argparse.Namespace) -> int:
    from worker.core.contracts.classify import (
        classification_to_json,
        classify,
        render_classification,
    )
    from worker.io.contract_files import load_contract

    old, new = load_contract(args.old), load_contract(args.new)
    result = classify(old, new)
    if args.format == "json":
        print(dumps_json(classification_to_json(result), indent=2))
    else:
        print(render_classification(result, f"{old.key} -> {new.key}"))
    return 0


def _cmd_review(args: argparse.Namespace) -> int:
    from worker.cli.commands.contract.review import cmd_review

    return cmd_review(args)


LIFECYCLE_COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {
    "classify": _cmd_classify,
    "evidence": _cmd_evidence,
    "promote": _cmd_promote,
    "list": _cmd_list,
    "review": _cmd_review,
}
