"""The inline SVG map of a batch page: features, offenders coloured, extent regions dashed.

Pure drawing from geometries already in the map CRS: north up, one ``<path>`` per feature,
``feature`` and ``offender`` classes with ``data-clause`` and ``data-index``, ``region``
outlines with ``data-clause``. :mod:`worker.io.reports.batch_map` chooses what to draw.
"""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import shapely

__all__ = ["PALETTE", "MapRegion", "svg_map"]

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
    colour_of: Mapping[int, Sequence[tuple[str, str]]],
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
        Feature index -> ``(clause label, colour)`` of each clause an offending feature
        broke, in clause order: filled in the first one's colour, with one ring per clause
        in its colour, and ``data-clause`` naming them all (space-separated).
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
    # (inf, then nan positions in the SVG); halving is exact
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
        parts += _feature(idx, shapely.transform(geom, to_screen), colour_of.get(idx, ()))
    parts.append(
        f'<text x="{pad}" y="{h - 5}" font-size="11" fill="#555">{html.escape(crs_name)}: x '
        f"{minx:.6g} .. {maxx:.6g}, y {miny:.6g} .. {maxy:.6g}</text></svg>"
    )
    return "".join(parts)


def _feature(idx: int, g: Any, broke: Sequence[tuple[str, str]]) -> list[str]:
    """The SVG elements of feature ``idx`` (``g`` in screen units): its path or points,
    and for an offender one ring per clause it broke (a tiny one is still seen)."""
    labels = " ".join(label for label, _ in broke)
    colour = broke[0][1] if broke else ""
    cls = "feature offender" if broke else "feature"
    fill = colour or "#c9c9c0"
    stroke = "#222" if broke else "#888"
    attrs = f'class="{cls}" data-index="{idx}"' + (
        f' data-clause="{html.escape(labels)}"' if broke else ""
    )
    names = ", ".join(label for label, _ in broke)
    title = f"<title>#{idx}{': broke ' + html.escape(names) if broke else ''}</title>"
    parts = []
    d = _path(g)
    if d and shapely.get_type_id(g) in (1, 2, 5):  # lines: a stroke, never a fill
        parts.append(
            f'<path {attrs} d="{d}" fill="none" stroke="{colour or stroke}" '
            f'stroke-width="{2.5 if broke else 1}">{title}</path>'
        )
    elif d:
        parts.append(
            f'<path {attrs} d="{d}" fill="{fill}" fill-opacity="{0.85 if broke else 0.6}" '
            f'fill-rule="evenodd" stroke="{stroke}" stroke-width="{1.2 if broke else 0.5}">'
            f"{title}</path>"
        )
    c = shapely.get_coordinates(shapely.point_on_surface(g)) if broke and d else None
    for n, (label, ring) in enumerate(broke if c is not None and len(c) else ()):
        assert c is not None
        parts.append(
            f'<circle class="marker" data-index="{idx}" data-clause="{html.escape(label)}" '
            f'cx="{c[0][0]:.1f}" cy="{c[0][1]:.1f}" r="{8 + 4 * n}" fill="none" '
            f'stroke="{ring}" stroke-width="2"/>'
        )
    for x, y in _points(g):
        parts.append(
            f'<circle {attrs} cx="{x:.1f}" cy="{y:.1f}" r="{5 if broke else 3}" '
            f'fill="{fill}" stroke="{stroke}">{title}</circle>'
        )
    return parts
