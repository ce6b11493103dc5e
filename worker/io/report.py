"""Readable and JSON renderings of decisions (used by ``check`` and the demo)."""

from __future__ import annotations

from typing import Any

from worker.core.durations import parse_duration_s
from worker.core.jsonsafe import dumps_json
from worker.core.model import ClauseResult, Decision

__all__ = ["decision_to_json", "render_decision", "short_value", "with_units"]


def short_value(value: Any, limit: int = 60) -> str:
    """A compact one-line rendering of a measured/expected value."""
    text = (
        value if isinstance(value, str) else dumps_json(value, default=str, separators=(",", ":"))
    )
    return text if len(text) <= limit else text[: limit - 3] + "..."


#: Counts (of features or values) among measured keys: shown as plain integers.
_COUNTS = {"features", "invalid", "outside", "unknown_count", "null_count"}


def _unit_item(key: str, value: Any, whole: dict[str, Any]) -> str | None:
    """``key=value`` with its unit, or None to leave the item out (a unit folded elsewhere)."""
    if key == "unit":
        return None
    number = isinstance(value, int | float) and not isinstance(value, bool)
    if number and "fraction" in key:
        return f"{key}={value:.6g} (fraction, {value:.1%})"
    if number and key.endswith("_area"):
        return f"{key}={value:.6g} {whole.get('unit', 'CRS units²')}"
    if number and key in _COUNTS:
        return f"{key}={value}"
    if number and key == "tolerance":
        return f"{key}={value:.6g} CRS units"
    if isinstance(value, str) and key in ("max_age", "max_clock_skew"):
        try:
            return f"{key}={value} ({parse_duration_s(value):.0f} s)"
        except ValueError:
            return f"{key}={value}"
    return f"{key}={short_value(value, 40)}"


def with_units(kind: str, value: Any, limit: int = 120) -> str:
    """A measured or expected value as text, each figure with its unit.

    Units: ``freshness`` ages in seconds (``7200 s``), durations as written and in seconds;
    every ``*fraction*`` figure a fraction of 1 with its percentage; ``*_area`` figures in
    the unit the clause measured (``m²`` geodesic for a geographic CRS, ``CRS units²``
    for a projected one, see the ``coverage`` clause); feature counts as integers
    (``feature_count``: ``177 features``). Other values as :func:`short_value`.
    """
    if kind == "freshness" and isinstance(value, int | float) and not isinstance(value, bool):
        text = f"{value:.0f} s old" if value >= 0 else f"{-value:.0f} s in the future"
    elif kind == "feature_count" and isinstance(value, int) and not isinstance(value, bool):
        text = f"{value} features"
    elif isinstance(value, dict):
        items = (_unit_item(k, v, value) for k, v in value.items())
        text = "{" + ", ".join(i for i in items if i is not None) + "}"
    else:
        text = short_value(value, limit)
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
    """A text report: per version and clause, result, measured and expected (with units,
    see :func:`with_units`) and, for a broken clause, its message."""
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
                f"  {mark} {c.name:<{width}}  measured={with_units(c.kind, c.measured)}  "
                f"expected={with_units(c.kind, c.expected)}"
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
