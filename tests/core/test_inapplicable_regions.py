"""A region the contract cannot draw in the batch's CRS (stop 39, a new user's attempts).

A contract without a crs clause writes its regions in the batch's declared CRS. A bbox with
``minx > maxx`` crosses the antimeridian, which only a geographic CRS allows: evaluated
against a batch in EPSG:2263, the region raised inside the clause and the batch was
quarantined as a *gate error* ("the gate failed, not the data: replay it once the gate is
fixed"), which no replay fixes. Now the clause breaks with its own ``on_break``, naming what
to fix in the contract, in the whole and the chunked evaluation, for every kind with a
region. A region that no CRS can read (``[1000000, 0, 1, 1]`` with no CRS: minx > maxx
beyond ±180) is refused when the contract is loaded.
"""

from __future__ import annotations

from typing import Any

import pytest
import shapely

from tests.catalogue import NOW, active, batch_of, clause, contract_of
from tests.core.test_chunked import split
from worker.core.chunks import evaluate_chunked
from worker.core.contracts.parse import parse_contract
from worker.core.errors import ContractError
from worker.core.evaluate import evaluate

CROSSING = [170.0, 0.0, -170.0, 10.0]
#: Every clause kind with a region, with its other parameters.
REGION_KINDS: dict[str, dict[str, Any]] = {
    "extent": {},
    "coverage": {"min_fraction": 0.5},
}
NYC_FEET = [
    shapely.box(980000, 190000, 990000, 200000),
    shapely.box(1000000, 200000, 1001000, 201000),
]


def _batch(crs: str) -> Any:
    geoms = NYC_FEET if crs == "EPSG:2263" else [shapely.box(175, 1, 176, 2)]
    return batch_of(geoms, crs=crs)


@pytest.mark.parametrize("kind", list(REGION_KINDS))
@pytest.mark.parametrize("on_break", ["halt", "warn"])
@pytest.mark.parametrize("chunked", [False, True], ids=["whole", "chunked"])
def test_a_crossing_region_in_a_projected_batch_crs_breaks_the_clause_not_the_gate(
    kind: str, on_break: str, chunked: bool
) -> None:
    contract = contract_of(
        clause("r", kind, on_break=on_break, region=CROSSING, **REGION_KINDS[kind])
    )
    versions = [active(contract)]
    batch = _batch("EPSG:2263")
    decision = (
        evaluate_chunked(split(batch, 1), versions, now=NOW)
        if chunked
        else evaluate(batch, versions, now=NOW)
    )
    (result,) = decision.verdicts[0].clauses
    assert result.broke and result.gate_error is None and result.on_break == on_break
    assert result.message.startswith("the contract cannot be applied to this batch: region ")
    assert "read in the projected CRS EPSG:2263" in result.message
    assert "give the region's CRS (a crs clause, or the clause's crs)" in result.message
    assert "replay" not in result.message
    assert decision.decision == ("quarantined" if on_break == "halt" else "admitted")
    assert all(r.code != "gate_error" for r in decision.reasons)


@pytest.mark.parametrize("kind", list(REGION_KINDS))
def test_the_same_region_in_a_geographic_batch_is_measured(kind: str) -> None:
    contract = contract_of(clause("r", kind, region=CROSSING, **REGION_KINDS[kind]))
    decision = evaluate(_batch("EPSG:4326"), [active(contract)], now=NOW)
    (result,) = decision.verdicts[0].clauses
    assert result.gate_error is None and "cannot be applied" not in result.message


def _doc(kind: str, region: list[float], crs: str | None) -> str:
    extra = "".join(f", {k}: {v}" for k, v in REGION_KINDS[kind].items())
    crs_clause = f"  - {{name: srid, kind: crs, expect: '{crs}'}}\n" if crs else ""
    return (
        "layer: t\nversion: v1\ncadence: P1D\nobjective: 0.9\nowner: me\nchangelog: t\n"
        f"clauses:\n{crs_clause}  - {{name: r, kind: {kind}, region: {region}{extra}}}\n"
    )


@pytest.mark.parametrize("kind", list(REGION_KINDS))
@pytest.mark.parametrize("region", [[1000000, 0, 1, 1], [190, 0, 170, 10], [10, 0, -200, 5]])
def test_a_crossing_region_beyond_180_without_a_crs_is_refused_at_load(
    kind: str, region: list[float]
) -> None:
    with pytest.raises(ContractError, match=r"clauses\[0\]\.region: minx is greater than maxx"):
        parse_contract(_doc(kind, region, None))
    parse_contract(_doc(kind, CROSSING, None))  # may be geographic: judged per batch
    parse_contract(_doc(kind, CROSSING, "OGC:CRS84"))


def test_the_result_is_the_same_whatever_the_chunking() -> None:
    contract = contract_of(*(clause(k, k, region=CROSSING, **p) for k, p in REGION_KINDS.items()))
    versions = [active(contract)]
    batch = _batch("EPSG:2263")
    whole = evaluate(batch, versions, now=NOW)
    assert evaluate_chunked(split(batch, 1), versions, now=NOW) == whole
    assert whole.decision == "quarantined"
