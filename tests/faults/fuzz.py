"""Hypothesis fuzzing of the gate's untrusted-input parsers, for the fault suite.

Each target gets inputs that are random bytes or text, or valid inputs mutated (bytes
flipped, inserted, deleted, truncated; YAML lines dropped, doubled or given hostile
values), and must return a value or raise the project's root error
(:class:`~worker.core.errors.ContractGateError`): any other exception, or an example that
runs longer than :data:`HANG_S`, is a failure. The targets:

- ``event decoder``: :func:`worker.io.codec.decode_batch`;
- ``route``: :func:`worker.gate.route.route` of a mutated event with the demo contracts
  active (decode, evaluate, output records; must always return an Outcome);
- ``WKB pre-check``: :func:`worker.core.facts.wkb_check.wkb_problem` and
  ``wkb_faults.wkb_has_nonfinite``
  (never raise), then :func:`worker.core.evaluate.evaluate` of a batch carrying that WKB;
- ``contract text``: :func:`worker.core.contracts.parse.parse_contract` and
  :func:`worker.io.contract_files.load_contract`;
- ``config record``: :func:`worker.io.config_records.apply_config_value` (never raises).

``python -m tests.faults.fuzz --examples N`` runs every target with N examples each and
prints one JSON line (targets, examples, failures and the failing inputs); the fault
suite runs it as a subprocess, so even a crash of the interpreter (a C library's
segfault) is a reported failure, not the end of the suite.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import replace
from datetime import datetime, timedelta, timezone
from functools import cache
from pathlib import Path
from typing import Any

import shapely
from hypothesis import HealthCheck, given, reject, settings
from hypothesis import strategies as st

from worker.cli.scenario import contract_files, data_file
from worker.control.publish import contract_record
from worker.core.contracts.parse import parse_contract
from worker.core.errors import ContractGateError
from worker.core.evaluate import evaluate
from worker.core.facts.wkb_check import wkb_problem
from worker.core.facts.wkb_faults import wkb_has_nonfinite
from worker.core.lifecycle.registry import Registry, config_key
from worker.core.model import ActiveVersion, Batch
from worker.gate.route import Outcome, Source, route
from worker.io import codec
from worker.io.config_records import apply_config_value
from worker.io.contract_files import load_contract
from worker.io.payloads import read_batch_file
from worker.kafka.settings import Topics

#: Longest one example may run (s) before it counts as a hang.
HANG_S = 20
#: Examples per target: the full suite and the CI subset.
FULL_EXAMPLES = 500
QUICK_EXAMPLES = 50
NOW = datetime(2026, 1, 1, tzinfo=timezone.utc)

#: YAML values substituted into contract lines: wrong types, extremes, tags, aliases.
HOSTILE = (
    "-1", "0", "1e309", "-1e309", ".nan", ".inf", "~", "null", "[]", "{}", "[[[[[[]]]]]]",
    "!!python/object/apply:os.system ['true']", "!!binary AAAA", "*undefined", "&a [*a]",
    "'" + "x" * 5000 + "'", "\"\\x00\"", "2026-13-45", "EPSG:999999", "yes", "0x7fffffffffffffff",
    "{a: {b: {c: {d: {e: {}}}}}}", "|\n  multi", "\t", "\ufeff", "- - - -",
)  # fmt: skip


# -- seeds ------------------------------------------------------------------------------


@cache
def small_world() -> Batch:
    """Three countries of the admin boundaries layer, data time :data:`NOW`."""
    world = read_batch_file(
        data_file("admin_boundaries.parquet"), layer="admin_boundaries", crs="EPSG:4326",
        data_time=NOW - timedelta(hours=1),
    )  # fmt: skip
    return replace(
        world,
        batch_id="fuzz",
        geometries_wkb=world.geometries_wkb[:3],
        feature_count=3,
        attributes=world.attributes.slice(0, 3),
    )


@cache
def seed_events() -> tuple[bytes, ...]:
    """Valid BatchArrival events: inline, by reference, spherical edges."""
    b = small_world()
    return (
        codec.encode_batch(b),
        codec.encode_batch(b, inline=False, payload_uri="file:///tmp/x.parquet"),
        codec.encode_batch(replace(b, edges="spherical", orientation="counterclockwise")),
    )


@cache
def seed_wkb() -> tuple[bytes, ...]:
    """Valid WKB and EWKB of every geometry type, 2D, Z and with an SRID."""
    poly = shapely.Polygon([(0, 0), (4, 0), (4, 4), (0, 4)], [[(1, 1), (2, 1), (2, 2)]])
    geoms = [
        shapely.Point(1, 2), shapely.LineString([(0, 0), (1, 1), (2, 0)]), poly,
        shapely.MultiPoint([(0, 0), (1, 1)]), shapely.MultiPolygon([poly]),
        shapely.GeometryCollection([shapely.Point(0, 0), poly]),
        shapely.Point(1, 2, 3), shapely.Polygon([(0, 0, 1), (1, 0, 1), (1, 1, 1)]),
    ]  # fmt: skip
    out = [bytes(shapely.to_wkb(g)) for g in geoms]
    out += [bytes(shapely.to_wkb(g, include_srid=True)) for g in shapely.set_srid(geoms[:3], 4326)]
    out.append(bytes(shapely.to_wkb(poly, byte_order=0)))
    # empty parts (shapely.segmentize crashed on them) and M coordinates, as ISO WKB
    out += [
        bytes(shapely.to_wkb(shapely.from_wkt(w), flavor="iso"))
        for w in (
            "MULTIPOINT (EMPTY, (1 1))",
            "MULTIPOLYGON (EMPTY, ((0 0, 1 0, 1 1, 0 1, 0 0)))",
            "GEOMETRYCOLLECTION (POINT EMPTY, LINESTRING (0 0, 10 10))",
            "POINT M (1 2 3)",
            "LINESTRING ZM (0 0 1 2, 1 1 1 2)",
        )
    ]
    return tuple(out)


@cache
def contract_texts() -> tuple[str, ...]:
    return tuple(path.read_text(encoding="utf-8") for path, _ in contract_files())


@cache
def active_versions() -> Registry:
    """A registry with the demo contracts active (as the worker has them)."""
    registry = Registry()
    for path, mode in contract_files():
        contract = load_contract(path)
        registry.apply(config_key(contract), contract_record(contract, mode=mode))
    return registry


# -- strategies -------------------------------------------------------------------------


@st.composite
def mutated(draw: st.DrawFn, seeds: tuple[bytes, ...]) -> bytes:
    """One of ``seeds`` with 1-8 byte edits (set, flip, insert, delete, truncate)."""
    data = bytearray(draw(st.sampled_from(seeds)))
    for _ in range(draw(st.integers(1, 8))):
        op = draw(st.sampled_from(("set", "flip", "insert", "delete", "truncate", "int")))
        pos = draw(st.integers(0, max(0, len(data) - 1)))
        if op == "set" and data:
            data[pos] = draw(st.integers(0, 255))
        elif op == "flip" and data:
            data[pos] ^= 1 << draw(st.integers(0, 7))
        elif op == "insert":
            data[pos:pos] = draw(st.binary(min_size=1, max_size=16))
        elif op == "delete":
            del data[pos : pos + draw(st.integers(1, 16))]
        elif op == "truncate":
            del data[pos:]
        elif op == "int":  # an extreme count or length at a random place
            data[pos : pos + 4] = draw(
                st.sampled_from([b"\xff\xff\xff\x7f", b"\xff" * 4, b"\x80" * 4])
            )
    return bytes(data)


def byte_inputs(seeds: tuple[bytes, ...]) -> st.SearchStrategy[bytes]:
    return st.one_of(st.binary(max_size=512), mutated(seeds))


@st.composite
def contract_text(draw: st.DrawFn) -> str:
    """A demo contract with lines dropped, doubled, swapped or given a hostile value."""
    lines = draw(st.sampled_from(contract_texts())).splitlines()
    for _ in range(draw(st.integers(1, 6))):
        if not lines:
            break
        i = draw(st.integers(0, len(lines) - 1))
        op = draw(st.sampled_from(("drop", "double", "swap", "value", "indent", "chars")))
        if op == "drop":
            del lines[i]
        elif op == "double":
            lines.insert(i, lines[i])
        elif op == "swap":
            j = draw(st.integers(0, len(lines) - 1))
            lines[i], lines[j] = lines[j], lines[i]
        elif op == "value" and ":" in lines[i]:
            lines[i] = lines[i].split(":", 1)[0] + ": " + draw(st.sampled_from(HOSTILE))
        elif op == "indent":
            lines[i] = " " * draw(st.integers(0, 9)) + lines[i].lstrip()
        else:
            lines[i] = draw(st.text(max_size=40))
    return "\n".join(lines) + "\n"


@st.composite
def config_value(draw: st.DrawFn) -> bytes:
    """A ContractRecord with a fuzzed document or field, or its bytes mutated."""
    path, mode = draw(st.sampled_from(contract_files()))
    record = contract_record(load_contract(path), mode=mode)
    how = draw(st.sampled_from(("document", "field", "bytes")))
    if how == "document":
        record["document"] = draw(st.one_of(contract_text(), st.text(max_size=200)))
    elif how == "field":
        name = draw(st.sampled_from(("layer", "version", "digest", "mode", "state")))
        record[name] = draw(st.one_of(st.sampled_from(HOSTILE), st.text(max_size=40)))
    try:
        value = codec.encode_contract_record(record)
    except ContractGateError:  # e.g. a mode outside the Avro enum: no record to send
        reject()
    if how == "bytes":
        value = draw(mutated((value,)))
    return value


# -- checks -----------------------------------------------------------------------------


def typed(fn: Callable[[], Any]) -> None:
    """Call ``fn``: a value or a ContractGateError pass; anything else propagates."""
    with contextlib.suppress(ContractGateError):
        fn()


def check_decoder(data: bytes) -> None:
    typed(lambda: codec.decode_batch(data))


def check_route(data: bytes) -> None:
    source = Source("fuzz.batches", 0, 1, b"admin_boundaries", data)
    outcome = route(source, active_versions().active, Topics(), now=NOW, worker_id="fuzz")
    assert isinstance(outcome, Outcome) and outcome.records, "no output record"


def check_wkb(data: bytes) -> None:
    problem = wkb_problem(data)
    assert problem is None or isinstance(problem, str)
    assert isinstance(wkb_has_nonfinite(data), bool)
    batch = replace(small_world(), geometries_wkb=(data, *small_world().geometries_wkb[1:]))
    versions: tuple[ActiveVersion, ...] = active_versions().active("admin_boundaries")
    decision = evaluate(batch, versions, now=NOW)
    assert decision.decision in ("admitted", "quarantined")


def check_contract(text: str) -> None:
    typed(lambda: parse_contract(text, source="fuzz"))


def check_contract_file(data: bytes) -> None:
    with tempfile.NamedTemporaryFile(suffix=".yaml") as f:
        f.write(data)
        f.flush()
        typed(lambda: load_contract(f.name))


def check_config(value: bytes) -> None:
    event = apply_config_value(Registry(), "admin_boundaries/v1.0", value)
    assert event.outcome in ("added", "updated", "removed", "rejected", "unchanged"), event.outcome


def targets() -> list[tuple[str, st.SearchStrategy[Any], Callable[[Any], None]]]:
    """``(name, inputs, check)`` of every fuzz target."""
    texts = st.one_of(contract_text(), st.text(max_size=300))
    files = st.one_of(st.binary(max_size=300), texts.map(lambda t: t.encode("utf-8", "replace")))
    return [
        ("event decoder", byte_inputs(seed_events()), check_decoder),
        ("route", mutated(seed_events()), check_route),
        ("WKB pre-check + evaluate", byte_inputs(seed_wkb()), check_wkb),
        ("contract text", texts, check_contract),
        ("contract file", files, check_contract_file),
        ("config record", st.one_of(st.binary(max_size=300), config_value()), check_config),
    ]


class Hang(Exception):
    """An example ran longer than :data:`HANG_S`."""


def _alarm(signum: int, frame: Any) -> None:
    raise Hang(f"an example ran longer than {HANG_S} s")


def fuzz_target(
    inputs: st.SearchStrategy[Any], check: Callable[[Any], None], examples: int
) -> tuple[int, str | None, Any]:
    """Run ``check`` on ``examples`` inputs; ``(examples run, error or None, failing input)``
    (the input Hypothesis shrank the failure to)."""
    ran = 0
    last: list[Any] = [None]
    trace = os.environ.get("FUZZ_TRACE", "")

    @settings(
        max_examples=examples,
        deadline=None,  # slow examples are caught by the alarm, not by timing noise
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(inputs)
    def fuzz(value: Any) -> None:
        nonlocal ran
        ran += 1
        last[0] = value
        if trace:  # the input about to run, in case it kills the interpreter
            Path(trace).write_text(repr(value))
        signal.alarm(HANG_S)
        try:
            check(value)
        finally:
            signal.alarm(0)

    previous = signal.signal(signal.SIGALRM, _alarm)
    try:
        fuzz()
    except Exception as exc:  # the shrunk failing example's exception
        return ran, f"{type(exc).__name__}: {str(exc)[:300]}", last[0]
    finally:
        signal.signal(signal.SIGALRM, previous)
    return ran, None, None


def run(examples: int) -> dict[str, Any]:
    """Run every target with ``examples`` examples; the figures as a dict."""
    ran = 0
    failures: list[dict[str, str]] = []
    for name, inputs, check in targets():
        n, error, value = fuzz_target(inputs, check, examples)
        ran += n
        if error is not None:
            failures.append({"target": name, "error": error, "input": repr(value)[:2000]})
    return {"targets": len(targets()), "examples": ran, "failures": failures}


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.faults.fuzz")
    parser.add_argument("--examples", type=int, default=FULL_EXAMPLES, help="per target")
    args = parser.parse_args()
    started = time.monotonic()
    figures = run(args.examples)
    figures["seconds"] = round(time.monotonic() - started, 1)
    print(json.dumps(figures))
    return 0 if not figures["failures"] else 1


if __name__ == "__main__":
    sys.exit(main())
