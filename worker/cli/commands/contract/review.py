"""``contract-gate contract review BASE HEAD``: a contract change reviewed like a code change.

Offline (no Kafka): reads the contract files of two git revisions (no checkout) or two
directories (:mod:`worker.io.contract_tree`), reviews them (:mod:`worker.core.contracts.review`) and
prints text, JSON or Markdown (a pull-request comment). Exit 0 when the review passes
(warnings allowed), 1 on any failure, 2 on bad input (an unknown revision, no git).
"""

from __future__ import annotations

import argparse
from datetime import datetime, timezone
from pathlib import Path

from worker.cli.args import completes_paths
from worker.core.errors import ContractGateError

__all__ = ["register", "run"]

EXIT_REVIEW_FAILED = 1


def register(csub: argparse._SubParsersAction) -> None:
    """Register ``review`` under ``contract``."""
    from worker.cli.args import parse_time

    p = csub.add_parser(
        "review",
        help="review the contract files changed between two git revisions or directories",
        description="For every contract version added, changed or removed between BASE and "
        "HEAD: the computed class and differences (as `contract classify`), the version "
        "number the class requires and whether the declared `change:` agrees; failures "
        "(missing or wrong declared class, wrong number, edit in place, an enforcing "
        "tightening without evidence spanning one cadence cycle, a removed version) and "
        "warnings (more than two active versions, an overlap older than two cycles). Exit 0 "
        "when it passes, 1 on failures, 2 on bad input.",
    )
    completes_paths(
        p.add_argument(
            "base",
            help="git revision (branch, commit, HEAD~1; git's empty tree "
            "4b825dc642cb6eb9a060e54bf8d69288fbee4904 reviews every file as added) or directory",
        )
    )
    completes_paths(p.add_argument("head", help="git revision or directory"))
    p.add_argument(
        "--contracts-dir",
        default=None,
        metavar="DIR",
        help="contracts directory inside both trees (default: `contracts` for git "
        "revisions, `.` when BASE and HEAD are directories)",
    )
    p.add_argument(
        "--repo", default=".", help="git repository of the revisions (default: current dir)"
    )
    p.add_argument(
        "--format",
        choices=["text", "json", "markdown"],
        default="text",
        help="text (default), json, or markdown (a pull-request comment)",
    )
    p.add_argument(
        "--now",
        type=parse_time,
        help="the time overlap ages are judged at (default: now), for reproducible runs",
    )


def run(args: argparse.Namespace) -> int:
    """Run the review and print it; returns the exit code."""
    from worker.core.contracts.review import review
    from worker.io.contract_tree import read_tree
    from worker.io.reports.review import (
        render_review_json,
        render_review_markdown,
        render_review_text,
    )

    dirs = Path(args.base).is_dir() and Path(args.head).is_dir()
    contracts_dir = args.contracts_dir or ("." if dirs else "contracts")
    base = read_tree(args.base, contracts_dir, repo=args.repo)
    head = read_tree(args.head, contracts_dir, repo=args.repo)
    if not base.files and not head.files:
        # fail closed: a mistyped --contracts-dir would otherwise pass every review
        fix = (
            "give the directory that holds them with --contracts-dir (relative to the "
            "repository root; default 'contracts')"
        )
        raise ContractGateError(
            f"no contract files (*.yaml, *.yml) under {contracts_dir!r} at {base.label} nor "
            f"at {head.label}: {fix}",
            field="--contracts-dir",
            fix=fix,
        )
    now: datetime = args.now or datetime.now(timezone.utc)
    result = review(base.files, head.files, now=now, dates=head.dates, read_evidence=head.read)
    render = {
        "json": render_review_json,
        "markdown": render_review_markdown,
        "text": render_review_text,
    }[args.format]
    print(render(result, base.label, head.label))
    return EXIT_REVIEW_FAILED if result.failed else 0
