"""Issue 30: what a live worker refuses on gis.contracts, a fresh worker refuses after
log compaction too (plain values: records as bytes, compaction as Kafka's cleaner does it).

Each row of the issue's table (and tombstones and garbage for superseded and retired
versions) is written after the demo's three versions, the log is compacted (the newest
record of each key, in offset order) and a fresh registry is built from it: the
"Atlantis" batch, which v1.0 quarantines, must never be admitted, and the layer must
report the break. Republishing the genuine document heals it.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from datetime import datetime, timezone

import pytest

from worker.cli.scenario import data_file, demo_events
from worker.control.lifecycle import lifecycle_record
from worker.core.contracts.parse import parse_contract
from worker.core.lifecycle.policy import Published
from worker.core.lifecycle.registry import Registry, config_key
from worker.core.model import Contract
from worker.gate.route import Source, route
from worker.io.codec import encode_contract_record
from worker.io.config_records import apply_config_value
from worker.io.contract_files import load_contract
from worker.kafka.settings import Topics

NOW = datetime(2026, 11, 29, 12, tzinfo=timezone.utc)
LAYER = "admin_boundaries"
V1 = load_contract(data_file("contracts/admin_boundaries.v1.yaml"))
V11 = load_contract(data_file("contracts/admin_boundaries.v1.1.yaml"))
NYC = load_contract(data_file("contracts/nyc_boroughs.v1.yaml"))
ATLANTIS = next(e for e in demo_events(NOW) if e.label == "ab-unknown-continent")

Log = list[tuple[str, bytes | None]]


def compact(log: Log) -> Log:
    """Kafka log compaction: the newest record of every key, in offset order."""
    last = {key: i for i, (key, _) in enumerate(log)}
    return [entry for i, entry in enumerate(log) if last[entry[0]] == i]


def write(
    log: Log, c: Contract, mode: str, state: str = "active", *, document: bool, **kw: object
) -> str:
    """Append the record `contract publish`/`promote`/`retire` write; returns its key."""
    layer_keys = [k for k, _ in log if k.startswith(f"{c.layer}/")]
    p = Published(c, mode, state, kw.pop("change_class", None), (), NOW, "t", **kw)  # type: ignore[arg-type]
    key, record = lifecycle_record(
        p, document=document, builds_on=layer_keys[-1] if layer_keys else None, now=NOW, by="t"
    )
    log.append((key, encode_contract_record(record)))
    return key


def demo() -> Log:
    """The demo's three versions: v1.0 enforcing, v1.1 observing, nyc v1.0 enforcing."""
    log: Log = []
    write(log, V1, "enforcing", document=True)
    write(log, V11, "observing", document=True, change_class="tightening")
    write(log, NYC, "enforcing", document=True)
    return log


def registry(log: Log) -> Registry:
    reg = Registry()
    for key, value in log:
        apply_config_value(reg, key, value)
    return reg


def atlantis(reg: Registry) -> tuple[str, str]:
    """(decision, first reason code) of the Atlantis batch against ``reg``."""
    out = route(
        Source("gis.batches", 0, 0, ATLANTIS.key.encode(), ATLANTIS.value),
        reg.active,
        Topics(),
        now=NOW,
        worker_id="w",
    )
    return out.decision.decision, out.decision.reasons[0].code


def test_the_demo_history_quarantines_atlantis_live_and_after_compaction() -> None:
    log = demo()
    for reg in (registry(log), registry(compact(log))):
        assert atlantis(reg) == ("quarantined", "contract_break")
        assert reg.breaks(LAYER) == ()


def _edited_v11() -> Contract:
    text = V11.text.replace("  - name: continent", "  - name: continent", 1)
    edited = parse_contract(text.replace("Africa: Africa", "Africa: Africa\n      Atlantis: x"))
    assert edited.key == V11.key and edited.digest != V11.digest
    return edited


def _tombstone_v1(log: Log) -> None:
    log.append((config_key(V1), None))


def _garbage_v1(log: Log) -> None:
    log.append((config_key(V1), os.urandom(300)))


def _edit_then_promote(log: Log) -> None:
    write(log, _edited_v11(), "enforcing", document=True, supersedes=(V1.key,))
    write(log, V11, "enforcing", document=False, supersedes=(V1.key,))  # the promotion
    write(log, V1, "enforcing", "superseded", document=False)


ROWS = {
    "tombstone under the only enforcing version": _tombstone_v1,
    "300 random bytes under the v1.0 key": _garbage_v1,
    "an edited v1.1, then the genuine one promoted": _edit_then_promote,
}


@pytest.mark.parametrize("row", ROWS)
def test_each_row_of_the_table_fails_closed_live_and_after_compaction(row: str) -> None:
    log = demo()
    ROWS[row](log)
    live, fresh = registry(log), registry(compact(log))
    for reg in (live, fresh):
        assert atlantis(reg) == ("quarantined", "contract_history_broken")
        assert reg.breaks(LAYER), row
        assert "republish the genuine document" in reg.active(LAYER).history_break  # type: ignore[attr-defined]
        assert [v.contract.version for v in reg.active(NYC.layer)] == ["v1.0"]  # untouched
    assert live.breaks(LAYER) == fresh.breaks(LAYER)


def _lifecycle(log: Log, state: str) -> tuple[Contract, str]:
    """Take the demo's admin_boundaries to ``state`` as the CLI writes it; returns the
    version in that state and the key of its latest record (``enforcing`` and
    ``observing``: the demo's v1.0 and v1.1 as published; ``superseded``: v1.0 once v1.1
    is promoted; ``retired``: then v1.0 retired)."""
    if state == "observing":
        return V11, config_key(V11)
    if state == "enforcing":
        return V1, config_key(V1)
    write(log, V11, "enforcing", document=False, supersedes=(V1.key,))  # `contract promote`
    key = write(log, V1, "enforcing", "superseded", document=False)
    if state == "retired":
        key = write(log, V1, "enforcing", "retired", document=False)  # `contract retire`
    return V1, key


DAMAGE: dict[str, Callable[[], bytes | None]] = {
    "tombstone": lambda: None,
    "garbage": lambda: os.urandom(300),
}
STATES = ["enforcing", "observing", "superseded", "retired"]


#: (state, where the damage lands): the document, and for the states reached by a state
#: record, that record too
WHERE = [(s, "document") for s in STATES] + [(s, "state record") for s in STATES[2:]]


@pytest.mark.parametrize(("state", "where"), WHERE)
@pytest.mark.parametrize("damage", DAMAGE)
def test_damage_to_a_version_in_any_state_breaks_the_layer_live_and_after_compaction(
    state: str, damage: str, where: str
) -> None:
    # docs/design.md section 2: immutability survives compaction, and a tombstone never
    # bypasses the retirement gate; a superseded or retired version's records are part of
    # the layer's immutable history too, so damage to them fails closed like any other
    log = demo()
    version, latest = _lifecycle(log, state)
    key = config_key(version) if where == "document" else latest
    log.append((key, DAMAGE[damage]()))
    live, fresh = registry(log), registry(compact(log))
    for reg in (live, fresh):
        assert atlantis(reg) == ("quarantined", "contract_history_broken")
        assert reg.breaks(LAYER)[0].startswith(f"{key}: ")
        assert key in reg.missing(LAYER)
        assert reg.active(LAYER) == ()
        assert [v.contract.version for v in reg.active(NYC.layer)] == ["v1.0"]  # untouched
    assert live.breaks(LAYER) == fresh.breaks(LAYER)
    assert live.missing(LAYER) == fresh.missing(LAYER)


@pytest.mark.parametrize("state", ["enforcing", "superseded", "retired"])
def test_a_tombstoned_document_stays_a_break_when_the_broker_drops_the_tombstone(
    state: str,
) -> None:
    # after delete.retention.ms the cleaner drops the tombstone itself: the records that
    # build on the document (or change its state) still name it
    log = demo()
    version, _ = _lifecycle(log, state)
    log.append((config_key(version), None))
    cleaned = [(k, v) for k, v in compact(log) if v is not None]
    reg = registry(cleaned)
    assert atlantis(reg) == ("quarantined", "contract_history_broken")
    assert config_key(version) in reg.missing(LAYER)


def test_a_state_record_without_its_document_and_a_missing_predecessor_are_breaks() -> None:
    log = demo()
    promotion = write(log, V11, "enforcing", document=False, supersedes=(V1.key,))
    del log[1]  # v1.1's document gone without a trace (its tombstone was cleaned up)
    reg = registry(compact(log))
    assert reg.breaks(LAYER) == (
        f"{promotion}: a enforcing/active record of {V11.key} digest {V11.digest[:12]}, "
        "whose document is not on the topic",
        f"{promotion} builds on {config_key(V11)}, which is not on the topic",
    )
    assert reg.missing(LAYER) == (config_key(V11),)


def test_republishing_the_genuine_document_heals_a_tombstone() -> None:
    log = demo()
    _tombstone_v1(log)
    write(log, V1, "enforcing", document=True)  # what `contract publish FILE` restores
    for reg in (registry(log), registry(compact(log))):
        assert reg.breaks(LAYER) == ()
        assert atlantis(reg) == ("quarantined", "contract_break")


def test_legacy_topics_keep_loading() -> None:
    # records written before issue 30: document and state in one, rewritten on change
    def legacy(c: Contract, mode: str, state: str = "active", **kw: object) -> bytes:
        p = Published(c, mode, state, None, (), NOW, "t", **kw)  # type: ignore[arg-type]
        return encode_contract_record(p.to_record())

    log: Log = [
        (config_key(V1), legacy(V1, "enforcing")),
        (config_key(V11), legacy(V11, "observing")),
        (config_key(V11), legacy(V11, "enforcing", supersedes=(V1.key,))),
        (config_key(V1), legacy(V1, "enforcing", "superseded")),
    ]
    for reg in (registry(log), registry(compact(log))):
        assert reg.breaks(LAYER) == ()
        assert [(v.contract.version, v.mode) for v in reg.active(LAYER)] == [("v1.1", "enforcing")]
    # a new record builds on a legacy key: a whole history
    log.append(write_on(log, V11))
    assert registry(compact(log)).breaks(LAYER) == ()


def write_on(log: Log, c: Contract) -> tuple[str, bytes | None]:
    scratch = list(log)
    write(scratch, c, "enforcing", "retired", document=False)
    return scratch[-1]


def test_state_follows_the_furthest_record_whatever_the_order() -> None:
    log = demo()
    write(log, V11, "enforcing", document=False, supersedes=(V1.key,))
    write(log, V11, "enforcing", "retired", document=False)
    for order in (log, list(reversed(log))):
        reg = registry(order)
        held = reg.get(V11.key)
        assert held is not None and (held.mode, held.state) == ("enforcing", "retired")
