"""Payload flags shared by the command modules: ``--payload-root``, ``--max-payload-bytes``,
``--eval-threads``, and the policy of an operator's own batch file.

Command modules (:mod:`worker.cli.commands`) import these, never :mod:`worker.cli.main`.
"""

from __future__ import annotations

import argparse
import contextlib
import os
from collections.abc import Iterator
from concurrent.futures import Executor, ThreadPoolExecutor
from dataclasses import replace

from worker.cli.args import bounded_int
from worker.core.errors import ContractGateError
from worker.gate.config import GateConfig
from worker.io.formats import formats_named
from worker.io.payloads.policy import PayloadPolicy, default_limits, limits_syntax, limits_text

__all__ = ["add_eval_threads", "add_payload_args", "eval_pool", "file_policy"]

#: Most threads of ``--eval-threads``.
MAX_EVAL_THREADS = 8


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


def add_eval_threads(p: argparse.ArgumentParser) -> None:
    """``--eval-threads N`` (1..:data:`MAX_EVAL_THREADS`, default
    :attr:`GateConfig.eval_threads <worker.gate.config.GateConfig>`)."""
    default = GateConfig().eval_threads
    p.add_argument(
        "--eval-threads",
        type=bounded_int(1, MAX_EVAL_THREADS),
        default=default,
        metavar="N",
        help=f"threads measuring the chunks of a {formats_named(chunked=True)} batch, "
        f"1..{MAX_EVAL_THREADS}, "
        "while GEOS releases the GIL (a second core helps): also the most chunks held at "
        f"once; the decision is the same whatever N (1: one thread; default {default})",
    )


@contextlib.contextmanager
def eval_pool(threads: int, name: str = "eval") -> Iterator[Executor | None]:
    """A pool of ``threads`` threads for :func:`worker.core.chunks.evaluate_chunked` (None
    for 1 thread), shut down when the block ends (waiting for its work)."""
    if threads <= 1:
        yield None
        return
    with ThreadPoolExecutor(max_workers=threads, thread_name_prefix=name) as pool:
        yield pool
