"""What an extent result says about the features it could not place as they are (pure).

The wording around the fraction inside of :mod:`worker.core.clauses.extent`: the span
its message shows (:func:`shown_span`: the features within the declared CRS's area of use,
in the contract CRS, or as declared when none could be reprojected) and the notes it
appends (:func:`placement_notes`): edges read as great-circle arcs, features outside the
declared CRS's area of use or not reprojectable (counted outside), and features the
file's bbox covering column does not bound (a warning: the clause does not break for it).
The likely causes of a broken extent clause are :mod:`worker.core.clauses.diagnose`.
"""

from __future__ import annotations

from typing import Any

from pyproj import CRS

from worker.core.clauses.base import count_phrase
from worker.core.clauses.tally import Tally
from worker.core.facts.batch import BatchFacts
from worker.core.model import stated
from worker.core.spatial import area_of_use, crs_equivalent, crs_label

__all__ = ["placement_notes", "shown_span"]


def shown_span(tally: Tally, src: CRS | None, label: str) -> tuple[Any, str, str]:
    """``(bounds, bounds_crs, spanned)`` of the merged extent ``tally``: the envelope its
    message shows (minx, miny, maxx, maxy, or None), the CRS label of that envelope, and
    the words that introduce it; ``src`` is the batch's declared CRS, ``label`` the
    contract CRS's label."""
    bounds = tally["bounds"].box
    bounds_crs = label
    # the features whose span is shown: without those beyond the declared CRS's area of
    # use ("the features span x -179 .. 179" left a point at 180.5 out)
    spanned = (
        f"the features within the area of use of {crs_label(src)} span"
        if tally["beyond"] and src is not None
        else "the features span"
    )
    if bounds is None and tally["raw_bounds"].box is not None:
        # reprojection from the declared CRS failed (e.g. feet declared as degrees) or
        # every feature is beyond the CRS's area of use: the raw bounds as declared
        # still tell what the batch holds
        bounds = tally["raw_bounds"].box
        bounds_crs = crs_label(src) if src is not None else "as declared"
        spanned = "the features span"  # every usable feature, as declared
    return bounds, bounds_crs, spanned


def placement_notes(
    facts: BatchFacts, tally: Tally, crs: CRS | None, label: str, measured: dict[str, Any]
) -> str:
    """The notes (each ``"; ..."``) an extent message ends with, from the merged ``tally``
    of ``facts`` measured in ``crs`` (labelled ``label``); adds ``outside_area_of_use``,
    ``not_reprojectable`` and ``covering_bbox_disagrees`` (counts) to ``measured`` when
    there are such features. "" when there is nothing to note."""
    src = facts.declared_crs
    moved = crs is not None and src is not None and not crs_equivalent(src, crs)
    n_beyond, n_failed, n_disagree = tally["beyond"], tally["failed"], tally["disagree"]
    notes = ""
    if facts.batch.edges == "spherical":
        edges = stated(facts.batch.metadata_name, "edges")
        notes += f"; edges read as great-circle arcs ({edges}: spherical)"
    declared_label = crs_label(src) if src is not None else ""
    if n_beyond:
        aou = area_of_use(src) if src is not None else None
        where = f" ({aou.text})" if aou is not None else ""
        measured["outside_area_of_use"] = n_beyond
        notes += (
            f"; {count_phrase(n_beyond, 'outside the area of use of')} {declared_label}"
            f"{where}, counted outside" + (" whatever reprojection makes of them" if moved else "")
        )
    if n_failed:
        measured["not_reprojectable"] = n_failed
        notes += (
            f"; {count_phrase(n_failed, 'could not be reprojected')} from {declared_label} "
            f"to {label} (non-finite result), counted outside"
        )
    if n_disagree:
        measured["covering_bbox_disagrees"] = n_disagree
        first = ", ".join(str(i) for i in tally["disagree_first"].items)
        covering = facts.batch.covering_name or stated(
            facts.batch.metadata_name, "bbox covering column"
        )
        notes += (
            f"; warning: the {covering} does not bound "
            f"{count_phrase(n_disagree, f'(index {first})')}: readers filtering "
            "by it would skip them"
        )
    return notes
