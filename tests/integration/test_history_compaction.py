"""Issue 30 on a real broker: each hostile history is compacted as Kafka compacts it (the
newest record of every key, in offset order, written to a fresh topic) and a fresh worker
(a real :class:`~worker.gate.pipeline.Pipeline`, its run loop in a thread) starts on it:
the Atlantis batch, which the live worker quarantines, is quarantined
``contract_history_broken`` and never admitted, an NYC batch is admitted, and the layer
reports the break (the worker's registry, its history-break gauge, its ``/status``
``history_breaks`` and ``contract-gate contract list``).

Rows: the three of the issue's table, then a tombstone and 300 random bytes under a
version that is superseded (v1.0 once v1.1 is promoted) and retired (then v1.0 retired).
docs/design.md section 2: immutability survives compaction and a tombstone never bypasses the
retirement gate, so damage to a superseded or retired version's records breaks the
layer's history as any other does (tests/core/test_history.py covers every state).
"""

from __future__ import annotations

import json
import os
import time
import uuid
from collections.abc import Callable, Collection, Mapping
from dataclasses import replace
from datetime import datetime, timezone
from typing import Any

import pytest

from tests.faults.config_history import promote_v11, retire_v1
from worker.cli.lifecycle_output import publish_text
from worker.cli.scenario import data_file, demo_events
from worker.control.lifecycle import read_published, write_records
from worker.control.listing import list_versions
from worker.control.publish import publish_contract
from worker.core.contracts.parse import parse_contract
from worker.core.lifecycle.policy import Published
from worker.core.lifecycle.registry import Registry, config_key
from worker.gate.housekeeping import NullInstruments
from worker.gate.records import Outcome
from worker.gate.route import Source, route
from worker.io.contract_files import load_contract
from worker.kafka.admin import create_topics, produce_one, read_topic
from worker.kafka.config_topic import read_config
from worker.kafka.settings import Settings, Topics
from worker.ops.http_handlers import handle

NOW = datetime.now(timezone.utc)
LAYER = "admin_boundaries"
V1_FILE = data_file("contracts/admin_boundaries.v1.yaml")
V11_FILE = data_file("contracts/admin_boundaries.v1.1.yaml")
V1, V11 = load_contract(V1_FILE), load_contract(V11_FILE)
EVENTS = {e.label: e for e in demo_events(NOW)}
ATLANTIS, NYC = EVENTS["ab-unknown-continent"], EVENTS["nyc-real"]


def _compacted_copy(settings: Settings) -> Settings:
    """Settings on fresh topics whose config topic holds the newest record of every key
    of ``settings``' one, in offset order (same partition): Kafka's log compaction."""
    log = [
        (m.partition(), m.key().decode(), m.value())
        for m in read_topic(settings, settings.topics.contracts, timeout_s=30)
    ]
    last = {key: i for i, (_, key, _) in enumerate(log)}
    prefix = f"c{uuid.uuid4().hex[:8]}."
    fresh = settings.with_(topics=Topics().with_prefix(prefix), group_id=f"{prefix}gate")
    create_topics(fresh, partitions=3)
    for i, (partition, key, value) in enumerate(log):
        if last[key] == i:
            produce_one(fresh, fresh.topics.contracts, key, value, partition=partition)
    return fresh


def _decision(registry: Registry) -> tuple[str, str]:
    out = route(
        Source("gis.batches", 0, 0, ATLANTIS.key.encode(), ATLANTIS.value),
        registry.active,
        Topics(),
        now=NOW,
        worker_id="w",
    )
    return out.decision.decision, out.decision.reasons[0].code


# -- the hostile histories ---------------------------------------------------------------
def _tombstone_v1(settings: Settings) -> None:
    produce_one(settings, settings.topics.contracts, config_key(V1), None)


def _garbage_v1(settings: Settings) -> None:
    produce_one(settings, settings.topics.contracts, config_key(V1), os.urandom(300))


def _edit_then_promote(settings: Settings) -> None:
    """An edited v1.1 (Atlantis allowed, enforcing, superseding v1.0) written past the CLI,
    then the genuine v1.1 promoted as `contract promote` writes it."""
    edited = parse_contract(V11.text.replace("Africa: Africa", "Africa: Africa\n      Atlantis: x"))
    assert edited.key == V11.key and edited.digest != V11.digest
    registry = read_published(settings)
    forged = Published(edited, "enforcing", "active", None, (), NOW, "mallory", (V1.key,))
    write_records(settings, (forged,), head=registry.head(LAYER), documents=frozenset({V11.key}))
    v1 = next(p for p in registry.published(LAYER) if p.contract.key == V1.key)
    promoted = Published(V11, "enforcing", "active", "tightening", (), NOW, "t", (V1.key,))
    write_records(settings, (promoted, replace(v1, state="superseded")), head=config_key(edited))


def _then(*steps: Callable[[Settings], None]) -> Callable[[Settings], None]:
    def run(settings: Settings) -> None:
        for step in steps:
            step(settings)

    return run


ROWS: dict[str, Callable[[Settings], None]] = {
    "tombstone under v1.0": _tombstone_v1,
    "garbage under v1.0": _garbage_v1,
    "edited v1.1, then the genuine promoted": _edit_then_promote,
    "tombstone under a superseded version": _then(promote_v11, _tombstone_v1),
    "garbage under a superseded version": _then(promote_v11, _garbage_v1),
    "tombstone under a retired version": _then(promote_v11, retire_v1, _tombstone_v1),
    "garbage under a retired version": _then(promote_v11, retire_v1, _garbage_v1),
}


# -- the fresh worker --------------------------------------------------------------------
class _Breaks(NullInstruments):
    """The worker's history-break gauge (``gis.contract.config_history_broken``) as set."""

    def __init__(self) -> None:
        self.breaks: dict[str, tuple[str, ...]] = {}

    def set_history_breaks(
        self, breaks: Mapping[str, tuple[str, ...]], known_layers: Collection[str]
    ) -> None:
        self.breaks = dict(breaks)


def _decide(settings: Settings, start_worker: Any) -> tuple[dict[str, Outcome], _Breaks, Any]:
    """Start a worker on ``settings``, send it the Atlantis and an NYC batch; returns its
    committed outcomes by label, its break gauge and the worker."""
    outcomes: list[Outcome] = []
    metrics = _Breaks()
    worker = start_worker(settings, metrics=metrics, on_outcome=outcomes.append)
    placed = {
        produce_one(settings, settings.topics.batches, e.key, e.value): label
        for label, e in (("atlantis", ATLANTIS), ("nyc", NYC))
    }
    deadline = time.monotonic() + 60
    while len(outcomes) < len(placed) and time.monotonic() < deadline:
        time.sleep(0.1)
    by_label = {placed[(o.source.partition, o.source.offset)]: o for o in outcomes}
    assert sorted(by_label) == ["atlantis", "nyc"], f"decided: {sorted(by_label)}"
    return by_label, metrics, worker


def _dlq_reasons(settings: Settings) -> dict[tuple[int, int], str]:
    """(source partition, offset) -> ``dlq.reason`` of every committed quarantine record."""
    out = {}
    for msg in read_topic(settings, settings.topics.quarantine, timeout_s=30):
        h = {k: (v or b"").decode() for k, v in msg.headers() or ()}
        out[(int(h["source-partition"]), int(h["source-offset"]))] = h.get("dlq.reason", "")
    return out


def _publish_demo(settings: Settings) -> None:
    publish_contract(settings, V1_FILE, mode="enforcing")
    publish_contract(settings, V11_FILE, mode="observing")
    publish_contract(settings, data_file("contracts/nyc_boroughs.v1.yaml"), mode="enforcing")


@pytest.mark.parametrize("row", ROWS)
def test_a_fresh_worker_on_the_compacted_topic_refuses_what_the_live_one_refused(
    settings: Settings, start_worker: Any, row: str
) -> None:
    _publish_demo(settings)
    ROWS[row](settings)
    live = read_config(settings, Registry())  # what a worker that saw the history holds
    assert _decision(live) == ("quarantined", "contract_history_broken")
    assert live.breaks(LAYER)

    fresh = _compacted_copy(settings)
    decided, metrics, worker = _decide(fresh, start_worker)
    atlantis = decided["atlantis"]
    assert atlantis.decision.decision == "quarantined", row
    assert [r.code for r in atlantis.decision.reasons] == ["contract_history_broken"]
    assert decided["nyc"].decision.decision == "admitted"  # other layers untouched
    dlq = _dlq_reasons(fresh)
    src = (atlantis.source.partition, atlantis.source.offset)
    assert dlq == {src: "contract_history_broken"}  # never admitted, committed as quarantined
    # the layer reports the break: the worker (registry, gauge, /status), `contract list`
    assert worker.pipeline.registry.breaks(LAYER) == live.breaks(LAYER)
    assert metrics.breaks == {LAYER: live.breaks(LAYER)}
    status = json.loads(handle("/status", worker.pipeline, now_monotonic=time.monotonic()).body)
    assert list(status["history_breaks"]) == [LAYER]
    assert status["history_breaks"][LAYER]["breaks"] == list(live.breaks(LAYER)[:10])
    listed = list_versions(fresh, LAYER, NOW)
    assert f"BROKEN HISTORY: {LAYER}: every batch is quarantined (contract_history_broken)" in (
        listed
    )
    assert f"  {live.breaks(LAYER)[0]}" in listed.splitlines()


def test_republishing_the_genuine_document_restores_the_layer(settings: Settings) -> None:
    _publish_demo(settings)
    _tombstone_v1(settings)
    assert read_config(settings, Registry()).breaks(LAYER)
    out = publish_contract(settings, V1_FILE, mode="enforcing")
    assert publish_text(out).startswith(f"restored {config_key(V1)} at ")
    assert (out.outcome, out.records[0].key, out.records[0].mode) == (
        "restored",
        config_key(V1),
        "enforcing",
    )
    for reg in (
        read_config(settings, Registry()),
        read_config(_compacted_copy(settings), Registry()),
    ):
        assert reg.breaks(LAYER) == ()
        assert _decision(reg) == ("quarantined", "contract_break")
        assert [(v.contract.version, v.mode) for v in reg.active(LAYER)] == [
            ("v1.0", "enforcing"),
            ("v1.1", "observing"),
        ]


def test_republishing_restores_a_retired_version_retired(settings: Settings) -> None:
    _publish_demo(settings)
    _then(promote_v11, retire_v1, _tombstone_v1)(settings)
    out = publish_contract(settings, V1_FILE)
    assert publish_text(out).startswith(f"restored {config_key(V1)} at ")
    assert out.outcome == "restored" and out.records[0].key == config_key(V1)
    reg = read_config(_compacted_copy(settings), Registry())
    assert reg.breaks(LAYER) == ()
    assert _decision(reg) == ("quarantined", "contract_break")  # v1.1 enforces
    assert [(v.contract.version, v.mode, v.state) for v in reg.versions(LAYER)] == [
        ("v1.0", "enforcing", "retired"),
        ("v1.1", "enforcing", "active"),
    ]
