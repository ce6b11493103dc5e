"""Supersession applied by the superseding record itself (issue 14 item 1).

A minor published enforcing carries ``supersedes``: the registry turns the earlier
revision to superseded in the same step that adds the new one, so at no point are both
enforcing, whatever the order of records and after log compaction.
"""

from __future__ import annotations

import itertools

from worker.cli.scenario import data_file
from worker.control.publish import contract_record
from worker.core.contracts.parse import parse_contract
from worker.core.lifecycle.registry import RecordingRegistry, Registry, config_key
from worker.io.codec import encode_contract_record
from worker.io.config_records import apply_config_value
from worker.io.contract_files import load_contract

V1 = load_contract(data_file("contracts/admin_boundaries.v1.yaml"))
V11 = load_contract(data_file("contracts/admin_boundaries.v1.1.yaml"))
V12 = parse_contract(V11.text.replace("version: v1.1", "version: v1.2"))
LAYER = "admin_boundaries"


def record(contract=V1, supersedes=(), **kw) -> bytes:  # type: ignore[no-untyped-def]
    rec = contract_record(contract, mode=kw.pop("mode", "enforcing"), **kw)
    return encode_contract_record({**rec, "supersedes": list(supersedes)})


def enforcing(reg: Registry) -> list[str]:
    return [v.contract.version for v in reg.active(LAYER) if v.mode == "enforcing"]


def test_one_record_adds_the_new_revision_and_supersedes_the_old_in_one_step() -> None:
    reg = Registry()
    apply_config_value(reg, config_key(V1), record())
    before = reg.snapshot()  # the dict readers in other threads hold
    ev = apply_config_value(reg, config_key(V11), record(V11, supersedes=[V1.key]))
    assert (ev.outcome, ev.superseded) == ("added", (V1.key,))
    assert ev.message == f"{V11.key} enforcing active; supersedes {V1.key}"
    assert enforcing(reg) == ["v1.1"]
    old = reg.get(V1.key)
    assert old is not None and (old.mode, old.state) == ("enforcing", "superseded")
    # copy on write: the previous snapshot still shows the state before, never a blend
    assert [(k, v.state) for k, v in before.items()] == [(V1.key, "active")]
    # the follow-up superseded record of the old key changes nothing
    follow = apply_config_value(reg, config_key(V1), record(state="superseded"))
    assert follow.outcome == "unchanged" and enforcing(reg) == ["v1.1"]


def test_every_order_and_every_prefix_of_the_log_has_at_most_one_enforcing_revision() -> None:
    # the superseded record may arrive later (compaction keeps each key's last record
    # at its own offset): in every order, no prefix ever holds both enforcing
    log = [
        (config_key(V1), record()),
        (config_key(V11), record(V11, supersedes=[V1.key])),
    ]
    for order in itertools.permutations(log):
        reg = Registry()
        for key, value in order:
            apply_config_value(reg, key, value)
            assert len(enforcing(reg)) == 1, order
        assert enforcing(reg) == ["v1.1"]
        held = reg.get(V1.key)
        assert held is not None and held.state == "superseded"


def test_cumulative_supersedes_survives_a_removed_intermediate_record() -> None:
    reg = Registry()
    apply_config_value(reg, config_key(V1), record())
    apply_config_value(reg, config_key(V11), record(V11, supersedes=[V1.key]))
    ev = apply_config_value(reg, config_key(V12), record(V12, supersedes=[V1.key, V11.key]))
    assert ev.superseded == (V11.key,)
    apply_config_value(reg, config_key(V11), record(V11, state="retired", supersedes=[V1.key]))
    retired = record(V11, state="retired", supersedes=[V1.key])
    ev = apply_config_value(reg, config_key(V11), None)  # a record is never deleted
    assert (ev.outcome, ev.reason) == ("rejected", "tombstone")
    assert enforcing(reg) == []  # the layer fails closed (issue 30)
    apply_config_value(reg, config_key(V11), retired)  # written again: whole
    assert enforcing(reg) == ["v1.2"]  # v1.0 does not come back


def test_old_two_record_topics_still_read_and_an_observing_record_supersedes_nothing() -> None:
    reg = Registry()
    apply_config_value(reg, config_key(V1), record())
    apply_config_value(reg, config_key(V11), record(V11))  # written before supersedes existed
    assert enforcing(reg) == ["v1.0", "v1.1"]  # what the two-record protocol left between
    ev = apply_config_value(reg, config_key(V1), record(state="superseded"))
    assert (ev.outcome, ev.message) == (
        "updated",
        f"{V1.key} enforcing/active -> enforcing/superseded",
    )
    assert enforcing(reg) == ["v1.1"]
    # an observing record must not switch enforcement off by superseding
    reg = Registry()
    apply_config_value(reg, config_key(V1), record())
    ev = apply_config_value(
        reg, config_key(V11), record(V11, mode="observing", supersedes=[V1.key])
    )
    assert ev.superseded == () and enforcing(reg) == ["v1.0"]


def test_supersedes_entries_are_checked_and_bounded() -> None:
    reg = Registry()
    apply_config_value(reg, config_key(V1), record())
    for bad in (["other_layer/v1.0"], [V12.key], ["admin_boundaries/v0.0"], ["x" * 5000]):
        ev = apply_config_value(reg, config_key(V11), record(V11, supersedes=bad))
        assert (ev.outcome, ev.reason) == ("rejected", "invalid_contract"), bad
        assert "is not an earlier revision of admin_boundaries v1 (before v1.1)" in ev.message
        assert len(ev.message) < 400
    too_many = [V1.key] * 257
    ev = apply_config_value(reg, config_key(V11), record(V11, supersedes=too_many))
    assert ev.reason == "invalid_contract" and "at most 256" in ev.message
    # a refused record under a version's key breaks the layer (issue 30): it fails closed
    assert enforcing(reg) == [] and reg.get(V11.key) is None
    assert reg.breaks(LAYER)[0].startswith(f"{config_key(V11)}: config record ")


def test_recording_registry_lists_the_state_in_force() -> None:
    reg = RecordingRegistry()
    apply_config_value(reg, config_key(V1), record())
    apply_config_value(reg, config_key(V11), record(V11, supersedes=[V1.key]))
    assert [(p.contract.version, p.mode, p.state, p.supersedes) for p in reg.published()] == [
        ("v1.0", "enforcing", "superseded", ()),
        ("v1.1", "enforcing", "active", (V1.key,)),
    ]
