"""Kind ``extent``: the share of features covered by a region, in the contract CRS (pure).

A feature counts as outside when it is missing or non-finite (an empty geometry counts as
inside: the empty point set lies in every region, and whether empties may be sent is the
geometry_type clause's ``allow_empty``), when some coordinate lies outside the declared
CRS's area of use (tested before reprojection: ``measured.outside_area_of_use``), or when
it cannot be reprojected to the contract CRS (``measured.not_reprojectable``).
``measured.bounds`` are in ``bounds_crs`` units. A file's bbox covering column that
does not bound its geometries is reported (``measured.covering_bbox_disagrees``) without
breaking the clause. A broken clause takes a second pass for its diagnoses
(:func:`measure_diagnosis`, on the batch's evenly spaced sample). The wording of the span
and of these notes is :mod:`worker.core.clauses.diagnose_notes`.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

import numpy as np
import shapely

from worker.core._util.jsonsafe import finite_json
from worker.core.clauses.base import (
    ClauseKind,
    KeptOf,
    SecondPass,
    clause_result,
    crs_units,
    offenders_of,
    percents,
    round10,
)
from worker.core.clauses.diagnose import diagnoses_of, names_candidates
from worker.core.clauses.diagnose_notes import placement_notes, shown_span
from worker.core.clauses.diagnose_readings import sampled_facts, sampled_rows, sampled_tally
from worker.core.clauses.diff import Diff
from worker.core.clauses.extent_group import Params, group_pass, measure_group, passing_result
from worker.core.clauses.extent_group import extent_region as _extent_region
from worker.core.clauses.region import compare_region, contract_crs, unplaceable, whole_batch_break
from worker.core.clauses.tally import Bounds, First, Tally
from worker.core.facts.batch import BatchFacts
from worker.core.model import Clause, ClauseResult, Contract
from worker.core.spatial import (
    covered_mask,
    crs_label,
)

__all__ = ["KIND", "Params", "measure_diagnosis", "measure_sampled", "needs_diagnosis"]


def measure(clause: Clause, contract: Contract, facts: BatchFacts, now: datetime) -> Tally:
    """The tally of ``facts``: counts, the envelopes of the features shown (contract CRS)
    and of the usable ones (as declared), the first bbox-covering disagreements and the
    offenders (see the module's docstring)."""
    crs, label = contract_crs(KIND.params(clause).crs, contract, facts)
    if facts.edges_problem is not None or unplaceable(facts, crs):
        return {"count": facts.count}  # rendered as a break of the whole batch
    region = _extent_region(clause, crs)
    as_stored = crs is None or facts.keeps_crs(crs)
    geoms: Any
    if crs is None or as_stored:
        # the geometries are built only if the region needs them (a batch of points is
        # decided on its coordinates)
        geoms, usable = (lambda: facts.geometries), facts.usable
    else:
        geoms, usable = facts.in_crs(crs)
    beyond = facts.outside_area_of_use & facts.usable
    failed = facts.reprojection_failed(crs) if crs is not None else np.zeros(facts.count, bool)
    shown = usable & ~beyond
    # envelopes of the geometries tested (the facts' own when nothing was reprojected)
    with np.errstate(invalid="ignore"):
        fbounds = (
            facts.bounds
            if as_stored
            else np.asarray(shapely.bounds(geoms), dtype=float).reshape(facts.count, 4)
        )
    env = facts.envelope if as_stored and not beyond.any() else None
    fast = env is not None and env[0] < env[2] and env[1] < env[3]
    if env is not None and fast:
        # every feature shown, as stored: the coordinate arrays' envelope is their bounds,
        # and a region covering it covers every feature (no test per feature)
        inside = (
            shown
            if region.covers(shapely.box(*env))
            else covered_mask(geoms, shown, region, fbounds)
        )
        bounds = Bounds.of_box(env)
    else:
        inside = covered_mask(geoms, shown, region, fbounds)
        bounds = Bounds.of_shown(fbounds, shown)
    # the empty point set lies in every region: whether empties may be sent is the
    # geometry_type clause's (allow_empty), so one empty feature is reported once, and the
    # extent clause means the same whatever the contract's other clauses say
    inside = inside | (facts.parsed & facts.is_empty)
    disagree = np.flatnonzero(facts.covering_bbox_disagrees)
    declared_label = (
        crs_label(facts.declared_crs) if facts.declared_crs is not None else "the declared CRS"
    )

    def why_outside(i: int) -> Any:
        if not facts.parsed[i]:
            return "missing or unparseable geometry"
        if facts.has_nonfinite[i]:
            return "non-finite coordinate (NaN or inf)"
        if beyond[i]:
            return f"outside the area of use of {declared_label}"
        if not usable[i]:
            return f"could not be reprojected from {declared_label} to {label}"
        return [round10(b) for b in fbounds[i]]

    offenders = offenders_of(
        facts,
        contract,
        ~inside,
        why_outside,
        f"bounds [minx, miny, maxx, maxy] in {label} ({crs_units(crs)}), or why the feature "
        "counts outside",
    )
    return {
        "count": facts.count,
        "inside": int(np.count_nonzero(inside)),
        "bounds": bounds,
        "raw_bounds": (
            bounds
            if fast or (fbounds is facts.bounds and not beyond.any())  # the same rows
            else Bounds.of_shown(facts.bounds, facts.usable)
        ),
        "beyond": int(np.count_nonzero(beyond)),
        "failed": int(np.count_nonzero(failed & ~beyond)),
        "disagree": int(disagree.size),
        "disagree_first": First(tuple(facts.offset + int(i) for i in disagree[:5]), 5),
        "offenders": offenders,
    }


def needs_diagnosis(clause: Clause, tally: Tally) -> bool:
    """The extent clause of ``tally`` broke for its fraction inside, so its diagnoses
    (:func:`worker.core.clauses.diagnose_readings.diagnose_tally`) are wanted."""
    if "inside" not in tally:
        return False
    return _inside_fraction(tally) < float(KIND.params(clause).min_fraction_inside)


def _inside_fraction(tally: Tally) -> float:
    """The share of features inside the extent in a (merged) tally: 1.0 of none."""
    count = tally["count"]
    return float(tally["inside"]) / count if count else 1.0


def measure_diagnosis(
    clause: Clause, contract: Contract, facts: BatchFacts, now: datetime, first: Tally
) -> Tally:
    """The tally from which the diagnoses of a broken extent clause are decided, measured
    on the batch's evenly spaced sample
    (:func:`worker.core.clauses.diagnose_readings.diagnose_tally`); ``facts`` may be a chunk
    of a batch whose first pass merged to ``first`` (its ``count`` features). The
    candidate CRSs' readings (a reprojection of the sample from each) are measured only
    when the diagnoses may name one (:func:`~worker.core.clauses.diagnose.names_candidates`:
    most features outside): with 99% inside they were most of the diagnosis, never read."""
    sampled = sampled_facts(facts, int(first["count"]))
    return measure_sampled(clause, contract, sampled, now, KeptOf(facts.count, first))


def measure_sampled(
    clause: Clause, contract: Contract, facts: BatchFacts, now: datetime, kept: KeptOf
) -> Tally:
    """:func:`measure_diagnosis` of a chunk of ``kept.of`` features from ``facts`` holding
    its sampled rows alone (:func:`~worker.core.clauses.diagnose_readings.sampled_rows`)."""
    crs, _ = contract_crs(KIND.params(clause).crs, contract, facts)
    region = _extent_region(clause, crs)
    wanted = names_candidates(_inside_fraction(kept.first))
    return {"diagnosis": sampled_tally(facts, region, crs, kept.of, candidates=wanted)}


def render(
    clause: Clause, contract: Contract, facts: BatchFacts, tally: Tally, now: datetime
) -> ClauseResult:
    """The result from the merged tally; ``facts`` give the metadata (a batch wholly inside
    gets an earlier equal pass with its own bounds: :func:`passing_result`)."""
    return passing_result(clause, contract, facts, tally, _rendered)


def _rendered(clause: Clause, contract: Contract, facts: BatchFacts, tally: Tally) -> ClauseResult:
    """:func:`render`, rendered."""
    p: Params = KIND.params(clause)
    crs, label = contract_crs(p.crs, contract, facts)
    min_frac = float(p.min_fraction_inside)
    expected = _expected(clause, label)
    count = int(tally["count"])
    whole = whole_batch_break(clause, facts, crs, label, expected, count)
    if whole is not None:
        return whole
    if "inside" not in tally:  # an unplaceable batch without features
        tally = {**tally, **_EMPTY_EXTENT}
    frac = _inside_fraction(tally)
    ok = frac >= min_frac
    outside = count - round(frac * count)
    bounds, bounds_crs, spanned = shown_span(tally, facts.declared_crs, label)
    measured: dict[str, Any] = {
        "fraction_inside": frac,
        "features": count,
        "outside": outside,
        "bounds": None if bounds is None else [float(b) for b in bounds],
        "bounds_crs": bounds_crs,
    }
    pct, min_pct = percents(frac, min_frac)
    message = (
        f"{pct} of {count} features inside the extent in {label}, "
        f"{outside} outside (expected >= {min_pct})"
    )
    if not ok and bounds is not None and np.isfinite(bounds).all():
        unit = crs_units(crs) if bounds_crs == label else "units of " + bounds_crs
        message += (
            f"; {spanned} x {bounds[0]:.6g} .. {bounds[2]:.6g}, y {bounds[1]:.6g} .. "
            f"{bounds[3]:.6g} ({unit})"
        )
    message += placement_notes(facts, tally, crs, label, measured)
    diagnoses: list[str] = []
    if not ok and "diagnosis" in tally:
        region = _extent_region(clause, crs)
        diagnoses = diagnoses_of(
            tally["diagnosis"], facts, region, crs, label, min_frac, inside_frac=frac
        )
    return clause_result(clause, ok, measured, expected, message, diagnoses, tally["offenders"],
                         expected_is_finite=True)  # fmt: skip


def _expected(clause: Clause, label: str) -> dict[str, Any]:
    """The ``expected`` value of ``clause``'s results in the CRS ``label`` as finite JSON,
    built once per clause and label (kept on the clause, as its parameters) and shared,
    read only, by every result: it was built and walked into JSON on every event."""
    kept: dict[str, dict[str, Any]] = clause.__dict__.setdefault(_EXPECTED, {})
    out = kept.get(label)
    if out is None:
        p: Params = KIND.params(clause)
        if len(kept) >= 16:  # labels are the few CRSs a layer's batches come in
            kept.clear()
        out = kept[label] = finite_json({
            "region": p.region,
            "crs": label,
            "min_fraction_inside": float(p.min_fraction_inside),
            "tolerance": float(p.tolerance or 0.0),
        })  # fmt: skip
    return out


#: Where :func:`_expected` keeps its values (in the clause's ``__dict__``).
_EXPECTED = "_extent_expected"


_EMPTY_EXTENT: dict[str, Any] = {
    "inside": 0,
    "bounds": Bounds(None),
    "raw_bounds": Bounds(None),
    "beyond": 0,
    "failed": 0,
    "disagree": 0,
    "disagree_first": First((), 5),
    "offenders": None,
}


def compare(old: Params, new: Params, diff: Diff) -> None:
    """The region as :func:`worker.core.clauses.region.compare_region`; a higher
    ``min_fraction_inside`` or a lower ``tolerance`` is stricter."""
    compare_region(KIND.name, (old.region, old.crs), (new.region, new.crs), diff)
    diff.bound(
        "min_fraction_inside",
        old.min_fraction_inside,
        new.min_fraction_inside,
        stricter_when="higher",
    )
    diff.bound("tolerance", old.tolerance, new.tolerance, stricter_when="lower")


def brief(measured: Any) -> str:
    """``12 of 300 features outside``."""
    if not isinstance(measured, Mapping) or "outside" not in measured:
        return ""
    return f"{measured['outside']} of {measured.get('features', '?')} features outside"


KIND = ClauseKind(
    "extent",
    Params,
    measure,
    render,
    compare,
    brief,
    second_pass=SecondPass(needs_diagnosis, measure_diagnosis, sampled_rows, measure_sampled),
    measure_group=measure_group,
    group_pass=group_pass,
)
