"""Sliding-window attainment and error budget per (layer, version, mode), plain values."""

from __future__ import annotations

import pytest

from worker.core.lifecycle.slo import SeriesKey, SloTracker, Window, error_budget_remaining
from worker.core.model import VersionVerdict

V1 = SeriesKey("parcels", "v1.0", "enforcing")
V2 = SeriesKey("parcels", "v2.0", "observing")


class Clock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


def verdict(version: str, mode: str, passed: bool) -> VersionVerdict:
    return VersionVerdict("parcels", version, mode, passed, ())  # type: ignore[arg-type]


def test_budget_math_at_objective_0_99() -> None:
    assert error_budget_remaining(1000, 1000, 0.99) == 1.0
    # 0.5 % failed of a 1 % budget: half left
    assert error_budget_remaining(995, 1000, 0.99) == pytest.approx(0.5)
    assert error_budget_remaining(990, 1000, 0.99) == pytest.approx(0.0)
    # overspent (2 % failed) is clamped to 0, never negative
    assert error_budget_remaining(980, 1000, 0.99) == 0.0
    assert error_budget_remaining(0, 0, 0.99) is None
    # objective 1.0 allows no failure
    assert error_budget_remaining(10, 10, 1.0) == 1.0
    assert error_budget_remaining(9, 10, 1.0) == 0.0


def test_count_window_evicts_the_oldest_verdicts() -> None:
    slo = SloTracker(Window(max_verdicts=4, max_age_s=None), Clock())
    for ok in (False, False, True, True, True, True):
        slo.record_result(V1, ok, 0.5)
    s = slo.status(V1)
    assert s is not None
    assert (s.evaluated, s.passed, s.attainment) == (4, 4, 1.0)
    slo.record_result(V1, False, 0.5)  # evicts a pass
    s = slo.status(V1)
    assert s is not None
    assert (s.evaluated, s.passed, s.failed) == (4, 3, 1)
    assert s.attainment == 0.75
    assert s.error_budget_remaining == pytest.approx(1 - 0.25 / 0.5)


def test_age_window_evicts_old_verdicts() -> None:
    clock = Clock()
    slo = SloTracker(Window(max_verdicts=100, max_age_s=60.0), clock)
    slo.record_result(V1, False, 0.99)
    clock.t += 30
    slo.record_result(V1, True, 0.99)
    s = slo.status(V1)
    assert s is not None and (s.evaluated, s.passed) == (2, 1)
    clock.t += 31  # the failure is now 61 s old
    s = slo.status(V1)
    assert s is not None and (s.evaluated, s.passed, s.attainment) == (1, 1, 1.0)
    assert s.error_budget_remaining == 1.0
    clock.t += 60
    s = slo.status(V1)
    assert s is not None and s.evaluated == 0
    assert s.attainment is None and s.error_budget_remaining is None


def test_observing_breaches_never_touch_the_enforcing_budget() -> None:
    slo = SloTracker(Window(max_verdicts=100), Clock())
    for _ in range(99):
        slo.record(verdict("v1.0", "enforcing", True), 0.99)
        slo.record(verdict("v2.0", "observing", False), 0.99)
    enforcing, observing = slo.status(V1), slo.status(V2)
    assert enforcing is not None and observing is not None
    assert (enforcing.attainment, enforcing.error_budget_remaining) == (1.0, 1.0)
    assert (observing.attainment, observing.error_budget_remaining) == (0.0, 0.0)
    # the same version in the other mode (after a promotion) is another series
    slo.record(verdict("v2.0", "enforcing", True), 0.99)
    promoted = slo.status(SeriesKey("parcels", "v2.0", "enforcing"))
    assert promoted is not None and (promoted.evaluated, promoted.attainment) == (1, 1.0)


def test_retain_drops_inactive_series_and_snapshot_is_sorted() -> None:
    slo = SloTracker(clock=Clock())
    slo.record_result(V2, True, 0.9)
    slo.record_result(V1, True, 0.9)
    assert [s.key for s in slo.snapshot()] == [V1, V2]
    slo.retain({V1})
    assert [s.key for s in slo.snapshot()] == [V1]


def test_window_bounds_are_validated() -> None:
    with pytest.raises(ValueError):
        Window(max_verdicts=0)
    with pytest.raises(ValueError):
        Window(max_age_s=0)


def test_restore_refills_windows_oldest_first_within_both_bounds() -> None:
    # issue 10 item 12: a restarted worker reported attainment over an empty window
    clock = Clock()
    slo = SloTracker(Window(max_verdicts=3, max_age_s=100.0), clock)
    results = [
        (V1, True, 0.99, 10.0),
        (V1, False, 0.99, 150.0),  # older than the window: skipped
        (V1, False, 0.99, 50.0),
        (V1, True, 0.99, 90.0),
        (V1, True, 0.99, 5.0),  # the fourth within the age bound: the 90 s one is evicted
    ]
    assert slo.restore(results) == 4
    s = slo.status(V1)
    assert s is not None and (s.evaluated, s.passed) == (3, 2)  # 50 s fail, 10 s, 5 s pass
    clock.t += 55  # the 50 s-old failure is now 105 s old
    s = slo.status(V1)
    assert s is not None and (s.evaluated, s.passed, s.attainment) == (2, 2, 1.0)
