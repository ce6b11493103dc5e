"""Stop 41: the extent's group tallies take a one-feature batch's envelope from its bounds
row (:meth:`worker.core.clauses.tally.Bounds.of_row`) instead of numpy calls per batch.
Over generated rows (NaN, infinities, -0.0) the envelope is :meth:`Bounds.of_shown`'s;
over real groups (one-feature countries, two-feature batches, empty and NaN geometries,
features beyond the region) every tally is what stop 40's loop gave, and every decision
reads as the batch's alone."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta
from typing import Any

import numpy as np
import pytest
import shapely
from hypothesis import given, settings
from hypothesis import strategies as st

from benchmarks.common import NOW, countries, world
from worker.cli.scenario import data_file
from worker.core.clauses import KINDS
from worker.core.clauses.extent_group import measure_group
from worker.core.clauses.tally import Bounds, First
from worker.core.evaluate import evaluate, evaluate_versions
from worker.core.evaluate_group import evaluate_group
from worker.core.facts.batch import BatchFacts
from worker.core.facts.shared import SharedFacts
from worker.core.model import ActiveVersion, Batch
from worker.io.contract_files import load_contract

V1 = load_contract(data_file("contracts/admin_boundaries.v1.yaml"))
AT = NOW + timedelta(minutes=1)
VERSIONS = [ActiveVersion(V1, "enforcing")]
EXTENT = next(c for c in V1.clauses if c.kind == "extent")

_VALUES = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True), st.sampled_from([-0.0, 0.0, 1e308])
)


@settings(max_examples=400, deadline=None)
@given(st.lists(_VALUES, min_size=4, max_size=4))
def test_a_row_is_what_of_shown_gives_one_shown_row(row: list[float]) -> None:
    bounds = np.array([row], dtype=np.float64)
    one = Bounds.of_row(bounds[0].tolist())
    shown = Bounds.of_shown(bounds, np.array([True]))
    if any(v != v for v in bounds[0].tolist()):
        assert one is None
    else:
        assert one is not None
        assert repr(one) == repr(shown)


def _stop40_tallies(group: BatchFacts, starts: np.ndarray) -> list[Any]:
    """The tallies of stop 40's loop: ``Bounds.of_shown`` of each batch's rows, a First
    each, from the same masks (``measure_group`` with its per-batch loop replaced)."""
    from worker.core.clauses.group_tallies import per_segment
    from worker.core.clauses.region import contract_crs
    from worker.core.spatial import covered_mask

    crs, _ = contract_crs(EXTENT.params.get("crs"), V1, group)
    from worker.core.clauses.extent_group import extent_region

    region = extent_region(EXTENT, crs)
    beyond = group.outside_area_of_use & group.usable
    shown = group.usable & ~beyond
    fbounds = group.bounds
    inside = covered_mask(lambda: group.geometries, shown, region, fbounds)
    inside = inside | (group.parsed & group.is_empty)
    stop = per_segment(~inside | beyond | group.covering_bbox_disagrees, starts).tolist()
    out: list[Any] = []
    for i, stopped in enumerate(stop):
        if stopped:
            out.append(None)
            continue
        a, z = int(starts[i]), int(starts[i + 1])
        bounds = Bounds.of_shown(fbounds[a:z], shown[a:z])
        out.append({"count": z - a, "inside": z - a, "bounds": bounds, "raw_bounds": bounds,
                    "beyond": 0, "failed": 0, "disagree": 0, "disagree_first": First((), 5),
                    "offenders": None})  # fmt: skip
    return out


def _batches(two: bool) -> list[Batch]:
    """One-feature countries with an empty polygon, a NaN vertex and a polygon far outside
    among them; with ``two``, two-feature batches too (then every batch takes of_shown)."""
    base = world()
    ones = [countries(base, 1, start=i, batch_id=f"e{i}") for i in range(30)]
    empty = shapely.to_wkb(shapely.from_wkt("POLYGON EMPTY"))
    with np.errstate(invalid="ignore"):  # a NaN vertex, on purpose
        nan = shapely.to_wkb(shapely.Polygon([(0.0, 0.0), (1.0, 0.0), (np.nan, 1.0), (0.0, 0.0)]))
    far = shapely.to_wkb(shapely.box(500.0, 500.0, 501.0, 501.0))  # outside the region
    out = [
        *ones[:10],
        replace(ones[10], geometries_wkb=(empty,), batch_id="empty"),
        *ones[11:15],
        replace(ones[15], geometries_wkb=(nan,), batch_id="nan"),
        replace(ones[16], geometries_wkb=(far,), batch_id="far"),
        *ones[17:],
    ]
    if two:
        pair = countries(base, 2, start=40, batch_id="two")
        out[12:12] = [pair, replace(pair, geometries_wkb=(pair.geometries_wkb[0], empty),
                                    batch_id="two-empty")]  # fmt: skip
    return out


@pytest.mark.parametrize("two", [False, True])
def test_group_tallies_are_stop40s_and_decisions_the_batches_own(
    two: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    batches = _batches(two)
    shared = SharedFacts(batches)
    like = BatchFacts(batches[0])
    evaluate_versions(like, VERSIONS, AT)
    shared.compute(like)
    old = _stop40_tallies(shared.facts, shared.starts)
    of_shown = Bounds.of_shown.__func__  # type: ignore[attr-defined]
    calls: list[int] = []

    def counting(cls: type[Bounds], bounds: np.ndarray, shown: np.ndarray) -> Bounds:
        calls.append(len(bounds))
        return of_shown(cls, bounds, shown)

    monkeypatch.setattr(Bounds, "of_shown", classmethod(counting))
    new = measure_group(EXTENT, V1, shared.facts, shared.starts, AT)
    monkeypatch.undo()
    assert repr(new) == repr(old)
    assert sum(t is None for t in new) >= 2  # the NaN and the far batch: measured alone
    passing = sum(t is not None for t in new)
    if two:  # every batch through of_shown, as in stop 40
        assert len(calls) == passing
        assert any(t is not None and t["count"] == 2 for t in new)
    else:  # only the empty polygon's NaN row: of_shown's
        assert calls == [1]
    empty = new[next(i for i, b in enumerate(batches) if b.batch_id == "empty")]
    assert empty is not None and empty["count"] == 1  # inside, its envelope of_shown's
    decisions = evaluate_group(batches, VERSIONS, now=AT)
    assert [repr(d) for d in decisions] == [repr(evaluate(b, VERSIONS, now=AT)) for b in batches]
    assert KINDS["extent"].measure_group is measure_group
