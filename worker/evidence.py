"""Evidence of an observing version, read from the evaluations topic (the evidence store).

:func:`read_evaluations` scans ``gis.contract.evaluations`` with a group-less reader to
partition EOF (never a ListOffsets figure alone, DESIGN.md section 8) and keeps the records
of one layer. :func:`summarise` (pure) turns the records of one version into an
:class:`Evidence`: the span covered (from the first evaluation to the *last* one: one
evaluation followed by silence is no cycle of evidence) against the cadence, batches
evaluated, attainment against the objective, and the batches the version would have
rejected with their broken clauses. Renderers give text, JSON and one
self-contained HTML page with an inline SVG timeline (no network at view time).
"""

from __future__ import annotations

import html
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from worker.codec import decode_evaluation
from worker.errors import ContractGateError
from worker.kafka import Settings, read_topic
from worker.model import Contract

__all__ = [
    "BrokenClause",
    "EvaluationPoint",
    "Evidence",
    "attainment_warning",
    "evidence_to_json",
    "read_evaluations",
    "render_evidence_html",
    "render_evidence_text",
    "summarise",
]


@dataclass(frozen=True)
class BrokenClause:
    name: str
    kind: str
    on_break: str
    measured: Any
    expected: Any
    message: str


@dataclass(frozen=True)
class EvaluationPoint:
    """One batch evaluated against the version; ``broken`` is empty when it passed.

    ``quarantined_by`` are the other versions that evaluated the same batch *enforcing*
    and failed it (their last evaluation of it): the batch was quarantined anyway, so
    rejecting it is nothing new.
    """

    batch_id: str
    data_time: datetime
    evaluated_at: datetime
    passed: bool
    broken: tuple[BrokenClause, ...]
    quarantined_by: tuple[str, ...] = ()


@dataclass(frozen=True)
class Evidence:
    """The observing record of one version up to ``now``.

    ``span_s`` is the last evaluation minus the first (0 with fewer than two): the time
    over which the version has actually been evaluating batches of the layer (DESIGN.md
    section 5: "observing evaluations spanning at least one cadence cycle"); silence after
    the last evaluation is not evidence. ``attainment`` is passed / evaluated
    (None without evaluations). ``points`` are in evaluation order, one per batch.
    """

    layer: str
    version: str
    cadence: str
    cadence_s: float
    objective: float
    now: datetime
    first_at: datetime | None
    last_at: datetime | None
    span_s: float
    points: tuple[EvaluationPoint, ...]

    @property
    def evaluated(self) -> int:
        return len(self.points)

    @property
    def passed(self) -> int:
        return sum(p.passed for p in self.points)

    @property
    def attainment(self) -> float | None:
        return self.passed / self.evaluated if self.points else None

    @property
    def would_reject(self) -> tuple[EvaluationPoint, ...]:
        return tuple(p for p in self.points if not p.passed)

    @property
    def newly_rejected(self) -> tuple[EvaluationPoint, ...]:
        """The would-be rejections an enforcing version did not quarantine already: what
        promoting this version changes."""
        return tuple(p for p in self.would_reject if not p.quarantined_by)

    @property
    def cycles(self) -> float:
        return self.span_s / self.cadence_s

    @property
    def missing_s(self) -> float:
        return max(0.0, self.cadence_s - self.span_s)


def read_evaluations(
    settings: Settings, layer: str, timeout_s: float = 60.0
) -> list[dict[str, Any]]:
    """Every evaluation record of ``layer`` on the evaluations topic, read to partition EOF.

    Raises
    ------
    KafkaError
        The topic is missing or EOF is not reached on every partition within ``timeout_s``.
    """
    out: list[dict[str, Any]] = []
    for msg in read_topic(settings, settings.topics.evaluations, timeout_s=timeout_s):
        key = msg.key()
        if key is not None and key.decode("utf-8", "replace") != layer:
            continue
        try:
            record = decode_evaluation(msg.value())
        except ContractGateError:
            continue  # not ours to judge here; the evidence counts decodable records
        if record["layer"] == layer:
            out.append(record)
    return out


def summarise(contract: Contract, records: Iterable[Mapping[str, Any]], now: datetime) -> Evidence:
    """The :class:`Evidence` of ``contract`` from evaluation records (any layer/version).

    A batch evaluated more than once (redelivery after an aborted transaction) counts once,
    with its last evaluation. The enforcing evaluations of other versions of the layer for
    the same batch id (same topic) say whether a would-be rejection was quarantined anyway
    (:attr:`EvaluationPoint.quarantined_by`).
    """
    by_batch: dict[str, EvaluationPoint] = {}
    enforcing: dict[str, dict[str, bool]] = {}  # batch id -> version -> passed (last)
    for r in records:
        if r["layer"] != contract.layer:
            continue
        if r["version"] != contract.version:
            if r.get("mode") == "enforcing":
                enforcing.setdefault(r["batch_id"], {})[r["version"]] = bool(r["passed"])
            continue
        broken = tuple(
            BrokenClause(
                c["name"], c["kind"], c["on_break"], c["measured"], c["expected"], c["message"]
            )
            for c in r["clauses"]
            if c["result"] == "break"
        )
        by_batch.pop(r["batch_id"], None)
        by_batch[r["batch_id"]] = EvaluationPoint(
            r["batch_id"], r["data_time"], r["evaluated_at"], bool(r["passed"]), broken
        )
    points = tuple(
        replace(
            p,
            quarantined_by=tuple(
                sorted(v for v, ok in enforcing.get(p.batch_id, {}).items() if not ok)
            ),
        )
        for p in sorted(by_batch.values(), key=lambda p: p.evaluated_at)
    )
    first = points[0].evaluated_at if points else None
    last = points[-1].evaluated_at if points else None
    span_s = max(0.0, (last - first).total_seconds()) if first and last else 0.0
    return Evidence(
        contract.layer,
        contract.version,
        contract.cadence,
        contract.cadence_s,
        contract.objective,
        now,
        first,
        last,
        span_s,
        points,
    )


def attainment_warning(e: Evidence) -> str | None:
    """A warning line when the attainment over the evidence is below the objective.

    Promoting such a version makes it reject more batches than its own error budget
    allows from the first cycle on. None when attainment meets the objective (or there is
    no evaluation).
    """
    if e.attainment is None or e.attainment >= e.objective:
        return None
    return (
        f"WARNING: {e.layer}/{e.version} attainment over the evidence is {e.attainment:.3f} "
        f"({e.passed}/{e.evaluated}), below its objective {e.objective}: once enforcing it "
        "would spend its error budget from the start"
    )


def _duration(seconds: float) -> str:
    if seconds >= 3600:
        return f"{seconds / 3600:.1f} h"
    if seconds >= 60:
        return f"{seconds / 60:.0f} min"
    return f"{seconds:.0f} s"


def _clause_line(c: BrokenClause) -> str:
    return (
        f"{c.name} ({c.kind}, {c.on_break}): measured {json.dumps(c.measured, default=str)}, "
        f"expected {json.dumps(c.expected, default=str)}"
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
