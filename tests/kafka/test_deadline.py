"""The per-poll-batch processing deadline (kafka.deadline): which prefix is decided, and
where each partition is sought back to."""

from __future__ import annotations

from tests.fakes import FakeRecord
from worker.kafka.deadline import rewind_offsets, route_within


class Clock:
    """A clock that each routed event advances by its cost (seconds)."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_events_are_routed_until_the_deadline_passes() -> None:
    clock, marks = Clock(), []
    cost = {"a": 4.0, "b": 4.0, "c": 4.0, "d": 1.0}

    def route(e: str) -> str:
        clock.now += cost[e]
        return e.upper()

    outcomes, rest = route_within(
        list("abcd"), route, 10.0, clock=clock, progress=lambda: marks.append(clock.now)
    )
    # a ends at 4 s, b at 8 s (< 10: c starts), c at 12 s: d is left for the next step
    assert outcomes == ["A", "B", "C"] and rest == ["d"]
    assert marks == [104.0, 108.0, 112.0]


def test_the_first_event_is_always_routed() -> None:
    clock = Clock()

    def route(e: str) -> str:
        clock.now += 500.0  # one download far beyond the deadline
        return e

    assert route_within(["x", "y"], route, 1.0, clock=clock) == (["x"], ["y"])
    assert route_within(["x", "y"], route, 0.0, clock=clock) == (["x"], ["y"])


def test_without_the_deadline_every_event_is_routed() -> None:
    assert route_within([1, 2, 3], lambda e: e * 2, 60.0) == ([2, 4, 6], [])
    assert route_within([], lambda e: e, 60.0) == ([], [])


def test_rewind_offsets_are_the_first_undecided_offset_per_partition() -> None:
    rest = [
        FakeRecord("in", 0, 7),
        FakeRecord("in", 1, 3),
        FakeRecord("in", 0, 8),
        FakeRecord("in", 1, 4),
        FakeRecord("x", 0, 9),
    ]
    assert rewind_offsets(rest) == {("in", 0): 7, ("in", 1): 3, ("x", 0): 9}
    assert rewind_offsets([]) == {}
