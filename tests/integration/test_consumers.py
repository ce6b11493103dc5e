"""Consumer declarations, the migration counter and the retirement gate on a real broker.

A consumer is its Kafka consumer group id. "A group that reads the admitted topic" is made
by committing an offset for the group directly (no group join, which takes a session
timeout on Tansu).
"""

from __future__ import annotations

import json
import time
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest

from tests.integration.cli import run_cli as _cli
from worker.cli.scenario import data_file
from worker.control.consumers import declare
from worker.control.publish import contract_record, read_registry
from worker.core.contracts.parse import parse_contract
from worker.core.model import Contract
from worker.io.codec import encode_batch, encode_contract_record
from worker.io.contract_files import load_contract
from worker.io.payloads import read_batch_file
from worker.kafka.admin import produce_one, read_topic
from worker.kafka.settings import Settings

LAYER = "nyc_boroughs"


def _contracts() -> tuple[Contract, Contract]:
    v1 = load_contract(data_file("contracts/nyc_boroughs.v1.yaml"))
    v2 = parse_contract(v1.text.replace("\nversion: v1\n", "\nversion: v2\n"), source="v2")
    assert v2.version == "v2.0"
    return v1, v2


def _publish(settings: Settings, *contracts: Contract) -> None:
    for c in contracts:
        value = encode_contract_record(contract_record(c, mode="enforcing"))
        produce_one(settings, settings.topics.contracts, c.key, value)


def _status(settings: Settings, capsys: Any) -> dict[str, dict[str, Any]]:
    code, out, err = _cli(settings, capsys, "consumers", "status", LAYER, "--format", "json")
    assert code == 0, err
    return {row["version"]: row for row in json.loads(out)}


def _commit_offset(settings: Settings, group: str) -> None:
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer({"bootstrap.servers": settings.bootstrap_servers, "group.id": group})
    try:
        c.commit(offsets=[TopicPartition(settings.topics.admitted, 0, 0)], asynchronous=False)
    finally:
        c.close()


def test_undeclared_group_blocks_retirement_until_it_declares(
    settings: Settings, capsys: Any
) -> None:
    v1, v2 = _contracts()
    _publish(settings, v1, v2)
    group = f"{settings.group_id}-downstream-silent"
    _commit_offset(settings, group)

    rows = _status(settings, capsys)
    assert rows["v1"]["count"] == 1 and rows["v1"]["oldest_active"]
    assert [(r["name"], r["kind"]) for r in rows["v1"]["unattributed"]] == [(group, "unattributed")]
    assert rows["v2"]["count"] == 0

    code, _, err = _cli(settings, capsys, "contract", "retire", LAYER, "v1")
    assert code == 2
    assert "refused" in err and f"{group} (unattributed)" in err

    declare(settings, group, LAYER, "v2")
    rows = _status(settings, capsys)
    assert rows["v1"]["count"] == 0
    assert [r["name"] for r in rows["v2"]["declared"]] == [group]

    code, out, err = _cli(settings, capsys, "contract", "retire", LAYER, "v1")
    assert code == 0, err
    assert "retired nyc_boroughs v1 (v1.0)" in out
    registry = read_registry(settings)
    assert [v.contract.version for v in registry.active(LAYER)] == ["v2.0"]
    retired = registry.get(v1.key)
    assert retired is not None and retired.state == "retired"  # stays in history


def test_three_declared_consumers_migrate_one_at_a_time(settings: Settings, capsys: Any) -> None:
    v1, v2 = _contracts()
    _publish(settings, v1, v2)
    names = [f"{settings.group_id}-reader{i}" for i in range(3)]
    for name in names:
        code, _out, err = _cli(settings, capsys, "consumers", "declare", name, LAYER, "v1")
        assert code == 0, err
    counts = [_status(settings, capsys)["v1"]["count"]]
    for name in names:
        assert _cli(settings, capsys, "consumers", "declare", name, LAYER, "v2")[0] == 0
        counts.append(_status(settings, capsys)["v1"]["count"])
    assert counts == [3, 2, 1, 0]
    assert _status(settings, capsys)["v2"]["count"] == 3
    code, _, err = _cli(settings, capsys, "contract", "retire", LAYER, "v2")
    assert code == 2 and "3 consumer(s)" in err and f"{names[0]} (declared)" in err
    assert _cli(settings, capsys, "contract", "retire", LAYER, "v1")[0] == 0
    code, _, err = _cli(settings, capsys, "contract", "retire", LAYER, "v1")
    assert code == 2 and "not active" in err


def _admitted(settings: Settings, n: int, timeout_s: float = 60) -> list[Any]:
    deadline = time.monotonic() + timeout_s
    while True:
        msgs = list(read_topic(settings, settings.topics.admitted))
        if len(msgs) >= n or time.monotonic() > deadline:
            return msgs
        time.sleep(0.3)


def test_retired_version_stops_being_evaluated_and_reader_assert_fails(
    settings: Settings, start_worker: Any, capsys: Any
) -> None:
    v1, v2 = _contracts()
    _publish(settings, v1, v2)
    worker = start_worker(settings)
    assert [v.contract.version for v in worker.pipeline.registry.active(LAYER)] == [
        "v1.0",
        "v2.0",
    ]
    now = datetime.now(timezone.utc)

    def send(batch_id: str) -> None:
        batch = read_batch_file(
            data_file("nyc_boroughs.parquet"),
            layer=LAYER,
            data_time=now - timedelta(minutes=5),
            batch_id=batch_id,
        )
        produce_one(settings, settings.topics.batches, LAYER, encode_batch(batch))

    send("before-retirement")
    first = _admitted(settings, 1)
    assert len(first) == 1
    assert dict(first[0].headers())["contract-versions-enforced"] == b"v1.0,v2.0"

    code, _out, err = _cli(settings, capsys, "contract", "retire", LAYER, "v1")
    assert code == 0, err
    deadline = time.monotonic() + 20
    while len(worker.pipeline.registry.active(LAYER)) != 1 and time.monotonic() < deadline:
        time.sleep(0.1)
    assert [v.contract.version for v in worker.pipeline.registry.active(LAYER)] == ["v2.0"]

    send("after-retirement")
    msgs = _admitted(settings, 2)
    assert len(msgs) == 2
    last = max(msgs, key=lambda m: m.timestamp()[1])
    assert dict(last.headers())["contract-versions-enforced"] == b"v2.0"

    # a reader built for v1 fails early on the record admitted under v2 only
    at = ["--partition", str(last.partition()), "--offset", str(last.offset())]
    code, _, err = _cli(settings, capsys, "consumers", "assert", LAYER, "v1", *at)
    assert code == 2
    assert "after-retirement" in err and "not under v1" in err
    code, _out, err = _cli(settings, capsys, "consumers", "assert", LAYER, "v2", *at)
    assert code == 0, err
    code, _, err = _cli(settings, capsys, "consumers", "assert", LAYER, "v1", "--last", "5")
    assert code == 2 and "not under v1" in err
    assert _cli(settings, capsys, "consumers", "assert", LAYER, "v1", "--last", "1")[0] == 2
    # an offset past the partition's end is said at once (it waited 30 s and blamed the
    # other partitions' EOF: a fresh-user finding)
    past = ["--partition", str(last.partition()), "--offset", str(last.offset() + 10**6)]
    started = time.monotonic()
    code, _, err = _cli(settings, capsys, "consumers", "assert", LAYER, "v2", *past)
    assert code == 2 and f"no admitted record at {settings.topics.admitted}[" in err
    assert time.monotonic() - started < 15


def test_status_shows_the_layers_an_undeclared_group_read_and_still_counts_it_everywhere(
    settings: Settings, capsys: Any
) -> None:
    # issue 14: an undeclared group is counted against every layer (the conservative
    # rule); the records before its committed offsets show which layers it did read
    v1, v2 = _contracts()
    admin = load_contract(data_file("contracts/admin_boundaries.v1.yaml"))
    _publish(settings, v1, v2, admin)
    layers = [LAYER, LAYER, LAYER, "admin_boundaries", "admin_boundaries"]
    for i, layer in enumerate(layers):
        produce_one(settings, settings.topics.admitted, layer, b"event-%d" % i,
                    headers=[("layer", layer.encode())], partition=0)  # fmt: skip
    group = f"{settings.group_id}-downstream-boroughs-only"
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer({"bootstrap.servers": settings.bootstrap_servers, "group.id": group})
    try:  # it consumed the first three records: all nyc_boroughs
        c.commit(offsets=[TopicPartition(settings.topics.admitted, 0, 3)], asynchronous=False)
    finally:
        c.close()

    started = time.monotonic()
    code, out, err = _cli(settings, capsys, "consumers", "status")
    elapsed_s = time.monotonic() - started
    assert code == 0, err
    assert elapsed_s < 15
    assert f"{group} (records before its offsets: nyc_boroughs)" in out
    assert (
        f"{group} (records before its offsets: nyc_boroughs; none of admin_boundaries: "
        "counted by the conservative rule)"
    ) in out
    assert "counted against the oldest active version of every layer" in out
    code, out, err = _cli(settings, capsys, "consumers", "status", "--format", "json")
    rows = {(r["layer"], r["version"]): r for r in json.loads(out)}
    # still counted on both layers: the sample is evidence, not a count
    for key in ((LAYER, "v1"), ("admin_boundaries", "v1")):
        assert rows[key]["count"] == 1
        assert rows[key]["unattributed"] == [
            {"name": group, "kind": "unattributed", "layers_read": [LAYER]}
        ]


pytestmark = pytest.mark.integration
