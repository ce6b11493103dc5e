"""Stop 40: :func:`~worker.core.evaluate.decide` and
:func:`~worker.core.evaluate.version_verdict` walk a batch's results once for its breaks (a
batch without one is admitted at once). On real verdicts of every clause kind (bad
geometries of every sort, an unknown code, a stale batch, warn clauses with diagnoses, an
observing version, a gate error, an inactive version), the decision and each verdict are
those of stop 39's code, kept here as the reference, to their text."""

from __future__ import annotations

import dataclasses
from datetime import timedelta

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
from worker.core.evaluate import STRUCTURAL_FIRST, decide, evaluate, version_verdict
from worker.core.model import (
    ActiveVersion,
    Batch,
    ClauseResult,
    Decision,
    QuarantineReason,
    VersionVerdict,
)
from worker.core.vocab import ReasonCode


def _old_decide(verdicts: tuple[VersionVerdict, ...]) -> Decision:
    """Stop 39's :func:`decide`, verbatim."""
    broken = [(v, r) for v in verdicts if v.mode == "enforcing" for r in v.clauses if r.halts]
    broken.sort(
        key=lambda vr: (
            -1
            if vr[1].gate_error is not None
            else STRUCTURAL_FIRST.get(vr[1].kind, len(STRUCTURAL_FIRST))
        )
    )
    reasons = tuple(
        QuarantineReason(
            code=ReasonCode.GATE_ERROR if r.gate_error is not None else ReasonCode.CONTRACT_BREAK,
            message=r.message,
            version=v.version,
            mode=v.mode,
            clause=r.name,
            kind=r.kind,
            measured=r.measured,
            expected=r.expected,
            offenders=r.offenders,
        )
        for v, r in broken
    )
    diagnoses = tuple(
        dict.fromkeys(d for v in verdicts for r in v.clauses if r.broke for d in r.diagnoses)
    )
    return Decision(
        decision="quarantined" if reasons else "admitted",
        verdicts=verdicts,
        reasons=reasons,
        diagnoses=diagnoses,
    )


def _old_verdict(v: ActiveVersion, clauses: tuple[ClauseResult, ...]) -> VersionVerdict:
    """Stop 39's :func:`version_verdict`, verbatim."""
    return VersionVerdict(
        layer=v.contract.layer,
        version=v.contract.version,
        mode=v.mode,
        passed=not any(r.halts for r in clauses),
        clauses=clauses,
    )


STRICT = contract_of(
    clause("srid", "crs", expect="EPSG:4326"),
    clause("axes", "axis_order", expect="east_north"),
    clause("ext", "extent", region=[-5.0, -5.0, 5.0, 50.0], min_fraction_inside=0.6),
    clause("types", "geometry_type", allowed=["Polygon"], allow_empty=False),
    clause("valid", "validity"),
    clause("dom", "domain", column="code", values=["a", "b"]),
    clause("fresh", "freshness", max_age="PT1H"),
    clause("schema", "schema", fields=[{"name": n, "type": "string"} for n in ("code", "fid")]),
    clause("count", "feature_count", min=1, max=2),
)
#: the same clauses, every one ``warn``, observed: breaks that halt nothing, diagnoses kept
LOOSE = contract_of(
    *(dataclasses.replace(c, on_break="warn") for c in STRICT.clauses), version="v2.0"
)
GEOMS = [VALID_POLYGON, BOWTIE, None, UNPARSEABLE_WKB, EMPTY_POLYGON, NAN_VERTEX_WKB, PARIS,
         shapely.box(3.0, 3.0, 4.0, 4.0), shapely.box(100.0, 0.0, 101.0, 1.0),
         shapely.box(48.0, 2.0, 49.0, 3.0)]  # fmt: skip
CODES = ["a", "z", None, "b", "a", "y", "a", "\u00e9", "a", "a"]


def _batches() -> list[Batch]:
    """One batch per geometry, stale and fresh, one of three features, one lat/lon."""
    out = []
    for n, (a, z) in enumerate([(i, i + 1) for i in range(len(GEOMS))] + [(0, 3)]):
        table = pa.table({"code": CODES[a:z], "fid": [f"f{i}" for i in range(a, z)]})
        for minutes in (10, 70):
            b = batch_of(GEOMS[a:z], attributes=table, data_time=NOW - timedelta(minutes=minutes),
                         schema_fields=derive_schema(table))  # fmt: skip
            out.append(dataclasses.replace(b, batch_id=f"b{n}-{minutes}", id_column="fid"))
    out.append(dataclasses.replace(out[-1], axis_order="north_east", batch_id="swapped"))
    return out


VERSION_SETS = [
    [active(STRICT)],
    [active(LOOSE, "observing")],
    [active(STRICT), active(LOOSE, "observing")],
    [active(LOOSE), active(STRICT, "observing")],
    [active(STRICT, state="retired"), active(LOOSE)],
]


@pytest.mark.parametrize("versions", VERSION_SETS, ids=range(len(VERSION_SETS)))
def test_decisions_and_verdicts_read_as_stop_39s(versions: list[ActiveVersion]) -> None:
    for b in _batches():
        d = evaluate(b, versions, now=NOW)
        assert repr(d) == repr(_old_decide(d.verdicts)), b.batch_id
        assert repr(decide(d.verdicts)) == repr(d)
        for v, verdict in zip((v for v in versions if v.state == "active"), d.verdicts,
                              strict=True):  # fmt: skip
            assert version_verdict(v, verdict.clauses) == _old_verdict(v, verdict.clauses)


def test_the_cases_compared_include_every_shape_of_decision() -> None:
    seen = set()
    for versions in VERSION_SETS:
        for b in _batches():
            d = evaluate(b, versions, now=NOW)
            broke = any(r.broke for v in d.verdicts for r in v.clauses)
            seen.add((d.decision, broke, bool(d.diagnoses), all(v.passed for v in d.verdicts)))
    assert seen >= {
        ("admitted", False, False, True),  # nothing broke
        ("admitted", True, False, True),  # a warn break, no diagnosis
        ("admitted", True, True, True),  # a warn break with a diagnosis
        ("admitted", True, True, False),  # an observing version failed
        ("quarantined", True, True, False),
    }


def test_a_gate_error_leads_as_stop_39s(monkeypatch: pytest.MonkeyPatch) -> None:
    kind = KINDS["feature_count"]

    def broken(*args: object) -> None:
        raise RuntimeError("no count")

    monkeypatch.setitem(KINDS, "feature_count", dataclasses.replace(kind, measure=broken))
    for versions in VERSION_SETS:
        for b in _batches():
            d = evaluate(b, versions, now=NOW)
            assert repr(d) == repr(_old_decide(d.verdicts)), b.batch_id
    d = evaluate(_batches()[0], [active(LOOSE)], now=NOW)  # a warn clause's gate error halts
    assert d.decision == "quarantined" and d.reasons[0].code == ReasonCode.GATE_ERROR
