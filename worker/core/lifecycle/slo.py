"""Attainment and error budget per contract version over a sliding window (pure, no OTel).

A *series* is one ``(layer, version, mode)``. Each committed
:class:`~worker.core.model.VersionVerdict`
is one event of its series: *good* when the version passed (no halt clause broke), *bad*
otherwise. Over the series' window

* ``attainment = passed / evaluated``;
* ``error_budget_remaining = 1 - (failed / evaluated) / (1 - objective)``, the version's own
  ``objective`` (docs/design.md section 3).

The budget follows the Google SRE workbook ("Implementing SLOs", error budget = 1 - SLO;
budget remaining = 1 - bad events / bad events allowed, where allowed = (1 - SLO) x
events; https://sre.google/workbook/implementing-slos/). It is **clamped to [0, 1]**: 0
means spent or overspent (how far overspent is visible in the attainment and in burn rates
computed from ``gis.contract.version_evaluations_total``). An objective of 1.0 allows no
failure: the budget is 1 without failures and 0 with any.

The window is bounded twice, both configurable (:class:`Window`): the last
``max_verdicts`` verdicts (default 1000) and only those recorded less than ``max_age_s``
seconds ago (default 28 days, the workbook's four-week window; ``None`` disables the age
bound). Memory is therefore bounded by ``max_verdicts`` per series. Timestamps are
monotonic seconds from an injectable clock.

The mode is part of the key, so an observing version's breaches never touch an enforcing
version's budget, and a promoted version starts a fresh enforcing series. Series of
versions no longer active are dropped by :meth:`SloTracker.retain`.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass

from worker.core.model import VersionVerdict

__all__ = [
    "DEFAULT_MAX_AGE_S",
    "DEFAULT_MAX_VERDICTS",
    "SeriesKey",
    "SloStatus",
    "SloTracker",
    "Window",
    "error_budget_remaining",
]

DEFAULT_MAX_VERDICTS = 1000
#: 28 days in seconds: the SRE workbook's four-week SLO window.
DEFAULT_MAX_AGE_S = 28 * 86400.0


@dataclass(frozen=True)
class SeriesKey:
    """One series: a contract version of a layer in one mode."""

    layer: str
    version: str
    mode: str


@dataclass(frozen=True)
class Window:
    """Bounds of the sliding window: the last ``max_verdicts`` verdicts no older than
    ``max_age_s`` seconds (``None``: no age bound)."""

    max_verdicts: int = DEFAULT_MAX_VERDICTS
    max_age_s: float | None = DEFAULT_MAX_AGE_S

    def __post_init__(self) -> None:
        if self.max_verdicts < 1:
            raise ValueError(f"max_verdicts must be >= 1, not {self.max_verdicts}")
        if self.max_age_s is not None and self.max_age_s <= 0:
            raise ValueError(f"max_age_s must be > 0 or None, not {self.max_age_s}")


@dataclass(frozen=True)
class SloStatus:
    """Attainment and budget of one series over its window.

    ``attainment`` and ``error_budget_remaining`` are None while the window is empty.
    """

    key: SeriesKey
    objective: float
    evaluated: int
    passed: int
    attainment: float | None
    error_budget_remaining: float | None

    @property
    def failed(self) -> int:
        return self.evaluated - self.passed


def error_budget_remaining(passed: int, evaluated: int, objective: float) -> float | None:
    """``1 - (failed / evaluated) / (1 - objective)`` clamped to [0, 1]; None if nothing
    was evaluated. ``objective`` >= 1 allows no failure (1.0 without failures, else 0.0)."""
    if evaluated <= 0:
        return None
    failed_fraction = (evaluated - passed) / evaluated
    allowed = 1.0 - objective
    if allowed <= 0:
        return 1.0 if failed_fraction == 0 else 0.0
    return min(1.0, max(0.0, 1.0 - failed_fraction / allowed))


class _Series:
    __slots__ = ("objective", "passed", "verdicts")

    def __init__(self, window: Window) -> None:
        self.verdicts: deque[tuple[float, bool]] = deque(maxlen=window.max_verdicts)
        self.passed = 0
        self.objective = 1.0


class SloTracker:
    """Sliding windows of verdicts per :class:`SeriesKey`.

    :meth:`record` is called by the pipeline thread after each commit; :meth:`snapshot`
    from a metrics or HTTP thread (a lock guards both).

    Parameters
    ----------
    window : Window, optional
        The bounds of every series' window.
    clock : callable, optional
        Monotonic seconds (default :func:`time.monotonic`); injectable for tests.
    """

    def __init__(
        self, window: Window | None = None, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.window = window or Window()
        self._clock = clock
        self._series: dict[SeriesKey, _Series] = {}
        self._lock = threading.Lock()

    def record(self, verdict: VersionVerdict, objective: float) -> None:
        """Add one verdict of a version whose objective is ``objective``."""
        self.record_result(
            SeriesKey(verdict.layer, verdict.version, verdict.mode), verdict.passed, objective
        )

    def record_result(
        self, key: SeriesKey, passed: bool, objective: float, age_s: float = 0.0
    ) -> None:
        """Add one result to ``key``'s series (the objective is the latest seen).

        ``age_s`` (seconds, >= 0) dates a result recorded earlier, e.g. one restored from
        the evaluations topic at start; results must arrive oldest first.
        """
        now = self._clock() - max(0.0, age_s)
        with self._lock:
            series = self._series.get(key)
            if series is None:
                series = self._series[key] = _Series(self.window)
            series.objective = objective
            if len(series.verdicts) == series.verdicts.maxlen and series.verdicts[0][1]:
                series.passed -= 1  # the append below evicts the oldest, a pass
            series.verdicts.append((now, passed))
            series.passed += int(passed)

    def _expire(self, series: _Series, now: float) -> None:
        if self.window.max_age_s is None:
            return
        horizon = now - self.window.max_age_s
        while series.verdicts and series.verdicts[0][0] <= horizon:
            _, ok = series.verdicts.popleft()
            series.passed -= int(ok)

    def restore(
        self,
        results: Iterable[tuple[SeriesKey, bool, float, float]],
    ) -> int:
        """Refill windows after a restart from ``(key, passed, objective, age_s)`` results.

        Results older than the window's ``max_age_s`` are skipped; the rest are recorded
        oldest first, so each series keeps at most its last ``max_verdicts``. Returns the
        number recorded. Call before the first live :meth:`record`.
        """
        horizon = self.window.max_age_s
        kept = sorted(
            (r for r in results if horizon is None or r[3] < horizon), key=lambda r: -r[3]
        )
        for key, passed, objective, age_s in kept:
            self.record_result(key, passed, objective, age_s)
        return len(kept)

    def retain(self, keys: Collection[SeriesKey]) -> None:
        """Drop every series whose key is not in ``keys`` (e.g. retired versions)."""
        with self._lock:
            for key in [k for k in self._series if k not in keys]:
                del self._series[key]

    def status(self, key: SeriesKey) -> SloStatus | None:
        """The status of one series, or None when it was never recorded."""
        return next((s for s in self.snapshot() if s.key == key), None)

    def snapshot(self) -> list[SloStatus]:
        """Every series' status, sorted by key; verdicts past ``max_age_s`` are evicted."""
        now = self._clock()
        out = []
        with self._lock:
            for key, series in self._series.items():
                self._expire(series, now)
                n, ok = len(series.verdicts), series.passed
                out.append(
                    SloStatus(
                        key,
                        series.objective,
                        n,
                        ok,
                        ok / n if n else None,
                        error_budget_remaining(ok, n, series.objective),
                    )
                )
        return sorted(out, key=lambda s: (s.key.layer, s.key.version, s.key.mode))
