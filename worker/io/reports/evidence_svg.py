"""The inline SVG drawings of an evidence page: the timeline of evaluations and the breach
rate over time (:func:`svg_timeline`, :func:`svg_breach_rate`), and the arithmetic they
rest on (:func:`spread`, :func:`breach_rate_bins`). Pure strings, no network at view time;
the page around them is :func:`worker.io.reports.evidence.render_evidence_html`.
"""

from __future__ import annotations

import html
from datetime import datetime, timezone

from worker.core.lifecycle.evidence import Evidence

__all__ = ["MIN_GAP_PX", "breach_rate_bins", "spread", "svg_breach_rate", "svg_timeline"]


#: Smallest distance between two marks of the timeline, in pixels.
MIN_GAP_PX = 12.0


def spread(xs: list[float], lo: float, hi: float, gap: float = MIN_GAP_PX) -> list[float]:
    """Positions ``xs`` (ascending) moved apart so that neighbours are at least ``gap``
    pixels apart, kept within ``[lo, hi]`` as far as they fit: a forward pass pushes marks
    right, a backward pass pulls them back from ``hi``. Marks that fall close together in
    time (4 evaluations 11 s apart on a 6 h axis) stay 4 marks."""
    out = list(xs)
    for i in range(1, len(out)):
        out[i] = max(out[i], out[i - 1] + gap)
    if out and out[-1] > hi:
        out[-1] = hi
        for i in range(len(out) - 2, -1, -1):
            out[i] = min(out[i], out[i + 1] - gap)
    if out and out[0] < lo:  # more marks than fit: even spacing over the whole axis
        step = (hi - lo) / max(len(out) - 1, 1)
        out = [lo + i * step for i in range(len(out))]
    return out


def svg_timeline(e: Evidence, width: int = 760, height: int = 130) -> str:
    """Inline SVG: one mark per evaluation on a time axis from the first evaluation to the
    end of one cadence cycle (or now, if later); passes green above the axis, would-be
    rejections red below. Marks closer than :data:`MIN_GAP_PX` are spread apart (the
    axis labels keep the true times); labels are anchored so none is cut at the edges."""
    pad = 50
    if e.first_at is None:
        return (
            f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
            f'class="timeline"><text x="{pad}" y="{height // 2}">no evaluations yet</text></svg>'
        )
    width = max(width, int(len(e.points) * MIN_GAP_PX) + 2 * pad)
    start = e.first_at.timestamp()
    end = max(start + e.cadence_s, e.now.timestamp())
    scale = (width - 2 * pad) / max(end - start, 1.0)

    def x(t: float) -> float:
        return pad + (t - start) * scale

    colours = {"label-cycle": "#36c", "label-now": "#000", "label-start": "#555"}

    def label(at: float, y: float, text: str, cls: str, anchor: str = "") -> str:
        colour = colours[cls]
        if not anchor:
            anchor = "end" if at > width - pad - 60 else ("start" if at < pad + 60 else "middle")
        return (
            f'<text class="{cls}" x="{at:.1f}" y="{y}" font-size="11" fill="{colour}" '
            f'text-anchor="{anchor}">{html.escape(text)}</text>'
        )

    mid = height / 2
    cycle_x, now_x = x(start + e.cadence_s), x(e.now.timestamp())
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'class="timeline" role="img" aria-label="evaluations of {html.escape(e.version)} '
        'over time">',
        f'<line x1="{pad}" y1="{mid}" x2="{width - pad}" y2="{mid}" stroke="#888"/>',
        f'<line x1="{cycle_x:.1f}" y1="14" x2="{cycle_x:.1f}" y2="{height - 22}" stroke="#36c" '
        'stroke-dasharray="4 3"/>',
        label(cycle_x, 12, "end of one cadence cycle", "label-cycle"),
        f'<line x1="{now_x:.1f}" y1="14" x2="{now_x:.1f}" y2="{height - 22}" stroke="#000"/>',
        # "now" in a row of its own, beside its line: under the cycle label, above the
        # marks, never on the start date (now can be next to the first evaluation)
        label(now_x + 4, 27, "now", "label-now", "start")
        if now_x < width - pad - 30
        else label(now_x - 4, 27, "now", "label-now", "end"),
        label(pad, height - 8, e.first_at.strftime("%Y-%m-%d %H:%M:%S"), "label-start"),
    ]
    points = sorted(e.points, key=lambda p: p.evaluated_at)
    xs = spread([x(p.evaluated_at.timestamp()) for p in points], pad, width - pad)
    for p, cx in zip(points, xs, strict=True):
        cy = mid - 18 if p.passed else mid + 18
        color = "#2a2" if p.passed else "#c22"
        title = html.escape(
            f"{p.batch_id} {'pass' if p.passed else 'would reject'} at "
            f"{p.evaluated_at.isoformat()} (data time {p.data_time.isoformat()})"
            + "".join(f"; {c.name}" for c in p.broken)
        )
        cls = "pass" if p.passed else "breach"
        parts.append(
            f'<circle class="{cls}" cx="{cx:.1f}" cy="{cy}" r="5" fill="{color}">'
            f"<title>{title}</title></circle>"
        )
    parts.append("</svg>")
    return "".join(parts)


def breach_rate_bins(e: Evidence, bins: int = 8) -> list[tuple[float, float, int, int]]:
    """``(start, end, breaches, evaluated)`` per time bin (epoch seconds) over the span of
    the evaluations, ``bins`` equal bins (one when they all share one instant); empty bins
    are kept with 0 evaluated."""
    if not e.points:
        return []
    times = [p.evaluated_at.timestamp() for p in e.points]
    lo, hi = min(times), max(times)
    n = bins if hi > lo else 1
    step = (hi - lo) / n if hi > lo else 1.0
    out = [[lo + i * step, lo + (i + 1) * step, 0, 0] for i in range(n)]
    for p, t in zip(e.points, times, strict=True):
        i = min(int((t - lo) / step), n - 1) if hi > lo else 0
        out[i][3] += 1
        out[i][2] += 0 if p.passed else 1
    return [(a, b, int(c), int(d)) for a, b, c, d in out]


def svg_breach_rate(e: Evidence, width: int = 760, height: int = 150) -> str:
    """Inline SVG bars: the share of evaluations that would have been rejected in each time
    bin (:func:`breach_rate_bins`), labelled ``breaches/evaluated``; a dashed line at the
    error budget (1 - objective)."""
    rows = breach_rate_bins(e)
    if not rows:
        return ""
    pad, top, bottom = 50, 16, 34
    plot_h = height - top - bottom
    bar_w = (width - 2 * pad) / len(rows)
    budget_y = top + plot_h * (1 - (1 - e.objective))
    parts = [
        # 50 px right of the plot hold the budget label
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width + 50}" height="{height}" '
        'class="breach-rate" role="img" aria-label="breach rate over time">',
        f'<line x1="{pad}" y1="{top + plot_h}" x2="{width - pad}" y2="{top + plot_h}" '
        'stroke="#888"/>',
        f'<text x="{pad - 4}" y="{top + 4}" font-size="10" text-anchor="end">100%</text>',
        f'<text x="{pad - 4}" y="{top + plot_h}" font-size="10" text-anchor="end">0%</text>',
        f'<line x1="{pad}" y1="{budget_y:.1f}" x2="{width - pad}" y2="{budget_y:.1f}" '
        'stroke="#36c" stroke-dasharray="4 3"/>',
        f'<text x="{width - pad + 4}" y="{budget_y + 3:.1f}" font-size="10" fill="#36c" '
        f'text-anchor="start">budget {1 - e.objective:.1%}</text>',
    ]
    for i, (a, _b, breaches, n) in enumerate(rows):
        rate = breaches / n if n else 0.0
        h = plot_h * rate
        bx = pad + i * bar_w
        parts.append(
            f'<rect class="bar" x="{bx + 2:.1f}" y="{top + plot_h - h:.1f}" '
            f'width="{bar_w - 4:.1f}" height="{h:.1f}" fill="#c22">'
            f"<title>{breaches} of {n} would have been rejected</title></rect>"
        )
        parts.append(
            f'<text x="{bx + bar_w / 2:.1f}" y="{top + plot_h + 13}" font-size="10" '
            f'text-anchor="middle">{breaches}/{n}</text>'
        )
        stamp = datetime.fromtimestamp(a, tz=timezone.utc).strftime("%m-%d %H:%M")
        parts.append(
            f'<text x="{bx + bar_w / 2:.1f}" y="{top + plot_h + 26}" font-size="9" '
            f'fill="#555" text-anchor="middle">{stamp}</text>'
        )
    parts.append("</svg>")
    return "".join(parts)
