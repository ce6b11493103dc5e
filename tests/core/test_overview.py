"""The operator page's view model: versions, marks, retirement gates, escalations, bounds."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

from tests.catalogue import NOW, contract_of
from worker.core.lifecycle.migration import Declaration, build_view
from worker.core.lifecycle.overview import (
    MAX_NAME_CHARS,
    MAX_READERS_SHOWN,
    Sources,
    build_overview,
    overview_to_json,
)
from worker.core.lifecycle.policy import Published
from worker.core.lifecycle.slo import SeriesKey, SloStatus

DAY = timedelta(days=1)
V1 = contract_of(version="v1.0", layer="roads")
V2 = contract_of(version="v2.0", layer="roads")
D1 = "a" * 64
D2 = "b" * 64


def published(contract, mode="enforcing", state="active", at=NOW - 5 * DAY, supersedes=()):  # type: ignore[no-untyped-def]
    return Published(contract, mode, state, "major", (), at, "tests", supersedes)


def view(declared: dict[str, str], reading: list[str]):  # type: ignore[no-untyped-def]
    return build_view(
        {"roads": ["v1.0", "v2.0"]},
        [Declaration(c, "roads", v, NOW - DAY) for c, v in declared.items()],
        reading,
        [*declared, *reading],
        now=NOW,
        stale_after=timedelta(days=30),
    )


def sources(declared: dict[str, str], reading: list[str], **kw) -> Sources:  # type: ignore[no-untyped-def]
    known = [published(V1), published(V2, at=NOW - 3 * DAY)]
    stamps = {
        f"roads/v1.0/{D1}/enforcing-active": NOW - 5 * DAY + timedelta(hours=1),
        f"roads/v2.0/{D2}/enforcing-active": NOW - 2 * DAY,
    }
    return Sources(known, stamps, view(declared, reading), **kw)


def test_the_gate_counts_declared_and_unattributed_readers_and_opens_at_zero() -> None:
    o = build_overview(sources({"team-a": "v1.0", "team-b": "v2.0"}, ["etl-7"]), now=NOW)
    (layer,) = o.layers
    v1, v2 = layer.gates
    assert (v1.declared, v1.unattributed, v1.count, v1.open) == (1, 1, 2, False)
    assert v1.line == "v1: 2 readers left: team-a, group unattributed:etl-7"
    assert (v2.count, v2.retirable) == (1, True)
    # everyone declares v2: v1's gate opens, v2 is the newest and carries them
    o = build_overview(sources({"team-a": "v2.0", "etl-7": "v2.0"}, ["etl-7"]), now=NOW)
    v1, v2 = o.layers[0].gates
    assert (v1.count, v1.open) == (0, True)
    assert v1.line == "v1: no reader left: the retirement gate is open"
    assert v2.count == 2
    assert v2.line == "v2: 2 readers left: etl-7, team-a"  # retiring v2 would need them too


def test_the_only_major_carries_its_readers() -> None:
    only = build_view(
        {"roads": ["v1.0"]},
        [Declaration("team-a", "roads", "v1.0", NOW)],
        [],
        ["team-a"],
        now=NOW,
        stale_after=timedelta(days=30),
    )
    o = build_overview(Sources([published(V1)], {}, only), now=NOW)
    (gate,) = o.layers[0].gates
    assert (gate.count, gate.retirable, gate.open) == (1, False, False)
    assert gate.line == "v1: 1 reader on it (no other enforcing major to retire it for): team-a"


def test_versions_carry_age_in_cycles_slo_figures_and_record_times() -> None:
    slo = [SloStatus(SeriesKey("roads", "v1.0", "enforcing"), 0.99, 10, 9, 0.9, 0.0)]
    o = build_overview(sources({}, [], slo=slo), now=NOW)
    v1, v2 = o.layers[0].versions
    assert v1.age_cycles == 5.0 and v2.age_cycles == 3.0
    assert (v1.attainment, v1.budget_left, v1.evaluated) == (0.9, 0.0, 10)
    assert v2.attainment is None
    assert [(m.event, m.at) for m in v1.marks] == [
        ("published", NOW - 5 * DAY),
        ("promoted", NOW - 5 * DAY + timedelta(hours=1)),
    ]
    assert (v1.colour, v2.colour) == (0, 1)
    # the overlap of two majors opened 3 days (3 cycles of P1D) ago: an escalation
    assert o.layers[0].escalations == (
        "roads: overlap of v1, v2 open for 3.0 cadence cycles (more than two)",
    )


def test_retirement_and_supersession_marks_come_from_their_records() -> None:
    v11 = contract_of(version="v1.1", layer="roads")
    known = [
        published(V1, state="superseded"),
        published(v11, at=NOW - 2 * DAY, supersedes=("roads/v1.0",)),
        published(V2, state="retired", at=NOW - 4 * DAY),
    ]
    stamps = {
        "roads/v1.1/" + "c" * 64: NOW - 2 * DAY + timedelta(minutes=1),
        f"roads/v2.0/{D2}/enforcing-retired": NOW - DAY,
    }
    o = build_overview(Sources(known, stamps, view({}, [])), now=NOW)
    marks = {v.version: dict((m.event, m.at) for m in v.marks) for v in o.layers[0].versions}
    assert marks["v1.0"]["superseded"] == NOW - 2 * DAY + timedelta(minutes=1)
    assert marks["v2.0"]["retired"] == NOW - DAY


def test_hostile_names_are_clipped_and_readers_capped() -> None:
    hostile = "<script>alert(1)</script>" * 1000
    many = [f"group-{i}" for i in range(40)]
    src = sources({hostile: "v1.0"}, many)
    o = build_overview(replace(src, breaks={"roads": ["x" * 10_000_000]}), now=NOW)
    v1 = o.layers[0].gates[0]
    assert v1.count == 41 and len(v1.readers) == MAX_READERS_SHOWN
    assert all(len(r) <= MAX_NAME_CHARS + 60 for r in v1.readers)
    assert v1.line.endswith(f"and {41 - MAX_READERS_SHOWN} more")
    assert len(o.layers[0].breaks[0]) < 500
    doc = overview_to_json(o)
    assert doc["layers"][0]["gates"][0]["count"] == 41  # type: ignore[index]
    assert len(str(doc)) < 20_000


def test_count_history_is_carried_on_the_gate() -> None:
    history = [(NOW - DAY, 2, 1), (NOW - timedelta(hours=1), 1, 1)]
    o = build_overview(sources({}, [], counts={("roads", "v1"): history}), now=NOW)
    assert o.layers[0].gates[0].history == tuple(history)
    assert overview_to_json(o)["layers"][0]["gates"][0]["history"][0] == [  # type: ignore[index]
        (NOW - DAY).isoformat(),
        2,
        1,
    ]
