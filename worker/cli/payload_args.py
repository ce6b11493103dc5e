"""Payload flags shared by the command modules: ``--payload-root``, ``--max-payload-bytes``,
and the policy of an operator's own batch file.

Command modules (:mod:`worker.cli.commands`) import these, never :mod:`worker.cli.main`.
"""

from __future__ import annotations

import argparse
import os
from dataclasses import replace

from worker.core.errors import ContractGateError
from worker.io.payloads.policy import PayloadPolicy, default_limits, limits_syntax, limits_text

__all__ = ["add_payload_args", "file_policy"]


def add_payload_args(p: argparse.ArgumentParser, *, roots: bool = True) -> None:
    """``--payload-root`` (when ``roots``) and ``--max-payload-bytes``."""
    g = p.add_argument_group("payloads read by reference (flags override the environment)")
    if roots:
        g.add_argument(
            "--payload-root",
            action="append",
            default=None,
            metavar="URI",
            help="a location payload_uri may point into: file:///dir/ or s3://bucket/prefix/ "
            "(repeatable, or several separated by commas or spaces, as in env "
            "CONTRACT_GATE_PAYLOAD_ROOTS; write a comma or space in a directory name as %%2C "
            "or %%20 in a file:// URI). None configured: by-reference events are quarantined "
            "with payload_not_allowed",
        )
    g.add_argument(
        "--max-payload-bytes",
        default=None,
        metavar="SIZE",
        help=f"largest payload, checked before reading: SIZE for every format or "
        f"{limits_syntax()}, with K/M/GiB units (env CONTRACT_GATE_MAX_PAYLOAD_BYTES; "
        f"default {limits_text(default_limits())}); larger ones are payload_too_large",
    )


def file_policy(args: argparse.Namespace) -> PayloadPolicy:
    """The policy of an operator's own batch file (``check``, ``batch publish``): any
    location, regular files only, the size limits of ``--max-payload-bytes`` or the
    environment.

    Raises
    ------
    ContractGateError
        A bad size limit.
    """
    limit = getattr(args, "max_payload_bytes", None) or os.environ.get(
        "CONTRACT_GATE_MAX_PAYLOAD_BYTES"
    )
    try:
        policy = PayloadPolicy.from_strings((), limit)
    except ValueError as exc:
        raise ContractGateError(
            f"{exc} (--max-payload-bytes)",
            field="--max-payload-bytes",
            fix="give a size in bytes, e.g. 268435456 or 256MiB",
        ) from None
    return replace(policy, roots=None)
