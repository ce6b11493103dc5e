"""What a batch's metadata claims about its geometries, against the geometries (pure).

A file's metadata may state its ``version`` and, per geometry column, a ``bbox`` and the
``geometry_types`` it holds (:attr:`~worker.core.model.Batch.file_claims`, from its reader);
readers prune row groups and files by the bbox and choose a layer type by the types. No
clause judges these claims (the verdict comes from the geometries), but a claim the data
contradicts misleads every reader after the gate: a world of countries was admitted
with ``bbox: [0, 0, 1, 1]`` and ``geometry_types: ["Point"]``. The same
goes for an EWKB SRID (PostGIS extended WKB) that names another CRS than the batch
declares: the gate reads the coordinates in the declared CRS and ignores the SRID.
``check`` prints these sentences as warnings; a batch read in chunks is compared chunk by
chunk (:func:`claims_tally`, merged, then :func:`disagreements_of`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from worker.core._util.text import clip
from worker.core.clauses.tally import Bounds, Tally
from worker.core.facts.batch import BatchFacts
from worker.core.facts.wkb_arrow import WkbTuple, arrow_heads
from worker.core.facts.wkb_header import ewkb_srid_counts
from worker.core.geometry_types import TYPE_NAME_TABLE
from worker.core.model import stated
from worker.core.spatial.crs import crs_label

__all__ = ["claim_disagreements", "claims_tally", "disagreements_of"]

#: Metadata versions this gate reads (the readers' ``file_claims`` ``version``).
KNOWN_VERSIONS = ("1.0.0", "1.1.0")


def claim_disagreements(facts: BatchFacts) -> list[str]:
    """One sentence per claim of ``facts.batch.file_claims`` (and per EWKB SRID) that the
    geometries contradict, in the order version, bbox, geometry_types, SRID: the whole
    batch as one chunk (:func:`claims_tally`, :func:`disagreements_of`)."""
    return disagreements_of(claims_tally(facts), facts)


def claims_tally(facts: BatchFacts) -> Tally:
    """What the claims are compared with, of one chunk of a batch, mergeable over chunks
    (:func:`worker.core.clauses.tally.merge`): ``bounds``, the envelope of the features
    (``east_north``; only when the file claims a bbox and edges are planar);
    ``types``, features per geometry type name (only when the file lists
    ``geometry_types``); ``srids``, features per EWKB SRID (decimal string keys)."""
    claims = facts.batch.file_claims
    bbox_wanted = isinstance(claims.get("bbox"), list) and facts.batch.edges == "planar"
    types_wanted = isinstance(claims.get("geometry_types"), list)
    # plain 2D points (type code 1) carry no SRID flag: nothing to read
    plain = facts.points_xy is not None
    return {
        "bounds": Bounds.of_rows(facts.bounds) if bbox_wanted and facts.count else Bounds(None),
        "types": type_counts(facts) if types_wanted and facts.count else {},
        "srids": {} if plain else _srid_counts(facts.batch.geometries_wkb),
    }


def type_counts(facts: BatchFacts) -> dict[str, int]:
    """Features per geometry type name (:attr:`BatchFacts.type_names`; missing and
    unparseable left out), in order of first appearance: counted on the name table's rows
    (:attr:`BatchFacts.type_name_index`), no Python per feature."""
    index = np.asarray(facts.type_name_index, dtype=np.intp)
    counts = np.bincount(index, minlength=len(TYPE_NAME_TABLE))  # not np.unique: see crs
    rows = np.flatnonzero(counts)
    first = [int(np.argmax(index == r)) for r in rows.tolist()]  # a few rows: a few passes
    out: dict[str, int] = {}
    for i in np.argsort(first, kind="stable").tolist():
        name = TYPE_NAME_TABLE[rows[i]]
        if name is not None:  # two rows may share a name (LinearRing is a LineString)
            out[str(name)] = out.get(str(name), 0) + int(counts[rows[i]])
    return out


def disagreements_of(tally: Tally, facts: BatchFacts) -> list[str]:
    """:func:`claim_disagreements` from a (merged) :func:`claims_tally`; ``facts`` give
    the metadata only (claims, declared CRS, axis order, edges). The tally of a batch of
    no chunks (a file of no features) is the merge's identity ``{}``: no envelope, no
    types, no SRIDs, as :func:`claims_tally` gives for no features."""
    tally = {"bounds": Bounds(None), "types": {}, "srids": {}, **tally}
    claims = facts.batch.file_claims
    out = []
    version = claims.get("version")
    if version is not None and not str(version).startswith(("1.0.", "1.1.")):
        out.append(
            f"the file says {stated(facts.batch.metadata_name, 'version')} "
            f"{clip(repr(version), 40)}, which this gate "
            f"does not know ({', '.join(KNOWN_VERSIONS)}); its metadata was read as 1.1.0"
        )
    if (bbox := _bbox_disagreement(facts, tally["bounds"], claims.get("bbox"))) is not None:
        out.append(bbox)
    out.extend(_malformed("bbox", claims.get("bbox"), _is_bbox, "4 or 6 numbers"))
    if (types := _types_disagreement(tally["types"], claims.get("geometry_types"))) is not None:
        out.append(types)
    out.extend(_malformed("geometry_types", claims.get("geometry_types"), _is_names, _NAMES))
    out.extend(_srid_disagreements(facts, tally["srids"]))
    return out


_NAMES = "a list of geometry type names"
_KINDS = {str: "a string", dict: "a JSON object", bool: "a boolean", int: "a number"}


def _is_bbox(value: Any) -> bool:
    return (
        isinstance(value, list)
        and len(value) in (4, 6)
        and all(isinstance(v, int | float) and not isinstance(v, bool) for v in value)
    )


def _is_names(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


def _malformed(name: str, value: Any, ok: Callable[[Any], bool], want: str) -> list[str]:
    """The sentence for a claim present in a shape the file format's specification does not
    give it (never compared, so never contradicted): empty when absent or well formed."""
    if value is None or ok(value):
        return []
    kind = _KINDS.get(type(value)) or clip(repr(value), 80)
    return [f"the file's {name} is {kind}, not {want}: not compared with the features"]


def _bbox_disagreement(facts: BatchFacts, bounds: Bounds, bbox: Any) -> str | None:
    """The column's ``bbox`` ([xmin, ymin, xmax, ymax], or with z: [xmin, ymin, zmin, xmax,
    ymax, zmax]; stored order) does not contain the features' envelope ``bounds``
    (``east_north``). Not compared: a bbox crossing the antimeridian (xmin > xmax),
    spherical edges, no finite envelope."""
    if not isinstance(bbox, list) or len(bbox) not in (4, 6):
        return None
    if not all(isinstance(v, int | float) and not isinstance(v, bool) for v in bbox):
        return None
    half = len(bbox) // 2
    xmin, ymin, xmax, ymax = bbox[0], bbox[1], bbox[half], bbox[half + 1]
    if xmin > xmax or facts.batch.edges != "planar":
        return None
    box = bounds.box
    if box is None:
        return None
    env = list(box)
    if facts.batch.axis_order == "north_east":  # the file's bbox is in stored order
        env = [env[1], env[0], env[3], env[2]]
    slack = 1e-9 * max(1.0, *(abs(v) for v in (xmin, ymin, xmax, ymax)))
    inside = (
        env[0] >= xmin - slack
        and env[1] >= ymin - slack
        and env[2] <= xmax + slack
        and env[3] <= ymax + slack
    )
    if inside or not all(math.isfinite(v) for v in env):
        return None
    shown = ", ".join(f"{v:.10g}" for v in env)
    return (
        f"the file's bbox [{', '.join(f'{v:.10g}' for v in bbox)}] does not contain its "
        f"features, which span [{shown}]: readers that skip files or row groups by bbox "
        "would miss them"
    )


def _types_disagreement(present: Mapping[str, int], declared: Any) -> str | None:
    """Geometry types ``present`` (features per type name) that the column's
    ``geometry_types`` leaves out (an empty list claims nothing: any type may be
    present)."""
    if not _is_names(declared) or not declared:  # malformed: named by _malformed
        return None
    missing = {name: n for name, n in present.items() if name not in declared}
    if not missing:
        return None
    shown = ", ".join(f"{name} ({n})" for name, n in sorted(missing.items()))
    listed = ", ".join(clip(str(d), 40) for d in declared[:10])
    return f"the file's geometry_types [{listed}] leave out types its features have: {shown}"


def _srid_disagreements(facts: BatchFacts, counts: Mapping[str, int]) -> list[str]:
    """EWKB values whose SRID is not the declared CRS's EPSG code (the SRID is ignored);
    ``counts`` are features per SRID (decimal string keys)."""
    srids = {int(k): n for k, n in counts.items()}
    if not srids:
        return []
    declared = facts.declared_crs
    epsg = declared.to_epsg() if declared is not None else None
    label = crs_label(declared) if declared is not None else "no CRS"
    return [
        f"{n} {'feature carries' if n == 1 else 'features carry'} the EWKB SRID {srid}, "
        f"but the batch declares {clip(label, 80)}: the gate reads the coordinates in the "
        "declared CRS and ignores the SRID"
        for srid, n in sorted(srids.items())
        if srid != epsg and not (srid == 4326 and epsg is None and _is_crs84(facts))
    ]


def _is_crs84(facts: BatchFacts) -> bool:
    """The declared CRS is OGC:CRS84 (EPSG:4326 with x = longitude, no EPSG code)."""
    crs = facts.declared_crs
    return crs is not None and crs.to_authority() == ("OGC", "CRS84")


def _srid_counts(values: Any) -> dict[str, int]:
    """:func:`ewkb_srid_counts` of ``values``, the first 9 bytes of a reader's Arrow chunk's
    values read from its Arrow buffers (no Python object per value)."""
    if isinstance(values, WkbTuple) and len(values) > 32:
        return ewkb_srid_counts(values, arrow_heads(values, 9))
    return ewkb_srid_counts(values)
