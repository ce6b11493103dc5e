"""Worker throughput on a real broker: one transaction per poll batch versus per event.

Starts a broker (KAFKA_BOOTSTRAP_SERVERS, Docker, or the embedded Tansu), publishes the
admin_boundaries v1 contract and N small real batches (one Natural Earth country each,
with new batch ids), and times a worker from its partition assignment until every event has its
decision on the output topics, once with ``max_batch_events=500`` (the default) and once
with ``max_batch_events=1`` (a commit per event). Prints events/s for both and the ratio
measured in the same run. Run: ``python benchmarks/bench_pipeline.py [--events N]``.
"""

from __future__ import annotations

import argparse
import threading
import time
import uuid
from dataclasses import replace
from datetime import datetime, timezone

from confluent_kafka import Producer

from worker.cli.demo import collect_results
from worker.cli.scenario import data_file
from worker.io.codec import encode_batch
from worker.io.features import read_batch_file
from worker.kafka.broker import start_broker
from worker.kafka.client import create_topics
from worker.kafka.pipeline import Pipeline
from worker.kafka.publish import publish_contract
from worker.kafka.settings import Settings, Topics


def run(bootstrap: str, events: int, max_batch_events: int) -> float:
    prefix = f"bench{uuid.uuid4().hex[:6]}."
    settings = Settings(
        bootstrap_servers=bootstrap,
        group_id=f"{prefix}gate",
        topics=Topics().with_prefix(prefix),
        session_timeout_ms=6000,
        instance_id=f"bench-{max_batch_events}",
    )
    create_topics(settings, partitions=3)
    publish_contract(
        settings, data_file("contracts/admin_boundaries.v1.yaml"), published_by="bench"
    )
    world = read_batch_file(
        data_file("admin_boundaries.parquet"), layer="admin_boundaries", crs="EPSG:4326",
        data_time=datetime.now(timezone.utc),
    )  # fmt: skip
    one = replace(
        world, geometries_wkb=world.geometries_wkb[:1], attributes=world.attributes.slice(0, 1)
    )
    producer = Producer(settings.producer())
    for i in range(events):
        value = encode_batch(replace(one, batch_id=f"b{i}", feature_count=1))
        producer.produce(
            settings.topics.batches, key="admin_boundaries", value=value, partition=i % 3
        )
        producer.poll(0)
    producer.flush(60)
    pipeline = Pipeline(settings, max_batch_events=max_batch_events)
    pipeline.start()
    stop = threading.Event()
    thread = threading.Thread(target=pipeline.run, args=(stop,), daemon=True)
    thread.start()
    while not pipeline.ready:  # the group join (~session.timeout.ms on Tansu) is not timed
        time.sleep(0.01)
    started = time.monotonic()
    result = collect_results(settings, events, 0, timeout_s=600)
    elapsed = time.monotonic() - started
    stop.set()
    thread.join(30)
    assert len(result.decisions) == events, f"only {len(result.decisions)} of {events} decided"
    return events / elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=2000)
    args = parser.parse_args()
    broker = start_broker()
    try:
        print(f"broker: {broker.kind} at {broker.bootstrap_servers}; {args.events} events")
        batched = run(broker.bootstrap_servers, args.events, 500)
        print(f"one transaction per poll batch (<= 500 events): {batched:8.0f} events/s")
        per_event = run(broker.bootstrap_servers, args.events, 1)
        print(f"one transaction per event:                      {per_event:8.0f} events/s")
        print(f"ratio: {batched / per_event:.1f}x")
    finally:
        broker.stop()


if __name__ == "__main__":
    main()
