"""The overlap timeline of one layer as inline SVG (docs/design.md section 5's picture, live).

One lane per version, oldest first: a bar from its publication to its supersession or
retirement (or now), pale while observing and solid once enforcing, with a marker per
lifecycle event; under each active major's lane, the migration counter as a step line
(declared readers solid, unattributed dashed) and its count at the right end. Each version
is drawn in its major's colour (:data:`PALETTE`), the ``version`` label of the metrics.
Every text is escaped; the drawing's size is fixed by the lane count.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from datetime import datetime

from worker.core.lifecycle.overview import Gate, LayerOverview, VersionRow

__all__ = ["PALETTE", "timeline_svg"]

#: Colours of majors v1, v2, ... (Okabe-Ito, readable for colour-blind readers and printed).
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#6A3D9A", "#444")

WIDTH, LEFT, RIGHT, LANE, TOP = 860, 70, 150, 46, 24
_SHAPES = {"published": "circle", "promoted": "rect", "superseded": "diamond", "retired": "cross"}


def _x(t: datetime, t0: datetime, t1: datetime) -> float:
    span = max((t1 - t0).total_seconds(), 1.0)
    return LEFT + (WIDTH - LEFT - RIGHT) * (t - t0).total_seconds() / span


def _mark(event: str, x: float, y: float, colour: str, title: str) -> str:
    shape = _SHAPES.get(event, "circle")
    t = f"<title>{html.escape(title)}</title>"
    if shape == "circle":
        body = f'<circle cx="{x:.1f}" cy="{y:.1f}" r="5" fill="#fff" stroke="{colour}"/>'
    elif shape == "rect":
        body = f'<rect x="{x - 4:.1f}" y="{y - 4:.1f}" width="8" height="8" fill="{colour}"/>'
    elif shape == "diamond":
        body = f'<path d="M{x:.1f} {y - 6:.1f}l6 6l-6 6l-6 -6z" fill="#fff" stroke="{colour}"/>'
    else:
        body = f'<path d="M{x - 5:.1f} {y - 5:.1f}l10 10m0 -10l-10 10" stroke="#000"/>'
    return f'<g class="mark" data-event="{event}">{body}{t}</g>'


def _lane(v: VersionRow, y: float, t0: datetime, now: datetime) -> list[str]:
    colour = PALETTE[v.colour]
    at = {m.event: m.at for m in v.marks}
    end = at.get("retired") or at.get("superseded") or now
    x0, x1 = _x(v.published_at, t0, now), _x(max(end, v.published_at), t0, now)
    promoted = at.get("promoted")
    xp = _x(promoted, t0, now) if promoted is not None else x1
    esc = html.escape(v.version)
    out = [
        f'<text x="{LEFT - 8}" y="{y + 11:.1f}" text-anchor="end" fill="{colour}" '
        f'font-weight="bold">{esc}</text>',
        f'<rect class="observing" x="{x0:.1f}" y="{y:.1f}" width="{max(xp - x0, 1):.1f}" '
        f'height="14" fill="{colour}" fill-opacity="0.3" stroke="{colour}"/>',
    ]
    if promoted is not None:
        out.append(
            f'<rect class="enforcing" x="{xp:.1f}" y="{y:.1f}" width="{max(x1 - xp, 1):.1f}" '
            f'height="14" fill="{colour}"/>'
        )
    for m in v.marks:
        if m.at is not None:
            when = m.at.strftime("%Y-%m-%d %H:%M:%S UTC")
            out.append(
                _mark(m.event, _x(m.at, t0, now), y + 7, colour, f"{v.version} {m.event} {when}")
            )
    return out


def _step_path(
    points: Sequence[tuple[datetime, int]], y: float, top: int, t0: datetime, now: datetime
) -> str:
    """An SVG path stepping through ``points`` (time, count) and on to ``now``."""

    def yy(n: int) -> float:
        return y + 38 - 18 * n / top

    t, n = points[0]
    d = [f"M{_x(max(t, t0), t0, now):.1f} {yy(n):.1f}"]
    for t, n in points[1:]:
        d.append(f"H{_x(max(t, t0), t0, now):.1f}V{yy(n):.1f}")
    d.append(f"H{_x(now, t0, now):.1f}")
    return "".join(d)


def _steps(g: Gate, y: float, t0: datetime, now: datetime, colour: str) -> list[str]:
    """The counter's step lines under the lane: declared (solid), unattributed (dashed)."""
    history = g.history or ((now, g.declared, g.unattributed),)
    top = max([g.count, 1, *(a + b for _t, a, b in history)])
    out = []
    series = (
        ("declared", [(t, a) for t, a, _b in history], ""),
        ("unattributed", [(t, b) for t, _a, b in history], ' stroke-dasharray="4 3"'),
    )
    for kind, points, dash in series:
        out.append(
            f'<path class="count {kind}" d="{_step_path(points, y, top, t0, now)}" '
            f'fill="none" stroke="{colour}"{dash}/>'
        )
    line = f"{g.count} reader{'s' if g.count != 1 else ''}" + (" (gate open)" if g.open else "")
    out.append(
        f'<text class="counter" data-version="{html.escape(g.version)}" data-count="{g.count}" '
        f'data-gate="{"open" if g.open else "closed"}" x="{WIDTH - RIGHT + 8}" y="{y + 34:.1f}" '
        f'fill="{colour}">{html.escape(line)}</text>'
    )
    return out


def timeline_svg(lo: LayerOverview, now: datetime) -> str:
    """The layer's overlap timeline as one ``<svg class="timeline">`` element."""
    if not lo.versions:
        return '<p class="muted">no version of this layer is known yet</p>'
    t0 = min(v.published_at for v in lo.versions)
    gates = {g.version: g for g in lo.gates}
    drawn: set[str] = set()
    parts: list[str] = []
    for i, v in enumerate(lo.versions):
        y = TOP + i * LANE
        parts += _lane(v, y, t0, now)
        label = f"v{v.major}"
        if label in gates and label not in drawn and v.state == "active":
            drawn.add(label)
            parts += _steps(gates[label], y, t0, now, PALETTE[v.colour])
    height = TOP + len(lo.versions) * LANE + 18
    axis = (
        f'<line x1="{LEFT}" y1="{height - 14}" x2="{WIDTH - RIGHT}" y2="{height - 14}" '
        'stroke="#888"/>'
        f'<text x="{LEFT}" y="{height - 2}" class="tick">{t0:%Y-%m-%d %H:%M} UTC</text>'
        f'<text x="{WIDTH - RIGHT}" y="{height - 2}" text-anchor="end" class="tick">now</text>'
    )
    title = html.escape(f"overlap timeline of {lo.layer}")
    return (
        f'<svg class="timeline" role="img" aria-label="{title}" viewBox="0 0 {WIDTH} {height}" '
        f'width="100%" preserveAspectRatio="xMinYMin meet" xmlns="http://www.w3.org/2000/svg">'
        f"<title>{title}</title>{''.join(parts)}{axis}</svg>"
    )
