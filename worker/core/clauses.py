"""One small evaluator per clause kind (DESIGN.md section 3), each -> ClauseResult.

Every evaluator has the signature ``(clause, contract, facts, now) -> ClauseResult`` and
reads only the shared :class:`worker.core.facts.BatchFacts`, so N versions cost one parse.
Spatial clauses measure ``east_north`` geometries in the contract CRS: the clause's ``crs``
parameter, else the ``expect`` of the contract's crs clause, else the batch's declared CRS.
``measured``/``expected`` are JSON-compatible. :data:`EVALUATORS` maps kind -> evaluator.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Callable
from datetime import datetime, timezone
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import shapely
from pyproj import CRS

from worker.core.diagnose import diagnose_extent
from worker.core.durations import parse_duration_s
from worker.core.echo import clip
from worker.core.facts import GEOMETRY_TYPES, BatchFacts
from worker.core.jsonsafe import finite_json
from worker.core.memo import identity_memo
from worker.core.model import (
    MAX_OFFENDERS,
    VALUE_TYPES_KEY,
    Clause,
    ClauseResult,
    Contract,
    Offender,
    Offenders,
)
from worker.core.spatial import (
    area_m2_or_units,
    area_of_use,
    covered_mask,
    crs_equivalent,
    crs_label,
    region_geometry,
    resolve_crs,
)

__all__ = [
    "EVALUATORS",
    "GEOMETRY_TYPE_IDS",
    "MAX_OFFENDER_VALUE_CHARS",
    "Evaluator",
    "contract_crs",
    "offenders_of",
]

Evaluator = Callable[[Clause, Contract, BatchFacts, datetime], ClauseResult]

GEOMETRY_TYPE_IDS: dict[str, int] = {
    "Point": 0,
    "LineString": 1,
    "LinearRing": 2,
    "Polygon": 3,
    "MultiPoint": 4,
    "MultiLineString": 5,
    "MultiPolygon": 6,
    "GeometryCollection": 7,
}
_MISSING_TYPE = "missing or unparseable"


#: Longest echo of one offending feature's text value (a domain code, a GEOS reason).
MAX_OFFENDER_VALUE_CHARS = 200


def _result(
    clause: Clause,
    ok: bool,
    measured: Any,
    expected: Any,
    message: str,
    diagnoses: Any = (),
    offenders: Offenders | None = None,
) -> ClauseResult:
    return ClauseResult(
        name=clause.name,
        kind=clause.kind,
        result="pass" if ok else "break",
        on_break=clause.on_break,
        measured=finite_json(measured),
        expected=finite_json(expected),
        message=message,
        diagnoses=tuple(diagnoses),
        offenders=offenders,
    )


def offenders_of(
    facts: BatchFacts,
    contract: Contract,
    mask: np.ndarray,
    value: Callable[[int], Any],
    measure: str,
) -> Offenders | None:
    """The offending features of ``mask`` (bool (N,)): the first :data:`MAX_OFFENDERS` in
    batch order with their feature ids (:meth:`BatchFacts.feature_ids` with the contract's
    ``id_column``) and ``value(index)`` (JSON-compatible; text clipped to
    :data:`MAX_OFFENDER_VALUE_CHARS`), and the total. None when no feature offends."""
    idx = np.flatnonzero(np.asarray(mask, dtype=bool))
    if idx.size == 0:
        return None
    ids = facts.feature_ids(contract.id_column)
    feats = []
    for i in idx[:MAX_OFFENDERS]:
        v = value(int(i))
        if isinstance(v, str):
            v = clip(v, MAX_OFFENDER_VALUE_CHARS)
        feats.append(Offender(int(i), ids[int(i)], finite_json(v)))
    return Offenders(int(idx.size), tuple(feats), measure)


def _units(crs: CRS | None) -> str:
    """The unit of a CRS's coordinates in words: ``degrees`` or the first axis's unit
    (``metre``, ``US survey foot``); ``CRS units`` when unknown."""
    if crs is None:
        return "CRS units"
    if crs.is_geographic:
        return "degrees"
    axes = crs.axis_info
    return axes[0].unit_name if axes and axes[0].unit_name else "CRS units"


def _round(v: float) -> float:
    return float(f"{v:.10g}")


def contract_crs(clause: Clause, contract: Contract, facts: BatchFacts) -> tuple[CRS | None, str]:
    """The CRS a spatial clause's region is written in, and a label for messages.

    The clause's ``crs``, else the contract's crs clause ``expect``, else the batch's declared
    CRS (None when that is missing too). Raises CrsError for an unresolvable contract CRS.
    """
    text = clause.params.get("crs")
    if text is None:
        text = next((c.params.get("expect") for c in contract.clauses if c.kind == "crs"), None)
    if text is None:
        crs = facts.declared_crs
        return crs, crs_label(crs) if crs is not None else "undeclared CRS"
    crs = resolve_crs(text)
    return crs, text if isinstance(text, str) and len(text) <= 40 else crs_label(crs)


def check_crs(clause: Clause, contract: Contract, facts: BatchFacts, now: datetime) -> ClauseResult:
    expect = clause.params["expect"]
    declared = facts.batch.declared_crs
    if facts.declared_crs is None:
        why = facts.declared_crs_error or "the batch declares no CRS"
        return _result(clause, False, declared, expect, f"CRS expected {expect}: {why}")
    ok = crs_equivalent(facts.declared_crs, expect)
    label = crs_label(facts.declared_crs)
    verb = "is equivalent to" if ok else "is not equivalent to"
    return _result(clause, ok, label, expect, f"declared CRS {label} {verb} {expect}")


def check_axis_order(
    clause: Clause, contract: Contract, facts: BatchFacts, now: datetime
) -> ClauseResult:
    expect, actual = clause.params["expect"], facts.batch.axis_order
    ok = actual == expect
    return _result(clause, ok, actual, expect, f"axis order {actual} (expected {expect})")


def _edges_break(clause: Clause, facts: BatchFacts, expected: Any) -> ClauseResult | None:
    """A break when the batch's edge model cannot be honoured (never the planar reading)."""
    problem = facts.edges_problem
    if problem is None:
        return None
    measured = {"edges": facts.batch.edges, "features": facts.count}
    return _result(clause, False, measured, expected, problem)


def _unplaceable_break(
    clause: Clause, facts: BatchFacts, crs: CRS | None, label: str, expected: Any
) -> ClauseResult | None:
    """A break when the region is in a CRS the contract names but the batch declares no
    CRS (or one that does not resolve): its coordinates cannot be placed in the region's
    CRS, and reading them as if they were would judge numbers of unknown meaning."""
    if crs is None or facts.declared_crs is not None or facts.count == 0:
        return None
    why = facts.declared_crs_error or "the batch declares no CRS"
    measured = {"declared_crs": facts.batch.declared_crs, "features": facts.count}
    message = (
        f"{why}: its coordinates cannot be placed in {label}, the CRS of the region; "
        "declare the batch's CRS (GeoParquet `crs` in the geo metadata, `--crs`, or the "
        "event's declared_crs)"
    )
    return _result(clause, False, measured, expected, message)


def _total_bounds(bounds: np.ndarray) -> list[float] | None:
    """``shapely.total_bounds`` from per-feature bounds (float (M, 4)); rows of NaN (empty
    geometries) are left out; None when none is left."""
    rows = bounds[~np.isnan(bounds).any(axis=1)]
    if not len(rows):
        return None
    return [
        float(rows[:, 0].min()),
        float(rows[:, 1].min()),
        float(rows[:, 2].max()),
        float(rows[:, 3].max()),
    ]


@identity_memo(maxsize=512)
def _extent_region(clause: Clause, crs: CRS | None) -> shapely.Geometry:
    """The extent clause's region in ``crs``, widened by its ``tolerance`` (mitred, so a
    box stays a box) and prepared; built once per (clause, CRS), not per event."""
    region = region_geometry(clause.params["region"], crs)
    tolerance = float(clause.params.get("tolerance", 0.0) or 0.0)
    if tolerance > 0:
        region = region.buffer(tolerance, join_style="mitre")
    shapely.prepare(region)
    return region


@identity_memo(maxsize=512)
def _coverage_region(clause: Clause, crs: CRS | None) -> tuple[shapely.Geometry, float]:
    """The coverage clause's region in ``crs`` and its area (see
    :func:`worker.core.spatial.area_m2_or_units`), once per (clause, CRS)."""
    region = region_geometry(clause.params["region"], crs)
    return region, area_m2_or_units(region, crs)


def _count_phrase(n: int, what: str) -> str:
    return f"{n} {'feature' if n == 1 else 'features'} {what}"


def check_extent(
    clause: Clause, contract: Contract, facts: BatchFacts, now: datetime
) -> ClauseResult:
    """Share of features covered by the region (``min_fraction_inside``), in the contract CRS.

    A feature counts as outside when it is missing, empty or non-finite, when some
    coordinate lies outside the declared CRS's area of use (tested before reprojection:
    ``measured.outside_area_of_use``), or when it cannot be reprojected to the contract
    CRS (``measured.not_reprojectable``). ``measured.bounds`` are in ``bounds_crs`` units.
    A GeoParquet bbox covering column that does not bound its geometries is reported
    (``measured.covering_bbox_disagrees``) without breaking the clause.
    """
    p = clause.params
    crs, label = contract_crs(clause, contract, facts)
    min_frac = float(p.get("min_fraction_inside", 1.0))
    tolerance = float(p.get("tolerance", 0.0) or 0.0)
    expected = {
        "region": p["region"],
        "crs": label,
        "min_fraction_inside": min_frac,
        "tolerance": tolerance,
    }
    edges = _edges_break(clause, facts, expected)
    if edges is not None:
        return edges
    unplaceable = _unplaceable_break(clause, facts, crs, label, expected)
    if unplaceable is not None:
        return unplaceable
    region = _extent_region(clause, crs)
    geoms, usable = facts.in_crs(crs) if crs is not None else (facts.geometries, facts.usable)
    beyond = facts.outside_area_of_use & facts.usable
    src = facts.declared_crs
    moved = crs is not None and src is not None and not crs_equivalent(src, crs)
    failed = facts.reprojection_failed(crs) if crs is not None else np.zeros(facts.count, bool)
    # envelopes of the geometries tested (the facts' own when nothing was reprojected)
    with np.errstate(invalid="ignore"):
        fbounds = (
            facts.bounds
            if geoms is facts.geometries
            else np.asarray(shapely.bounds(geoms), dtype=float).reshape(facts.count, 4)
        )
    inside = covered_mask(geoms, usable & ~beyond, region, fbounds)
    frac = float(np.count_nonzero(inside)) / facts.count if facts.count else 1.0
    ok = frac >= min_frac
    outside = facts.count - round(frac * facts.count)
    shown = usable & ~beyond
    bounds = _total_bounds(fbounds[shown]) if shown.any() else None
    bounds_crs = label
    if bounds is None and facts.usable.any():
        # reprojection from the declared CRS failed (e.g. feet declared as degrees) or
        # every feature is beyond the CRS's area of use: the raw bounds as declared
        # still tell what the batch holds
        bounds = shapely.total_bounds(facts.geometries[facts.usable])
        declared = facts.declared_crs
        bounds_crs = crs_label(declared) if declared is not None else "as declared"
    n_beyond, n_failed = int(np.count_nonzero(beyond)), int(np.count_nonzero(failed & ~beyond))
    disagree = np.flatnonzero(facts.covering_bbox_disagrees)
    measured: dict[str, Any] = {
        "fraction_inside": frac,
        "features": facts.count,
        "outside": outside,
        "bounds": None if bounds is None else [float(b) for b in bounds],
        "bounds_crs": bounds_crs,
    }
    message = (
        f"{frac:.1%} of {facts.count} features inside the extent in {label}, "
        f"{outside} outside (expected >= {min_frac:.1%})"
    )
    if not ok and bounds is not None and np.isfinite(bounds).all():
        unit = (
            "degrees"
            if bounds_crs == label and crs is not None and crs.is_geographic
            else (_units(crs) if bounds_crs == label else "units of " + bounds_crs)
        )
        message += (
            f"; the features span x {bounds[0]:.6g} .. {bounds[2]:.6g}, y {bounds[1]:.6g} .. "
            f"{bounds[3]:.6g} ({unit})"
        )
    if facts.batch.edges == "spherical":
        message += "; edges read as great-circle arcs (GeoParquet edges: spherical)"
    declared_label = crs_label(facts.declared_crs) if facts.declared_crs is not None else ""
    if n_beyond:
        aou = area_of_use(facts.declared_crs) if facts.declared_crs is not None else None
        where = f" ({aou.text})" if aou is not None else ""
        measured["outside_area_of_use"] = n_beyond
        message += (
            f"; {_count_phrase(n_beyond, 'outside the area of use of')} {declared_label}"
            f"{where}, counted outside" + (" whatever reprojection makes of them" if moved else "")
        )
    if n_failed:
        measured["not_reprojectable"] = n_failed
        message += (
            f"; {_count_phrase(n_failed, 'could not be reprojected')} from {declared_label} "
            f"to {label} (non-finite result), counted outside"
        )
    if disagree.size:
        measured["covering_bbox_disagrees"] = int(disagree.size)
        first = ", ".join(str(int(i)) for i in disagree[:5])
        message += (
            f"; warning: the GeoParquet bbox covering column does not bound "
            f"{_count_phrase(int(disagree.size), f'(index {first})')}: readers filtering "
            "by it would skip them"
        )
    diagnoses = [] if ok else diagnose_extent(facts, region, crs, label, min_frac)
    declared_label = declared_label or "the declared CRS"

    def why_outside(i: int) -> Any:
        if not facts.parsed[i]:
            return "missing or unparseable geometry"
        if facts.is_empty[i]:
            return "empty geometry"
        if facts.has_nonfinite[i]:
            return "non-finite coordinate (NaN or inf)"
        if beyond[i]:
            return f"outside the area of use of {declared_label}"
        if not usable[i]:
            return f"could not be reprojected from {declared_label} to {label}"
        return [_round(b) for b in fbounds[i]]

    offenders = offenders_of(
        facts,
        contract,
        ~inside,
        why_outside,
        f"bounds [minx, miny, maxx, maxy] in {label} ({_units(crs)}), or why the feature "
        "counts outside",
    )
    return _result(clause, ok, measured, expected, message, diagnoses, offenders)


def check_geometry_type(
    clause: Clause, contract: Contract, facts: BatchFacts, now: datetime
) -> ClauseResult:
    """Every geometry's type, with its coordinate dimension, is one of ``allowed``.

    Names are the GeoParquet 1.1 ``geometry_types`` vocabulary (:data:`GEOMETRY_TYPES`): a
    bare name (``Polygon``) is XY only; ``Polygon Z``, ``Polygon M`` and ``Polygon ZM`` must
    be listed to be allowed. ``measured`` maps each disallowed type name (same vocabulary;
    ``missing or unparseable`` for a feature without a geometry, ``empty`` for empties of an
    allowed type when ``allow_empty`` is false) to its feature count.
    """
    allowed = list(clause.params["allowed"])
    unknown = [a for a in allowed if a not in GEOMETRY_TYPES]
    if unknown:
        raise ValueError(f"unknown geometry type names {unknown}; use {list(GEOMETRY_TYPES)}")
    allow_empty = bool(clause.params.get("allow_empty", False))
    names = facts.type_names
    type_ok = np.isin(names, np.asarray(allowed, dtype=object))
    bad = np.asarray([_MISSING_TYPE if n is None else n for n in names[~type_ok]], dtype=object)
    shown_names, counts = np.unique(bad, return_counts=True) if bad.size else ((), ())
    measured: dict[str, int] = {str(k): int(c) for k, c in zip(shown_names, counts, strict=True)}
    n_empty = int(np.count_nonzero(facts.is_empty & type_ok))
    if n_empty and not allow_empty:
        measured["empty"] = n_empty
    ok = not measured
    shown = ", ".join(f"{k}: {v}" for k, v in measured.items())
    empties = "allowed" if allow_empty else "not allowed"
    rule = f"allowed: {', '.join(allowed)}; empty geometries {empties}"
    if ok:
        message = f"every geometry is of an allowed type ({rule})"
    else:
        message = f"disallowed geometries {shown} ({rule})"
    dims = [k for k in measured if " " in k and k.split(" ")[0] in allowed and k in GEOMETRY_TYPES]
    if dims:
        message += (
            f"; a bare type name allows XY coordinates only: list {', '.join(dims)} in "
            "allowed to accept them, or have the producer drop the extra dimension"
        )
    expected = {"allowed": allowed, "allow_empty": allow_empty}
    empty_bad = facts.is_empty & type_ok & (not allow_empty)

    def type_of(i: int) -> Any:
        if empty_bad[i]:
            return f"empty {names[i]}"
        return _MISSING_TYPE if names[i] is None else str(names[i])

    offenders = offenders_of(
        facts, contract, ~type_ok | empty_bad, type_of, "geometry type (GeoParquet name)"
    )
    return _result(clause, ok, measured, expected, message, offenders=offenders)


def check_validity(
    clause: Clause, contract: Contract, facts: BatchFacts, now: datetime
) -> ClauseResult:
    limit = float(clause.params.get("max_invalid_fraction", 0.0))
    frac = facts.invalid_count / facts.count if facts.count else 0.0
    ok = frac <= limit
    reasons = [{"index": i, "reason": r} for i, r in facts.invalid_reasons]
    measured = {
        "invalid_fraction": frac,
        "invalid": facts.invalid_count,
        "features": facts.count,
        "reasons": reasons,
    }
    shown = "; ".join(f"feature {i}: {r}" for i, r in facts.invalid_reasons)
    message = (
        f"{facts.invalid_count} of {facts.count} geometries invalid ({frac:.1%}, expected "
        f"<= {limit:.1%})" + (f": {shown}" if shown else "")
    )
    offenders = offenders_of(
        facts, contract, ~facts.is_valid, facts.invalid_reason, "why the geometry is invalid"
    )
    return _result(
        clause, ok, measured, {"max_invalid_fraction": limit}, message, offenders=offenders
    )


def _family(t: pa.DataType) -> str:
    if pa.types.is_boolean(t):
        return "bool"
    if pa.types.is_integer(t):
        return "int"
    if pa.types.is_floating(t):
        return "float"
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return "str"
    return str(t)


def _key_family(v: Any) -> str:
    return {bool: "bool", int: "int", float: "float", str: "str"}.get(type(v), type(v).__name__)


#: Columns up to this many rows are checked against a domain with a Python set (per
#: clause, built once) instead of pyarrow compute, whose per-call setup (a hash table of
#: every code, on every call) dominated one-feature batches.
SMALL_COLUMN_ROWS = 64


@identity_memo(maxsize=512)
def _domain_keys(clause: Clause, family: str) -> frozenset[Any]:
    """The domain codes of ``clause`` a column of ``family`` (``str`` or ``int``) can hold."""
    return frozenset(k for k in clause.params["values"] if _key_family(k) == family)


def _unknown_small(col: pa.Array, keys: frozenset[Any]) -> tuple[np.ndarray, list[Any]]:
    """bool (N,) of non-null values not in ``keys``, and the first 10 distinct of them in
    order of appearance (as ``pc.unique`` gives them)."""
    pyvals = col.to_pylist()
    mask = np.fromiter((v is not None and v not in keys for v in pyvals), bool, len(pyvals))
    distinct = dict.fromkeys(v for v, m in zip(pyvals, mask, strict=True) if m)
    return mask, list(distinct)[:10]


def _unknown_arrow(col: pa.Array, values: Any, family: str) -> tuple[np.ndarray, list[Any], int]:
    """As :func:`_unknown_small` with pyarrow compute (any size, any family), plus the
    count of unknown values."""
    keys = [k for k in values if _key_family(k) == family]
    if family == "float" and not keys and any(_key_family(k) == "int" for k in values):
        # JSON has one number type (a column of 1 and 2.0 arrives as floats): whole
        # numbers match integer codes, 2.5 does not; strings never match numbers
        whole = pc.and_(pc.is_finite(col), pc.equal(col, pc.floor(col)))  # inf is no code
        col_int = pc.if_else(whole, col, pa.scalar(None, col.type)).cast(pa.int64())
        ints = [k for k in values if _key_family(k) == "int"]
        known = pc.and_(whole, pc.is_in(col_int, value_set=pa.array(ints, type=pa.int64())))
        known = pc.fill_null(known, False)
    elif keys:
        key_type = pa.int64() if family == "int" else col.type
        col_cmp = col.cast(pa.int64()) if family == "int" else col
        known = pc.is_in(col_cmp, value_set=pa.array(keys, type=key_type))
    else:  # no key of the column's type: every non-null value is unknown (no coercion)
        known = pa.array(np.zeros(len(col), dtype=bool))
    unknown_mask = pc.and_(pc.invert(known), pc.is_valid(col))
    n_unknown = int(pc.sum(unknown_mask).as_py() or 0)
    unknown = pc.unique(col.filter(unknown_mask)).to_pylist()[:10]
    mask = np.asarray(unknown_mask.to_numpy(zero_copy_only=False), dtype=bool)
    return mask, unknown, n_unknown


def check_domain(
    clause: Clause, contract: Contract, facts: BatchFacts, now: datetime
) -> ClauseResult:
    column, values = clause.params["column"], clause.params["values"]
    allow_null = bool(clause.params.get("allow_null", False))
    expected = {"column": column, "values": list(values), "allow_null": allow_null}
    table = facts.batch.attributes
    if column not in table.column_names:
        measured = {"missing_column": column, "columns": list(table.column_names)}
        msg = f"domain column {column!r} is missing from the batch attributes"
        return _result(clause, False, measured, expected, msg)
    col = table.column(column)
    if pa.types.is_dictionary(col.type):
        col = col.cast(col.type.value_type)
    family = _family(col.type)
    if family in ("str", "int") and len(col) <= SMALL_COLUMN_ROWS:
        unknown_np, unknown = _unknown_small(col, _domain_keys(clause, family))
        n_unknown = int(np.count_nonzero(unknown_np))
    else:
        unknown_np, unknown, n_unknown = _unknown_arrow(col, values, family)
    n_null = int(col.null_count)
    ok = n_unknown == 0 and (allow_null or n_null == 0)
    measured = {"unknown": unknown, "unknown_count": n_unknown, "null_count": n_null}
    codes = list(values)
    shown_codes = ", ".join(repr(c) for c in codes[:10]) + (
        f", ... ({len(codes)} codes)" if len(codes) > 10 else ""
    )
    null_rule = "allowed" if allow_null else "not allowed"
    nulls = f"{n_null} {'null' if n_null == 1 else 'nulls'} ({null_rule})"
    if ok:
        message = f"every value of column {column!r} ({col.type}) is a domain code; {nulls}"
    else:
        found = ", ".join(clip(repr(u), 80) for u in unknown) + (
            ", ..." if n_unknown > len(unknown) else ""
        )
        message = (
            f"column {column!r} ({col.type}): {n_unknown} "
            f"{'value' if n_unknown == 1 else 'values'} not in the domain"
            + (f" ({found})" if found else "")
            + f"; {nulls}; the codes are {shown_codes}"
        )
    near = normalisation_mismatches(unknown, values)
    if near:
        message += "; " + "; ".join(near)
    bad = unknown_np
    if not allow_null:
        bad = bad | np.asarray(pc.is_null(col).to_numpy(zero_copy_only=False), dtype=bool)
    raw = col.to_pylist() if bad.any() else []
    offenders = offenders_of(
        facts,
        contract,
        bad if len(bad) == facts.count else np.zeros(facts.count, dtype=bool),
        lambda i: raw[i],
        f"value of column {column!r}",
    )
    return _result(clause, ok, measured, expected, message, near, offenders)


def _form(text: str) -> str:
    for form in ("NFC", "NFD"):
        if unicodedata.is_normalized(form, text):
            return form
    return "neither NFC nor NFD"


def _code_points(text: str) -> str:
    return " ".join(f"U+{ord(ch):04X}" for ch in text)


def normalisation_mismatches(unknown: Any, codes: Any) -> list[str]:
    """Messages for unknown values that equal a domain code after Unicode normalisation.

    ``"Zu\u0308rich"`` (NFD: u + combining diaeresis) and ``"Z\u00fcrich"`` (NFC: ü) look
    identical but are different strings (Unicode Standard Annex #15); the message names both
    forms and their code points, and the fix. Only string values and string codes compare.
    """
    by_nfc: dict[str, str] = {}
    for code in codes:
        if isinstance(code, str):
            by_nfc.setdefault(unicodedata.normalize("NFC", code), code)
    out = []
    for value in unknown:
        if not isinstance(value, str):
            continue
        code = by_nfc.get(unicodedata.normalize("NFC", value))
        if code is not None and code != value:
            out.append(
                f"value {value!r} ({_form(value)}: {_code_points(value)}) differs from the code "
                f"{code!r} ({_form(code)}: {_code_points(code)}) only by Unicode "
                f"normalisation: normalise the column (or the contract) to {_form(code)}"
            )
    return out


def check_freshness(
    clause: Clause, contract: Contract, facts: BatchFacts, now: datetime
) -> ClauseResult:
    max_age = clause.params["max_age"]
    skew = clause.params.get("max_clock_skew", "PT5M")
    max_age_s, skew_s = parse_duration_s(max_age), parse_duration_s(skew)
    data_time = facts.batch.data_time
    if data_time.tzinfo is None:  # naive times are taken as UTC (the model's convention)
        data_time = data_time.replace(tzinfo=timezone.utc)
    if now.tzinfo is None:
        now = now.replace(tzinfo=timezone.utc)
    age_s = (now - data_time).total_seconds()
    ok = age_s <= max_age_s and -age_s <= skew_s
    expected = {"max_age": max_age, "max_clock_skew": skew}
    where = "in the future" if age_s < 0 else "old"
    message = (
        f"data time {data_time.isoformat()} is {abs(age_s):.0f} s {where} "
        f"(expected age <= {max_age_s:.0f} s, future skew <= {skew_s:.0f} s)"
    )
    return _result(clause, ok, age_s, expected, message)


def _coverage_by_count(clause: Clause, facts: BatchFacts, min_frac: float) -> ClauseResult:
    # Without expected_features the producer's declared feature_count is the reference.
    expected_n = int(clause.params.get("expected_features", facts.batch.feature_count))
    frac = facts.count / expected_n if expected_n else 1.0
    ok = facts.count >= min_frac * expected_n
    measured = {"features": facts.count, "fraction": frac}
    expected = {"expected_features": expected_n, "min_fraction": min_frac}
    message = (
        f"{facts.count} features = {frac:.1%} of {expected_n} expected (expected >= {min_frac:.1%})"
    )
    return _result(clause, ok, measured, expected, message)


def check_coverage(
    clause: Clause, contract: Contract, facts: BatchFacts, now: datetime
) -> ClauseResult:
    """Area of the region covered by the union of valid geometries (``min_fraction``), or
    the feature count against ``expected_features`` when there is no region.

    Areas are m² on the ellipsoid for a geographic contract CRS, CRS units² otherwise
    (``measured.unit``). Geometries are reprojected with densified edges, polar caps and
    antimeridian splits (:meth:`BatchFacts.in_crs`). Features beyond the declared CRS's
    area of use are left out when they are reprojected (reprojection can wrap them into
    range; ``measured.outside_area_of_use``); a valid feature that cannot be reprojected
    (non-finite result) breaks the clause: its area is unknown.
    """
    p = clause.params
    min_frac = float(p.get("min_fraction", 1.0))
    if "region" not in p:
        return _coverage_by_count(clause, facts, min_frac)
    crs, label = contract_crs(clause, contract, facts)
    expected = {"region": p["region"], "crs": label, "min_fraction": min_frac}
    edges = _edges_break(clause, facts, expected)
    if edges is not None:
        return edges
    unplaceable = _unplaceable_break(clause, facts, crs, label, expected)
    if unplaceable is not None:
        return unplaceable
    region, region_area = _coverage_region(clause, crs)
    geoms, usable = facts.in_crs(crs) if crs is not None else (facts.geometries, facts.usable)
    src = facts.declared_crs
    moved = crs is not None and src is not None and not crs_equivalent(src, crs)
    # only reprojection can wrap coordinates beyond the area of use into the region
    beyond = facts.outside_area_of_use & facts.is_valid & moved
    failed = (
        facts.reprojection_failed(crs) & facts.is_valid & ~beyond
        if crs is not None
        else np.zeros(facts.count, dtype=bool)
    )
    valid = usable & facts.is_valid & ~beyond  # invalid geometries are excluded, never repaired
    union = shapely.union_all(geoms[valid]) if valid.any() else None
    covered = shapely.intersection(union, region) if union is not None else None
    covered_area = area_m2_or_units(covered, crs)
    frac = covered_area / region_area if region_area > 0 else 0.0
    n_failed, n_beyond = int(np.count_nonzero(failed)), int(np.count_nonzero(beyond))
    ok = frac >= min_frac and n_failed == 0
    unit = "m²" if crs is not None and crs.is_geographic else "CRS units²"
    measured: dict[str, Any] = {
        "fraction": frac,
        "covered_area": covered_area,
        "region_area": region_area,
        "unit": unit,
    }
    message = (
        f"valid geometries cover {frac:.1%} of the region area ({covered_area:.6g} of "
        f"{region_area:.6g} {unit}, {label}; expected >= {min_frac:.1%})"
    )
    declared_label = crs_label(facts.declared_crs) if facts.declared_crs is not None else ""
    if n_beyond:
        measured["outside_area_of_use"] = n_beyond
        message += (
            f"; {_count_phrase(n_beyond, 'outside the area of use of')} {declared_label} left out"
        )
    if n_failed:
        measured["not_reprojectable"] = n_failed
        message += (
            f"; {_count_phrase(n_failed, 'could not be reprojected')} from {declared_label} "
            f"to {label} (non-finite result): the covered area is unknown"
        )
    return _result(clause, ok, measured, expected, message)


#: (batch type, contract type) pairs accepted as matching: JSON (GeoJSON) does not tell
#: 123456 from 123456.0, so an integer column satisfies a ``double`` field.
_LOSSLESS_WIDENING = {("integer", "double")}


def _type_problem(name: str, got: str, want: str, table: pa.Table) -> str:
    """Why field ``name`` of type ``got`` does not satisfy ``want``; for a column read as
    text (``mixed``, ``other``) the JSON types found in it, from its field metadata."""
    index = table.schema.get_field_index(name)
    meta = (table.schema.field(index).metadata or {}) if index >= 0 else {}
    found = meta.get(VALUE_TYPES_KEY, b"").decode("utf-8", "replace").replace(",", ", ")
    if got == "mixed":
        kinds = f" ({found})" if found else ""
        return (
            f"field {name!r} mixes value types{kinds}, read as text; expected {want}: "
            f"give the field one type in every feature"
        )
    if got == "other":
        kinds = f" ({found} values arrow cannot hold)" if found else ""
        return f"field {name!r} has a type no contract can name{kinds}, expected {want}"
    return f"field {name!r} has type {got}, expected {want}"


def check_schema(
    clause: Clause, contract: Contract, facts: BatchFacts, now: datetime
) -> ClauseResult:
    """Batch fields against ``fields`` (name, type, nullable) and ``allow_extra``.

    An ``integer`` batch field satisfies a ``double`` contract field (lossless widening);
    no other type coercion.
    """
    wanted = [
        (f["name"], f["type"], bool(f.get("nullable", False))) for f in clause.params["fields"]
    ]
    allow_extra = bool(clause.params.get("allow_extra", False))
    have = {f.name: f for f in facts.batch.schema_fields}
    table = facts.batch.attributes
    columns = set(table.column_names)
    problems: list[str] = []
    null_cols: list[tuple[str, np.ndarray]] = []
    for name, ftype, nullable in wanted:
        got = have.get(name)
        if got is None:
            problems.append(f"missing field {name!r}")
            continue
        if got.type != ftype and (got.type, ftype) not in _LOSSLESS_WIDENING:
            problems.append(_type_problem(name, got.type, ftype, table))
        if got.nullable and not nullable:
            problems.append(f"field {name!r} is nullable, expected not nullable")
        if not nullable and name in columns and table.column(name).null_count:
            problems.append(f"field {name!r} has {table.column(name).null_count} nulls")
            is_null = pc.is_null(table.column(name)).to_numpy(zero_copy_only=False)
            null_cols.append((name, np.asarray(is_null, dtype=bool)))
    if not allow_extra:
        extra = sorted(set(have) - {w[0] for w in wanted})
        problems.extend(f"extra field {name!r}" for name in extra)
    measured = {"fingerprint": facts.schema_fingerprint, "problems": problems}
    expected = {
        "fields": [{"name": n, "type": t, "nullable": b} for n, t, b in wanted],
        "allow_extra": allow_extra,
    }
    message = "schema matches" if not problems else "schema differs: " + "; ".join(problems[:5])
    offenders = None
    if null_cols and table.num_rows == facts.count:
        any_null = np.logical_or.reduce([m for _, m in null_cols])
        offenders = offenders_of(
            facts,
            contract,
            any_null,
            lambda i: [n for n, m in null_cols if m[i]],
            "non-nullable fields that are null in the feature",
        )
    return _result(clause, not problems, measured, expected, message, offenders=offenders)


def check_feature_count(
    clause: Clause, contract: Contract, facts: BatchFacts, now: datetime
) -> ClauseResult:
    """``min`` <= actual count <= ``max``; also breaks when the producer's declared
    ``feature_count`` differs from the features the batch holds (a truncated batch)."""
    lo = int(clause.params.get("min", 0))
    hi = clause.params.get("max")
    declared = facts.batch.feature_count
    ok = facts.count >= lo and (hi is None or facts.count <= int(hi))
    message = f"{facts.count} features (expected {lo} .. {'unbounded' if hi is None else hi})"
    if declared != facts.count:
        ok = False
        message += f"; the producer declared {declared} features: truncated or padded batch?"
    return _result(clause, ok, facts.count, {"min": lo, "max": hi}, message)


EVALUATORS: dict[str, Evaluator] = {
    "crs": check_crs,
    "axis_order": check_axis_order,
    "extent": check_extent,
    "geometry_type": check_geometry_type,
    "validity": check_validity,
    "domain": check_domain,
    "freshness": check_freshness,
    "coverage": check_coverage,
    "schema": check_schema,
    "feature_count": check_feature_count,
}
