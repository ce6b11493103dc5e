"""Contract lifecycle against a real broker and a real worker (issue 3).

One worker per test (a group join costs about session.timeout.ms); the worker and the
CLI share an injectable clock so that a cadence cycle passes without waiting.
"""

from __future__ import annotations

import json
import time
from dataclasses import replace
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader

from tests.integration.cli import kafka_argv
from worker.cli.lifecycle_output import promote_text
from worker.cli.main import main
from worker.cli.scenario import data_file
from worker.control.lifecycle import gather_evidence, promote
from worker.control.publish import contract_record, publish_batch, publish_contract
from worker.core.contracts.parse import parse_contract
from worker.core.errors import PolicyError
from worker.core.lifecycle.evidence import Evidence
from worker.core.model import Batch
from worker.io.codec import encode_contract_record
from worker.io.contract_files import load_contract
from worker.io.payloads import read_batch_file
from worker.kafka.admin import produce_one
from worker.kafka.settings import Settings
from worker.ops.metrics import GateMetrics

T0 = datetime(2026, 11, 29, 6, 0, tzinfo=timezone.utc)
V1 = data_file("contracts/admin_boundaries.v1.yaml")
V1_1 = data_file("contracts/admin_boundaries.v1.1.yaml")  # tightening: drops "Seven seas"
SEVEN_SEAS = "Seven seas (open ocean)"


class Clock:
    def __init__(self, now: datetime) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now


def world(batch_id: str, data_time: datetime, *, without_seven_seas: bool = False) -> Batch:
    b = read_batch_file(
        data_file("admin_boundaries.parquet"),
        layer="admin_boundaries",
        crs="EPSG:4326",
        axis_order="east_north",
        data_time=data_time,
        batch_id=batch_id,
    )
    if not without_seven_seas:
        return b
    keep = np.array(b.attributes.column("continent").to_pylist(), dtype=object) != SEVEN_SEAS
    return replace(
        b,
        geometries_wkb=tuple(g for g, k in zip(b.geometries_wkb, keep, strict=True) if k),
        attributes=b.attributes.filter(keep),
        feature_count=int(keep.sum()),
    )


def wait_evidence(
    settings: Settings, version: str, n: int, now: datetime, timeout_s: float = 40
) -> Evidence:
    deadline = time.monotonic() + timeout_s
    while True:
        e = gather_evidence(settings, "admin_boundaries", version, now)
        if e.evaluated >= n or time.monotonic() > deadline:
            return e
        time.sleep(0.5)


def variant(path: Path, tmp_path: Path, version: str, *edits: tuple[str, str]) -> Path:
    text = path.read_text()
    for old, new in edits:
        assert old in text
        text = text.replace(old, new)
    lines = [f"version: {version}" if ln.startswith("version:") else ln for ln in text.split("\n")]
    out = tmp_path / f"{version}.yaml"
    out.write_text("\n".join(lines))
    return out


def test_full_tightening_cycle(
    settings: Settings,
    start_worker: Any,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    clock = Clock(T0)
    assert publish_contract(settings, V1, mode="enforcing", now=T0).change_class == "first"
    with pytest.raises(PolicyError, match="must be published --mode observing"):
        publish_contract(settings, V1_1, mode="enforcing", now=T0)
    out = publish_contract(settings, V1_1, mode="observing", now=T0)
    assert "change class tightening" in out.message and "domain codes removed" in out.message
    assert (out.change_class, out.mode, out.predecessor) == ("tightening", "observing", "v1.0")
    assert [(r.version, r.mode, r.state) for r in out.records] == [
        ("admin_boundaries/v1.1", "observing", "active")
    ]
    worker = start_worker(settings, clock=clock)

    publish_batch(settings, world("b1-real", T0))
    publish_batch(settings, world("b2-clean", T0, without_seven_seas=True))
    assert wait_evidence(settings, "v1.1", 2, T0).evaluated == 2  # evaluated at T0
    clock.now = T0 + timedelta(hours=1)
    publish_batch(settings, world("b3-real", clock.now))
    e = wait_evidence(settings, "v1.1", 3, T0 + timedelta(hours=2))
    # exactly the breaking batches, with the broken clause and its values
    assert [p.batch_id for p in e.would_reject] == ["b1-real", "b3-real"]
    assert {c.name for p in e.would_reject for c in p.broken} == {"continent"}
    assert e.evaluated == 3 and e.passed == 1
    assert len(e.newly_rejected) == 2  # the enforcing v1 admitted both
    html_file = tmp_path / "evidence.html"
    now_arg = f"--now={(T0 + timedelta(hours=2)).isoformat()}"
    args = ["admin_boundaries", "v1.1", now_arg, *kafka_argv(settings)]
    assert main(["contract", "evidence", *args, "--format", "html", "-o", str(html_file)]) == 0
    page = html_file.read_text()
    # the span runs from the first to the last evaluation (T0 to T0+1h), not to --now
    assert "<svg" in page and "b3-real" in page and "5.0 h missing" in page
    capsys.readouterr()
    assert main(["contract", "evidence", *args, "--format", "json"]) == 0
    js = json.loads(capsys.readouterr().out)
    assert [p["batch_id"] for p in js["would_reject"]] == ["b1-real", "b3-real"]
    assert main(["contract", "promote", *args]) == 2  # no terminal, no --yes; too early anyway
    assert "5.0 h missing" in capsys.readouterr().err
    # the enforcing v1 admitted all three
    v1 = wait_evidence(settings, "v1.0", 3, clock.now)
    assert v1.passed == 3

    # before one cadence cycle (PT6H) since the first evaluation: refused, says what's missing
    with pytest.raises(PolicyError, match=r"5\.0 h missing"):
        promote(settings, "admin_boundaries", "v1.1", now=T0 + timedelta(hours=2), yes=True)
    # silence after the last evaluation is no evidence: still refused seven hours on
    with pytest.raises(PolicyError, match=r"5\.0 h missing"):
        promote(settings, "admin_boundaries", "v1.1", now=T0 + timedelta(hours=7), yes=True)
    clock.now = T0 + timedelta(hours=6)
    publish_batch(settings, world("b3b-clean", clock.now, without_seven_seas=True))
    assert wait_evidence(settings, "v1.1", 4, clock.now).span_s == 6 * 3600
    with pytest.raises(PolicyError, match="not confirmed"):
        promote(settings, "admin_boundaries", "v1.1", now=T0 + timedelta(hours=7))
    result = promote(settings, "admin_boundaries", "v1.1", now=T0 + timedelta(hours=7), yes=True)
    assert result.evidence is not None
    assert (result.evidence.evaluated, result.evidence.passed) == (4, 2)
    assert result.evidence.span_s == 6 * 3600 and result.supersedes == ("v1.0",)
    assert [(r.version, r.mode, r.state) for r in result.records] == [
        ("admin_boundaries/v1.1", "enforcing", "active"),
        ("admin_boundaries/v1.0", "enforcing", "superseded"),
    ]
    report = promote_text(result)
    assert "promoted to enforcing; supersedes v1.0" in report
    assert "b1-real" in report
    assert "WARNING: admin_boundaries/v1.1 attainment over the evidence is 0.500" in report

    # the worker picks the change up live and enforces v1.1
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        active = worker.pipeline.registry.active("admin_boundaries")
        if [(v.contract.version, v.mode) for v in active] == [("v1.1", "enforcing")]:
            break
        time.sleep(0.2)
    assert [(v.contract.version, v.mode) for v in active] == [("v1.1", "enforcing")]
    clock.now = T0 + timedelta(hours=7)
    publish_batch(settings, world("b4-real", clock.now))
    e = wait_evidence(settings, "v1.1", 5, clock.now)
    b4 = next(p for p in e.points if p.batch_id == "b4-real")
    assert not b4.passed
    assert worker.pipeline.batches_committed == 5


def test_edit_in_place_refused_by_cli_ignored_by_worker_and_numbering(
    settings: Settings,
    start_worker: Any,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    kafka = kafka_argv(settings)
    assert main(["contract", "publish", str(V1), *kafka]) == 0
    assert main(["contract", "publish", str(V1), *kafka]) == 0
    assert "no-op" in capsys.readouterr().out

    edited = variant(V1, tmp_path, "v1", ("max_age: PT6H", "max_age: PT1H"))
    assert main(["contract", "publish", str(edited), *kafka]) == 2
    assert "edit in place" in capsys.readouterr().err

    projection = variant(V1, tmp_path, "v1.1", ('expect: "EPSG:4326"', 'expect: "EPSG:3857"'))
    assert main(["contract", "publish", str(projection), "--mode", "observing", *kafka]) == 2
    err = capsys.readouterr().err
    assert "change class major" in err and "a major change must be v2.0, not v1.1" in err

    minor = variant(V1, tmp_path, "v1.1", ("owner: boundaries-team", "owner: geo-team"))
    assert main(["contract", "publish", str(minor), "--dry-run", *kafka]) == 0
    out = capsys.readouterr().out
    assert "dry run (nothing written)" in out
    # found by a fresh-user session: the dry run said "published"
    assert "would be published enforcing" in out and " published enforcing" not in out.replace(
        "would be published enforcing", ""
    )

    reader = InMemoryMetricReader()
    metrics = GateMetrics(MeterProvider(metric_readers=[reader]).get_meter("test"))
    worker = start_worker(settings, metrics=metrics)
    original = worker.pipeline.registry.get("admin_boundaries/v1.0")
    # a record that edits v1.0 in place, written past the CLI
    bad = parse_contract(edited.read_text())
    produce_one(
        settings,
        settings.topics.contracts,
        bad.key,
        encode_contract_record(contract_record(bad, mode="enforcing")),
    )
    deadline = time.monotonic() + 20
    rejections: list[Any] = []
    while time.monotonic() < deadline and not rejections:
        data = reader.get_metrics_data()
        for rm in data.resource_metrics if data is not None else ():
            for sm in rm.scope_metrics:
                for m in sm.metrics:
                    if m.name == "gis.contract.config_rejections_total":
                        rejections = [(dict(p.attributes), p.value) for p in m.data.data_points]
        time.sleep(0.2)
    assert rejections == [({"layer": "admin_boundaries", "reason": "edit_in_place"}, 1)]
    # two documents of v1.0 on the topic: a fresh worker could not tell the genuine one,
    # so the live one fails closed as well (issue 30), and list names the break
    assert original is not None and worker.pipeline.registry.get("admin_boundaries/v1.0") is None
    assert main(["contract", "list", "admin_boundaries", *kafka]) == 0
    listing = capsys.readouterr().out
    assert "BROKEN HISTORY: admin_boundaries: every batch is quarantined" in listing
    assert "admin_boundaries/v1.0: two documents (digests " in listing
    assert "fix: republish the genuine document from git" in listing
    assert main(["contract", "publish", str(minor), *kafka]) == 2  # refused until whole
    assert "the contract history on" in capsys.readouterr().err


def test_identical_twin_matches_and_stricter_version_breaches_while_admitted(
    settings: Settings, start_worker: Any, tmp_path: Path
) -> None:
    clock = Clock(T0)
    publish_contract(settings, V1, mode="enforcing", now=T0)
    twin = variant(V1, tmp_path, "v1.1", ("First contract", "Identical twin of the first contract"))
    assert (
        "change class minor" in publish_contract(settings, twin, mode="observing", now=T0).message
    )
    stricter = variant(V1_1, tmp_path, "v1.2")
    tightened = publish_contract(settings, stricter, mode="observing", now=T0)
    assert "change class tightening" in tightened.message
    assert tightened.change_class == "tightening"
    worker = start_worker(settings, clock=clock)
    batches = [
        world("w1", T0),
        world("w2", T0, without_seven_seas=True),
        world("w3", T0),
        world("w4-stale", T0 - timedelta(days=2)),  # v1 and its twin break freshness
    ]
    for b in batches:
        publish_batch(settings, b)
    v1 = wait_evidence(settings, "v1.0", 4, T0)
    twin_e = wait_evidence(settings, "v1.1", 4, T0)
    strict = wait_evidence(settings, "v1.2", 4, T0)
    assert v1.evaluated == twin_e.evaluated == strict.evaluated == 4
    assert twin_e.attainment == v1.attainment == 0.75
    assert [p.batch_id for p in twin_e.would_reject] == [p.batch_id for p in v1.would_reject]
    # the stricter observing version records breaches; the enforcing v1 admitted the others
    assert [p.batch_id for p in strict.would_reject] == ["w1", "w3", "w4-stale"]
    assert [p.batch_id for p in v1.would_reject] == ["w4-stale"]
    assert worker.pipeline.batches_committed == 4
    loaded = load_contract(stricter)
    assert loaded.version == "v1.2"


def test_a_running_worker_never_evaluates_a_minor_and_its_predecessor_both_enforcing(
    settings: Settings, start_worker: Any, tmp_path: Path
) -> None:
    # issue 14: supersession was a second record, so between the two records v1.0 and
    # v1.1 were both enforcing. Now the new version's record carries it: here the
    # publisher stops after that first record, and the worker still never holds both.
    from worker.control.lifecycle import read_published, write_records
    from worker.core.lifecycle.publishing import decide_publish
    from worker.kafka.evaluations import read_evaluations

    clock = Clock(T0)
    publish_contract(settings, V1, mode="enforcing", now=T0)
    worker = start_worker(settings, clock=clock)
    publish_batch(settings, world("before", T0))
    assert wait_evidence(settings, "v1.0", 1, T0).evaluated == 1

    minor = load_contract(variant(V1, tmp_path, "v1.1", ("owner: boundaries-team", "owner: x")))
    known = read_published(settings).published("admin_boundaries")
    d = decide_publish(minor, mode="enforcing", known=known, published_by="t", now=T0)
    assert [(w.contract.version, w.state, w.supersedes) for w in d.writes] == [
        ("v1.1", "active", ("admin_boundaries/v1.0",)),
        ("v1.0", "superseded", ()),
    ]
    head = read_published(settings).head("admin_boundaries")
    # the follow-up record is never written
    write_records(settings, d.writes[:1], head=head, documents=frozenset({minor.key}))
    seen: set[tuple[str, ...]] = set()
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        enforcing = tuple(
            v.contract.version
            for v in worker.pipeline.registry.active("admin_boundaries")
            if v.mode == "enforcing"
        )
        seen.add(enforcing)
        if enforcing == ("v1.1",):
            break
        time.sleep(0.005)
    assert seen == {("v1.0",), ("v1.1",)}  # never both, never none

    publish_batch(settings, world("after", T0))
    assert wait_evidence(settings, "v1.1", 1, T0).evaluated == 1
    evaluated: dict[str, list[tuple[str, str]]] = {}
    for r in read_evaluations(settings, "admin_boundaries"):
        evaluated.setdefault(r["batch_id"], []).append((r["version"], r["mode"]))
    assert evaluated == {"before": [("v1.0", "enforcing")], "after": [("v1.1", "enforcing")]}
    # a worker bootstrapping from the topic as it is (one record per key, as compaction
    # leaves it) holds the same: v1.0 superseded although its own record says active
    fresh = read_published(settings).published("admin_boundaries")
    assert [(p.contract.version, p.mode, p.state) for p in fresh] == [
        ("v1.0", "enforcing", "superseded"),
        ("v1.1", "enforcing", "active"),
    ]


@pytest.mark.integration
def test_two_publications_of_one_version_racing_tell_the_loser(
    settings: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # found by a new-user session: two different v1.1 documents published at the same time
    # were both reported "published"; the worker kept the first and rejected the second
    from worker.control import lifecycle

    publish_contract(settings, V1, published_by="first")
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    first = variant(V1, tmp_path / "a", "v1.1", ("owner: boundaries-team", "owner: geo-team"))
    second = variant(V1, tmp_path / "b", "v1.1", ("owner: boundaries-team", "owner: map-team"))
    before = lifecycle.read_published(settings)  # the state both publishers read
    publish_contract(settings, first, published_by="alice")
    real = lifecycle.read_published
    reads = iter([before])  # the loser decided on the state before the winner's record
    monkeypatch.setattr(lifecycle, "read_published", lambda s: next(reads, None) or real(s))
    with pytest.raises(PolicyError) as err:
        publish_contract(settings, second, published_by="bob")
    text = str(err.value)
    assert "admin_boundaries/v1.1: another document of this version reached the config" in text
    assert "contract_history_broken" in text
    assert "published by alice" in text and "give your change the next version number" in text
