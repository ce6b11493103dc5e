"""Which features broke a clause: indices, feature ids and the value measured on each
(worker.core.clauses.base.offenders_of, through the clause kinds)."""

from __future__ import annotations

from dataclasses import replace

import pyarrow as pa
import shapely

from tests.catalogue import BOWTIE, NOW, PARIS, VALID_POLYGON, batch_of, clause, contract_of
from worker.core.clauses import KINDS
from worker.core.facts.batch import BatchFacts
from worker.core.model import FieldSpec
from worker.core.offenders import MAX_OFFENDERS, Offenders


def _run(c, batch, contract=None):  # type: ignore[no-untyped-def]
    contract = contract or contract_of(c)
    return KINDS[c.kind].evaluate(c, contract, BatchFacts(batch), NOW)


def test_extent_names_the_features_outside_with_their_bounds_in_degrees() -> None:
    far = shapely.box(100.0, 10.0, 101.0, 11.0)
    batch = replace(batch_of([PARIS, far, VALID_POLYGON]), feature_ids=("paris", "far", 7))
    c = clause("extent", "extent", region=[-10.0, 40.0, 10.0, 55.0], crs="EPSG:4326")
    r = _run(c, batch)
    assert r.broke and r.offenders is not None
    assert r.offenders.total == 2
    assert [(o.index, o.id, o.value) for o in r.offenders.features] == [
        (1, "far", [100.0, 10.0, 101.0, 11.0]),
        (2, 7, [0.0, 0.0, 1.0, 1.0]),
    ]
    assert "EPSG:4326 (degrees)" in r.offenders.measure
    assert "the features span x 0 .. 101, y 0 .. 48.8566 (degrees)" in r.message


def test_validity_names_the_geos_reason_per_feature_and_the_row_index_without_ids() -> None:
    r = _run(clause("valid", "validity"), batch_of([VALID_POLYGON, BOWTIE, None]))
    assert r.offenders is not None and r.offenders.total == 2
    first, second = r.offenders.features
    assert (first.index, first.id) == (1, None)
    assert first.value.startswith("Self-intersection[0.5 0.5]")
    assert (second.index, second.value) == (2, "missing geometry")


def test_domain_names_the_unknown_code_and_nulls_by_id_column() -> None:
    table = pa.table({"code": ["R1", "Atlantis", None, "R1"], "pid": ["a", "b", "c", "d"]})
    batch = batch_of([VALID_POLYGON] * 4, attributes=table)
    c = clause("use", "domain", column="code", values={"R1": "residential"})
    contract = replace(contract_of(c), id_column="pid")
    r = _run(c, batch, contract)
    assert r.offenders is not None
    assert [(o.index, o.id, o.value) for o in r.offenders.features] == [
        (1, "b", "Atlantis"),
        (2, "c", None),
    ]
    assert "1 value not in the domain ('Atlantis')" in r.message
    # the batch's id column (check --id-column) wins over the contract's
    r2 = _run(c, replace(batch, id_column="code"), contract)
    assert r2.offenders is not None and [o.id for o in r2.offenders.features] == ["Atlantis", None]


def test_geometry_type_and_schema_nulls_name_their_features() -> None:
    table = pa.table({"pid": ["a", None, "c"]})
    batch = batch_of(
        [VALID_POLYGON, PARIS, shapely.from_wkt("POLYGON EMPTY")],
        attributes=table,
        schema_fields=(FieldSpec("pid", "string", True),),
    )
    r = _run(clause("types", "geometry_type", allowed=["Polygon"]), batch)
    assert r.offenders is not None
    assert [(o.index, o.value) for o in r.offenders.features] == [
        (1, "Point"),
        (2, "empty Polygon"),
    ]
    fields = [{"name": "pid", "type": "string"}]
    s = _run(clause("schema", "schema", fields=fields), batch)
    assert s.offenders is not None
    assert [(o.index, o.value) for o in s.offenders.features] == [(1, ["pid"])]


def test_offenders_are_capped_with_the_total_kept() -> None:
    n = MAX_OFFENDERS + 50
    batch = batch_of([BOWTIE] * n)
    r = _run(clause("valid", "validity"), batch)
    assert r.offenders is not None
    assert (r.offenders.total, len(r.offenders.features)) == (n, MAX_OFFENDERS)
    assert r.offenders.features[-1].index == MAX_OFFENDERS - 1
    assert Offenders.from_json(r.offenders.to_json()) == r.offenders


def test_every_offender_names_them_all_and_recorded_cuts_them_back() -> None:
    # check --html/--offenders: the whole file is at hand, every offender is drawn
    from tests.catalogue import active
    from worker.core.chunks import ChunkedBatch, evaluate_chunked
    from worker.core.evaluate import evaluate, recorded
    from worker.core.offenders import every_offender

    n = MAX_OFFENDERS + 38
    batch = batch_of([BOWTIE] * n)
    versions = [active(contract_of(clause("valid", "validity")))]
    with every_offender():
        whole = evaluate(batch, versions, now=NOW)
        meta = replace(batch, geometries_wkb=(), attributes=batch.attributes.slice(0, 0))
        wkb, attrs = batch.geometries_wkb, batch.attributes
        parts = [
            replace(batch, geometries_wkb=wkb[i : i + 60], attributes=attrs.slice(i, 60))
            for i in (0, 60, 120)
        ]
        chunked = evaluate_chunked(ChunkedBatch(meta, lambda: iter(parts)), versions, now=NOW)
    for decision in (whole, chunked):
        (c,) = decision.verdicts[0].clauses
        assert c.offenders is not None and c.offenders.total == n
        assert [o.index for o in c.offenders.features] == list(range(n))
        cut = recorded(decision)
        (r,) = cut.verdicts[0].clauses
        assert r.offenders is not None and len(r.offenders.features) == MAX_OFFENDERS
        assert r.offenders.total == n and cut.reasons[0].offenders == r.offenders
    (default,) = evaluate(batch, versions, now=NOW).verdicts[0].clauses  # outside: capped
    assert default.offenders is not None and len(default.offenders.features) == MAX_OFFENDERS


def test_a_passing_clause_about_the_whole_batch_has_no_offenders() -> None:
    r = _run(clause("size", "feature_count", min=1), batch_of([VALID_POLYGON]))
    assert r.offenders is None
    ok = _run(clause("valid", "validity"), batch_of([VALID_POLYGON]))
    assert ok.offenders is None


def test_a_long_text_id_is_clipped_like_a_value() -> None:
    # a 100,000-character GeoJSON id was echoed whole into each report line naming it
    from worker.core.clauses.base import MAX_OFFENDER_VALUE_CHARS

    long_id = "x" * 100_000
    batch = replace(batch_of([BOWTIE, BOWTIE]), feature_ids=(long_id, "short"))
    r = _run(clause("valid", "validity"), batch)
    assert r.offenders is not None
    clipped, short = (o.id for o in r.offenders.features)
    assert clipped == "x" * MAX_OFFENDER_VALUE_CHARS + "... [clipped: 100000 chars in all]"
    assert short == "short"
