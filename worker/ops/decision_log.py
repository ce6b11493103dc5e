"""The last decisions the gate committed, for ``/status`` (:class:`DecisionLog`).

The pipeline's ``on_outcome`` sink: it keeps the last committed decisions and the counts
per (layer, decision) in memory, read by :func:`worker.ops.http_handlers.status` from the
HTTP threads.
"""

from __future__ import annotations

import threading
from collections import Counter, deque
from collections.abc import Callable, Sequence
from datetime import datetime, timezone
from typing import Any

from worker.gate.route import Outcome

__all__ = ["DecisionLog"]


class DecisionLog:
    """The last ``maxlen`` committed decisions and counts per (layer, decision).

    Pass an instance as the pipeline's ``on_outcome``: it is called in the pipeline
    thread after each commit (:meth:`many` for a committed run's outcomes at once,
    :func:`worker.gate.housekeeping.report_decisions`); :meth:`snapshot` is called from
    HTTP threads (a lock guards them). Entries hold a batch id, so they stay out of
    metric attributes.
    """

    def __init__(
        self, maxlen: int = 50, clock: Callable[[], datetime] = lambda: datetime.now(timezone.utc)
    ) -> None:
        self._entries: deque[dict[str, Any]] = deque(maxlen=maxlen)
        self._maxlen = maxlen
        self._counts: Counter[tuple[str, str]] = Counter()
        self._lock = threading.Lock()
        self._clock = clock

    def __call__(self, outcome: Outcome) -> None:
        entry = self._entry(outcome)
        with self._lock:
            self._entries.append(entry)
            self._counts[(outcome.layer_label, outcome.decision.decision)] += 1

    def many(self, outcomes: Sequence[Outcome]) -> None:
        """:meth:`__call__` of each of ``outcomes`` in order, in one step: every outcome
        counted, an entry built (its time read) only for the last ``maxlen``, the only
        ones the log keeps (the others would be dropped by the end of the call)."""
        entries = [self._entry(o) for o in outcomes[max(0, len(outcomes) - self._maxlen) :]]
        counted = Counter([(o.layer_label, o.decision.decision) for o in outcomes])
        with self._lock:
            self._entries.extend(entries)
            self._counts.update(counted)

    def _entry(self, outcome: Outcome) -> dict[str, Any]:
        """The entry of ``outcome`` as :meth:`snapshot` shows it, its time kept as read
        (formatted when shown: only the last ``maxlen`` entries ever are)."""
        d = outcome.decision
        broken = {f"{v.version}:{c.name}" for v in d.verdicts for c in v.clauses if c.broke}
        if d.reasons:
            broken.update(f"{r.version}:{r.clause}" for r in d.reasons if r.clause)
        return {
            "time": self._clock(),
            "batch_id": outcome.batch_id,
            "layer": outcome.layer_label,
            "decision": d.decision,
            "broken": sorted(broken),
            "reasons": sorted({r.code for r in d.reasons}) if d.reasons else [],
            "diagnoses": list(d.diagnoses),
        }

    def snapshot(self) -> tuple[list[dict[str, Any]], dict[str, dict[str, int]]]:
        """``(last decisions newest first, {layer: {decision: count}})``."""
        with self._lock:
            entries = [{**e, "time": e["time"].isoformat()} for e in reversed(self._entries)]
            counts: dict[str, dict[str, int]] = {}
            for (layer, decision), n in sorted(self._counts.items()):
                counts.setdefault(layer, {})[decision] = n
        return entries, counts
