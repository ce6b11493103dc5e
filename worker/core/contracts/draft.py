"""A draft contract version derived from the profile of sample batches (pure).

``contract-gate contract init`` profiles its samples (:mod:`.profile`) and hands the merged
profile here; :func:`draft_contract` turns it into a :class:`Draft`: the document's fields
and one :class:`DraftClause` per clause, each parameter with the observed figure it comes
from (rendered as YAML comments by :mod:`.draft_yaml`). A clause the samples give no
ground for (a CRS no sample states) is a :class:`Note` instead: a comment saying why it
is left to the owner. A clause the samples themselves break as drafted (invalid or missing
geometries, coordinates beyond the CRS's area of use) is drafted ``on_break: warn`` with
the observed count, so ``check`` of the samples admits them and the owner decides.
The column clauses (domains, schema) are in :mod:`.draft_columns`.
"""

from __future__ import annotations

from collections.abc import Sequence

from pyproj import CRS

from worker.core.clauses import axis_order as axis_order_kind
from worker.core.clauses import crs as crs_kind
from worker.core.clauses import extent as extent_kind
from worker.core.clauses import feature_count as feature_count_kind
from worker.core.clauses import freshness as freshness_kind
from worker.core.clauses import geometry_type as geometry_type_kind
from worker.core.clauses import validity as validity_kind
from worker.core.contracts.draft_columns import domain_clauses, plural, schema_clause
from worker.core.contracts.draft_extent import draft_region, number_text
from worker.core.contracts.draft_model import Draft, DraftClause, DraftOptions, Note, SampleInfo
from worker.core.contracts.profile import Profile
from worker.core.spatial import crs_label

__all__ = ["Draft", "DraftClause", "DraftOptions", "Note", "SampleInfo", "draft_contract"]


def _crs_text(crs: CRS) -> str:
    """The shortest spelling of ``crs`` that resolves to it (``EPSG:4326``), else WKT."""
    auth = crs.to_authority(min_confidence=90)
    if auth is not None:
        try:
            if CRS.from_user_input(f"{auth[0]}:{auth[1]}").equals(crs, ignore_axis_order=True):
                return f"{auth[0]}:{auth[1]}"
        except Exception:  # pragma: no cover - pyproj resolves its own authority codes
            pass
    return str(crs.to_wkt())


def _crs_clauses(samples: Sequence[SampleInfo], crs: CRS | None) -> list[DraftClause | Note]:
    n = len(samples)
    if crs is None:
        return [
            Note(
                (
                    f"crs and axis_order: left out: {'no sample' if n > 1 else 'the sample'} "
                    "states a CRS (nothing is guessed).",
                    'Add `- {name: srid, kind: crs, expect: "EPSG:..."}` and '
                    "`- {name: axis_order, kind: axis_order, expect: east_north}` once known;",
                    "the extent below is then in the coordinates as stored.",
                )
            )
        ]
    orders = sorted({s.axis_order for s in samples})
    stated = f"stated by {'every sample' if n > 1 else 'the sample'}: {crs_label(crs)}"
    if any(s.crs_by_format for s in samples):
        stated = f"{crs_label(crs)}: the format's default (the file writes none): confirm it"
    return [
        DraftClause("srid", crs_kind.KIND.name, (("expect", _crs_text(crs), stated),)),
        DraftClause(
            "axis_order",
            axis_order_kind.KIND.name,
            (("expect", orders[0], "as the format stores x and y (x east/longitude)"),),
        ),
    ]


def _extent_clause(profile: Profile, crs: CRS | None, margin: float) -> DraftClause | Note:
    if profile.bounds is None:
        beyond = profile.outside_area
        why = f" ({beyond} beyond the CRS's area of use: is the CRS right?)" if beyond else ""
        return Note((f"extent: left out: no sample feature has a placeable geometry{why}.",))
    r = draft_region(profile.bounds, profile.lon, crs, margin)
    nums = " ".join(number_text(v, r.decimals + 2) for v in r.observed)
    comments = [f"observed bounds (minx miny maxx maxy): {nums}"]
    if r.crosses:
        comments.append("the samples cross the antimeridian: minx > maxx, the shortest cover")
    comments.append(
        f"padded by {number_text(margin * 100, 2)} % of the width and height on each side"
        + (f"; clipped to the CRS's area of use ({', '.join(r.clipped)})" if r.clipped else "")
    )
    on_break = "halt"
    if profile.unplaced:
        comments.append(
            f"{plural(profile.unplaced, 'sample feature')} no region can hold (missing or "
            f"non-finite geometry, or beyond the CRS's area of use: {profile.outside_area}): "
            "on_break warn until you decide"
        )
        on_break = "warn"
    region = [float(number_text(v, r.decimals)) for v in r.region]
    tolerance = 10.0**-r.decimals
    params = (
        ("region", region, None),
        ("min_fraction_inside", 1.0, None),
        ("tolerance", tolerance, "one unit of the last decimal: absorbs coordinate rounding"),
    )
    return DraftClause("extent", extent_kind.KIND.name, params, tuple(comments), on_break)


def _geometry_clause(profile: Profile) -> DraftClause | Note:
    if not profile.types:
        return Note(("geometry_type: left out: no sample feature has a readable geometry.",))
    seen = ", ".join(f"{k}: {v}" for k, v in sorted(profile.types.items()))
    comments = [f"observed: {seen}"]
    on_break = "halt"
    if profile.missing:
        comments.append(
            f"{plural(profile.missing, 'feature')} without a readable geometry break this "
            "clause: on_break warn until you decide"
        )
        on_break = "warn"
    params = (
        ("allowed", sorted(profile.types), None),
        ("allow_empty", profile.empty > 0, f"observed: {profile.empty} empty"),
    )
    return DraftClause(
        "geometry_types", geometry_type_kind.KIND.name, params, tuple(comments), on_break
    )


def _validity_clause(profile: Profile) -> DraftClause:
    n = profile.invalid
    if not n:
        return DraftClause(
            "valid",
            validity_kind.KIND.name,
            (("max_invalid_fraction", 0.0, "observed: 0 invalid"),),
        )
    share = number_text(100 * n / max(profile.features, 1), 3)
    comment = f"observed: {n} of {profile.features} features invalid ({share} %)"
    return DraftClause(
        "valid",
        validity_kind.KIND.name,
        (("max_invalid_fraction", 0.0, comment),),
        (
            "the samples hold invalid features: on_break warn until you decide (fix them, or "
            "raise the fraction)",
        ),
        "warn",
    )


def _size_clause(profile: Profile) -> DraftClause:
    low, high = min(profile.counts), max(profile.counts)
    comment = (
        f"observed: {profile.features} features in {plural(len(profile.counts), 'sample')} "
        f"(fewest {low}, most {high}); drafted: half the fewest to twice the most"
    )
    return DraftClause(
        "size",
        feature_count_kind.KIND.name,
        (("min", low // 2, None), ("max", max(2 * high, 1), None)),
        (comment,),
    )


def _changelog(options: DraftOptions, samples: Sequence[SampleInfo]) -> str:
    names = ", ".join(s.name.rsplit("/", 1)[-1] for s in samples[:5])
    more = f" and {len(samples) - 5} more" if len(samples) > 5 else ""
    return (
        f"First contract for {options.layer}, drafted from {plural(len(samples), 'sample')} "
        f"({names}{more}) by `contract-gate contract init`."
    )


def draft_contract(
    samples: Sequence[SampleInfo], profile: Profile, crs: CRS | None, options: DraftOptions
) -> Draft:
    """The draft of ``options.layer``'s first version from its samples' merged profile.

    ``crs`` is the CRS every sample states (resolved), None when none states one: the
    crs and axis_order clauses are then left out and the extent is in the coordinates as
    stored.
    """
    clauses: list[DraftClause | Note] = [*_crs_clauses(samples, crs)]
    clauses.append(_extent_clause(profile, crs, options.margin))
    clauses.append(_geometry_clause(profile))
    clauses.append(_validity_clause(profile))
    clauses.extend(domain_clauses(profile, len(samples), options.max_codes))
    fresh = f"the cadence ({options.cadence}): a batch is stale after one cycle"
    clauses.append(
        DraftClause("fresh", freshness_kind.KIND.name, (("max_age", options.cadence, fresh),))
    )
    clauses.append(schema_clause(profile, len(samples)))
    clauses.append(_size_clause(profile))
    header = (
        f"Draft contract for layer {options.layer}: written by `contract-gate contract init` "
        f"from {plural(len(samples), 'sample')}, {plural(profile.features, 'feature')}.",
        "Every figure derived from the samples is in a comment beside it. Review each clause,",
        "fill in the domain meanings (FILL IN), then `contract-gate contract publish`.",
    )
    return Draft(
        header=header,
        layer=options.layer,
        cadence=options.cadence,
        objective=options.objective,
        owner=options.owner,
        changelog=_changelog(options, samples),
        clauses=tuple(clauses),
    )
