"""What the loop reports once something is done: config events, committed decisions and
one INFO line per poll batch (telemetry through :class:`~worker.gate.instruments.Instruments`)."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from datetime import datetime
from typing import Any

from worker.core.lifecycle.config_events import ConfigEvent
from worker.core.lifecycle.registry import RecordingRegistry
from worker.gate.instruments import Instruments
from worker.gate.records import Outcome
from worker.gate.schedule import Runs

__all__ = ["log_batch", "report_config_event", "report_decisions"]

log = logging.getLogger(__name__)


def report_config_event(
    metrics: Instruments,
    registry: RecordingRegistry,
    event: ConfigEvent,
    bootstrap: tuple[int, bool],
    clock: Callable[[], datetime],
) -> None:
    """Telemetry of one config record (``bootstrap``: records read so far, and whether the
    config topic was read to its end). Label values from untrusted records stay bounded: a
    layer with an accepted version (or the one a refused/removed version names), else
    ``invalid``."""
    known = set(registry.layers())
    if event.version is not None or event.outcome == "removed":
        known.add(event.layer or "")
    if event.outcome == "rejected":
        metrics.record_config_rejection(event.layer, event.reason or "invalid", known)
    if event.tombstone:
        metrics.record_config_tombstone(event.layer, known)
    metrics.set_config_bootstrap(*bootstrap)
    metrics.set_history_breaks(registry.broken_layers(), known)  # fails closed: issue 30
    if event.outcome in ("added", "updated", "removed") and bootstrap[1]:
        # during the bootstrap the gauges are set once at its end (start()): per record
        # they cost O(versions) each, 6 s for 1,000 versions
        metrics.set_lifecycle(registry.published(), clock)


def report_decisions(
    metrics: Instruments,
    registry: RecordingRegistry,
    outcomes: list[Outcome],
    on_outcome: Callable[[Outcome], None] | None,
) -> None:
    """The decisions of a committed run: one ``record_decision`` each (with the objectives
    of the versions evaluated), then ``on_outcome``."""
    for outcome in outcomes:
        # the versions route() evaluated: config updates are applied only at step start
        objectives = {
            v.contract.version: v.contract.objective for v in registry.active(outcome.layer or "")
        }
        metrics.record_decision(outcome.layer_label, outcome.decision, outcome.duration_s,
                                objectives)  # fmt: skip
        if on_outcome is not None:
            on_outcome(outcome)


def log_batch(decided: list[Outcome], runs: Runs[Any], started: float) -> None:
    """One INFO line per committed poll batch (none when nothing was committed);
    ``started`` is the ``time.perf_counter()`` of its start."""
    if not decided:
        return
    admitted = sum(1 for o in decided if o.decision.admitted)
    log.info(
        "poll batch: %d events, %d admitted, %d quarantined, %.0f ms (committed in %d "
        "transaction%s)",
        len(decided),
        admitted,
        len(decided) - admitted,
        (time.perf_counter() - started) * 1000.0,
        runs.transactions,
        "" if runs.transactions == 1 else "s",
    )
