"""Per-major read paths on a real broker (issue 15, part 2).

v7 and v8 of a layer are both enforcing, the layer opts in with ``read_paths: per_major``.
The real Natural Earth countries pass v7 and break v8 (v8 drops the "Seven seas" continent
code, which one feature carries): the batch lands on the v7 path only and is quarantined on
the shared path with the v8 reason. A group reading the v7 path blocks ``contract retire
LAYER v7`` by name; once it is gone, retiring v7 says its path is no longer written, and
it is not written any more.
"""

from __future__ import annotations

import time
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest

from tests.integration.cli import run_cli as _cli
from worker.cli.scenario import data_file
from worker.control.publish import contract_record
from worker.core.contracts.parse import parse_contract
from worker.core.model import Contract
from worker.io.codec import decode_quarantine, encode_batch, encode_contract_record
from worker.io.payloads import read_batch_file
from worker.kafka.admin import produce_one, read_topic
from worker.kafka.settings import Settings

LAYER = "admin_boundaries"
V1 = data_file("contracts/admin_boundaries.v1.yaml").read_text()
SEVEN_SEAS = (
    '      "Seven seas (open ocean)": Islands in the open ocean (e.g. French Southern and '
    "Antarctic Lands)\n"
)


def _contracts() -> tuple[Contract, Contract]:
    v7 = parse_contract(V1.replace("version: v1\n", "version: v7\n"), source="v7")
    assert SEVEN_SEAS in V1
    v8_text = V1.replace("version: v1\n", "version: v8\nread_paths: per_major\n")
    v8 = parse_contract(v8_text.replace(SEVEN_SEAS, ""), source="v8")
    return v7, v8


def _records(settings: Settings, topic: str) -> list[Any]:
    return list(read_topic(settings, topic))


def _wait(settings: Settings, topic: str, n: int, timeout_s: float = 60) -> list[Any]:
    deadline = time.monotonic() + timeout_s
    while True:
        msgs = _records(settings, topic)
        if len(msgs) >= n or time.monotonic() > deadline:
            return msgs
        time.sleep(0.3)


def _send(settings: Settings, batch_id: str) -> None:
    batch = read_batch_file(
        data_file("admin_boundaries.parquet"),
        layer=LAYER,
        data_time=datetime.now(timezone.utc) - timedelta(minutes=5),
        batch_id=batch_id,
    )
    produce_one(settings, settings.topics.batches, LAYER, encode_batch(batch))


def test_batch_passing_v7_and_breaking_v8_lands_on_the_v7_path_only(
    settings: Settings, start_worker: Any, capsys: Any
) -> None:
    from confluent_kafka import Consumer, TopicPartition
    from confluent_kafka.admin import AdminClient

    v7, v8 = _contracts()
    for c in (v7, v8):
        record = contract_record(c, mode="enforcing")
        produce_one(settings, settings.topics.contracts, c.key, encode_contract_record(record))
    path7 = settings.topics.admitted_for(LAYER, 7)
    path8 = settings.topics.admitted_for(LAYER, 8)

    # topics create learns the per-major topics from the config topic
    code, out, err = _cli(settings, capsys, "topics", "create")
    assert code == 0, err
    assert f"{path7}: created (per-major read path)" in out
    assert f"{path8}: created (per-major read path)" in out

    worker = start_worker(settings)
    _send(settings, "world-1")
    (q,) = _wait(settings, settings.topics.quarantine, 1)
    reasons = decode_quarantine(q.value())["reasons"]
    assert [(r["version"], r["clause"]) for r in reasons] == [("v8.0", "continent")]
    # committed in the same transaction as the quarantine record: visible together
    (on7,) = _records(settings, path7)
    assert on7.value() == _records(settings, settings.topics.batches)[0].value()
    headers = dict(on7.headers())
    assert (headers["batch-id"], headers["contract-versions-enforced"]) == (b"world-1", b"v7.0")
    assert _records(settings, path8) == []
    assert _records(settings, settings.topics.admitted) == []

    # a vendor group reading the v7 path counts as a consumer of v7: retirement blocked
    vendor = f"{settings.group_id}-vendor-v7"
    c = Consumer({"bootstrap.servers": settings.bootstrap_servers, "group.id": vendor})
    try:
        c.commit(offsets=[TopicPartition(path7, on7.partition(), 1)], asynchronous=False)
    finally:
        c.close()
    code, out, err = _cli(settings, capsys, "consumers", "status", LAYER)
    assert code == 0, err
    assert f"declared: {vendor} (reads {path7})" in out
    code, _, err = _cli(settings, capsys, "contract", "retire", LAYER, "v7")
    assert code == 2
    assert f"1 consumer(s) still read against it: {vendor} (declared, reads {path7})" in err

    # the vendor is gone: v7 retires, says its path is no longer written, and it is not
    admin = AdminClient({"bootstrap.servers": settings.bootstrap_servers})
    try:
        admin.delete_consumer_groups([vendor], request_timeout=10)[vendor].result()
    except Exception as exc:  # a broker without DeleteGroups
        pytest.skip(f"the broker cannot delete consumer groups: {exc}")
    code, out, err = _cli(settings, capsys, "contract", "retire", LAYER, "v7")
    assert code == 0, err
    assert f"its per-major read path {path7} is no longer written" in out
    deadline = time.monotonic() + 20
    while len(worker.pipeline.registry.active(LAYER)) != 1 and time.monotonic() < deadline:
        time.sleep(0.1)
    _send(settings, "world-2")
    assert len(_wait(settings, settings.topics.quarantine, 2)) == 2
    assert len(_records(settings, path7)) == 1  # nothing written after the retirement


def test_missing_per_major_topic_is_left_out_with_an_error_not_a_stuck_partition(
    settings: Settings, start_worker: Any, caplog: Any
) -> None:
    v7, v8 = _contracts()
    for c in (v7, v8):
        record = contract_record(c, mode="enforcing")
        produce_one(settings, settings.topics.contracts, c.key, encode_contract_record(record))
    start_worker(settings)  # `topics create` not run again: the v7 path does not exist
    with caplog.at_level("ERROR", logger="worker.gate.pipeline"):
        _send(settings, "world-1")
        (q,) = _wait(settings, settings.topics.quarantine, 1)
    assert decode_quarantine(q.value())["batch_id"] == "world-1"
    path7 = settings.topics.admitted_for(LAYER, 7)
    assert any(
        f"per-major topic {path7} does not exist" in r.getMessage()
        and "contract-gate topics create" in r.getMessage()
        for r in caplog.records
    )


pytestmark = pytest.mark.integration
