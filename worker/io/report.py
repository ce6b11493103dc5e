"""Readable and JSON renderings of decisions (used by ``check`` and the demo)."""

from __future__ import annotations

from typing import Any

from worker.core.jsonsafe import dumps_json
from worker.core.model import ClauseResult, Decision

__all__ = ["decision_to_json", "render_decision", "short_value"]


def short_value(value: Any, limit: int = 60) -> str:
    """A compact one-line rendering of a measured/expected value."""
    text = (
        value if isinstance(value, str) else dumps_json(value, default=str, separators=(",", ":"))
    )
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _clause_json(c: ClauseResult) -> dict[str, Any]:
    return {
        "name": c.name,
        "kind": c.kind,
        "result": c.result,
        "on_break": c.on_break,
        "measured": c.measured,
        "expected": c.expected,
        "message": c.message,
    }


def decision_to_json(decision: Decision) -> dict[str, Any]:
    """The JSON shape of ``contract-gate check --format json``.

    ``{"decision", "versions": [{"version", "mode", "passed", "clauses": [...]}],
    "diagnoses": [...]}``.
    """
    return {
        "decision": decision.decision,
        "versions": [
            {
                "version": v.version,
                "mode": v.mode,
                "passed": v.passed,
                "clauses": [_clause_json(c) for c in v.clauses],
            }
            for v in decision.verdicts
        ],
        "diagnoses": list(decision.diagnoses),
    }


def render_decision(decision: Decision, *, title: str = "") -> str:
    """A text report: per version and clause, result, measured, expected and message."""
    lines = []
    if title:
        lines.append(title)
    for v in decision.verdicts:
        status = "passed" if v.passed else "FAILED"
        lines.append(f"{v.layer} {v.version} ({v.mode}): {status}")
        width = max((len(c.name) for c in v.clauses), default=4)
        for c in v.clauses:
            mark = "pass " if c.result == "pass" else ("BREAK" if c.on_break == "halt" else "warn ")
            lines.append(
                f"  {mark} {c.name:<{width}}  measured={short_value(c.measured)}  "
                f"expected={short_value(c.expected)}"
            )
            if c.result == "break":
                lines.append(f"        {c.message}")
    for r in decision.reasons:
        if r.code != "contract_break":
            lines.append(f"reason: {r.code}: {r.message}")
    for d in decision.diagnoses:
        lines.append(f"diagnosis: {d}")
    lines.append(f"decision: {decision.decision}")
    return "\n".join(lines)
