"""The clauses a batch broke with their offending features, as the pictures of a batch
draw them (the map of :mod:`worker.io.reports.batch_map`, the offenders file of
:data:`worker.io.formats.OFFENDERS_FILE`), from a decision (``check``) or from a
quarantine record's reasons (``quarantine show``, the first 100 per clause).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from worker.core.model import Decision
from worker.core.offenders import Offenders, left_out

__all__ = [
    "BrokenClause",
    "broken_clauses",
    "offenders_of_record",
    "unrecorded",
    "unwritten_line",
]


@dataclass(frozen=True)
class BrokenClause:
    """One broken clause with offending features: ``version``, ``clause`` name, ``kind``,
    ``mode`` and its offenders (:meth:`Offenders.to_json` mapping)."""

    version: str
    clause: str
    kind: str
    mode: str
    offenders: Mapping[str, Any]

    @property
    def label(self) -> str:
        return f"{self.version}:{self.clause}"


def broken_clauses(decision: Decision) -> list[BrokenClause]:
    """Every broken clause of every verdict (enforcing and observing) that has offenders."""
    return [
        BrokenClause(v.version, c.name, c.kind, v.mode, c.offenders.to_json())
        for v in decision.verdicts
        for c in v.clauses
        if c.broke and c.offenders is not None
    ]


def unrecorded(b: BrokenClause, what: str) -> str | None:
    """``"138 offend, 100 recorded, 38 <what>"`` when the offenders of ``b`` name fewer
    features than its total (a record keeps the first 100, ``check`` names them all);
    None when every offender is named."""
    return left_out(b.offenders.get("total"), len(b.offenders.get("features") or []), what)


def unwritten_line(broken: Sequence[BrokenClause]) -> str:
    """``""``, or ``" (v1.0:europe: 138 offend, 100 recorded, 38 not written)"``: what an
    offenders file leaves out, for the line that says it was written."""
    cut = [f"{b.label}: {text}" for b in broken if (text := unrecorded(b, "not written"))]
    return f" ({'; '.join(cut)})" if cut else ""


def offenders_of_record(reasons: Sequence[Mapping[str, Any]]) -> list[BrokenClause]:
    """The broken clauses of a decoded QuarantineRecord's reasons that carry offenders."""
    out = []
    for r in reasons:
        off = r.get("offenders")
        if r.get("clause") and isinstance(off, Mapping) and Offenders.from_json(off) is not None:
            out.append(
                BrokenClause(
                    str(r.get("version")),
                    str(r["clause"]),
                    str(r.get("kind") or ""),
                    str(r.get("mode") or ""),
                    off,
                )
            )
    return out
