"""A poll batch routed in runs, each committed while the next is routed (gate.schedule).

:func:`route_in_runs` below drives :func:`worker.gate.schedule.route_in_runs` as the
processor does: it takes every finished run the schedule returns, in order."""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import pytest

from worker.gate import schedule
from worker.gate.schedule import Runs


@dataclass(frozen=True)
class Count:
    committed: int


def route_in_runs(
    events: list[Any],
    route: Callable[[Any], Any],
    hand_off: Callable[[list[Any], list[Any]], Future[Any]],
    settle: Callable[[Any], int],
    **kw: Any,
) -> Runs[Any]:
    """Every run of ``events`` taken; ``settle`` turns a run's result into its count."""

    def submit(events: list[Any], outcomes: list[Any]) -> Future[Count]:
        counted: Future[Count] = Future()

        def count(f: Future[Any]) -> None:
            error = f.exception()
            if error is None:
                counted.set_result(Count(settle(f.result())))
            else:
                counted.set_exception(error)

        hand_off(events, outcomes).add_done_callback(count)
        return counted

    taken: list[Count] = []
    with schedule.route_in_runs(events, route, submit, **kw) as runs:
        taken.extend(runs)
    assert sum(c.committed for c in taken) == runs.result.committed
    return runs.result


class Clock:
    """A clock that each routed event advances by its cost (seconds)."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def done(value: object) -> Future[object]:
    f: Future[object] = Future()
    f.set_result(value)
    return f


class Ledger:
    """hand_off/settle doubles: each run is committed at once (or fails at ``fail_at``,
    an event, after committing the events before it in the run)."""

    def __init__(self, fail_at: str | None = None) -> None:
        self.runs: list[list[str]] = []
        self.fail_at = fail_at

    def hand_off(self, events: list[str], outcomes: list[str]) -> Future[object]:
        assert outcomes == [e.upper() for e in events]
        self.runs.append(list(events))
        n = events.index(self.fail_at) if self.fail_at in events else len(events)
        return done(n)

    @staticmethod
    def settle(n: object) -> int:
        assert isinstance(n, int)
        return n


def test_events_are_routed_until_the_deadline_passes() -> None:
    clock, marks, ledger = Clock(), [], Ledger()
    cost = {"a": 4.0, "b": 4.0, "c": 4.0, "d": 1.0}

    def route(e: str) -> str:
        clock.now += cost[e]
        return e.upper()

    runs = route_in_runs(
        list("abcd"), route, ledger.hand_off, ledger.settle, deadline_s=10.0, min_run_s=100.0,
        clock=clock, progress=lambda: marks.append(clock.now),
    )  # fmt: skip
    # a ends at 4 s, b at 8 s (< 10: c starts), c at 12 s: d is left for the next step
    assert runs == Runs(committed=3, transactions=1, rest=["d"], past_deadline=True, failed=False)
    assert ledger.runs == [["a", "b", "c"]]
    assert marks == [104.0, 108.0, 112.0]


def test_the_first_event_is_always_routed() -> None:
    clock, ledger = Clock(), Ledger()

    def route(e: str) -> str:
        clock.now += 500.0  # one download far beyond the deadline
        return e.upper()

    for deadline_s in (1.0, 0.0):
        runs = route_in_runs(["x", "y"], route, ledger.hand_off, ledger.settle,
                             deadline_s=deadline_s, clock=clock)  # fmt: skip
        assert (runs.committed, runs.rest, runs.past_deadline) == (1, ["y"], True)


def test_a_run_is_handed_off_once_it_took_min_run_s_and_no_transaction_is_in_flight() -> None:
    clock, ledger = Clock(), Ledger()

    def route(e: str) -> str:
        clock.now += 0.02
        return e.upper()

    runs = route_in_runs(list("abcdefg"), route, ledger.hand_off, ledger.settle,
                         deadline_s=60.0, min_run_s=0.05, clock=clock)  # fmt: skip
    # 0.02 s an event: a run is handed off after its third event; the last run is the rest
    assert ledger.runs == [["a", "b", "c"], ["d", "e", "f"], ["g"]]
    assert runs == Runs(committed=7, transactions=3, rest=[], past_deadline=False, failed=False)


def test_small_fast_events_share_one_transaction() -> None:
    ledger = Ledger()
    runs = route_in_runs([str(i) for i in range(500)], str.upper, ledger.hand_off,
                         ledger.settle, deadline_s=60.0, min_run_s=3600.0)  # fmt: skip
    assert runs.transactions == 1 and runs.committed == 500 and len(ledger.runs[0]) == 500


def test_a_run_still_committing_is_waited_for_not_joined_by_another() -> None:
    clock = Clock()
    handed: list[list[str]] = []
    first: Future[object] = Future()

    def hand_off(events: list[str], outcomes: list[str]) -> Future[object]:
        assert first.done() or not handed, "two transactions in flight"
        handed.append(list(events))
        return first if len(handed) == 1 else done(len(events))

    def route(e: str) -> str:
        clock.now += 1.0
        if e == "d":  # the first run's transaction ends while d is routed
            first.set_result(1)
        return e.upper()

    runs = route_in_runs(list("abcdef"), route, hand_off, lambda n: int(n),  # type: ignore[call-overload]
                         deadline_s=60.0, min_run_s=0.5, clock=clock)  # fmt: skip
    # a is handed off alone; b and c wait for it (still committing), d finds it done
    assert handed == [["a"], ["b", "c", "d"], ["e"], ["f"]]
    assert runs == Runs(committed=6, transactions=4, rest=[], past_deadline=False, failed=False)


def test_a_failed_transaction_returns_its_events_those_routed_meanwhile_and_the_rest() -> None:
    clock, ledger = Clock(), Ledger(fail_at="e")

    def route(e: str) -> str:
        clock.now += 0.02
        return e.upper()

    runs = route_in_runs(list("abcdefghij"), route, ledger.hand_off, ledger.settle,
                         deadline_s=60.0, min_run_s=0.05, clock=clock)  # fmt: skip
    # runs abc (committed), def (d committed, then e failed); ghi was routed meanwhile
    assert ledger.runs == [["a", "b", "c"], ["d", "e", "f"]]
    assert runs.failed and not runs.past_deadline
    assert runs.committed == 4
    assert runs.rest == list("efghij")


def test_a_failed_last_run_returns_its_uncommitted_events() -> None:
    ledger = Ledger(fail_at="b")
    runs = route_in_runs(list("abc"), str.upper, ledger.hand_off, ledger.settle,
                         deadline_s=60.0, min_run_s=3600.0)  # fmt: skip
    assert (runs.committed, runs.rest, runs.failed) == (1, ["b", "c"], True)


def test_an_error_while_routing_waits_for_the_transaction_in_flight() -> None:
    clock = Clock()
    gate = threading.Event()
    finished: list[str] = []
    pool = ThreadPoolExecutor(1)

    def commit(events: list[str]) -> int:
        gate.wait(5)
        finished.append("".join(events))
        return len(events)

    def route(e: str) -> str:
        clock.now += 1.0
        if e == "c":
            gate.set()
            raise RuntimeError("a bug in routing")
        return e.upper()

    with pytest.raises(RuntimeError, match="a bug in routing"):
        route_in_runs(list("abc"), route, lambda ev, out: pool.submit(commit, ev),
                      lambda n: n, deadline_s=60.0, min_run_s=0.5, clock=clock)  # fmt: skip
    assert finished == ["a"]  # ended before the error reached the caller
    pool.shutdown()


def test_an_empty_batch_does_nothing() -> None:
    ledger = Ledger()
    runs = route_in_runs([], str.upper, ledger.hand_off, ledger.settle, deadline_s=60.0)
    assert runs == Runs(0, 0, [], False, False) and ledger.runs == []


def test_a_run_of_small_events_waits_for_min_run_bytes() -> None:
    clock, ledger = Clock(), Ledger()

    def route(e: str) -> str:
        clock.now += 1.0  # every event alone is past min_run_s
        return e.upper()

    sizes = {"a": 400, "b": 400, "c": 400, "d": 1000, "e": 10, "f": 10}
    runs = route_in_runs(
        list("abcdef"), route, ledger.hand_off, ledger.settle, deadline_s=60.0, min_run_s=0.5,
        size=sizes.__getitem__, min_run_bytes=1000, clock=clock,
    )  # fmt: skip
    # abc reach 1,200 bytes; d alone is 1,000; e and f (20 bytes) are the last run
    assert ledger.runs == [["a", "b", "c"], ["d"], ["e", "f"]]
    assert runs.transactions == 3 and runs.committed == 6


def test_a_poll_batch_of_small_events_is_one_transaction_however_long_it_routes() -> None:
    clock, ledger = Clock(), Ledger()

    def route(e: str) -> str:
        clock.now += 0.2
        return e.upper()

    events = [str(i) for i in range(200)]
    runs = route_in_runs(events, route, ledger.hand_off, ledger.settle, deadline_s=3600.0,
                         size=lambda e: 700, clock=clock)  # fmt: skip
    assert runs.transactions == 1 and ledger.runs == [events]


def _taken(events: list[str], **kw: Any) -> tuple[list[Any], Runs[str]]:
    """Every run yielded by :func:`schedule.route_in_runs` (as the processor takes them)
    and the result; each run submitted is committed at once, whole."""
    submitted: list[list[str]] = kw.pop("submitted", [])

    def submit(events: list[str], outcomes: list[str]) -> Future[object]:
        submitted.append(list(events))
        return done(Count(len(events)))

    with schedule.route_in_runs(events, str.upper, submit, deadline_s=60.0, min_run_s=1e9,
                                **kw) as runs:  # fmt: skip
        taken = list(runs)
    return taken, runs.result


def test_hold_last_returns_the_last_run_routed_and_not_submitted() -> None:
    submitted: list[list[str]] = []
    taken, result = _taken(list("abc"), hold_last=True, submitted=submitted)
    assert taken == [] and submitted == []
    assert result == Runs(0, 0, [], False, False, held=(list("abc"), list("ABC")))


def test_hold_last_past_the_deadline_commits_the_routed_run_as_without_it() -> None:
    clock = Clock()

    def route(e: str) -> str:
        clock.now += 10.0
        return e.upper()

    with schedule.route_in_runs(list("abc"), route, lambda ev, out: done(Count(len(ev))),
                                deadline_s=15.0, min_run_s=1e9, clock=clock,
                                hold_last=True) as runs:  # fmt: skip
        taken = list(runs)
    assert taken == [Count(2)]
    assert runs.result == Runs(2, 1, ["c"], True, False)


def test_a_carried_run_is_settled_first_and_not_counted_as_this_batchs() -> None:
    carried = (["x", "y"], done(Count(2)))
    taken, result = _taken(list("ab"), carried=carried)  # type: ignore[arg-type]
    assert taken == [Count(2), Count(2)]  # the carried run, then this batch's
    assert result == Runs(2, 1, [], False, False)


def test_a_failed_carried_run_puts_its_rest_and_this_whole_batch_back() -> None:
    submitted: list[list[str]] = []
    carried = (["x", "y"], done(Count(1)))  # committed "x", not "y"
    taken, result = _taken(list("ab"), carried=carried, submitted=submitted)  # type: ignore[arg-type]
    assert taken == [Count(1)] and submitted == []
    assert result == Runs(0, 0, ["y", "a", "b"], False, True)
