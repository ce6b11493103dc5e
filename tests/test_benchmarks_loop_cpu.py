"""``python -m benchmarks.loop_cpu``: the loop's CPU per event on the in-memory broker."""

from __future__ import annotations

from benchmarks.broker import make_events
from benchmarks.loop_cpu import one_round


def test_a_round_decides_every_event_and_reports_its_cpu_per_event() -> None:
    events = make_events(1, 8)
    per_event_s = one_round(events, "t")
    assert 0.0 < per_event_s < 1.0  # seconds of the loop thread's CPU per event
