"""Readable and JSON renderings of decisions (used by ``check``, ``quarantine`` and the demo).

Text output never cuts JSON mid-token: a clause is shown by its message (plain words with
units), wrapped, and its offending features one per line.
"""

from __future__ import annotations

import textwrap
from collections.abc import Mapping
from typing import Any

from worker.core._util.durations import parse_duration_s
from worker.core._util.jsonsafe import dumps_json
from worker.core.clauses import KINDS, domain, feature_count, freshness
from worker.core.model import ClauseResult, Decision
from worker.core.offenders import Offenders
from worker.io.formats import OFFENDERS_FILE

__all__ = [
    "brief",
    "decision_to_json",
    "offender_lines",
    "render_decision",
    "short_value",
    "with_units",
]

#: Width of wrapped text lines.
WIDTH = 100
#: Offending features listed per clause in text output.
TEXT_OFFENDERS = 5


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
            return f"{key}={value} ({parse_duration_s(value):g} s)"  # 1e-07 s, not 0 s
        except ValueError:
            return f"{key}={value}"
    return f"{key}={short_value(value, 40)}"


def with_units(kind: str, value: Any, limit: int = 120) -> str:
    """A measured or expected value as text, each figure with its unit.

    Units: ``freshness`` ages in seconds (``7200 s old``), feature counts as integers
    (``feature_count``: ``177 features``); durations as written and in seconds; every
    ``*fraction*`` figure a fraction of 1 with its percentage; ``*_area`` figures in the unit
    the clause measured (``m²`` geodesic for a geographic CRS, ``CRS units²`` for a
    projected one, see the ``coverage`` clause). Other values as :func:`short_value`.
    """
    number = isinstance(value, int | float) and not isinstance(value, bool)
    if kind == freshness.KIND.name and number:
        text = freshness.age_words(value)
    elif kind == feature_count.KIND.name and number and isinstance(value, int):
        text = feature_count.brief(value)
    elif isinstance(value, dict):
        items = (_unit_item(k, v, value) for k, v in value.items())
        text = "{" + ", ".join(i for i in items if i is not None) + "}"
    else:
        text = short_value(value, limit)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _clause_json(c: ClauseResult) -> dict[str, Any]:
    doc = {
        "name": c.name,
        "kind": c.kind,
        "result": c.result,
        "on_break": c.on_break,
        "measured": c.measured,
        "expected": c.expected,
        "message": c.message,
    }
    if c.offenders is not None:
        doc["offenders"] = c.offenders.to_json()
    return doc


def decision_to_json(decision: Decision) -> dict[str, Any]:
    """The JSON shape of ``contract-gate check --format json``.

    ``{"decision", "versions": [{"version", "mode", "passed", "clauses": [...]}],
    "diagnoses": [...]}``; a clause with offending features carries ``"offenders":
    {"total", "measure", "features": [{"index", "id", "value"}]}`` (the first 100).
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


def _number(v: Any) -> str:
    return f"{v:.8g}" if isinstance(v, float) else str(v)


def offender_value(value: Any) -> str:
    """One offending feature's measured value in words: bounds as ``[a, b, c, d]``, a list
    of field names comma-separated, text quoted, null as ``null``."""
    if value is None:
        return "null"
    if isinstance(value, list) and all(isinstance(v, int | float) for v in value):
        return "[" + ", ".join(_number(v) for v in value) + "]"
    if isinstance(value, list):
        return ", ".join(str(v) for v in value)
    if isinstance(value, str):
        return value
    return dumps_json(value, default=str)


def _feature_name(index: Any, fid: Any) -> str:
    return f"#{index}" + ("" if fid is None else f" (id {fid!r})")


def offender_lines(
    offenders: Offenders | Mapping[str, Any], limit: int = TEXT_OFFENDERS, kind: str = ""
) -> list[str]:
    """Lines naming the offending features of one clause: a head line with the total and
    what the values are, then one line per feature (``#index (id 'x'): value``; a domain
    value quoted, so spaces and case show), at most ``limit``, then how many more there
    are and where to find them all."""
    doc = offenders.to_json() if isinstance(offenders, Offenders) else dict(offenders)
    feats = list(doc.get("features") or [])
    total = int(doc.get("total") or len(feats))
    lines = [
        f"{total} offending {'feature' if total == 1 else 'features'} "
        f"(#index in the batch, id, {doc.get('measure') or 'measured value'}):"
    ]
    for f in feats[:limit]:
        v = f.get("value")
        quoted = kind == domain.KIND.name and isinstance(v, str)
        shown = repr(v) if quoted else offender_value(v)
        lines.append(f"  {_feature_name(f.get('index'), f.get('id'))}: {shown}")
    more = total - min(limit, len(feats))
    if more > 0:
        recorded = len(feats)
        lines.append(
            f"  ... and {more} more ({recorded} recorded with their ids: see --format json, "
            f"or write them as {OFFENDERS_FILE.title}: check --offenders FILE, quarantine show "
            f"{OFFENDERS_FILE.flag} FILE)"
        )
    return lines


def brief(kind: str | None, measured: Any, message: str = "", limit: int = 80) -> str:
    """A few words saying what broke, for one-line listings (demo, ``quarantine tail``).

    The clause kind's own brief (:attr:`worker.core.clauses.base.ClauseKind.brief`: domain
    the unknown values, ``unknown 'Atlantis'``; validity the first GEOS reason; extent how
    many features lie outside; ...), else (no kind: a record written before reasons
    carried it, or a reason that is no clause's) the message's head, up to its first
    parenthesis or semicolon. At most ``limit`` characters.
    """
    clause_kind = KINDS.get(kind) if kind is not None else None
    text = clause_kind.brief(measured) if clause_kind is not None else ""
    if not text:  # the message up to its first parenthesis: "data time ... is 7200 s old"
        text = message.split(" (", 1)[0].split("; ", 1)[0]
    return text if len(text) <= limit else text[: limit - 3].rstrip() + "..."


def _wrap(text: str, indent: str) -> list[str]:
    return textwrap.wrap(
        text,
        WIDTH,
        initial_indent=indent,
        subsequent_indent=indent,
        break_long_words=False,
        break_on_hyphens=False,
    ) or [indent]


def render_decision(decision: Decision, *, title: str = "") -> str:
    """A text report: per version, whether it passed; per clause, pass/BREAK/warn and its
    message in plain words with units (wrapped, never cut); for a broken clause its
    diagnoses and offending features (:func:`offender_lines`); the decision and why."""
    lines = []
    if title:
        lines.append(title)
    for v in decision.verdicts:
        if v.passed:
            status = "passed"
        elif v.mode == "enforcing":
            status = "FAILED: it quarantines the batch"
        else:
            status = "FAILED (observing: measured only, the batch is not held back)"
        lines.append(f"{v.layer} {v.version} ({v.mode}): {status}")
        width = max((len(c.name) for c in v.clauses), default=4)
        for c in v.clauses:
            mark = "pass " if c.result == "pass" else ("BREAK" if c.on_break == "halt" else "warn ")
            head = f"  {mark} {c.name:<{width}}  "
            wrapped = _wrap(c.message, " " * len(head))
            lines.append(head + wrapped[0].lstrip())
            lines.extend(wrapped[1:])
            if c.result == "break":
                pad = " " * (len(head))
                lines.extend(f"{pad}diagnosis: {d}" for d in c.diagnoses)
                if c.offenders is not None:
                    for line in offender_lines(c.offenders, kind=c.kind):
                        lines.extend(_wrap(line, pad))
    for r in decision.reasons:
        if r.code != "contract_break":
            lines.extend(_wrap(f"reason: {r.code}: {r.message}", ""))
    for d in decision.diagnoses:
        lines.extend(_wrap(f"diagnosis: {d}", ""))
    lines.append(f"decision: {decision.decision}" + _why(decision))
    return "\n".join(lines)


def _why(decision: Decision) -> str:
    broke = [
        f"{v.version} broke {', '.join(c.name for c in v.broken)}"
        for v in decision.verdicts
        if v.broken
    ]
    held = [f"{r.version} {r.clause}" for r in decision.reasons if r.clause]
    if decision.admitted:
        ok = [v.version for v in decision.verdicts if v.mode == "enforcing" and v.passed]
        why = f"passed {', '.join(ok)}" if ok else ""
        observing = [
            b
            for b, v in zip(broke, [v for v in decision.verdicts if v.broken], strict=True)
            if v.mode == "observing"
        ]
        if observing:
            why += ("; " if why else "") + "observing " + "; ".join(observing)
        return f" ({why})" if why else ""
    return f" (enforcing {', '.join(held)})" if held else ""
