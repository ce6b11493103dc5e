"""The pictures ``contract-gate check`` writes of a batch: ``--offenders FILE`` (the
offending features, :data:`worker.io.formats.OFFENDERS_FILE`) and ``--html FILE`` (the
batch page), never over one of its inputs.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from worker.cli.args import offending_features, write_output
from worker.core._util.jsonsafe import dumps_json
from worker.core.errors import ContractGateError

__all__ = ["refuse_overwriting_inputs", "same_file", "write_pictures"]


def refuse_overwriting_inputs(args: argparse.Namespace) -> None:
    """Raise :class:`ContractGateError` (exit 2) when ``--offenders`` or ``--html`` names
    the batch file, a contract file or the other output: the input would be overwritten
    (a batch file was replaced by the offenders file, exit 1, no warning).
    """
    inputs: list[tuple[str, str]] = [("the batch file", args.batch)]
    inputs += [("a --contract file", f) for f in args.contract]
    inputs += [("an --observing file", f) for f in args.observing]
    given = [(flag, getattr(args, flag[2:], None)) for flag in ("--offenders", "--html")]
    outputs: list[tuple[str, str]] = [(flag, str(path)) for flag, path in given if path]
    for i, (flag, path) in enumerate(outputs):
        for what, other in inputs + [(f"the {f} file", p) for f, p in outputs[:i]]:
            if same_file(path, other):
                raise ContractGateError(
                    f"{flag} {path} is {what}: it would be overwritten; write the output "
                    "to another path",
                    field=flag,
                    fix="write the output to another path",
                )


def same_file(a: str, b: str) -> bool:
    """Whether two local paths (``file://`` URIs too) name one file: the same inode when
    both exist, else the same absolute path; other URIs (``s3://``) name no local file."""
    from worker.io.payloads.open import local_file_path

    pa, pb = local_file_path(a), local_file_path(b)
    if pa is None or pb is None:
        return False
    try:
        return os.path.samefile(pa, pb)
    except OSError:  # one does not exist (yet)
        return pa.resolve() == pb.resolve()


def write_pictures(args: argparse.Namespace, batch: Any, decision: Any, versions: Any) -> None:
    """``check --offenders FILE`` (:data:`~worker.io.formats.OFFENDERS_FILE`) and ``--html
    FILE`` (the batch page)."""
    from pathlib import Path

    from worker.io.formats import OFFENDERS_FILE
    from worker.io.reports.offenders import broken_clauses, unwritten_line

    if args.offenders:
        broken = broken_clauses(decision)
        doc = OFFENDERS_FILE.collection(batch, broken, name=Path(args.batch).stem)
        write_output(args.offenders, dumps_json(doc, ensure_ascii=False, default=str))
        print(
            f"wrote {offending_features(len(doc['features']))} to {args.offenders}"
            + unwritten_line(broken),
            file=sys.stderr,
        )
    if getattr(args, "html", None):
        from worker.io.reports.page import render_batch_page

        page = render_batch_page(batch, decision, [v.contract for v in versions], title=args.batch)
        write_output(args.html, page)
        print(f"wrote {args.html}; open it in a browser", file=sys.stderr)
