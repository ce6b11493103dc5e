"""The map section of a batch page: which CRS, which features and regions, and the notes.

The map CRS is the contract CRS (the first crs clause's ``expect``), else the batch's
declared CRS. Geometries GEOS refuses are drawn as the lines sent; passing features are
thinned beyond :data:`MAX_DRAWN_PASSING`; :func:`worker.io.reports.svg.svg_map` draws.
"""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import shapely
from pyproj import CRS

from worker.core.errors import ContractGateError
from worker.core.facts.batch import BatchFacts
from worker.core.model import Batch, Contract
from worker.core.spatial.crs import crs_equivalent, crs_label, resolve_crs
from worker.core.spatial.regions import region_geometry
from worker.core.spatial.reproject import reproject
from worker.io.formats.offenders_file import geometry_as_sent
from worker.io.reports.offenders import BrokenClause, unrecorded
from worker.io.reports.svg import PALETTE, MapRegion, svg_map

__all__ = ["MAX_DRAWN_PASSING", "map_crs", "map_section"]


def map_crs(batch: Batch, contracts: Sequence[Contract], expected_crs: Sequence[str]) -> CRS | None:
    """The CRS a page draws its map in.

    Parameters
    ----------
    batch : Batch
        The batch drawn; its declared CRS is the last resort.
    contracts : Sequence[Contract]
        The first resolvable ``expect`` of a crs clause wins.
    expected_crs : Sequence[str]
        CRS texts tried next (the ``crs`` of a quarantine record's extent reasons).

    Returns
    -------
    CRS or None
        None when nothing resolves and the batch declares no CRS.
    """
    for c in contracts:
        for clause in c.clauses:
            if clause.kind == "crs":
                try:
                    return resolve_crs(clause.params["expect"])
                except ContractGateError:
                    pass
    for text in expected_crs:
        try:
            return resolve_crs(text)
        except ContractGateError:
            continue
    return BatchFacts(batch).declared_crs


def _colours(
    broken: Sequence[BrokenClause],
) -> tuple[dict[int, list[tuple[str, str]]], dict[str, str]]:
    """``(feature index -> [(clause label, colour)] of every clause it broke, clause label
    -> colour)``."""
    colour_of: dict[int, list[tuple[str, str]]] = {}
    legend: dict[str, str] = {}
    for n, b in enumerate(broken):
        legend[b.label] = PALETTE[n % len(PALETTE)]
        for f in b.offenders.get("features") or []:
            i = f.get("index")
            if isinstance(i, int):
                colour_of.setdefault(i, []).append((b.label, legend[b.label]))
    return colour_of, legend


def _as_sent_lines(facts: BatchFacts, geoms: np.ndarray, crs: CRS | None) -> np.ndarray:
    """``geoms`` with each geometry GEOS refuses to read (an open ring) replaced by its
    lines as sent: every ring and line of its WKB as an open path, never closed (GEOS could
    only give it back repaired), reprojected like the others. Unchanged when none is."""
    refused = np.flatnonzero(facts.unparseable & facts.parsed)
    if not len(refused):
        return geoms
    out = geoms.copy()
    for i in refused.tolist():
        sent = geometry_as_sent(facts.batch, i)  # x first, as the map is
        lines = [line for line in _lines_of(sent) if len(line) >= 2] if sent else []
        if not lines:
            continue
        ml = shapely.multilinestrings([np.asarray(line, dtype=float)[:, :2] for line in lines])
        src = facts.declared_crs
        if crs is not None and src is not None and not facts.keeps_crs(crs):
            ml = reproject(ml, src, crs)
        out[i] = ml
    return out


def _lines_of(geometry: Mapping[str, Any]) -> list[list[list[float]]]:
    """Every line and ring of a geometry mapping (``type``, ``coordinates``, as
    :func:`geometry_as_sent` gives it; collections walked)."""
    kind = geometry.get("type")
    coords: Any = geometry.get("coordinates") or []
    if kind == "GeometryCollection":
        return [line for g in geometry.get("geometries", []) for line in _lines_of(g)]
    if kind == "LineString":
        return [coords]
    if kind in ("Polygon", "MultiLineString"):
        return list(coords)
    if kind == "MultiPolygon":
        return [ring for polygon in coords for ring in polygon]
    return []


#: Most passing features a page draws: every offending feature is drawn, the passing ones
#: evenly thinned beyond this (300,000 points made a 39 MB page).
MAX_DRAWN_PASSING = 20_000


def _thinned(
    usable: np.ndarray, colour_of: Mapping[int, Sequence[tuple[str, str]]]
) -> tuple[np.ndarray, int, int]:
    """``(features to draw, passing features left out, passing features)``: every
    offending feature, and :data:`MAX_DRAWN_PASSING` passing ones evenly spaced in batch
    order when there are more."""
    passing = np.asarray(usable, dtype=bool).copy()
    offending = [i for i in colour_of if 0 <= i < len(passing)]
    passing[offending] = False
    rows = np.flatnonzero(passing)
    if len(rows) <= MAX_DRAWN_PASSING:
        return np.asarray(usable, dtype=bool), 0, len(rows)
    kept = rows[np.linspace(0, len(rows) - 1, MAX_DRAWN_PASSING).round().astype(int)]
    out = np.asarray(usable, dtype=bool).copy()
    out[rows] = False
    out[kept] = True
    return out, len(rows) - MAX_DRAWN_PASSING, len(rows)


def map_section(
    batch: Batch,
    broken: Sequence[BrokenClause],
    regions: Sequence[tuple[str, Any, str]],
    crs: CRS | None,
) -> str:
    """The HTML of a page's map section: caption, SVG map, legend and notes.

    Parameters
    ----------
    batch : Batch
        The batch drawn.
    broken : Sequence[BrokenClause]
        Broken clauses in order; each colours its offending features.
    regions : Sequence[tuple[str, Any, str]]
        ``(label, region, region CRS text)`` of each extent region; a region in another
        CRS than ``crs`` is named in a note instead of drawn.
    crs : CRS or None
        The map CRS (:func:`map_crs`); None draws the batch's coordinates as they are.

    Returns
    -------
    str
        An HTML fragment.
    """
    facts = BatchFacts(batch)
    if crs is not None and facts.declared_crs is not None:
        geoms, usable = facts.in_crs(crs)
    else:
        geoms, usable = facts.geometries, facts.usable
    geoms = _as_sent_lines(facts, geoms, crs)
    name = crs_label(crs) if crs is not None else "the batch's coordinates (CRS undeclared)"
    drawn: list[MapRegion] = []
    skipped: list[str] = []
    for label, region, region_crs in regions:
        try:
            rcrs = resolve_crs(region_crs) if region_crs else crs
            if crs is not None and rcrs is not None and not crs_equivalent(rcrs, crs):
                skipped.append(f"{label} (region in {region_crs})")
                continue
            drawn.append(MapRegion(label, region_geometry(region, rcrs)))
        except (ContractGateError, ValueError, TypeError):
            skipped.append(f"{label} (region not drawable)")
    colour_of, legend = _colours(broken)
    if facts.count:
        bad = usable & ~np.isfinite(np.asarray(shapely.bounds(geoms), dtype=float)).all(axis=1)
        usable = usable & ~bad
    drawn_mask, thinned, n_passing = _thinned(usable, colour_of)
    svg = svg_map(geoms, drawn_mask, colour_of, drawn, crs_name=name)
    esc = html.escape
    items = "".join(
        f'<li class="legend"><span class="swatch" style="background:{colour}"></span>'
        f"{esc(label)}: {b.offenders.get('total')} offending features</li>"
        for b in broken
        for label, colour in [(b.label, legend[b.label])]
    )
    hidden = int(facts.count - np.count_nonzero(usable))
    notes = []
    if hidden:
        notes.append(
            f"{hidden} features are not drawn (missing, empty, non-finite, outside the "
            f"area of use of the declared CRS, or not reprojectable to {esc(name)})"
        )
    if thinned:
        notes.append(
            f"{thinned} of {n_passing} passing features are left out of the map to keep the "
            f"page light ({MAX_DRAWN_PASSING} drawn, evenly spaced in batch order); every "
            "offending feature is drawn"
        )
    if skipped:
        notes.append("regions not drawn: " + esc(", ".join(skipped)))
    cut = [(b.label, unrecorded(b, "not drawn as offenders")) for b in broken]
    notes += [
        f'<span class="unrecorded">{esc(label)}: {text}</span> (the record holds only the '
        "first offenders: the others are drawn grey)"
        for label, text in cut
        if text
    ]
    cut = [c for c in cut if c[1]]
    grey = "grey features broke nothing" + (" recorded" if cut else "")
    return (
        f"<p>{facts.count} features in {esc(name)}; {grey}, coloured ones broke the clause "
        "of their colour (a ring per clause); dashed outlines are extent regions.</p>"
        + svg
        + (f"<ul>{items}</ul>" if items else "<p>No feature broke a clause.</p>")
        + "".join(f"<p class=note>{n}</p>" for n in notes)
    )
