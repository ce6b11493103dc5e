"""Renderings of :class:`~worker.core.evidence.Evidence`: text, JSON and one self-contained HTML
page with an inline SVG timeline (no network at view time).
"""

from __future__ import annotations

import html
from typing import Any

from worker.core.evidence import BrokenClause, EvaluationPoint, Evidence
from worker.core.jsonsafe import dumps_json

__all__ = ["evidence_to_json", "render_evidence_html", "render_evidence_text"]


def _duration(seconds: float) -> str:
    if seconds >= 3600:
        return f"{seconds / 3600:.1f} h"
    if seconds >= 60:
        return f"{seconds / 60:.0f} min"
    return f"{seconds:.0f} s"


def _clause_line(c: BrokenClause) -> str:
    return (
        f"{c.name} ({c.kind}, {c.on_break}): measured {dumps_json(c.measured, default=str)}, "
        f"expected {dumps_json(c.expected, default=str)}"
    )


def render_evidence_text(e: Evidence) -> str:
    """Readable summary: span vs cadence, counts, attainment, would-be rejections."""
    att = "n/a" if e.attainment is None else f"{e.attainment:.3f}"
    lines = [
        f"{e.layer}/{e.version} evidence at {e.now.isoformat()}",
        f"  span covered {_duration(e.span_s)} (first to last evaluation) of one cadence "
        f"cycle {e.cadence} "
        f"({_duration(e.cadence_s)}): {e.cycles:.2f} cycles"
        + (f", {_duration(e.missing_s)} missing" if e.missing_s else ""),
        f"  batches evaluated {e.evaluated}, passed {e.passed}, attainment {att} "
        f"(objective {e.objective})",
        f"  would have rejected {len(e.would_reject)} batch(es), {len(e.newly_rejected)} of "
        "them not already quarantined by an enforcing version",
    ]
    for p in e.would_reject:
        already = (
            f", already quarantined by {', '.join(p.quarantined_by)}" if p.quarantined_by else ""
        )
        lines.append(f"    {p.batch_id} (data time {p.data_time.isoformat()}{already})")
        lines += [f"      {_clause_line(c)}" for c in p.broken]
    return "\n".join(lines)


def evidence_to_json(e: Evidence) -> dict[str, Any]:
    """JSON-ready dict of the evidence (times ISO 8601)."""

    def point(p: EvaluationPoint) -> dict[str, Any]:
        return {
            "batch_id": p.batch_id,
            "data_time": p.data_time.isoformat(),
            "evaluated_at": p.evaluated_at.isoformat(),
            "passed": p.passed,
            "quarantined_by": list(p.quarantined_by),
            "broken": [
                {
                    "clause": c.name,
                    "kind": c.kind,
                    "on_break": c.on_break,
                    "measured": c.measured,
                    "expected": c.expected,
                    "message": c.message,
                }
                for c in p.broken
            ],
        }

    return {
        "layer": e.layer,
        "version": e.version,
        "now": e.now.isoformat(),
        "cadence": e.cadence,
        "cadence_s": e.cadence_s,
        "span_s": e.span_s,
        "cycles": e.cycles,
        "missing_s": e.missing_s,
        "first_evaluated_at": e.first_at.isoformat() if e.first_at else None,
        "last_evaluated_at": e.last_at.isoformat() if e.last_at else None,
        "evaluated": e.evaluated,
        "passed": e.passed,
        "attainment": e.attainment,
        "objective": e.objective,
        "would_reject": [point(p) for p in e.would_reject],
        "newly_rejected": len(e.newly_rejected),
        "evaluations": [point(p) for p in e.points],
    }


def _svg_timeline(e: Evidence, width: int = 760, height: int = 120) -> str:
    """Inline SVG: one mark per batch on a time axis from the first evaluation to the end
    of one cadence cycle (or now, if later); passes green above, would-be rejections red."""
    pad = 40
    if e.first_at is None:
        return (
            f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}">'
            f'<text x="{pad}" y="{height // 2}">no evaluations yet</text></svg>'
        )
    start = e.first_at.timestamp()
    end = max(start + e.cadence_s, e.now.timestamp())
    scale = (width - 2 * pad) / max(end - start, 1.0)

    def x(t: float) -> float:
        return pad + (t - start) * scale

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'role="img" aria-label="evaluations of {html.escape(e.version)} over time">',
        f'<line x1="{pad}" y1="{height / 2}" x2="{width - pad}" y2="{height / 2}" stroke="#888"/>',
        f'<line x1="{x(start + e.cadence_s):.1f}" y1="10" x2="{x(start + e.cadence_s):.1f}" '
        f'y2="{height - 20}" stroke="#36c" stroke-dasharray="4 3"/>',
        f'<text x="{x(start + e.cadence_s) + 3:.1f}" y="18" font-size="11" fill="#36c">'
        "one cadence cycle</text>",
        f'<line x1="{x(e.now.timestamp()):.1f}" y1="10" x2="{x(e.now.timestamp()):.1f}" '
        f'y2="{height - 20}" stroke="#000"/>',
        f'<text x="{x(e.now.timestamp()) - 24:.1f}" y="{height - 6}" font-size="11">now</text>',
    ]
    for p in e.points:
        cx = x(p.evaluated_at.timestamp())
        cy = height / 2 - 18 if p.passed else height / 2 + 18
        color = "#2a2" if p.passed else "#c22"
        title = html.escape(
            f"{p.batch_id} {'pass' if p.passed else 'would reject'} "
            f"(data time {p.data_time.isoformat()})" + "".join(f"; {c.name}" for c in p.broken)
        )
        parts.append(
            f'<circle cx="{cx:.1f}" cy="{cy}" r="5" fill="{color}"><title>{title}</title></circle>'
        )
    parts.append("</svg>")
    return "".join(parts)


def render_evidence_html(e: Evidence) -> str:
    """One self-contained HTML page (inline CSS and SVG, no scripts, no network)."""
    esc = html.escape
    att = "n/a" if e.attainment is None else f"{e.attainment:.3f}"
    missing = f", {_duration(e.missing_s)} missing" if e.missing_s else ""
    rows = "".join(
        f"<tr><td>{esc(p.batch_id)}</td><td>{esc(p.data_time.isoformat())}</td><td>"
        + "<br>".join(esc(_clause_line(c)) for c in p.broken)
        + f"</td><td>{esc(', '.join(p.quarantined_by)) or 'no: newly rejected'}</td></tr>"
        for p in e.would_reject
    )
    title = f"{e.layer}/{e.version} observing evidence"
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{esc(title)}</title>
<style>body{{font-family:sans-serif;margin:2em}}table{{border-collapse:collapse}}
td,th{{border:1px solid #ccc;padding:4px 8px;text-align:left;vertical-align:top}}</style>
</head><body>
<h1>{esc(title)}</h1>
<p>At {esc(e.now.isoformat())}: span covered {esc(_duration(e.span_s))} (first to last
evaluation) of one cadence cycle
{esc(e.cadence)} ({e.cycles:.2f} cycles{esc(missing)}).
Batches evaluated {e.evaluated}, passed {e.passed}, attainment {att} (objective {e.objective}).</p>
<h2>Timeline (green: pass, red: would have been rejected)</h2>
{_svg_timeline(e)}
<h2>Batches it would have rejected ({len(e.would_reject)}; {len(e.newly_rejected)} not already
quarantined by an enforcing version)</h2>
<table><tr><th>batch</th><th>data time</th><th>broken clauses (measured, expected)</th>
<th>already quarantined by</th></tr>
{rows}</table>
</body></html>
"""
