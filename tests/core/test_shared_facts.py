"""Small batches evaluated as one group (core.evaluate_group, core.facts.shared): every
batch's decision, and every fact it reads, is what it gives evaluated alone, over every
clause kind, bad geometries of every sort, two axis orders, a reprojection and a clause
that raises."""

from __future__ import annotations

import dataclasses
from datetime import timedelta
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
import shapely

from tests.catalogue import (
    BOWTIE,
    EMPTY_POLYGON,
    NAN_VERTEX_WKB,
    NOW,
    PARIS,
    UNPARSEABLE_WKB,
    VALID_POLYGON,
    active,
    batch_of,
    clause,
    contract_of,
)
from worker.core.clauses import KINDS
from worker.core.columns import derive_schema
from worker.core.evaluate import evaluate
from worker.core.evaluate_group import evaluate_group
from worker.core.facts.batch import BatchFacts
from worker.core.facts.shared import (
    PER_FEATURE,
    SharedFacts,
    columns_key,
    group_attributes,
    group_key,
)
from worker.core.model import Batch

EVERYTHING = contract_of(
    clause("srid", "crs", expect="EPSG:4326"),
    clause("axes", "axis_order", expect="east_north"),
    clause("ext", "extent", region=[-5.0, -5.0, 5.0, 50.0], min_fraction_inside=0.6),
    clause("ext_m", "extent", region=[-6e5, -6e5, 6e5, 6.5e6], crs="EPSG:3857"),
    clause("types", "geometry_type", allowed=["Polygon"], allow_empty=False),
    clause("valid", "validity"),
    clause("dom", "domain", column="code", values=["a", "b"]),
    clause("fresh", "freshness", max_age="PT1H"),
    clause("cov", "coverage", region=[-1.0, -1.0, 2.0, 2.0], min_fraction=0.5),
    clause("schema", "schema", fields=[{"name": n, "type": "string"} for n in ("code", "fid")]),
    clause("count", "feature_count", min=1, max=2),
    clause("bad", "geometry_type", allowed=["Triangle"]),
)
GEOMS = [VALID_POLYGON, BOWTIE, None, UNPARSEABLE_WKB, EMPTY_POLYGON, NAN_VERTEX_WKB, PARIS,
         shapely.box(3.0, 3.0, 4.0, 4.0), shapely.box(100.0, 0.0, 101.0, 1.0)]  # fmt: skip
CODES = ["a", "z", None, "b", "a", "y", "a", "\u00e9", "a"]


def _batches(axis_order: str = "east_north") -> list[Batch]:
    """One batch per geometry of :data:`GEOMS`, then one of three and one of two."""
    spans = [(i, i + 1) for i in range(len(GEOMS))] + [(0, 3), (5, 7)]
    out = []
    for n, (a, z) in enumerate(spans):
        table = pa.table({"code": CODES[a:z], "fid": [f"f{i}" for i in range(a, z)]})
        b = batch_of(GEOMS[a:z], attributes=table, axis_order=axis_order,
                     data_time=NOW - timedelta(minutes=50 + 5 * n),
                     schema_fields=derive_schema(table))  # fmt: skip
        out.append(dataclasses.replace(b, batch_id=f"b{n}", id_column="fid"))
    return out


def test_every_clause_kind_is_in_the_contract() -> None:
    assert {c.kind for c in EVERYTHING.clauses} == set(KINDS)


@pytest.mark.parametrize("axis_order", ["east_north", "north_east"])
def test_a_group_decides_each_batch_as_alone(axis_order: str) -> None:
    batches = _batches(axis_order)
    versions = [active(EVERYTHING), active(EVERYTHING, mode="observing")]
    alone = [evaluate(b, versions, now=NOW) for b in batches]
    assert evaluate_group(batches, versions, now=NOW) == alone
    # the group is not trivially equal: the batches differ, and so do their decisions
    broken = [{r.name for r in d.verdicts[0].clauses if r.broke} for d in alone]
    axes = {"axes"} if axis_order == "north_east" else set()
    assert broken[0] == {"bad", "cov"} | axes
    both = {"bad", "cov", "dom", "ext_m", "types", "valid", "schema"} | axes
    assert broken[2] == both | {"ext"}
    assert broken[-2] == both | {"count", "fresh"}
    assert {d.decision for d in alone} == {"quarantined"}  # "bad" raises: a gate error
    valid = {r.name: r for r in alone[1].verdicts[0].clauses}["valid"]
    assert valid.broke and valid.offenders is not None
    assert [(o.index, o.id) for o in valid.offenders.features] == [(0, "f1")]


@pytest.mark.parametrize("size", [1, 2, 3, 4])
def test_groups_of_few_batches_decide_each_as_alone(size: int) -> None:
    """The first batch is evaluated alone and the group is the others: with one other
    it is evaluated alone too, with two or more they share their facts."""
    batches = _small_batches()[3 : 3 + size]  # a bowtie, then one outside, then code "zz"
    versions = [active(contract_of(*(c for c in EVERYTHING.clauses if c.name != "bad")))]
    alone = [evaluate(b, versions, now=NOW) for b in batches]
    assert _records(evaluate_group(batches, versions, now=NOW)) == _records(alone)
    assert evaluate_group(batches, versions, now=NOW) == alone


def test_primed_facts_equal_those_computed_alone() -> None:
    batches = _batches()
    versions = [active(EVERYTHING)]
    first = BatchFacts(batches[0])
    evaluate(batches[0], versions, now=NOW, facts=first)
    shared = SharedFacts(batches)
    shared.compute(first)
    primed_names = [n for n in PER_FEATURE if n in shared.facts.__dict__]
    assert {"is_valid", "bounds", "type_ids", "outside_area_of_use"} <= set(primed_names)
    for i, b in enumerate(batches):
        primed = shared.prime(i, BatchFacts(b))
        alone = BatchFacts(b)
        for name in primed_names:
            assert name not in primed.__dict__  # cut on its first read
            got, want = getattr(primed, name), getattr(alone, name)
            if got.dtype == object:
                assert [shapely.to_wkb(g) if isinstance(g, shapely.Geometry) else g
                        for g in got] == [shapely.to_wkb(g) if isinstance(g, shapely.Geometry)
                                          else g for g in want], name  # fmt: skip
            else:
                np.testing.assert_array_equal(got, want, err_msg=name)
        assert primed.curve_type_names == alone.curve_type_names
        assert primed.invalid_reasons == alone.invalid_reasons


def test_batches_that_cannot_share_facts_are_refused() -> None:
    one = batch_of([VALID_POLYGON])
    assert group_key(one) == ("EPSG:4326", "east_north", None, "")
    assert group_key(dataclasses.replace(one, edges="spherical")) is None
    assert group_key(dataclasses.replace(one, geometry_errors={0: "x"})) is None
    # as many features as the points fast paths take: only when half are not points
    assert group_key(batch_of([PARIS] * 32 + [VALID_POLYGON] * 32)) is None
    assert group_key(batch_of([PARIS] * 31 + [VALID_POLYGON] * 33)) is not None
    assert group_key(batch_of([PARIS] * 31 + [VALID_POLYGON] * 32)) is not None  # 63
    with pytest.raises(ValueError, match="one non-None group_key"):
        SharedFacts([one, batch_of([VALID_POLYGON], crs="EPSG:3857")])
    with pytest.raises(ValueError, match="two or more"):
        SharedFacts([one])


def test_batches_of_64_features_or_more_share_facts_unless_mostly_points() -> None:
    boxes = [shapely.box(i, 0.0, i + 0.5, 0.5) for i in range(70)]
    mixed = [PARIS] * 30 + [BOWTIE, None, EMPTY_POLYGON] + boxes[:47]  # 80, under half points
    batches = [batch_of(boxes), batch_of([VALID_POLYGON]), batch_of(mixed), batch_of(boxes[:3])]
    assert len({group_key(b) for b in batches}) == 1
    versions = [active(EVERYTHING)]
    alone = [evaluate(b, versions, now=NOW) for b in batches]
    assert evaluate_group(batches, versions, now=NOW) == alone
    valid = {r.name: r for r in alone[2].verdicts[0].clauses}["valid"]
    assert valid.offenders is not None
    assert [o.index for o in valid.offenders.features] == [30, 31]


#: Passing one-feature batches (boxes inside both extents, one a -0.0 corner) and two that
#: break some clauses (a bowtie, a box outside "ext"), some sharing a data time.
_PASSING = [shapely.box(0.0, 0.0, 1.0, 1.0), shapely.box(-0.0, 0.5, 1.0, 2.0),
            shapely.box(2.0, 1.0, 3.0, 1.5), shapely.box(0.0, 0.0, 1.0, 1.0)]  # fmt: skip
_MIXED = [*_PASSING, BOWTIE, shapely.box(6.0, 0.0, 7.0, 1.0), *_PASSING[:2]]


def _small_batches() -> list[Batch]:
    """One batch per geometry of :data:`_MIXED`; batch 6 has an unknown code, batch 7 a
    null one (its schema field nullable), both in string columns as the others."""
    out = []
    for n, g in enumerate(_MIXED):
        code = {6: "zz", 7: None}.get(n, "a")
        table = pa.table({"code": pa.array([code], pa.string()), "fid": [f"f{n}"]})
        b = batch_of([g], attributes=table, data_time=NOW - timedelta(minutes=50 + n % 2),
                     schema_fields=derive_schema(table))  # fmt: skip
        out.append(dataclasses.replace(b, batch_id=f"s{n}", id_column="fid"))
    return out


@pytest.mark.parametrize("name", list(KINDS))
def test_each_kind_measures_a_group_as_each_batch_alone(name: str) -> None:
    kind = KINDS[name]
    clauses = [c for c in EVERYTHING.clauses if c.kind == name and c.name != "bad"]
    batches = _small_batches()
    shared = SharedFacts(batches)
    for c in clauses:
        if kind.measure_group is None:  # measured batch by batch (the protocol's default)
            continue
        tallies = kind.measure_group(c, EVERYTHING, shared.facts, shared.starts, NOW)
        assert len(tallies) == len(batches)
        measured = [i for i, t in enumerate(tallies) if t is not None]
        # every passing batch is measured with the group; the breaking ones alone
        assert measured == [i for i in range(len(batches)) if i not in _BREAKS.get(c.name, ())]
        for i in measured:
            alone = kind.measure(c, EVERYTHING, BatchFacts(batches[i]), NOW)
            assert repr(tallies[i]) == repr(alone), (c.name, i)  # repr tells -0.0 from 0.0


#: The batches of :func:`_small_batches` a clause of :data:`EVERYTHING` measures alone:
#: those it breaks on; every one for the extent in EPSG:3857 (reprojected: never grouped).
_BREAKS = {"valid": (4,), "ext": (5,), "types": (), "ext_m": tuple(range(len(_MIXED))),
           "dom": (6, 7), "schema": (7,)}  # fmt: skip


def _records(decisions: list[Any]) -> list[str]:
    """Decisions compared by their text: a -0.0 or a 1.0 where 0.0 or 1 was would show."""
    return [repr(d) for d in decisions]


def test_a_group_of_small_batches_renders_equal_results_once() -> None:
    batches = _small_batches()
    versions = [active(contract_of(*(c for c in EVERYTHING.clauses if c.name != "bad")))]
    alone = [evaluate(b, versions, now=NOW) for b in batches]
    grouped = evaluate_group(batches, versions, now=NOW)
    assert _records(grouped) == _records(alone)
    by_name = [{r.name: r for r in d.verdicts[0].clauses} for d in grouped]
    # equal results are one object, of the kinds that share them: batches 0 and 3 are the
    # same box at another data time (extent results, never shared, are equal objects)
    assert by_name[0]["valid"] is by_name[3]["valid"] and by_name[0]["ext"] == by_name[3]["ext"]
    assert by_name[0]["fresh"] is not by_name[3]["fresh"]
    assert by_name[0]["fresh"] is by_name[2]["fresh"]
    shared_kinds = {k for k, v in KINDS.items() if v.render_key is not None}
    for name, r in by_name[2].items():
        assert (r is by_name[0][name]) == (r.kind in shared_kinds), name
    assert by_name[1]["ext"].measured["bounds"][0] == 0.0
    # a zero bound is 0.0, whether its feature wrote -0.0 or 0.0 (stop 43: before, a lone
    # batch echoed -0.0 and the same features read in chunks 0.0; test_signed_zero_bounds)
    assert str(by_name[1]["ext"].measured["bounds"][0]) == "0.0"
    assert by_name[4]["valid"].broke and by_name[5]["ext"].broke and not by_name[0]["ext"].broke


def test_batches_whose_tables_differ_are_measured_alone_by_the_attribute_kinds() -> None:
    batches = _small_batches()
    ints = pa.table({"code": pa.array([7], pa.int64()), "fid": ["f9"]})
    batches[2] = dataclasses.replace(batches[2], attributes=ints, schema_fields=derive_schema(ints))
    shared = SharedFacts(batches)
    assert group_attributes(shared.facts) is None
    assert group_attributes(SharedFacts(_small_batches()).facts).num_rows == len(_MIXED)
    for c in EVERYTHING.clauses:
        if c.kind in ("domain", "schema"):
            tallies = KINDS[c.kind].measure_group(c, EVERYTHING, shared.facts, shared.starts, NOW)
            assert tallies == [None] * len(batches)
    versions = [active(contract_of(*(c for c in EVERYTHING.clauses if c.name != "bad")))]
    alone = [evaluate(b, versions, now=NOW) for b in batches]
    assert _records(evaluate_group(batches, versions, now=NOW)) == _records(alone)
    assert {r.name for r in alone[2].verdicts[0].clauses if r.broke} == {"cov", "dom", "schema"}


@pytest.mark.parametrize("tables", ["one schema", "an int code", "field metadata"])
def test_columns_key_is_each_batchs_own_read_once_per_group(tables: str) -> None:
    """The columns' key primed from the group's table equals the one read from each
    batch's own table; a group whose tables differ (a type, field metadata) leaves each
    batch to read its own; every render key reading it equals the batch's alone."""
    batches = _small_batches()
    tagged = pa.schema([pa.field("code", pa.string(), metadata={b"k": b"v"}),
                        pa.field("fid", pa.string())])  # fmt: skip
    if tables == "an int code":
        odd = pa.table({"code": pa.array([7], pa.int64()), "fid": ["f9"]})
    elif tables == "field metadata":
        odd = batches[2].attributes.cast(tagged)
    if tables != "one schema":
        batches[2] = dataclasses.replace(batches[2], attributes=odd,
                                         schema_fields=derive_schema(odd))  # fmt: skip
    shared = SharedFacts(batches)
    shared.compute(BatchFacts(batches[0]))
    keyed = [k for k in KINDS.values() if k.render_key is not None]
    for i, b in enumerate(batches):
        primed = shared.prime(i, BatchFacts(b))
        alone = BatchFacts(b)
        assert ("_columns_key" in primed.__dict__) == (tables == "one schema")
        assert columns_key(primed) == columns_key(alone)
        for kind in keyed:
            assert kind.render_key(primed) == kind.render_key(alone), kind.name  # type: ignore[misc]
    assert columns_key(BatchFacts(batches[2]))[0][1] == (
        "int64" if tables == "an int code" else "string"
    )


def test_extent_expected_is_built_once_per_clause_and_crs() -> None:
    """Every extent result of a clause shows the same ``expected`` (one object, read
    only), in the CRS it was measured in."""
    batches = _small_batches()
    versions = [active(contract_of(*(c for c in EVERYTHING.clauses if c.name != "bad")))]
    results = [{r.name: r for r in evaluate(b, versions, now=NOW).verdicts[0].clauses}
               for b in batches]  # fmt: skip
    assert results[0]["ext"].expected == {"region": [-5.0, -5.0, 5.0, 50.0], "crs": "EPSG:4326",
                                          "min_fraction_inside": 0.6, "tolerance": 0.0}  # fmt: skip
    assert results[0]["ext_m"].expected["crs"] == "EPSG:3857"
    assert results[0]["ext_m"].expected["region"] == [-6e5, -6e5, 6e5, 6.5e6]
    assert all(r["ext"].expected is results[0]["ext"].expected for r in results)
    assert results[5]["ext"].broke and not results[0]["ext"].broke


def _arrays(facts: BatchFacts) -> dict[str, np.ndarray]:
    """Every array fact of ``facts``, the arrays of ``_headers`` named apart."""
    have = facts.__dict__
    out = {n: v for n, v in have.items() if isinstance(v, np.ndarray)}
    out.update({f"_headers{k}": h for k, h in enumerate(have.get("_headers", ()))})
    return out


def test_primed_facts_are_views_no_clause_writes_into() -> None:
    """Each batch's per-feature facts are views of the group's rows (no copy per batch),
    and evaluating every clause kind on them, diagnoses of a broken extent included
    (batch 5), writes into none: the group's arrays read as before, element by element
    (geometries by identity), and the decisions are those of each batch alone."""
    batches = [_batches()[1], *_small_batches()]  # a bowtie first: invalid reasons computed
    versions = [active(contract_of(*(c for c in EVERYTHING.clauses if c.name != "bad")))]
    first = BatchFacts(batches[0])
    evaluate(batches[0], versions, now=NOW, facts=first)
    shared = SharedFacts(batches[1:])
    shared.compute(first)
    before = {n: a.copy() for n, a in _arrays(shared.facts).items()}
    assert {"is_valid", "bounds", "geometries", "_headers0", "outside_area_of_use"} <= set(before)
    decisions = []
    read = set()
    for i, b in enumerate(batches[1:]):
        primed = shared.prime(i, BatchFacts(b))
        decisions.append(evaluate(b, versions, now=NOW, facts=primed))
        assert primed.raw_geometries is not None  # read too
        headers = shared.cut("_headers")  # the parse's, cut as the others
        assert headers is not None
        for view, whole in zip(headers[i], shared.facts.__dict__["_headers"], strict=True):
            assert np.shares_memory(view, whole) or not view.size
        for name, view in _arrays(primed).items():  # the facts it read (cut on first read)
            if name in before and view.size:
                assert np.shares_memory(view, _arrays(shared.facts)[name]), name
                read.add(name)
    assert {"is_valid", "bounds", "geometries", "raw_geometries"} <= read
    assert decisions == [evaluate(b, versions, now=NOW) for b in batches[1:]]
    # the extents broke (their diagnoses' second pass read the views too)
    assert {r.name for r in decisions[5].verdicts[0].clauses if r.broke} == {"ext", "ext_m", "cov"}
    after = _arrays(shared.facts)
    for name, was in before.items():
        now_ = after[name]
        if was.dtype == object:
            assert all(x is y for x, y in zip(was, now_, strict=True)), name
        else:
            np.testing.assert_array_equal(now_, was, err_msg=name)


def test_a_group_of_batches_of_unequal_sizes_is_primed_with_their_rows() -> None:
    """Batches of 1, 3 and 2 features (cut one by one, not by one reshape) and batches of
    one size (one reshape) get each its own rows, and the ``{index: value}`` facts are
    re-indexed per batch."""
    for batches in (_batches()[-2:] + _batches()[:1], _small_batches()[:4]):
        shared = SharedFacts(batches)
        first = BatchFacts(batches[0])
        evaluate(batches[0], [active(EVERYTHING)], now=NOW, facts=first)
        shared.compute(first)
        for i, b in enumerate(batches):
            primed, alone = shared.prime(i, BatchFacts(b)), BatchFacts(b)
            np.testing.assert_array_equal(primed.bounds, alone.bounds)
            np.testing.assert_array_equal(primed.is_valid, alone.is_valid)
            assert primed.invalid_reasons == alone.invalid_reasons
            assert primed.count == len(b.geometries_wkb) == len(primed.bounds)
