"""``contract-gate contract retire LAYER VERSION``: retire a major nobody reads against.

Refused (exit 2), naming them, while declared or unattributed consumers read against it,
or when no active enforcing version would remain (:func:`worker.control.retirement.retire`).
"""

from __future__ import annotations

import argparse

from worker.cli.args import add_kafka_args, add_stale
from worker.cli.output import add_format, print_json, wants_json
from worker.cli.signing_args import add_signing_args

__all__ = ["register", "run"]


def register(csub: argparse._SubParsersAction) -> None:
    """Add ``retire`` under ``contract``."""
    r = csub.add_parser(
        "retire",
        help="retire a major version once no consumer reads against it",
        description="Retire every active revision of VERSION's major when declared + "
        "unattributed consumers on it are zero; otherwise refuse (exit 2) naming them. "
        "Refused too when no active enforcing version would remain (promote the new major "
        "first). There is no date option.",
    )
    add_kafka_args(r)
    add_signing_args(r, sign=True)
    r.add_argument("layer")
    r.add_argument("version", help="the major to retire, e.g. v1")
    r.add_argument(
        "--retired-by",
        default=None,
        help="name shown in the summary (the record keeps its original publisher: the "
        "ContractRecord has no field for who retired it)",
    )
    add_stale(r)
    add_format(r, "the major retired, the readers left, the records written")


def run(args: argparse.Namespace) -> int:
    """Retire the major and print the summary (refusals raise, exit 2)."""
    from worker.cli.args import settings_from_args
    from worker.cli.lifecycle_output import retire_json, retire_text
    from worker.control.retirement import retire

    settings = settings_from_args(args)
    result = retire(
        settings,
        args.layer,
        args.version,
        retired_by=args.retired_by,
        stale_after=args.stale_after,
    )
    if wants_json(args):
        print_json(retire_json(result))
    else:
        print(retire_text(result))
    return 0
