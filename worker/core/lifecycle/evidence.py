"""Evidence of an observing version (pure): the span covered, attainment and would-be rejections.

:func:`summarise` turns the evaluation records of one version into an :class:`Evidence`: the span
covered (from the first evaluation to the *last* one: one evaluation followed by silence is no
cycle of evidence) against the cadence, batches evaluated, attainment against the objective, and
the batches the version would have rejected with their broken clauses. Records come from
:func:`worker.kafka.evaluations.read_evaluations`; renderers are in
:mod:`worker.io.reports.evidence`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from worker.core.model import Contract

__all__ = ["BrokenClause", "EvaluationPoint", "Evidence", "attainment_warning", "summarise"]


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
    rejecting it is nothing new. ``mode`` is the mode this version evaluated it in (its
    record's ``mode``): a failed evaluation in ``enforcing`` mode is a rejection the
    version made itself, not a would-be one.
    """

    batch_id: str
    data_time: datetime
    evaluated_at: datetime
    passed: bool
    broken: tuple[BrokenClause, ...]
    quarantined_by: tuple[str, ...] = ()
    mode: str = "observing"


@dataclass(frozen=True)
class Evidence:
    """The observing record of one version up to ``now``.

    ``span_s`` is the last evaluation minus the first (0 with fewer than two): the time
    over which the version has actually been evaluating batches of the layer (docs/design.md
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
        """The would-be rejections (evaluated observing) an enforcing version did not
        quarantine already: what promoting this version changes."""
        return tuple(p for p in self.would_reject if not p.quarantined_by and p.mode != "enforcing")

    @property
    def enforcing(self) -> bool:
        """Whether the version's latest evaluation was enforcing (it is promoted, or was
        published enforcing): its failed evaluations are its own quarantines."""
        return bool(self.points) and self.points[-1].mode == "enforcing"

    @property
    def rejected_itself(self) -> tuple[EvaluationPoint, ...]:
        """The batches it failed while enforcing (it quarantined them itself)."""
        return tuple(p for p in self.would_reject if p.mode == "enforcing")

    @property
    def cycles(self) -> float:
        return self.span_s / self.cadence_s

    @property
    def missing_s(self) -> float:
        return max(0.0, self.cadence_s - self.span_s)


def summarise(contract: Contract, records: Iterable[Mapping[str, Any]], now: datetime) -> Evidence:
    """The :class:`Evidence` of ``contract`` from evaluation records (any layer/version).

    A batch evaluated more than once (redelivery after an aborted transaction) counts once,
    with its last evaluation. The enforcing evaluations of other versions of the layer for
    the same batch id (same topic) say whether a would-be rejection was quarantined anyway
    (:attr:`EvaluationPoint.quarantined_by`).
    """
    params = {c.name: dict(c.params) for c in contract.clauses}
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
                c["name"],
                c["kind"],
                c["on_break"],
                c["measured"],
                # records name the version instead of copying its parameters
                c["expected"] if c["expected"] is not None else params.get(c["name"]),
                c["message"],
            )
            for c in r["clauses"]
            if c["result"] == "break"
        )
        by_batch.pop(r["batch_id"], None)
        by_batch[r["batch_id"]] = EvaluationPoint(
            r["batch_id"],
            r["data_time"],
            r["evaluated_at"],
            bool(r["passed"]),
            broken,
            mode=str(r.get("mode") or "observing"),
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
