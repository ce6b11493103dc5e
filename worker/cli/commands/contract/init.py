"""``contract-gate contract init SAMPLE... --layer L``: draft a layer's first contract version
from sample batches (offline).

Each sample is read as ``check`` reads a batch (every format of the registry, a path,
``file://`` or ``s3://`` URI, the same size limits), a chunked format chunk by chunk, and
profiled (:mod:`worker.core.contracts.profile`); the merged profile becomes a draft
(:mod:`worker.core.contracts.draft`) written as commented YAML
(:mod:`worker.core.contracts.draft_yaml`). The draft is parsed as ``contract publish``
parses a version before it is written, so what is written is a valid contract.
"""

from __future__ import annotations

import argparse
import re
import sys
from typing import TYPE_CHECKING

from worker.cli.args import completes_paths, fraction
from worker.cli.payload_args import add_payload_args, file_policy
from worker.core.errors import ContractGateError, PayloadError
from worker.io.formats import formats_named, formats_read

if TYPE_CHECKING:
    from collections.abc import Callable

    from pyproj import CRS

    from worker.core.contracts.draft_model import DraftOptions, SampleInfo
    from worker.core.contracts.profile import Profile

__all__ = ["register", "run"]

_LAYER = re.compile(r"^[A-Za-z0-9._-]{1,200}$")
_DURATION = re.compile(r"^P(?!$)(\d+[YMWD])*(T(?=\d)(\d+(\.\d+)?[HMS])+)?$")


def _fraction_percent(text: str) -> float:
    try:
        value = float(text.rstrip("%"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a percentage such as 5") from None
    if not 0 <= value <= 1000:
        raise argparse.ArgumentTypeError(f"{text!r} is not a percentage from 0 to 1000")
    return value / 100


def _positive_int(text: str) -> int:
    if not text.isdigit() or not 1 <= int(text) <= 10_000:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number from 1 to 10000")
    return int(text)


def register(csub: argparse._SubParsersAction) -> None:
    """Add ``init`` under ``contract``."""
    p = csub.add_parser(
        "init",
        help="draft a layer's first contract version from sample batches (offline)",
        description="Read one or more sample batches (a "
        f"{formats_named()} file each; paths, file:// or s3:// URIs) and write a draft "
        "contract version for the layer: crs and axis_order as the files state them (left "
        "out when they state none), the extent padded and clipped to the CRS's area of "
        "use (across the antimeridian when the data cross it), geometry types with their "
        "dimensions, validity, a domain per low-cardinality text or integer column, the "
        "schema, freshness and feature_count, each derived figure in a comment. A clause "
        "the samples themselves break is drafted on_break: warn. Exit 0; 2 when no sample "
        "can be read, a sample is empty or the samples state different CRSs.",
    )
    completes_paths(
        p.add_argument("samples", nargs="+", metavar="SAMPLE", help="a sample batch file or URI")
    )
    p.add_argument("--layer", required=True, help="the layer's name")
    p.add_argument("-o", "--output", metavar="FILE", help="write the draft here (default stdout)")
    p.add_argument(
        "--margin",
        type=_fraction_percent,
        default=0.05,
        metavar="PERCENT",
        help="padding of the extent on each side, in percent of its width and height (default 5)",
    )
    p.add_argument(
        "--max-codes",
        type=_positive_int,
        default=50,
        metavar="N",
        help="a text or integer column with at most N distinct values gets a domain clause "
        "(default 50)",
    )
    p.add_argument("--cadence", default="PT6H", help="ISO 8601 cadence (default PT6H)")
    p.add_argument(
        "--objective", type=fraction, default=0.99, help="share of batches admitted (default 0.99)"
    )
    p.add_argument("--owner", default="unassigned", help="owning team (default unassigned)")
    add_payload_args(p, roots=False)


def _progress(name: str) -> Callable[[int], None] | None:
    """A callback printing ``name: N features`` on stderr when stderr is a terminal."""
    if not sys.stderr.isatty():
        return None

    def show(done: int) -> None:
        print(f"\r{name}: {done} features profiled", end="", file=sys.stderr, flush=True)

    return show


def _read_sample(name: str, args: argparse.Namespace) -> tuple[SampleInfo, Profile]:
    """One sample's info and profile, in bounded memory for a chunked format."""
    from worker.core.chunks import ChunkedBatch
    from worker.core.contracts.draft_model import SampleInfo
    from worker.core.contracts.profile import profile_batch
    from worker.io.formats.base import RFC7946_CRS, RFC7946_CRS_3D
    from worker.io.payloads import read_batch_file_chunked

    show = _progress(name)
    try:
        loaded = read_batch_file_chunked(name, layer=args.layer, policy=file_policy(args))
        profile = profile_batch(loaded, max_codes=args.max_codes, on_chunk=show)
    except PayloadError as exc:
        raise ContractGateError(
            f"cannot read sample {exc}; give a batch file `contract-gate check` reads "
            f"({formats_read()})",
            field="SAMPLE",
            fix=f"give a batch file `contract-gate check` reads ({formats_read()})",
        ) from None
    meta = loaded.batch if isinstance(loaded, ChunkedBatch) else loaded
    if show is not None:
        print(file=sys.stderr)
    if profile.features == 0:
        raise ContractGateError(
            f"sample {name} holds no features: give samples with features (an empty batch "
            "says nothing about the layer)",
            field="SAMPLE",
            fix="give samples with features",
        )
    by_format = meta.declared_crs in (RFC7946_CRS, RFC7946_CRS_3D)  # no CRS written
    info = SampleInfo(name, meta.declared_crs, meta.axis_order, profile.features, by_format)
    return info, profile


def _resolved(sample: SampleInfo) -> CRS | None:
    """The sample's CRS, None when it states none.

    Raises
    ------
    ContractGateError
        The CRS it states does not resolve (the sample is named).
    """
    from worker.core.errors import CrsError
    from worker.core.spatial import resolve_crs

    if not sample.declared_crs:
        return None
    try:
        return resolve_crs(sample.declared_crs)
    except CrsError as exc:
        raise ContractGateError(
            f"sample {sample.name} states a CRS that does not resolve ({exc}): fix the "
            "file's CRS, or reproject the sample to one pyproj knows",
            field="SAMPLE",
            fix="fix the file's CRS, or reproject the sample to one pyproj knows",
        ) from None


def _common_crs(samples: list[SampleInfo]) -> CRS | None:
    """The CRS every sample states, None when none states one.

    Raises
    ------
    ContractGateError
        A CRS that does not resolve; samples stating different CRSs, or some stating one
        and others none.
    """
    from worker.core.spatial import crs_equivalent, crs_label

    first = samples[0]
    crs = _resolved(first)
    for s in samples[1:]:
        other = _resolved(s)
        same = (crs is None and other is None) or (
            crs is not None and other is not None and crs_equivalent(crs, other)
        )
        if not same:

            def said(c: CRS | None) -> str:
                return crs_label(c) if c is not None else "no CRS"

            raise ContractGateError(
                f"sample {s.name} states {said(other)}, sample {first.name} {said(crs)}: give "
                "samples of one CRS (reproject one, or draft from each CRS's samples separately)",
                field="SAMPLE",
                fix="give samples of one CRS (reproject one, or draft from each CRS's samples "
                "separately)",
            )
    return crs


def _options(args: argparse.Namespace) -> DraftOptions:
    from worker.core.contracts.draft_model import DraftOptions

    if not _LAYER.match(args.layer):
        raise ContractGateError(
            f"--layer {args.layer!r} is not a layer name: use letters, digits, '.', '_' and "
            "'-' (at most 200), e.g. parcels_authoritative",
            field="--layer",
            fix="use letters, digits, '.', '_' and '-' (at most 200), e.g. parcels_authoritative",
        )
    if not _DURATION.match(args.cadence):
        raise ContractGateError(
            f"--cadence {args.cadence!r} is not an ISO 8601 duration such as PT6H",
            field="--cadence",
            fix="give an ISO 8601 duration such as PT6H",
        )
    if not 0 < args.objective <= 1:
        raise ContractGateError(
            f"--objective {args.objective} is not a fraction in (0, 1]",
            field="--objective",
            fix="give a fraction in (0, 1], e.g. 0.99",
        )
    return DraftOptions(
        layer=args.layer,
        margin=args.margin,
        max_codes=args.max_codes,
        cadence=args.cadence,
        objective=args.objective,
        owner=args.owner,
    )


def run(args: argparse.Namespace) -> int:
    """Draft the version and write it (``-o`` or stdout); exit 0."""
    from worker.core.contracts.draft import draft_contract
    from worker.core.contracts.draft_yaml import render_draft
    from worker.core.contracts.parse import parse_contract
    from worker.core.contracts.profile import merge_profiles

    options = _options(args)
    samples, merged = [], None
    for name in args.samples:
        info, profile = _read_sample(name, args)
        samples.append(info)
        merged = (
            profile
            if merged is None
            else merge_profiles(merged, profile, max_codes=args.max_codes, same_sample=False)
        )
    assert merged is not None  # argparse: at least one sample
    crs = _common_crs(samples)
    text = render_draft(draft_contract(samples, merged, crs, options))
    parse_contract(text, source="the draft")  # what is written is a valid contract
    if args.output:
        with open(args.output, "w", encoding="utf-8") as f:
            f.write(text)
        n = len(samples)
        print(
            f"wrote {args.output}: draft of {args.layer} v1 from {n} sample{'s' * (n != 1)}",
            file=sys.stderr,
        )
    else:
        sys.stdout.write(text)
    return 0
