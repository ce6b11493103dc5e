"""Small events routed in groups (gate.route_group): on the in-memory broker, a worker
that evaluates a poll batch's small events of one layer together writes exactly the
records, decisions, offsets and counts of one that routes them one by one: mixed poll
batches of several layers, a version set per layer, an undecodable event and a null one
in the middle, a layer without a contract, an event over the group size, every clause
kind, bad geometries of every sort."""

from __future__ import annotations

import dataclasses
import io
from collections.abc import Sequence
from datetime import timedelta
from typing import Any

import fastavro
import pyarrow as pa
import pytest
import shapely

from tests.catalogue import (
    BOWTIE,
    EMPTY_POLYGON,
    NOW,
    VALID_POLYGON,
    active,
    batch_of,
    clause,
    contract_of,
)
from tests.core.test_shared_facts import CODES, EVERYTHING, GEOMS
from tests.gate.world import UNDECODABLE, world
from worker.core import evaluate_group as group_module
from worker.core.clauses import KINDS
from worker.core.columns import derive_schema
from worker.core.model import ActiveVersion
from worker.gate.config import GateConfig
from worker.gate.records import Outcome
from worker.gate.route import Router
from worker.gate.route_group import GroupedRoute
from worker.io import codec
from worker.io.codec.avro import BATCH_ARRIVAL_PLANAR

ROADS = contract_of(
    clause("srid", "crs", expect="EPSG:4326"),
    clause("ext", "extent", region=[-10.0, -10.0, 10.0, 60.0]),
    clause("valid", "validity", on_break="warn"),
    version="v2.0",
    layer="roads",
)
#: every kind but coverage, and no clause that raises: valid small parcels pass
ENFORCED = contract_of(*(c for c in EVERYTHING.clauses if c.name not in ("bad", "cov")))
VERSIONS: dict[str, Sequence[ActiveVersion]] = {
    "parcels": (active(ENFORCED), active(dataclasses.replace(EVERYTHING, version="v2.0",
                                                               major=2), mode="observing")),
    "roads": (active(ROADS),),
}  # fmt: skip


def _event(layer: str, n: int, geoms: list[Any], codes: list[Any], age_min: int = 0) -> bytes:
    """A BatchArrival of ``layer``'s ``geoms``; its data ``50 + (age_min or n)`` minutes old."""
    table = pa.table({"code": pa.array(codes, pa.string()),
                      "fid": [f"{layer}-{n}-{i}" for i in range(len(geoms))]})  # fmt: skip
    b = batch_of(geoms, attributes=table, data_time=NOW - timedelta(minutes=50 + (age_min or n)),
                 schema_fields=derive_schema(table))  # fmt: skip
    return codec.encode_batch(dataclasses.replace(b, layer=layer, batch_id=f"{layer}-{n}"))


def _with_values(value: bytes, column: int, values: list[Any]) -> bytes:
    """``value`` (a BatchArrival) with the values of its ``column``-th column replaced."""
    record = codec.decode_event(value)
    record["features"]["columns"][column]["values"] = values
    out = io.BytesIO()
    fastavro.schemaless_writer(out, BATCH_ARRIVAL_PLANAR, record)
    return out.getvalue()


def _poll_batch() -> list[tuple[bytes | None, bytes]]:
    """``(value, key)`` of a mixed poll batch: one-feature events of every sort of
    geometry, events of two or three, an undecodable and a null event, a layer without a
    contract, an event of 70 features (over the group size)."""
    out: list[tuple[bytes | None, bytes]] = []
    for n, (g, code) in enumerate(zip(GEOMS, CODES, strict=True)):
        out.append((_event("parcels", n, [g], [code]), b"parcels"))
        out.append((_event("roads", n, [shapely.Point(3 * n, n)], ["x"]), b"roads"))
        if n == 3:
            out += [(UNDECODABLE, b"parcels"), (None, b"parcels")]
            out.append((_event("ghosts", n, [g], [code]), b"ghosts"))
        if n == 4:  # an int in a string column; a column of 2 values for 1 geometry
            wrong = _event("parcels", 200, [g], [code])
            out.append((_with_values(wrong, 0, [7]), b"parcels"))
            out.append((_with_values(wrong, 1, ["a", "b"]), b"parcels"))
        if n == 5:
            big = [shapely.box(i, 0.0, i + 0.5, 0.5) for i in range(70)]
            out.append((_event("parcels", 100, big, ["a"] * 70), b"parcels"))
    out.append((_event("parcels", 101, GEOMS[:3], CODES[:3]), b"parcels"))
    out.append((_event("parcels", 102, GEOMS[5:7], CODES[5:7]), b"parcels"))
    return out


def _run(
    group_events: int,
    versions: dict[str, Sequence[ActiveVersion]] = VERSIONS,
    poll_batch: list[tuple[bytes | None, bytes]] | None = None,
) -> tuple[list[Any], list[tuple[Any, ...]], list[Any]]:
    """The committed records of every output topic, the outcomes (less their routing
    time) and the consumer's positions after one worker took ``poll_batch`` (default
    :func:`_poll_batch`) with the layers' ``versions``."""
    events = _poll_batch() if poll_batch is None else poll_batch
    outcomes: list[Outcome] = []
    config = GateConfig(lag_interval_s=float("inf"), group_events=group_events)
    w = world(config=config, on_outcome=outcomes.append)
    w.p.route = Router.for_settings(w.settings, lambda layer: versions.get(layer, ()),
                                    lambda: NOW)  # fmt: skip
    plain = w.broker.producer()
    for i, (value, key) in enumerate(events):
        plain.produce(w.batches, value=value, key=key, partition=i % 2)
    done = 0
    while done < len(events):
        done += w.p.step()
    t = w.settings.topics
    records = [
        (topic, m.partition(), m.offset(), m.key(), m.value(), m.headers())
        for topic in (t.admitted, t.quarantine, t.evaluations)
        for m in w.read(topic)
    ]
    positions = w.positions()
    w.p.close()
    return records, [dataclasses.replace(o, duration_s=0.0) for o in outcomes], positions


def test_grouped_routing_writes_what_one_by_one_writes(monkeypatch: pytest.MonkeyPatch) -> None:
    sizes: list[int] = []
    evaluate_group = group_module.evaluate_group

    def counted(batches: Any, *args: Any, **kw: Any) -> Any:
        sizes.append(len(batches))
        return evaluate_group(batches, *args, **kw)

    monkeypatch.setattr("worker.gate.route_group.evaluate_group", counted)
    grouped = _run(64)
    # the poll batch's small events were one window (under 64): one group per layer, the
    # event of 70 features in it
    assert sorted(sizes) == [9, 12]
    alone = _run(1)
    assert grouped == alone
    records, outcomes, positions = grouped
    assert len(outcomes) == len(_poll_batch()) == 26
    assert positions == [(0, 13), (1, 13)]
    decided = {o.batch_id: (o.decision.decision, o.layer_label) for o in outcomes}
    assert decided["roads-3"] == ("admitted", "roads")
    assert decided["roads-4"] == ("quarantined", "roads")  # outside its extent
    assert decided["ghosts-3"] == ("quarantined", "unknown")
    assert decided["parcels-100"][0] == "quarantined"
    assert decided["parcels-0"] == ("admitted", "parcels")
    codes = [o.decision.reasons[0].code for o in outcomes if o.decision.reasons]
    assert set(codes) == {"decode_error", "no_active_contract", "contract_break"}
    messages = [o.decision.reasons[0].message for o in outcomes if o.decision.reasons]
    undecodable = "undecodable batch-arrival event: column"
    assert f"{undecodable} 'code' of type string holds a int at row 0" in messages
    assert f"{undecodable} 'fid' has 2 values for 1 geometries" in messages
    observed = {r.name: r for r in outcomes[0].decision.verdicts[1].clauses}
    assert observed["bad"].gate_error is not None and observed["cov"].broke
    assert len({r[0] for r in records}) == 3
    assert sum(1 for r in records if r[0].endswith("evaluations")) >= 20


def test_group_events_below_one_is_refused() -> None:
    with pytest.raises(ValueError, match="group_events must be 1 or more, got 0"):
        GateConfig(group_events=0)


def test_grouped_route_hands_out_a_window_in_order_and_routes_large_events_alone() -> None:
    w = world()
    router = Router.for_settings(w.settings, lambda layer: VERSIONS.get(layer, ()), lambda: NOW)
    values = [value for value, _ in _poll_batch()[:12]]
    w.send(*[(0, v or b"") for v in values])
    events = w.poll()
    assert len(events) == 12
    big = {id(events[4])}  # routed alone, as if over min_ahead_bytes
    grouped = GroupedRoute(events, router, config=GateConfig(group_events=5, min_ahead_bytes=1),
                           sizes=[1 if id(m) in big else 0 for m in events])  # fmt: skip
    assert not grouped.ready(events[0])
    first = grouped(events[0])  # routes the window: events 0-3 and 5 (4 is large)
    assert [grouped.ready(e) for e in events[:7]] == [False, True, True, True, False, True, False]
    outcomes = [first] + [grouped(e) for e in events[1:]]
    alone = [router(e) for e in events]
    drop = lambda o: dataclasses.replace(o, duration_s=0.0)  # noqa: E731
    assert [drop(o) for o in outcomes] == [drop(o) for o in alone]
    assert [o.batch_id for o in outcomes[:3]] == ["parcels-0", "roads-0", "parcels-1"]


def _small_events() -> list[tuple[bytes | None, bytes]]:
    """One-feature parcels, most of them passing every clause of :data:`ENFORCED` (equal
    results, shared), some breaking one: a bowtie, a box outside the extent, an unknown
    code, a null code, an empty polygon; and a roads event between them."""
    out: list[tuple[bytes | None, bytes]] = []
    odd = {5: (BOWTIE, "a"), 9: (shapely.box(6.0, 0.0, 7.0, 1.0), "a"), 13: (VALID_POLYGON, "zz"),
           17: (VALID_POLYGON, None), 21: (EMPTY_POLYGON, "a")}  # fmt: skip
    for n in range(30):
        box = shapely.box(0.01 * n, 0.0, 0.01 * n + 0.5, 0.5 + 0.1 * (n % 3))
        g, code = odd.get(n, (box, "a"))
        out.append((_event("parcels", n, [g], [code], age_min=1 + n % 2), b"parcels"))
        if n == 11:
            out.append((_event("roads", n, [shapely.Point(1.0, 2.0)], ["x"]), b"roads"))
    return out


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_small_events_grouped_write_what_one_by_one_writes_for_each_kind(kind: str) -> None:
    clauses = [c for c in EVERYTHING.clauses if c.kind == kind and c.name != "bad"]
    versions = {"parcels": (active(contract_of(*clauses)),), "roads": (active(ROADS),)}
    grouped = _run(64, versions, _small_events())
    assert grouped == _run(1, versions, _small_events())
    records, outcomes, _ = grouped
    assert len(outcomes) == 31
    admitted = [o.batch_id for o in outcomes if o.decision.admitted]
    # most events pass, with results shared between them; but the coverage clause's
    # region is far larger than one event's features
    assert len(admitted) >= 25 if kind != "coverage" else admitted == ["roads-11"]
    assert sum(1 for r in records if r[0].endswith("evaluations")) == 31


def test_group_bytes_below_one_is_refused() -> None:
    with pytest.raises(ValueError, match="group_bytes must be 1 or more, got 0"):
        GateConfig(group_bytes=0)


@pytest.mark.parametrize(
    ("group_events", "group_bytes", "windows"),
    [
        (5, 10_000, [[0, 1, 2, 3, 5], [6, 7, 8, 9, 10], [11]]),  # by count (4 is large)
        (64, 250, [[0, 1], [2, 3], [5, 6], [7, 8], [9, 10], [11]]),  # by bytes: 2 of 100 each
        (64, 50, [[0], [1], [2], [3], [5], [6], [7], [8], [9], [10], [11]]),  # 1 at least
    ],
)
def test_a_window_holds_at_most_group_events_and_group_bytes(
    group_events: int, group_bytes: int, windows: list[list[int]]
) -> None:
    w = world()
    router = Router.for_settings(w.settings, lambda layer: VERSIONS.get(layer, ()), lambda: NOW)
    w.send(*[(0, v or b"") for v, _ in _poll_batch()[:12]])
    events = w.poll()
    big = {id(events[4])}  # routed alone, as if over min_ahead_bytes
    config = GateConfig(group_events=group_events, min_ahead_bytes=1_000, group_bytes=group_bytes)
    grouped = GroupedRoute(events, router, config=config,
                           sizes=[5_000 if id(m) in big else 100 for m in events])  # fmt: skip
    seen: list[list[int]] = []
    for i, e in enumerate(events):
        if i == 4:
            continue
        if not grouped.ready(e):  # the first of a window: routes it
            grouped(e)
            seen.append([j for j, f in enumerate(events) if j == i or grouped.ready(f)])
        else:
            grouped(e)
    assert seen == windows


def test_grouped_route_refuses_sizes_not_one_per_event() -> None:
    w = world()
    router = Router.for_settings(w.settings, lambda layer: VERSIONS.get(layer, ()), lambda: NOW)
    w.send(*[(0, v or b"") for v, _ in _poll_batch()[:3]])
    events = w.poll()
    with pytest.raises(ValueError, match="2 sizes for 3 events"):
        GroupedRoute(events, router, config=GateConfig(), sizes=[1, 2])
