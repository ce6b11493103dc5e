"""One self-contained HTML page per batch (``check --html``, ``quarantine show --html``).

The page holds, with no script and nothing fetched at view time:

* an inline SVG map of the batch in the map CRS (the contract CRS: the first crs clause's
  ``expect``, else the batch's declared CRS), north up, features grey, offending features
  coloured by the first clause they broke, each extent region drawn as a dashed outline;
* the verdict of every version and clause in plain words (the clause messages);
* the table of offending features (clause, row index, feature id, measured value).

SVG elements carry classes for tools and tests: ``feature`` (``offender`` too, with
``data-clause`` and ``data-index``), ``region`` (``data-clause``), ``legend``.
Geometries are simplified to a tolerance of 1/2000 of the map's larger side before drawing,
so a 50,000-feature batch stays a page a browser opens.
"""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import shapely
from pyproj import CRS

from worker.core.errors import ContractGateError
from worker.core.facts.batch import BatchFacts
from worker.core.model import Batch, Contract, Decision
from worker.core.spatial.crs import crs_equivalent, crs_label, resolve_crs
from worker.core.spatial.regions import region_geometry
from worker.core.spatial.reproject import reproject
from worker.io.reports.offenders import (
    BrokenClause,
    broken_clauses,
    geometry_as_sent,
    offenders_of_record,
)
from worker.io.reports.text import offender_value

__all__ = ["MapRegion", "render_batch_page", "render_record_page", "svg_map"]

#: Colours of offending features, one per broken clause in order (colour-blind safe,
#: Okabe & Ito 2008), then repeated.
PALETTE = ("#D55E00", "#0072B2", "#CC79A7", "#E69F00", "#009E73", "#56B4E9", "#F0E442")


@dataclass(frozen=True)
class MapRegion:
    """An extent region to draw: its label (``v1.0:extent``) and polygon in the map CRS."""

    label: str
    geometry: Any


def _ring_path(coords: np.ndarray) -> str:
    pts = " L".join(f"{x:.1f} {y:.1f}" for x, y in coords)
    return f"M{pts} Z"


def _path(geom: Any) -> str:
    """SVG path data of a (transformed) geometry: polygons as closed rings (even-odd fill
    keeps holes open), lines as open paths; points are drawn separately."""
    out: list[str] = []
    for part in shapely.get_parts(geom):
        t = shapely.get_type_id(part)
        if t == 3:
            out.extend(_ring_path(shapely.get_coordinates(r)) for r in shapely.get_rings(part))
        elif t in (1, 2):
            pts = " L".join(f"{x:.1f} {y:.1f}" for x, y in shapely.get_coordinates(part))
            out.append(f"M{pts}")
        elif t == 7:
            out.append(_path(part))
    return " ".join(p for p in out if p)


def _points(geom: Any) -> list[tuple[float, float]]:
    parts = shapely.get_parts(geom)
    return [
        (float(x), float(y))
        for p in parts
        if shapely.get_type_id(p) == 0 and not shapely.is_empty(p)
        for x, y in shapely.get_coordinates(p)
    ]


def svg_map(
    geoms: np.ndarray,
    usable: np.ndarray,
    colour_of: Mapping[int, tuple[str, str]],
    regions: Sequence[MapRegion],
    *,
    crs_name: str,
    width: int = 900,
    height: int = 560,
) -> str:
    """The inline SVG map.

    Parameters
    ----------
    geoms : ndarray of shapely geometries
        In the map CRS, ``east_north`` order (x east, y north).
    usable : ndarray of bool
        Features that can be drawn (finite, non-empty).
    colour_of : mapping
        Feature index -> (clause label, colour) for offending features.
    regions : sequence of MapRegion
        Extent regions in the map CRS.
    crs_name : str
        Named in the caption.
    """
    pad = 20
    drawable = np.asarray(usable, dtype=bool)
    boxes = [shapely.total_bounds(geoms[drawable])] if drawable.any() else []
    boxes += [shapely.bounds(r.geometry) for r in regions]
    boxes = [b for b in boxes if np.isfinite(b).all()]
    if not boxes:
        return (
            f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="80" class="map">'
            f'<text x="{pad}" y="40">no drawable geometry (all missing, empty or not '
            f"finite in {html.escape(crs_name)})</text></svg>"
        )
    b = np.array(boxes)
    minx, miny = b[:, 0].min(), b[:, 1].min()
    maxx, maxy = b[:, 2].max(), b[:, 3].max()
    # spans and offsets in halves: finite coordinates of +-1e308 overflow a difference
    # (inf, then nan positions in the SVG: a fresh-user finding); halving is exact
    half_w, half_h = maxx / 2 - minx / 2, maxy / 2 - miny / 2
    half_span = max(half_w, half_h, 1e-9)
    scale = min(
        (width - 2 * pad) / max(half_w, half_span * 1e-3),
        (height - 2 * pad) / max(half_h, half_span * 1e-3),
    )  # screen units per half coordinate unit
    h = int(min(height, half_h * scale + 2 * pad + 0.5)) or height

    def to_screen(xy: np.ndarray) -> np.ndarray:
        out = np.empty_like(xy)
        out[:, 0] = pad + (xy[:, 0] / 2 - minx / 2) * scale
        out[:, 1] = h - pad - (xy[:, 1] / 2 - miny / 2) * scale
        return out

    tolerance = half_span / 1000  # a 2000th of the span
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{h}" '
        f'viewBox="0 0 {width} {h}" class="map" role="img" '
        f'aria-label="map of the batch in {html.escape(crs_name)}">',
        f'<rect width="{width}" height="{h}" fill="#f8f8f4"/>',
    ]
    for r in regions:
        g = shapely.transform(r.geometry, to_screen)
        parts.append(
            f'<path class="region" data-clause="{html.escape(r.label)}" d="{_path(g)}" '
            'fill="none" stroke="#333" stroke-width="1.5" stroke-dasharray="6 4">'
            f"<title>extent region of {html.escape(r.label)}</title></path>"
        )
    order = [i for i in np.flatnonzero(drawable) if int(i) not in colour_of]
    order += [i for i in np.flatnonzero(drawable) if int(i) in colour_of]  # offenders on top
    for i in order:
        idx = int(i)
        geom = geoms[idx]
        if tolerance > 0 and shapely.get_type_id(geom) not in (0, 4):
            geom = shapely.simplify(geom, tolerance, preserve_topology=False) or geom
        g = shapely.transform(geom, to_screen)
        label, colour = colour_of.get(idx, ("", ""))
        cls = "feature offender" if label else "feature"
        fill = colour or "#c9c9c0"
        stroke = "#222" if label else "#888"
        attrs = f'class="{cls}" data-index="{idx}"' + (
            f' data-clause="{html.escape(label)}"' if label else ""
        )
        title = f"<title>#{idx}{': broke ' + html.escape(label) if label else ''}</title>"
        d = _path(g)
        if d and shapely.get_type_id(geom) in (1, 2, 5):  # lines: a stroke, never a fill
            parts.append(
                f'<path {attrs} d="{d}" fill="none" stroke="{colour or stroke}" '
                f'stroke-width="{2.5 if label else 1}">{title}</path>'
            )
        elif d:
            parts.append(
                f'<path {attrs} d="{d}" fill="{fill}" fill-opacity="{0.85 if label else 0.6}" '
                f'fill-rule="evenodd" stroke="{stroke}" stroke-width="{1.2 if label else 0.5}">'
                f"{title}</path>"
            )
        if label and d:  # a ring around every offender: a tiny one is still seen
            c = shapely.get_coordinates(shapely.point_on_surface(g))
            if len(c):
                parts.append(
                    f'<circle class="marker" data-index="{idx}" cx="{c[0][0]:.1f}" '
                    f'cy="{c[0][1]:.1f}" r="8" fill="none" stroke="{fill}" stroke-width="2"/>'
                )
        for x, y in _points(g):
            parts.append(
                f'<circle {attrs} cx="{x:.1f}" cy="{y:.1f}" r="{5 if label else 3}" '
                f'fill="{fill}" stroke="{stroke}">{title}</circle>'
            )
    parts.append(
        f'<text x="{pad}" y="{h - 5}" font-size="11" fill="#555">{html.escape(crs_name)}: x '
        f"{minx:.6g} .. {maxx:.6g}, y {miny:.6g} .. {maxy:.6g}</text></svg>"
    )
    return "".join(parts)


def _map_crs(
    batch: Batch, contracts: Sequence[Contract], expected_crs: Sequence[str]
) -> CRS | None:
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


def _colours(broken: Sequence[BrokenClause]) -> tuple[dict[int, tuple[str, str]], dict[str, str]]:
    colour_of: dict[int, tuple[str, str]] = {}
    legend: dict[str, str] = {}
    for n, b in enumerate(broken):
        legend[b.label] = PALETTE[n % len(PALETTE)]
        for f in b.offenders.get("features") or []:
            i = f.get("index")
            if isinstance(i, int):
                colour_of.setdefault(i, (b.label, legend[b.label]))
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
    """Every line and ring of a GeoJSON geometry (collections walked)."""
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
#: evenly thinned beyond this (300,000 points made a 39 MB page, a fresh-user finding).
MAX_DRAWN_PASSING = 20_000


def _thinned(
    usable: np.ndarray, colour_of: Mapping[int, tuple[str, str]]
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


def _map_html(
    batch: Batch,
    broken: Sequence[BrokenClause],
    regions: Sequence[tuple[str, Any, str]],
    crs: CRS | None,
) -> str:
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
    return (
        f"<p>{facts.count} features in {esc(name)}; grey features broke nothing, coloured "
        "ones broke the clause of their colour; dashed outlines are extent regions.</p>"
        + svg
        + (f"<ul>{items}</ul>" if items else "<p>No feature broke a clause.</p>")
        + "".join(f"<p class=note>{n}</p>" for n in notes)
    )


def _offender_table(broken: Sequence[BrokenClause]) -> str:
    esc = html.escape
    rows = []
    for b in broken:
        feats = list(b.offenders.get("features") or [])
        for f in feats:
            rows.append(
                f"<tr><td>{esc(b.label)}</td><td>{f.get('index')}</td>"
                f"<td>{esc('' if f.get('id') is None else str(f.get('id')))}</td>"
                f"<td>{esc(offender_value(f.get('value')))}</td></tr>"
            )
        total = b.offenders.get("total") or 0
        if isinstance(total, int) and total > len(feats):
            rows.append(
                f'<tr><td>{esc(b.label)}</td><td colspan="3">... and {total - len(feats)} more '
                "(the first ones are kept)</td></tr>"
            )
    if not rows:
        return "<p>No offending features.</p>"
    measures = "; ".join(f"{b.label}: {b.offenders.get('measure')}" for b in broken)
    return (
        f"<p>Value column: {esc(measures)}.</p><table class=offenders><tr><th>clause</th>"
        "<th>feature (row index)</th><th>feature id</th><th>measured on the feature</th></tr>"
        + "".join(rows)
        + "</table>"
    )


_STYLE = (
    "body{font-family:sans-serif;margin:2em;max-width:1000px}"
    "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:4px 8px;"
    "text-align:left;vertical-align:top}.pass{color:#176317}.break{color:#b00000;"
    "font-weight:bold}.swatch{display:inline-block;width:1em;height:1em;margin-right:.4em;"
    "vertical-align:middle;border:1px solid #222}svg.map{border:1px solid #ccc}"
)


def _page(title: str, verdicts: str, map_html: str, table: str) -> str:
    esc = html.escape
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{esc(title)}</title>
<style>{_STYLE}</style></head><body>
<h1>{esc(title)}</h1>
<h2>Verdicts</h2>
{verdicts}
<h2>Map</h2>
{map_html}
<h2>Offending features</h2>
{table}
</body></html>
"""


def _extent_regions(contracts: Sequence[Contract], label_of: Any) -> list[tuple[str, Any, str]]:
    out = []
    for c in contracts:
        crs_text = next((x.params.get("expect") for x in c.clauses if x.kind == "crs"), None)
        for clause in c.clauses:
            if clause.kind == "extent":
                out.append(
                    (
                        f"{c.version}:{clause.name}",
                        clause.params["region"],
                        clause.params.get("crs") or crs_text or "",
                    )
                )
    return out


def render_batch_page(
    batch: Batch, decision: Decision, contracts: Sequence[Contract], *, title: str = ""
) -> str:
    """The page of ``check --html``: the map, every version's verdict and every clause in
    plain words, the offending features of every broken clause (enforcing and observing)."""
    esc = html.escape
    broken = broken_clauses(decision)
    sections = []
    for v in decision.verdicts:
        if v.passed:
            head = "passed"
        elif v.mode == "enforcing":
            head = "FAILED: this version quarantines the batch"
        else:
            head = "FAILED (observing: measured only, the batch is not held back)"
        items = "".join(
            f'<li class="{c.result}">{"holds" if c.result == "pass" else "BROKEN"}: '
            f"<b>{esc(c.name)}</b> ({esc(c.kind)}): {esc(c.message)}</li>"
            for c in v.clauses
        )
        sections.append(
            f"<h3>{esc(v.layer)} {esc(v.version)} ({esc(v.mode)}): {esc(head)}</h3><ul>{items}</ul>"
        )
    outcome = "admitted" if decision.admitted else "quarantined"
    verdicts = f"<p><b>Decision: the batch is {outcome}.</b></p>" + "".join(sections)
    if decision.diagnoses:
        verdicts += "<p>Likely causes: " + esc("; ".join(decision.diagnoses)) + "</p>"
    crs = _map_crs(batch, contracts, [])
    regions = _extent_regions(contracts, None)
    page_title = f"batch {title or batch.batch_id} ({batch.layer}): {outcome}"
    return _page(
        page_title, verdicts, _map_html(batch, broken, regions, crs), _offender_table(broken)
    )


def render_record_page(batch: Batch, record: Mapping[str, Any]) -> str:
    """The page of ``quarantine show --html``: the map of the quarantined batch (decoded
    from the record's original event), every reason in plain words, the offenders. The
    extent regions are those the reasons' ``expected`` values name."""
    esc = html.escape
    reasons = list(record.get("reasons") or [])
    broken = offenders_of_record(reasons)
    items = "".join(
        f'<li class="break">{esc(str(r.get("version") or ""))} ({esc(str(r.get("mode") or ""))}) '
        f"<b>{esc(str(r.get('clause') or r.get('code')))}</b>: {esc(str(r.get('message')))}</li>"
        for r in reasons
    )
    verdicts = (
        f"<p><b>Quarantined at {esc(str(record.get('quarantined_at')))} by "
        f"{esc(str(record.get('worker_id')))} ({esc(str(record.get('reason_code')))}).</b></p>"
        f"<ul>{items}</ul>"
    )
    if record.get("diagnoses"):
        verdicts += "<p>Likely causes: " + esc("; ".join(record["diagnoses"])) + "</p>"
    regions = []
    crs_texts = []
    for r in reasons:
        exp = r.get("expected")
        if isinstance(exp, Mapping) and "region" in exp and "min_fraction_inside" in exp:
            regions.append(
                (f"{r.get('version')}:{r.get('clause')}", exp["region"], str(exp.get("crs") or ""))
            )
            if exp.get("crs"):
                crs_texts.append(str(exp["crs"]))
    crs = _map_crs(batch, [], crs_texts)
    title = f"quarantined batch {record.get('batch_id') or '-'} ({record.get('layer') or '-'})"
    return _page(title, verdicts, _map_html(batch, broken, regions, crs), _offender_table(broken))
