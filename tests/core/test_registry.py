"""Registry of contract versions from config records: policy re-checks, tombstones, order."""

from __future__ import annotations

import logging
from typing import Any

from worker.cli.scenario import data_file
from worker.control.publish import contract_record
from worker.core.contracts.parse import parse_contract
from worker.core.lifecycle.registry import Registry
from worker.io.codec import encode_contract_record
from worker.io.config_records import apply_config_value
from worker.io.contract_files import load_contract
from worker.kafka.memory import MemoryMessage

V1 = load_contract(data_file("contracts/admin_boundaries.v1.yaml"))
V11 = load_contract(data_file("contracts/admin_boundaries.v1.1.yaml"))


def record(contract=V1, **kw) -> bytes:  # type: ignore[no-untyped-def]
    return encode_contract_record(contract_record(contract, mode=kw.pop("mode", "enforcing"), **kw))


def test_added_then_lifecycle_update_then_unchanged() -> None:
    reg = Registry()
    assert apply_config_value(reg, V1.key, record()).outcome == "added"
    ev = apply_config_value(reg, V1.key, record(mode="observing"))
    assert (ev.outcome, ev.message) == (
        "updated",
        "admin_boundaries/v1.0 enforcing/active -> observing/active",
    )
    assert apply_config_value(reg, V1.key, record(mode="observing")).outcome == "unchanged"
    assert [v.mode for v in reg.active("admin_boundaries")] == ["observing"]


def test_edit_in_place_is_rejected_and_the_layer_fails_closed() -> None:
    reg = Registry()
    apply_config_value(reg, V1.key, record())
    edited = parse_contract(V1.text.replace("max_age: PT6H", "max_age: PT1H"))
    ev = apply_config_value(reg, V1.key, record(edited))
    assert (ev.outcome, ev.reason, ev.layer) == ("rejected", "edit_in_place", "admin_boundaries")
    assert "edit in place refused" in ev.message
    # under a key without the digest the edit replaced the original: a fresh worker could
    # not tell, so the live one fails closed as well (issue 30)
    active = reg.active("admin_boundaries")
    assert active == () and "is broken" in active.history_break  # type: ignore[attr-defined]


def test_undecodable_invalid_and_mismatched_records_are_rejected_with_reasons() -> None:
    reg = Registry()
    assert apply_config_value(reg, "x/v1.0", b"\x00\x01garbage").reason == "invalid_record"
    broken = encode_contract_record(
        {**contract_record(V1, mode="enforcing"), "document": "layer: x\nversion: nope\n"}
    )
    ev = apply_config_value(reg, V1.key, broken)
    assert ev.reason == "invalid_contract" and "version" in ev.message
    assert apply_config_value(reg, "admin_boundaries/v9.0", record()).reason == "key_mismatch"
    wrong_digest = encode_contract_record(
        {**contract_record(V1, mode="enforcing"), "digest": "0" * 64}
    )
    assert apply_config_value(reg, V1.key, wrong_digest).reason == "invalid_contract"
    assert reg.versions() == ()


def test_any_tombstone_breaks_the_layer_and_active_is_ordered_by_version() -> None:
    reg = Registry()
    apply_config_value(reg, V11.key, record(V11, mode="observing"))
    apply_config_value(reg, V1.key, record())
    assert [v.contract.version for v in reg.active("admin_boundaries")] == ["v1.0", "v1.1"]
    ev = apply_config_value(reg, V11.key, None)
    assert (ev.outcome, ev.reason, ev.tombstone) == ("rejected", "tombstone", True)
    assert reg.active("admin_boundaries") == ()
    assert reg.breaks("admin_boundaries") == (
        "admin_boundaries/v1.1: a tombstone where a contract record was",
    )
    apply_config_value(reg, V11.key, record(V11, mode="observing"))  # republished: whole
    assert [v.contract.version for v in reg.active("admin_boundaries")] == ["v1.0", "v1.1"]
    apply_config_value(reg, V1.key, record(state="retired"))
    assert [v.contract.version for v in reg.active("admin_boundaries")] == ["v1.1"]
    ev = apply_config_value(reg, V1.key, None)  # retired first: still a break
    assert (ev.outcome, ev.reason) == ("rejected", "tombstone")
    assert reg.active("admin_boundaries") == () and reg.missing("admin_boundaries") == (V1.key,)


def test_a_tombstone_cannot_switch_enforcement_off() -> None:
    # issue 10: a raw null value on the only enforcing version left only observing ones
    reg = Registry()
    apply_config_value(reg, V1.key, record())
    apply_config_value(reg, V11.key, record(V11, mode="observing"))
    ev = apply_config_value(reg, V1.key, None)
    assert (ev.outcome, ev.reason, ev.tombstone) == ("rejected", "unretired_tombstone", True)
    assert "contract-gate contract retire" in ev.message
    assert reg.active("admin_boundaries") == ()  # fails closed, never admits


def test_tombstone_is_flagged_logged_at_warning_and_counted(caplog: Any) -> None:
    # found by a fresh-user session: a tombstone silently deleted a version
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader

    from worker.gate.pipeline import Pipeline
    from worker.kafka.settings import Settings
    from worker.ops.metrics import GateMetrics

    reader = InMemoryMetricReader()
    metrics = GateMetrics(MeterProvider(metric_readers=[reader]).get_meter("test"))
    pipeline = Pipeline(Settings(), metrics=metrics)

    pipeline.config.apply(_rec(V1.key, record()))
    pipeline.config.apply(_rec(V1.key, record(state="retired")))
    with caplog.at_level(logging.INFO, logger="worker.kafka.config_topic"):
        ev = pipeline.config.apply(_rec(V1.key, None))
    assert (ev.outcome, ev.tombstone, ev.layer) == ("rejected", True, "admin_boundaries")
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert [r.getMessage() for r in warnings] == [
        "config record admin_boundaries/v1.0 rejected (tombstone): tombstone for "
        "admin_boundaries/v1.0 refused: a contract record is never deleted; layer "
        "admin_boundaries fails closed (contract_history_broken)"
    ]
    assert not pipeline.registry.active("admin_boundaries")
    counted = {}
    data = reader.get_metrics_data()
    for rm in data.resource_metrics if data else []:
        for sm in rm.scope_metrics:
            for m in sm.metrics:
                counted[m.name] = [(dict(p.attributes), p.value) for p in m.data.data_points]
    assert counted["gis.contract.config_tombstones_total"] == [({"layer": "admin_boundaries"}, 1)]
    assert counted["gis.contract.config_rejections_total"] == [
        ({"layer": "admin_boundaries", "reason": "tombstone"}, 1)
    ]
    assert apply_config_value(Registry(), V1.key, record()).tombstone is False


def test_config_rejection_labels_stay_bounded_under_forged_keys() -> None:
    # found by a new-user trial: the untrusted record key became a label value
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader

    from worker.gate.pipeline import Pipeline
    from worker.kafka.settings import Settings
    from worker.ops.metrics import GateMetrics

    reader = InMemoryMetricReader()
    metrics = GateMetrics(MeterProvider(metric_readers=[reader]).get_meter("test"))
    pipeline = Pipeline(Settings(), metrics=metrics)

    for i in range(200):  # garbage under 200 forged layers, and tombstones of them
        pipeline.config.apply(_rec(f"forged-{i}/v1.0", b"\x00garbage"))
        pipeline.config.apply(_rec(f"forged-{i}/v1.0", None))
    pipeline.config.apply(_rec(V1.key, record()))
    edited = parse_contract(V1.text.replace("max_age: PT6H", "max_age: PT1H"))
    pipeline.config.apply(_rec(V1.key, record(edited)))  # a known layer keeps its name
    pipeline.config.apply(_rec(V1.key, b"\x00garbage"))
    counted = {}
    data = reader.get_metrics_data()
    for rm in data.resource_metrics if data else []:
        for sm in rm.scope_metrics:
            for m in sm.metrics:
                counted[m.name] = sorted(
                    (sorted(p.attributes.items()), p.value) for p in m.data.data_points
                )
    assert counted["gis.contract.config_rejections_total"] == [
        ([("layer", "admin_boundaries"), ("reason", "edit_in_place")], 1),
        # the edit left the layer without a version (fails closed): no longer "known"
        ([("layer", "invalid"), ("reason", "invalid_record")], 201),
        ([("layer", "invalid"), ("reason", "tombstone")], 200),
    ]
    assert counted["gis.contract.config_tombstones_total"] == [([("layer", "invalid")], 200)]


def _compact(log: list[tuple[str, bytes | None]]) -> list[tuple[str, bytes | None]]:
    """What log compaction keeps: the last record of each key, in the order of those
    last records (Kafka's cleaner keeps offsets; only superseded records go)."""
    last = {key: i for i, (key, _) in enumerate(log)}
    return [entry for i, entry in enumerate(log) if last[entry[0]] == i]


def test_an_edit_under_its_own_key_breaks_the_layer_live_and_after_compaction() -> None:
    # issue 10 item 8 gave edits keys of their own; issue 30: then the genuine version's
    # promotion rewrote its key after the edit, and a fresh worker kept the edit
    from worker.core.lifecycle.registry import config_key

    edited = parse_contract(V1.text.replace("max_age: PT6H", "max_age: PT1H"))
    log = [
        (config_key(V1), record(mode="observing")),
        (config_key(edited), record(edited)),  # the edit in place, as a producer writes it
        (config_key(V1), record(mode="enforcing")),  # a legacy lifecycle rewrite
    ]
    live = Registry()
    events = [apply_config_value(live, key, value) for key, value in log]
    assert [(e.outcome, e.reason) for e in events][1] == ("rejected", "edit_in_place")
    fresh = Registry()  # a worker bootstrapping after compaction
    for key, value in _compact(log):
        apply_config_value(fresh, key, value)
    for reg in (live, fresh):
        assert reg.active("admin_boundaries") == () and reg.get(V1.key) is None
        (line,) = reg.breaks("admin_boundaries")
        assert line.startswith("admin_boundaries/v1.0: two documents (digests ")


def test_digest_keys_must_match_their_document_and_any_tombstone_breaks() -> None:
    from worker.core.lifecycle.registry import config_key, split_config_key

    assert split_config_key(config_key(V1)) == (V1.key, V1.digest)
    assert split_config_key("a/v1.0") == ("a/v1.0", None)
    reg = Registry()
    forged = f"{V1.key}/{'0' * 64}"
    assert apply_config_value(reg, forged, record()).reason == "key_mismatch"
    assert apply_config_value(reg, config_key(V11), record(V11, mode="observing")).outcome == (
        "added"
    )
    ev = apply_config_value(reg, f"{V11.key}/{'f' * 64}", None)  # tombstone of an edit's key
    assert (ev.outcome, ev.reason, ev.tombstone) == ("rejected", "tombstone", True)
    assert reg.get(V11.key) is not None and reg.active("admin_boundaries") == ()


def _rec(key: str, value: bytes | None) -> MemoryMessage:
    return MemoryMessage.of(key=key, value=value)


def test_active_versions_follow_every_change_of_the_registry() -> None:
    # active() is answered from a per-layer index: each change must show at once
    reg = Registry()
    assert reg.active("admin_boundaries") == ()
    apply_config_value(reg, V1.key, record())
    first = reg.active("admin_boundaries")
    assert [v.contract.version for v in first] == ["v1.0"]
    assert reg.active("admin_boundaries") is first  # unchanged registry: the same answer
    apply_config_value(reg, V11.key, record(V11, mode="observing"))
    assert [(v.contract.version, v.mode) for v in reg.active("admin_boundaries")] == [
        ("v1.0", "enforcing"),
        ("v1.1", "observing"),
    ]
    apply_config_value(reg, V11.key, record(V11, mode="observing", state="retired"))
    assert [v.contract.version for v in reg.active("admin_boundaries")] == ["v1.0"]
    assert reg.active("roads") == ()


def test_record_times_are_kept_only_for_keys_the_registry_holds() -> None:
    from datetime import datetime, timezone

    reg = Registry()
    at = datetime(2026, 1, 2, 3, 4, 5, tzinfo=timezone.utc)
    apply_config_value(reg, V1.key, record())
    reg.stamp(V1.key, at)
    reg.stamp("admin_boundaries/v9.0", at)  # no record under it: not kept
    reg.stamp("other/v1.0", at)
    assert reg.stamps("admin_boundaries") == {V1.key: at}
    assert reg.stamps("other") == {}


def test_layers_versions_and_active_stay_per_layer_over_many_layers() -> None:
    # issue 27: layers(), active() and versions() are kept per layer (1,000 layers took
    # O(layers^2) to bootstrap); each answer must equal what the whole state says
    reg = Registry()
    text = V1.text
    contracts = [
        parse_contract(text.replace("layer: admin_boundaries", f"layer: l{i:02d}"))
        for i in (3, 1, 2)
    ]
    for c in contracts:
        apply_config_value(reg, f"{c.key}/{c.digest}", record(c))
    apply_config_value(reg, V1.key, record())
    apply_config_value(reg, V11.key, record(V11, mode="observing"))
    assert reg.layers() == ("admin_boundaries", "l01", "l02", "l03")
    assert [v.contract.key for v in reg.versions("l02")] == ["l02/v1.0"]
    assert len(reg.versions()) == 5 and len(reg.snapshot()) == 5
    # a tombstone over l02's only record breaks it: no version, no document, not listed
    apply_config_value(reg, f"{contracts[2].key}/{contracts[2].digest}", None)
    assert reg.active("l02") == () and reg.breaks("l02") != ()
    assert reg.layers() == _layers_from_state(reg) == ("admin_boundaries", "l01", "l03")
    apply_config_value(reg, f"{contracts[2].key}/{contracts[2].digest}", record(contracts[2]))
    assert reg.layers() == _layers_from_state(reg) == ("admin_boundaries", "l01", "l02", "l03")
    assert [v.contract.key for v in reg.active("l02")] == ["l02/v1.0"]
    apply_config_value(reg, V11.key, record(V11, mode="observing", state="retired"))
    assert [v.contract.version for v in reg.active("admin_boundaries")] == ["v1.0"]
    assert [(v.contract.version, v.state) for v in reg.versions("admin_boundaries")] == [
        ("v1.0", "active"),
        ("v1.1", "retired"),
    ]
    assert sorted({k.split("/")[0] for k in reg.snapshot()}) == list(_layers_from_state(reg))


def _layers_from_state(reg: Registry) -> tuple[str, ...]:
    """layers() as the whole state defines it: a version, or a document entry."""
    names = {v.contract.layer for v in reg.snapshot().values()}
    names |= {n for n in ("admin_boundaries", "l01", "l02", "l03") if any(
        e.kind in ("document", "legacy") for e in reg.entries(n).values())}  # fmt: skip
    return tuple(sorted(names))


def test_a_document_record_whose_layer_or_version_fields_disagree_with_its_key_is_refused() -> None:
    """Key and document agree; the record's own layer / version fields (what `contract
    list` and the operator page show) say otherwise: refused as key_mismatch, as a key
    that disagrees with its document is."""
    from worker.core.lifecycle.registry import config_key

    for field, forged in (("layer", "roads"), ("version", "v9.9")):
        fields = {**contract_record(V1, mode="enforcing"), field: forged}
        ev = apply_config_value(Registry(), config_key(V1), encode_contract_record(fields))
        assert (ev.outcome, ev.reason) == ("rejected", "key_mismatch"), field
        assert "layer/version fields" in ev.message and forged in ev.message
    assert apply_config_value(Registry(), config_key(V1), record()).outcome == "added"
