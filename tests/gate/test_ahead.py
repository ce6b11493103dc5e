"""Large events routed several at a time: the same outcomes, in order, as one at a time."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from datetime import datetime, timezone

import pytest

from tests.gate.test_route import NOW, V1, V11, WORLD
from tests.gate.world import world
from worker.gate.route import Router, Source, route
from worker.gate.route_group import RouteAhead
from worker.io import codec
from worker.kafka.settings import Settings, Topics


def utcnow() -> datetime:
    return datetime.now(timezone.utc)


def _events() -> list[bytes]:
    """Real events of 1 to 40 countries, an undecodable one, one with a bowtie (invalid)
    and one in a CRS the contract refuses: admitted and quarantined ones, mixed."""
    events = []
    for i, (start, n) in enumerate([(0, 1), (1, 40), (41, 7), (48, 25), (73, 3)]):
        rows = list(range(start, start + n))
        events.append(
            codec.encode_batch(
                replace(
                    WORLD,
                    batch_id=f"b{i}",
                    geometries_wkb=tuple(WORLD.geometries_wkb[r] for r in rows),
                    attributes=WORLD.attributes.take(rows),
                    feature_count=n,
                )
            )
        )
    bowtie = bytes.fromhex(
        "010300000001000000050000000000000000000000000000000000000000000000000000f03f"
        "000000000000f03f000000000000f03f00000000000000000000000000000000000000000000f03f"
        "00000000000000000000000000000000"
    )
    events.append(
        codec.encode_batch(
            replace(
                WORLD,
                batch_id="bowtie",
                geometries_wkb=(bowtie,),
                attributes=WORLD.attributes.take([0]),
                feature_count=1,
            )
        )
    )
    events.append(codec.encode_batch(replace(WORLD, batch_id="utm", declared_crs="EPSG:32633")))
    events.insert(3, b"\x00not avro at all")
    return events


EVENTS = _events()


def _route(value: bytes) -> object:
    return route(
        Source("gis.batches", 0, EVENTS.index(value), b"admin_boundaries", value),
        lambda layer: (V1, V11) if layer == "admin_boundaries" else (),
        Topics(),
        now=NOW,
        worker_id="w",
    )


def _comparable(outcome):  # type: ignore[no-untyped-def]
    """What an outcome says, without its timing (duration_s)."""
    return (outcome.batch_id, outcome.decision, outcome.records)


def test_routed_ahead_on_two_threads_the_outcomes_are_those_routed_one_at_a_time() -> None:
    serial = [_comparable(_route(v)) for v in EVENTS]
    assert {d.decision for _, d, _ in serial} == {"admitted", "quarantined"}
    with ThreadPoolExecutor(2) as pool:
        for _ in range(3):  # races, if any, have three chances to show
            ahead = RouteAhead(EVENTS, _route, pool, large=[len(e) >= 1 for e in EVENTS])
            assert [_comparable(ahead(v)) for v in EVENTS] == serial
            assert ahead.routed_ahead == len(EVENTS)


def test_two_large_events_are_routed_at_once_and_small_ones_on_the_callers_thread() -> None:
    both_in = threading.Barrier(2, timeout=5)  # broken unless the two routes overlap
    threads: dict[bytes, str] = {}

    def fake_route(event: bytes) -> bytes:
        threads[event] = threading.current_thread().name
        if len(event) >= 50:
            both_in.wait()
        return event.upper()

    events = [b"a" * 100, b"b" * 100, b"c"]
    with ThreadPoolExecutor(2, thread_name_prefix="router") as pool:
        ahead = RouteAhead(events, fake_route, pool, large=[len(e) >= 50 for e in events])
        assert [ahead(e) for e in events] == [b"A" * 100, b"B" * 100, b"C"]
        assert ahead.routed_ahead == 2
    assert threads[b"a" * 100].startswith("router") and threads[b"b" * 100].startswith("router")
    assert threads[b"c"] == threading.current_thread().name


def test_events_asked_out_of_order_are_refused() -> None:
    with ThreadPoolExecutor(2) as pool:
        ahead = RouteAhead([b"a", b"b"], bytes.upper, pool, large=[True, True])
        with pytest.raises(ValueError, match="in order"):
            ahead(b"b")


def test_a_routing_error_is_raised_for_its_own_event() -> None:
    def fails_on_b(event: bytes) -> bytes:
        if event == b"b":
            raise RuntimeError("boom")
        return event

    with ThreadPoolExecutor(2) as pool:
        ahead = RouteAhead([b"a", b"b"], fails_on_b, pool, large=[True, True])
        assert ahead(b"a") == b"a"  # b was routed ahead and failed: not raised here
        with pytest.raises(RuntimeError, match="boom"):
            ahead(b"b")


def test_close_waits_for_an_event_routed_ahead_and_never_asked_for() -> None:
    started, finished = threading.Event(), threading.Event()

    def slow(event: bytes) -> bytes:
        if event == b"b":
            started.set()
            time.sleep(0.2)
            finished.set()
            raise RuntimeError("dropped with the outcome")
        return event

    with ThreadPoolExecutor(2) as pool:
        ahead = RouteAhead([b"a", b"b"], slow, pool, large=[True, True])
        assert ahead(b"a") == b"a"  # the deadline passes here: b is not asked for
        assert started.wait(5)
        ahead.close()  # no error: b's is dropped with its outcome
        assert finished.is_set()


def test_a_poll_batch_of_large_events_is_routed_ahead_and_decided_in_order() -> None:
    """Processor.step with two routing threads: events of 256 KiB and more go to the
    routers, every event is decided once, and the decisions are committed in order."""
    big = [b"\x00" * (300 * 1024) + bytes([i]) for i in range(4)]
    seen: list[tuple[int, str]] = []
    original = Router.for_settings(Settings(instance_id="pod-0"), lambda layer: (), utcnow)

    def spy(m):  # type: ignore[no-untyped-def]
        seen.append((m.offset(), threading.current_thread().name))
        return original(m)

    decided: list[int] = []
    w = world(partitions=1, router=spy, on_outcome=lambda o: decided.append(o.source.offset))
    w.send(*[(0, v) for v in big])
    assert w.p.gate_config.routing_threads == 2
    assert w.p.step() == 4
    assert sorted(offset for offset, _ in seen) == [0, 1, 2, 3]
    assert all(name.startswith("gate-route") for _, name in seen)
    assert decided == [0, 1, 2, 3]
    produced = [c for c in w.broker.calls if c.startswith("produce")]
    assert produced == [f"produce {Topics().quarantine}"] * 4  # undecodable: one record each
    assert w.broker.committed(w.settings.group_id) == {(w.batches, 0): 4}


def test_past_the_deadline_an_outcome_routed_ahead_is_taken_and_no_more_are_routed() -> None:
    """A review: once the deadline passed, an event routed ahead and finished was thrown
    away and routed again in the next poll batch (12 events of 1 MB took 23 routings)."""
    from tests.gate.test_schedule import Ledger, route_in_runs

    b_done = threading.Event()
    routed: list[bytes] = []

    def fake_route(event: bytes) -> bytes:
        routed.append(event)
        if event == b"b":
            b_done.set()
        return event.upper()

    ticks = iter([0.0, 0.0] + [10.0] * 20)  # the deadline (1 s) passes after a

    def clock() -> float:
        t = next(ticks)
        if t >= 10.0:  # past it: b, routed ahead with a, has finished
            assert b_done.wait(5)
            time.sleep(0.05)
        return t

    ledger = Ledger()

    def hand_off(events: list[bytes], outcomes: list[bytes]):  # type: ignore[no-untyped-def]
        return ledger.hand_off([e.decode() for e in events], [o.decode() for o in outcomes])

    with ThreadPoolExecutor(2) as pool:
        ahead = RouteAhead([b"a", b"b", b"c"], fake_route, pool, large=[True] * 3)
        runs = route_in_runs(
            [b"a", b"b", b"c"], ahead, hand_off, ledger.settle, deadline_s=1.0,
            min_run_s=100.0, clock=clock, ready=ahead.ready,
        )  # fmt: skip
        ahead.close()
    assert runs.committed == 2 and runs.rest == [b"c"] and runs.past_deadline
    assert sorted(routed) == [b"a", b"b"]  # c was never routed ahead
    assert ahead.routed_ahead == 2
