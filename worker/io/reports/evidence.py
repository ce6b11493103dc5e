"""Renderings of :class:`~worker.core.lifecycle.evidence.Evidence`: text, JSON and one
self-contained HTML
page with an inline SVG timeline (no network at view time; the SVG drawings are in
:mod:`worker.io.reports.evidence_svg`).
"""

from __future__ import annotations

import html
from typing import Any

from worker.core._util.durations import readable_duration
from worker.core._util.text import MAX_ECHO_CHARS, one_line
from worker.core.lifecycle.evidence import BrokenClause, EvaluationPoint, Evidence
from worker.io.reports.evidence_svg import MIN_GAP_PX, svg_breach_rate, svg_timeline
from worker.io.reports.text import brief

__all__ = [
    "evidence_counts",
    "evidence_to_json",
    "render_evidence_html",
    "render_evidence_text",
]


def _clause_line(c: BrokenClause) -> str:
    """A broken clause in plain words: its name, kind, whether it halts, and its message
    (the evaluator's sentence, with units); never the raw measured JSON."""
    effect = "halts" if c.on_break == "halt" else "warns"  # a record's text: one line each
    words = one_line(c.message or brief(c.kind, c.measured), MAX_ECHO_CHARS)
    return f"{one_line(c.name)} ({one_line(c.kind)}, {effect}): {words}"


def _rejections(e: Evidence) -> str:
    """The rejections in words: an enforcing version's own quarantines are not called
    "not already quarantined by an enforcing version" (issue 28 §4)."""
    observing = len(e.would_reject) - len(e.rejected_itself)
    newly = f"{len(e.newly_rejected)} of them not already quarantined by an enforcing version"
    if not e.rejected_itself:
        return f"would have rejected {observing} batch(es), {newly}"
    line = f"quarantined {len(e.rejected_itself)} batch(es) itself while enforcing"
    if observing:
        line += f"; while observing it would have rejected {observing}, {newly}"
    return line


def _by(p: EvaluationPoint, lead: str) -> str:
    """Who quarantined a rejected batch: this version (failed while enforcing) and the
    other enforcing versions that failed it; empty when nobody did."""
    who = (["this version (enforcing)"] if p.mode == "enforcing" else []) + list(p.quarantined_by)
    return f"{lead}already quarantined by {', '.join(who)}" if who else ""


def render_evidence_text(e: Evidence) -> str:
    """Readable summary: span vs cadence, counts, attainment, would-be rejections."""
    att = "n/a" if e.attainment is None else f"{e.attainment:.3f}"
    lines = [
        f"{e.layer}/{e.version} evidence at {e.now.isoformat()}",
        f"  span covered {readable_duration(e.span_s)} (first to last evaluation) of one cadence "
        f"cycle {e.cadence} "
        f"({readable_duration(e.cadence_s)}): {e.cycles:.2f} cycles"
        + (f", {readable_duration(e.missing_s)} missing" if e.missing_s else ""),
        f"  batches evaluated {e.evaluated}, passed {e.passed}, attainment {att} "
        f"(objective {e.objective})",
        f"  {_rejections(e)}",
    ]
    for p in e.would_reject:
        lines.append(
            f"    {one_line(p.batch_id)} (data time {p.data_time.isoformat()}{_by(p, ', ')})"
        )
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
            "mode": p.mode,
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
        **evidence_counts(e),
        "would_reject": [point(p) for p in e.would_reject],
        "newly_rejected": len(e.newly_rejected),
        "enforcing": e.enforcing,
        "rejected_itself": len(e.rejected_itself),
        "evaluations": [point(p) for p in e.points],
    }


def evidence_counts(e: Evidence) -> dict[str, Any]:
    """The span and counts of an evidence summary, as the JSON of ``contract evidence`` and
    ``contract promote`` share them: ``span_s``, ``cycles`` (cadence cycles), ``missing_s``,
    the first and last evaluation times (ISO 8601 or None), ``evaluated``, ``passed``,
    ``attainment`` and ``objective``."""
    return {
        "span_s": e.span_s,
        "cycles": e.cycles,
        "missing_s": e.missing_s,
        "first_evaluated_at": e.first_at.isoformat() if e.first_at else None,
        "last_evaluated_at": e.last_at.isoformat() if e.last_at else None,
        "evaluated": e.evaluated,
        "passed": e.passed,
        "attainment": e.attainment,
        "objective": e.objective,
    }


def _rejected_heading(e: Evidence) -> str:
    """The heading of the rejections table (HTML-escaped)."""
    if e.rejected_itself:
        return f"Batches it rejected ({html.escape(_rejections(e))})"
    return (
        f"Batches it would have rejected ({len(e.would_reject)}; {len(e.newly_rejected)} not "
        "already\nquarantined by an enforcing version)"
    )


def render_evidence_html(e: Evidence) -> str:
    """One self-contained HTML page (inline CSS and SVG, no scripts, no network)."""
    esc = html.escape
    att = "n/a" if e.attainment is None else f"{e.attainment:.3f}"
    missing = f", {readable_duration(e.missing_s)} missing" if e.missing_s else ""
    rows = "".join(
        f"<tr><td>{esc(p.batch_id)}</td><td>{esc(p.data_time.isoformat())}</td><td>"
        + "<br>".join(esc(_clause_line(c)) for c in p.broken)
        + f"</td><td>{esc(_by(p, '')[len('already quarantined by ') :]) or 'no: newly rejected'}"
        + "</td></tr>"
        for p in e.would_reject
    )
    title = f"{e.layer}/{e.version} observing evidence"
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{esc(title)}</title>
<style>body{{font-family:sans-serif;margin:2em}}table{{border-collapse:collapse}}
td,th{{border:1px solid #ccc;padding:4px 8px;text-align:left;vertical-align:top}}</style>
</head><body>
<h1>{esc(title)}</h1>
<p>At {esc(e.now.isoformat())}: span covered {esc(readable_duration(e.span_s))} (first to last
evaluation) of one cadence cycle
{esc(e.cadence)} ({e.cycles:.2f} cycles{esc(missing)}).
Batches evaluated {e.evaluated}, passed {e.passed}, attainment {att} (objective {e.objective}).</p>
<h2>Timeline (green: pass, red: would have been rejected)</h2>
<p>Marks closer than {MIN_GAP_PX:.0f} pixels are drawn side by side; hover a mark for its time.</p>
{svg_timeline(e)}
<h2>Breach rate over time (share of evaluations it would have rejected)</h2>
{svg_breach_rate(e)}
<h2>{_rejected_heading(e)}</h2>
<table><tr><th>batch</th><th>data time</th><th>broken clauses</th>
<th>already quarantined by</th></tr>
{rows}</table>
</body></html>
"""
