"""What the operator page reads of a running worker: recent quarantines, rates, counts.

:class:`RecentQuarantines` is an ``on_outcome`` callback (pipeline thread) keeping the last
``maxlen`` quarantined decisions and the decision times of the last minute; :class:`OverviewSource`
reads the worker's registry, SLO windows, migration view and state (HTTP threads) into an
:class:`~worker.core.lifecycle.overview.Overview`, remembering each change of the migration
counts for the timeline's step line. Both bound what they keep.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any
from urllib.parse import quote

from worker.core._util.text import clip
from worker.core.errors import DecodeError
from worker.core.lifecycle.migration import MigrationView
from worker.core.lifecycle.overview import (
    MAX_HISTORY,
    MAX_NAME_CHARS,
    Overview,
    Sources,
    build_overview,
)
from worker.gate.housekeeping import hand_over
from worker.gate.route import Outcome
from worker.io import codec
from worker.io.reports.text import brief

__all__ = ["Kept", "OverviewSource", "RecentQuarantines", "fan_out"]

#: Longest measured value or message shown per broken clause, characters.
MAX_MEASURED_CHARS = 200
#: Broken clauses listed per quarantined batch.
MAX_BROKEN_SHOWN = 8
#: Seconds over which the decision rate is measured.
RATE_WINDOW_S = 60
#: Count histories kept (layer, major): beyond, new ones are not remembered.
MAX_SERIES = 512


@dataclass(frozen=True)
class Kept:
    """One quarantined batch as the page keeps it: its row (JSON-ready, bounded) and the
    decoded quarantine record without its original bytes (for the batch page)."""

    row: dict[str, Any]
    record: dict[str, Any]
    source: tuple[str, int, int]


def fan_out(*callbacks: Callable[[Outcome], None]) -> Callable[[Outcome], None]:
    """One ``on_outcome`` calling each of ``callbacks`` in order; its ``many(outcomes)``
    (:func:`worker.gate.housekeeping.report_decisions`) gives each callback the outcomes
    of a run, at once through the callback's own ``many`` when it has one."""
    return _FanOut(callbacks)


class _FanOut:
    """:func:`fan_out`'s callable."""

    def __init__(self, callbacks: tuple[Callable[[Outcome], None], ...]) -> None:
        self._callbacks = callbacks

    def __call__(self, outcome: Outcome) -> None:
        for cb in self._callbacks:
            cb(outcome)

    def many(self, outcomes: Sequence[Outcome]) -> None:
        """Each callback's :meth:`__call__` of every outcome, in order (its ``many``
        when it has one)."""
        for cb in self._callbacks:
            hand_over(cb, outcomes)


def _broken(record: dict[str, Any]) -> list[dict[str, str]]:
    out = []
    for r in (record.get("reasons") or ())[:MAX_BROKEN_SHOWN]:
        clause = f"{r.get('version') or ''}:{r.get('clause') or r.get('code')}".lstrip(":")
        out.append(
            {
                "clause": clip(clause, MAX_NAME_CHARS),
                "measured": clip(brief(r.get("kind"), r.get("measured")), MAX_MEASURED_CHARS),
                "message": clip(str(r.get("message") or ""), MAX_MEASURED_CHARS),
            }
        )
    return out


class RecentQuarantines:
    """The last ``maxlen`` quarantined batches and the decision times of the last minute.

    Pass it (through :func:`fan_out`) as the pipeline's ``on_outcome``; :meth:`rows`,
    :meth:`find` and :meth:`events_per_s` are called from HTTP threads (a lock guards all).
    """

    def __init__(
        self,
        maxlen: int = 20,
        clock: Callable[[], float] = time.monotonic,
        now: Callable[[], datetime] = lambda: datetime.now(timezone.utc),
    ) -> None:
        self._kept: deque[Kept] = deque(maxlen=maxlen)
        self._per_s: deque[list[int]] = deque(maxlen=RATE_WINDOW_S + 1)  # [second, count]
        self._lock = threading.Lock()
        self._clock = clock
        self._now = now

    def __call__(self, outcome: Outcome) -> None:
        t = self._clock()
        kept = None
        if not outcome.decision.admitted:
            kept = self._keep(outcome)
        with self._lock:
            second = int(t)
            if self._per_s and self._per_s[-1][0] == second:
                self._per_s[-1][1] += 1
            else:
                self._per_s.append([second, 1])
            if kept is not None:
                self._kept.append(kept)

    def _record(self, outcome: Outcome) -> dict[str, Any]:
        """The quarantine record the worker wrote for ``outcome`` (decoded, without its
        original bytes); rebuilt from the decision when none is found."""
        for out in outcome.records:
            if any(k == "dlq.reason" for k, _v in out.headers):
                try:
                    record = codec.decode_quarantine(out.value)
                except DecodeError:
                    break
                record["original"] = b""
                return record
        s = outcome.source
        return codec.decode_quarantine(
            codec.encode_quarantine(
                outcome.decision,
                batch_id=outcome.batch_id,
                layer=outcome.layer,
                source_topic=s.topic,
                source_partition=s.partition,
                source_offset=s.offset,
                original=b"",
                quarantined_at=self._now(),
                worker_id="this worker",
            )
        )

    def _keep(self, outcome: Outcome) -> Kept:
        s = outcome.source
        record = self._record(outcome)
        link = f"/batch/{quote(s.topic, safe='')}/{s.partition}/{s.offset}"
        row = {
            "at": self._now().strftime("%Y-%m-%d %H:%M:%S UTC"),
            "layer": clip(outcome.layer or outcome.layer_label, MAX_NAME_CHARS),
            "batch_id": clip(outcome.batch_id or "", MAX_NAME_CHARS),
            "reason": clip(str(record.get("reason_code") or ""), MAX_NAME_CHARS),
            "broken": _broken(record),
            "source": clip(f"{s.topic}[{s.partition}]@{s.offset}", 300),
            "link": link,
        }
        return Kept(row, record, (s.topic, s.partition, s.offset))

    def rows(self) -> list[dict[str, Any]]:
        """The kept batches' rows, newest first."""
        with self._lock:
            return [k.row for k in reversed(self._kept)]

    def find(self, topic: str, partition: int, offset: int) -> Kept | None:
        """The kept batch consumed at those coordinates, or None."""
        with self._lock:
            return next((k for k in self._kept if k.source == (topic, partition, offset)), None)

    def events_per_s(self) -> float:
        """Decisions committed per second over the last :data:`RATE_WINDOW_S` seconds
        (counted per whole second of the monotonic clock)."""
        since = int(self._clock()) - RATE_WINDOW_S
        with self._lock:
            n = sum(count for second, count in self._per_s if second > since)
        return n / RATE_WINDOW_S


def _history_step(
    history: dict[tuple[str, str], deque[tuple[datetime, int, int]]],
    view: MigrationView,
    now: datetime,
) -> None:
    for lv in view.layers.values():
        for v in lv.versions:
            key = (lv.layer, v.version)
            series = history.get(key)
            if series is None:
                if len(history) >= MAX_SERIES:
                    continue
                series = history[key] = deque(maxlen=MAX_HISTORY)
            counts = (len(v.declared), len(v.unattributed))
            if not series or series[-1][1:] != counts:
                series.append((now, *counts))


class OverviewSource:
    """Builds the page's :class:`Overview` from a running worker.

    ``state`` is shaped like :class:`worker.gate.pipeline.Pipeline` (``registry``,
    ``config``, ``assigned``, ``metrics``, ...); ``migration`` returns the latest migration
    view (e.g. ``lambda: exporter.view``), None: no counts.
    """

    def __init__(
        self,
        state: Any,
        recent: RecentQuarantines | None = None,
        migration: Callable[[], MigrationView] | None = None,
    ) -> None:
        self.state = state
        self.recent = recent or RecentQuarantines()
        self.migration = migration
        self._history: dict[tuple[str, str], deque[tuple[datetime, int, int]]] = {}
        self._lock = threading.Lock()

    def overview(self, now: datetime | None = None) -> Overview:
        """The overview at ``now`` (default: the current UTC time)."""
        now = now or datetime.now(timezone.utc)
        registry = self.state.registry
        view = self.migration() if self.migration is not None else MigrationView()
        with self._lock:
            _history_step(self._history, view, now)
            counts = {k: tuple(v) for k, v in self._history.items()}
        tracker = getattr(getattr(self.state, "metrics", None), "slo", None)
        src = Sources(
            published=registry.published(),
            stamps={k: t for layer in registry.layers() for k, t in registry.stamps(layer).items()},
            migration=view,
            slo=tracker.snapshot() if tracker is not None else (),
            breaks=dict(registry.broken_layers()),
            counts=counts,
        )
        return build_overview(
            src, quarantined=self.recent.rows(), worker=self.worker_state(), now=now
        )

    def worker_state(self) -> dict[str, Any]:
        """Readiness, bootstrap, broker reachability, assignment, lag and rates."""
        s = self.state
        down = getattr(s, "broker_unreachable_since", None)
        lag = _lag(s)
        assigned: Sequence[str] = sorted(f"{t}[{p}]" for t, p in s.assigned)
        return {
            "ready": bool(s.config.bootstrapped and s.assigned),
            "config_bootstrapped": _bootstrap(s.config),
            "broker": "reachable"
            if down is None
            else f"unreachable for {max(0.0, time.monotonic() - down):.0f} s",
            "partitions_assigned": [clip(a, 300) for a in assigned[:64]]
            + ([f"and {len(assigned) - 64} more"] if len(assigned) > 64 else []),
            "lag_total": sum(lag.values()) if lag else "not measured yet",
            "events_per_s": round(self.recent.events_per_s(), 2),
            "batches_committed": s.batches_committed,
            "transactions_aborted": s.transactions_aborted,
            "seconds_since_poll_loop": round(time.monotonic() - s.last_loop_monotonic, 1),
        }


def _bootstrap(config: Any) -> bool | str:
    """True once bootstrapped; else why not (the follower's stall reason), bounded."""
    if config.bootstrapped:
        return True
    stalled = getattr(config, "stalled", None)
    return clip(f"no: {stalled}", 400) if stalled else "no: reading the config topic"


def _lag(state: Any) -> dict[tuple[str, int], int]:
    lag = getattr(getattr(state, "metrics", None), "consumer_lag", None)
    return dict(lag) if lag else {}
