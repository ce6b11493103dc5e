"""``contract-gate contract promote LAYER VERSION``: an observing version becomes enforcing.

Refused while its evidence spans less than one cadence cycle; asks to confirm unless
``--yes`` (:func:`worker.control.lifecycle.promote`).
"""

from __future__ import annotations

import argparse
import sys

from worker.cli.args import add_kafka_args, add_now, now_of, settings_from_args
from worker.cli.output import add_format, print_json, wants_json
from worker.cli.signing_args import add_signing_args

__all__ = ["register", "run"]


def register(csub: argparse._SubParsersAction) -> None:
    """Add ``promote`` under ``contract``."""
    p = csub.add_parser(
        "promote",
        help="promote an observing version to enforcing after one cadence cycle of evidence",
        description="Refused while the observing evidence spans less than one cadence cycle. "
        "Shows the batches the version would have rejected and asks to confirm; on promotion "
        "the version becomes enforcing and supersedes the earlier revisions of its major.",
    )
    add_kafka_args(p)
    add_signing_args(p, sign=True)
    p.add_argument("layer")
    p.add_argument("version")
    p.add_argument("--yes", action="store_true", help="do not ask for confirmation")
    add_now(p)
    add_format(p, "the version, the evidence summary, the modes, the records written")


def _ask(question: str, *, as_json: bool = False) -> bool:
    """``question`` answered yes on the terminal; without a terminal, no (pass --yes).

    With ``as_json`` stdout holds only the JSON document: the question goes to stderr
    (and, without a terminal, only the error object says to pass --yes)."""
    if not sys.stdin.isatty():
        if not as_json:
            print(question + "(no terminal to answer; pass --yes)", file=sys.stderr)
        return False
    if as_json:
        print(question, end="", file=sys.stderr, flush=True)
        return sys.stdin.readline().strip().lower() in ("y", "yes")
    return input(question).strip().lower() in ("y", "yes")


def run(args: argparse.Namespace) -> int:
    """Promote the version (after confirmation) and print the summary."""
    from worker.cli.lifecycle_output import promote_json, promote_text
    from worker.control.lifecycle import promote

    result = promote(
        settings_from_args(args),
        args.layer,
        args.version,
        now=now_of(args),
        yes=args.yes,
        confirm=lambda question: _ask(question, as_json=wants_json(args)),
    )
    if wants_json(args):
        print_json(promote_json(result))
    else:
        print(promote_text(result))
    return 0
