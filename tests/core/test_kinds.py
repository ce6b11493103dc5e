"""Every clause kind through its one registry (worker.core.clauses.KINDS): evaluated in
chunks exactly as whole, measured on every chunk, every parameter change classified by the
kind itself, described by the contract schema and docs, and briefly worded; a kind not in
the registry is refused at parse and breaks at evaluation, never passes silently.

The batch is the real Natural Earth countries with catalogue geometries put in (a bowtie,
an empty polygon, a NaN vertex, unparseable WKB, a point, a box beyond 180 degrees),
stored latitude first, seven hours old and declared one feature short; the contracts are
the shipped ones plus a coverage clause over a region.
"""

from __future__ import annotations

import dataclasses
import functools
import json
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import shapely

from tests.catalogue import (
    ADMIN_BOUNDARIES,
    BOWTIE,
    DATA_DIR,
    EMPTY_POLYGON,
    EUROPE_BBOX,
    NAN_VERTEX_WKB,
    NOW,
    PARIS,
    UNPARSEABLE_WKB,
    active,
    batch_of,
    clause,
    contract_of,
    read_geoparquet,
)
from tests.core.test_chunked import split
from worker.core.chunks import evaluate_chunked
from worker.core.clauses import CLAUSE_KINDS, KINDS
from worker.core.clauses.diff import Diff
from worker.core.contracts.classify import classify
from worker.core.contracts.parse import parse_contract
from worker.core.errors import ContractError, ContractGateError
from worker.core.evaluate import evaluate
from worker.core.model import Batch, Clause, ClauseResult, Contract, Decision
from worker.core.vocab import ReasonCode
from worker.io.reports.text import brief

REPO = Path(__file__).resolve().parents[2]
SCHEMA = json.loads((REPO / "worker" / "schemas" / "contract.schema.json").read_text())
DOC = (REPO / "docs" / "contracts.md").read_text(encoding="utf-8")

#: The shipped contracts (admin_boundaries v1.1 and v1, nyc_boroughs v1), and a coverage
#: clause over a region (the shipped one counts features).
CONTRACTS: list[Contract] = [
    parse_contract(p.read_text(encoding="utf-8"), source=p.name)
    for p in sorted((DATA_DIR / "contracts").glob("*.yaml"))
] + [
    contract_of(
        clause("srid", "crs", expect="EPSG:4326"),
        clause("europe", "coverage", region=EUROPE_BBOX, min_fraction=0.6),
        layer="admin_boundaries",
    )
]
VERSIONS = [active(c) for c in CONTRACTS]


def _batch() -> Batch:
    _, table, wkb = read_geoparquet(ADMIN_BOUNDARIES)
    geoms: list[Any] = list(wkb)
    put = (BOWTIE, EMPTY_POLYGON, NAN_VERTEX_WKB, UNPARSEABLE_WKB, PARIS)
    for i, g in zip((3, 40, 41, 90, 150), put, strict=True):
        geoms[i] = g
    geoms[7] = shapely.box(200.0, 0.0, 201.0, 1.0)
    return batch_of(
        geoms,
        attributes=table,
        axis_order="north_east",
        data_time=NOW - timedelta(hours=7),
        feature_count=len(geoms) + 1,
    )


BATCH = _batch()


@pytest.fixture(scope="module")
def whole() -> Decision:
    return evaluate(BATCH, VERSIONS, now=NOW)


@functools.cache
def _chunked(rows: int) -> Decision:
    return evaluate_chunked(split(BATCH, rows), VERSIONS, now=NOW)


def _of_kind(decision: Decision, name: str) -> list[ClauseResult]:
    return [r for v in decision.verdicts for r in v.clauses if r.kind == name]


def _clauses_of(name: str) -> list[Clause]:
    return [c for contract in CONTRACTS for c in contract.clauses if c.kind == name]


def test_the_registry_lists_every_kind_once_in_the_documented_order() -> None:
    assert CLAUSE_KINDS == (
        "crs",
        "axis_order",
        "extent",
        "geometry_type",
        "validity",
        "domain",
        "freshness",
        "coverage",
        "schema",
        "feature_count",
    )
    assert all(KINDS[name].name == name for name in CLAUSE_KINDS)


@pytest.mark.parametrize("name", CLAUSE_KINDS)
@pytest.mark.parametrize("rows", [1, 25])
def test_chunked_evaluation_of_each_kind_equals_whole(
    name: str, rows: int, whole: Decision
) -> None:
    results, in_chunks = _of_kind(whole, name), _of_kind(_chunked(rows), name)
    assert results, f"no shipped or catalogue clause of kind {name}: add one to CONTRACTS"
    assert len(in_chunks) == len(results)
    for r, rc in zip(results, in_chunks, strict=True):
        if name == "coverage" and "covered_area" in r.measured:
            # the covered area is a union of the chunks' unions: equal up to rounding
            assert rc.result == r.result
            assert rc.measured["fraction"] == pytest.approx(r.measured["fraction"], rel=1e-9)
        else:
            assert rc == r


@pytest.mark.parametrize("name", CLAUSE_KINDS)
def test_chunked_evaluation_measures_every_chunk_of_every_kind(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No registered kind is skipped by chunked evaluation: its measure sees the empty
    start and each of the 8 chunks (7 of 25 features, then 2), for each clause."""
    kind = KINDS[name]
    seen: list[int] = []

    def spy(c: Clause, contract: Contract, facts: Any, now: Any) -> Any:
        seen.append(facts.count)
        return kind.measure(c, contract, facts, now)

    monkeypatch.setitem(KINDS, name, dataclasses.replace(kind, measure=spy))
    evaluate_chunked(split(BATCH, 25), VERSIONS, now=NOW)
    per_clause = [0] + [25] * 7 + [2]
    # the jobs of every clause measure each chunk in turn
    assert sorted(seen) == sorted(per_clause * len(_clauses_of(name)))


#: For each kind, one new value per Params field and the class of that change from the
#: first clause of the kind in CONTRACTS.
MUTATIONS: dict[str, dict[str, tuple[Any, str]]] = {
    "crs": {"expect": ("EPSG:3857", "major")},
    "axis_order": {"expect": ("north_east", "major")},
    "extent": {
        "region": ([-10.0, -10.0, 10.0, 10.0], "major"),
        "min_fraction_inside": (0.5, "minor"),
        "tolerance": (0.5, "minor"),
        "crs": ("EPSG:3857", "major"),
    },
    "geometry_type": {"allowed": (["Polygon"], "tightening"), "allow_empty": (True, "minor")},
    "validity": {"max_invalid_fraction": (0.1, "minor")},
    "domain": {
        "column": ("continent_name", "major"),
        "values": ({"Africa": "Africa"}, "tightening"),
        "allow_null": (True, "minor"),
    },
    "freshness": {"max_age": ("PT12H", "minor"), "max_clock_skew": ("PT1M", "tightening")},
    "coverage": {
        "min_fraction": (0.9, "minor"),
        "region": ([913000.0, 120000.0, 1068000.0, 273000.0], "major"),
        "expected_features": (6, "tightening"),
        "crs": ("EPSG:4326", "major"),
    },
    "schema": {
        "fields": (  # the last field (gdp_md_est) removed
            [
                {"name": "pop_est", "type": "integer"},
                {"name": "continent", "type": "string"},
                {"name": "name", "type": "string"},
                {"name": "iso_a3", "type": "string"},
            ],
            "major",
        ),
        "allow_extra": (True, "minor"),
    },
    "feature_count": {"min": (2, "tightening"), "max": (2000, "minor")},
}


@pytest.mark.parametrize("name", CLAUSE_KINDS)
def test_every_parameter_change_is_classified_by_the_kind(name: str) -> None:
    kind = KINDS[name]
    fields = {f.name for f in dataclasses.fields(kind.Params)}
    assert set(MUTATIONS[name]) == fields, f"MUTATIONS must change every field of {name}"
    old = _clauses_of(name)[0]
    contract = next(c for c in CONTRACTS if old in c.clauses)
    for field, (value, class_) in MUTATIONS[name].items():
        new = dataclasses.replace(old, params={**old.params, field: value})
        changed = dataclasses.replace(
            contract,
            version="v9.0",
            digest="changed",
            clauses=tuple(new if c is old else c for c in contract.clauses),
        )
        diff = Diff(old.name, name, contract, changed)
        kind.compare(kind.params(old), kind.params(new), diff)
        assert diff.out, f"{name}.{field}: compare recorded no difference"
        assert [d.class_ for d in diff.out] == [class_], (field, diff.out)
        got = [d for d in classify(contract, changed).differences if d.clause == old.name]
        assert got == diff.out  # classification is the kind's compare, nothing added


@pytest.mark.parametrize("name", CLAUSE_KINDS)
def test_every_kind_has_a_schema_entry_a_docs_row_and_a_brief(name: str, whole: Decision) -> None:
    entry = SCHEMA["$defs"][f"kind_{name}"]
    params = {f.name for f in dataclasses.fields(KINDS[name].Params)}
    assert set(entry["properties"]) == params
    clause_def = SCHEMA["$defs"]["clause"]
    assert clause_def["properties"]["kind"]["enum"] == list(CLAUSE_KINDS)
    branches = {
        b["if"]["properties"]["kind"]["const"]: b["then"]["$ref"] for b in clause_def["allOf"]
    }
    assert branches[name] == f"#/$defs/kind_{name}"
    assert any(line.startswith(f"| `{name}` |") for line in DOC.splitlines())
    broken = next(r for r in _of_kind(whole, name) if r.broke)
    assert brief(name, broken.measured, broken.message) == BRIEFS[name]


#: The brief of the first broken clause of each kind: the kind's words, or (crs,
#: axis_order, freshness, coverage: nothing shorter to say) the head of the message.
BRIEFS = {
    "crs": "declared CRS EPSG:4326 is not equivalent to EPSG:2263",
    "axis_order": "axis order north_east",
    "extent": "33 of 177 features outside",
    "geometry_type": "Point: 1, missing or unparseable: 1, empty: 1",
    "validity": "3 invalid: Self-intersection[0.5 0.5]",
    "domain": "unknown 'Seven seas (open ocean)'",
    "freshness": "data time 2024-06-01T05:00:00+00:00 is 7.0 h old",
    "coverage": "valid geometries cover 51.0% of the region area",
    "schema": "missing field 'pop_est'",
    "feature_count": "177 features",
}


def test_quarantine_reasons_carry_the_kind_and_code_of_the_broken_clause(
    whole: Decision,
) -> None:
    assert whole.decision == "quarantined"
    assert {r.code for r in whole.reasons} == {ReasonCode.CONTRACT_BREAK}
    first = whole.reasons[0]
    assert (first.clause, first.kind) == ("valid", "validity")  # structural faults lead
    by_clause = {(v.version, r.name): r.kind for v in whole.verdicts for r in v.clauses}
    assert all(r.kind == by_clause[r.version, r.clause] for r in whole.reasons)


UNKNOWN = """
layer: x
version: v1
cadence: P1D
objective: 0.99
owner: t
changelog: c
clauses:
  - {name: lines, kind: contour, interval: 10}
"""


def test_an_unknown_kind_is_refused_at_parse_naming_every_registered_one() -> None:
    with pytest.raises(ContractError) as err:
        parse_contract(UNKNOWN, source="x.yaml")
    assert "expected one of " + ", ".join(CLAUSE_KINDS) in str(err.value)


def test_an_unknown_kind_breaks_whole_and_chunked_and_is_not_classified() -> None:
    contour = Clause("lines", "contour", params={"interval": 10})
    contract = contract_of(contour, layer="admin_boundaries")
    for decision in (
        evaluate(BATCH, [active(contract)], now=NOW),
        evaluate_chunked(split(BATCH, 25), [active(contract)], now=NOW),
    ):
        (result,) = decision.verdicts[0].clauses
        assert result.broke
        assert result.gate_error == "ValueError: unknown clause kind 'contour'"
    edited = dataclasses.replace(
        contract,
        version="v1.1",
        digest="other",
        clauses=(dataclasses.replace(contour, params={"interval": 5}),),
    )
    with pytest.raises(ContractGateError, match="unknown clause kind 'contour'"):
        classify(contract, edited)


def test_params_are_built_once_at_parse_and_kept_on_the_clause() -> None:
    contract = CONTRACTS[0]
    for c in contract.clauses:
        params = KINDS[c.kind].params(c)
        assert KINDS[c.kind].params(c) is params
        assert dataclasses.asdict(params) | dict(c.params) == dataclasses.asdict(params)
