"""Issue 30: a producer of bad config records cannot stall the bootstrap of a new worker.

30 records above the size bound (1.2 MiB each, 36 MiB in all) and 1,000 small invalid
records follow a genuine version on a real broker; a fresh worker reads past them (the
oversized ones are refused before they are decoded) and is ready (bootstrapped, without a
stall, and a partition of the batches topic assigned) within 10 s of reaching them, with the
genuine version still enforcing.
"""

from __future__ import annotations

import os
import time
from collections import Counter
from collections.abc import Collection
from typing import Any

from worker.cli.scenario import data_file
from worker.control.publish import contract_record
from worker.core.lifecycle.registry import config_key
from worker.gate.housekeeping import NullInstruments
from worker.gate.pipeline import Pipeline
from worker.io.codec import encode_contract_record
from worker.io.contract_files import load_contract
from worker.kafka.admin import produce_one
from worker.kafka.settings import Settings


class _Rejections(NullInstruments):
    def __init__(self) -> None:
        self.reasons: Counter[str] = Counter()

    def record_config_rejection(
        self, layer: str | None, reason: str, known_layers: Collection[str]
    ) -> None:
        self.reasons[reason] += 1


def _flood(settings: Settings) -> None:
    from confluent_kafka import Producer

    producer = Producer(settings.producer())
    big = os.urandom(1_200_000)
    for i in range(30):
        producer.produce(settings.topics.contracts, value=big, key=f"junk/v9.{i}/big")
        producer.flush(30)
    for i in range(1000):
        producer.produce(settings.topics.contracts, value=os.urandom(300), key=f"junk-{i}")
        producer.poll(0)
    assert producer.flush(30) == 0


def test_a_fresh_worker_is_ready_within_10_s_of_30_oversized_and_1000_invalid_records(
    settings: Settings, start_worker: Any
) -> None:
    v1 = load_contract(data_file("contracts/admin_boundaries.v1.yaml"))
    value = encode_contract_record(contract_record(v1, mode="enforcing"))
    produce_one(settings, settings.topics.contracts, config_key(v1), value)
    _flood(settings)
    metrics = _Rejections()
    started = time.monotonic()  # the flood is the second record: the worker reaches it at once
    worker = start_worker(settings, metrics=metrics, config_timeout_s=10.0)
    bootstrapped = time.monotonic() - started
    pipeline: Pipeline = worker.pipeline
    while not pipeline.ready and time.monotonic() - started < 30:
        time.sleep(0.1)
    ready = time.monotonic() - started
    print(f"bootstrap of 1031 records (36 MiB): {bootstrapped:.2f} s; ready after {ready:.2f} s")
    assert pipeline.config.bootstrapped and not pipeline.config.stalled
    # ready = bootstrapped and a partition assigned (the group join included)
    assert pipeline.ready and ready < 10.0, f"ready after {ready:.2f} s"
    assert metrics.reasons == {"oversized_record": 30, "invalid_record": 1000}
    active = pipeline.registry.active("admin_boundaries")
    assert [(v.contract.version, v.mode) for v in active] == [("v1.0", "enforcing")]
