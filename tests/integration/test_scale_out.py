"""Two workers in one consumer group share the input partitions; nothing is lost."""

from __future__ import annotations

import io
import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.request
import uuid
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest

from tests.broker_timing import SESSION_TIMEOUT_MS
from worker.cli.demo import collect_results, publish_demo_contracts
from worker.cli.scenario import data_file
from worker.io.codec import encode_batch
from worker.io.payloads import read_batch_file
from worker.kafka.admin import create_topics, produce_one
from worker.kafka.embedded import free_port
from worker.kafka.settings import Settings, Topics


def test_second_worker_shares_partitions_and_nothing_is_lost(
    settings: Settings, start_worker: Any
) -> None:
    publish_demo_contracts(settings, out=io.StringIO())
    first = start_worker(settings.with_(instance_id="w1"))
    second = start_worker(settings.with_(instance_id="w2"))
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not (first.pipeline.ready and second.pipeline.ready):
        time.sleep(0.2)
    assert first.pipeline.assigned and second.pipeline.assigned
    assert not (first.pipeline.assigned & second.pipeline.assigned)
    assert len(first.pipeline.assigned | second.pipeline.assigned) == 3

    nyc = read_batch_file(
        data_file("nyc_boroughs.parquet"),
        layer="nyc_boroughs",
        crs="EPSG:2263",
        data_time=datetime.now(timezone.utc),
    )
    placed = []
    for i in range(30):
        value = encode_batch(replace(nyc, batch_id=f"nyc-{i}"))
        placed.append(
            produce_one(settings, settings.topics.batches, "nyc_boroughs", value, partition=i % 3)
        )
    result = collect_results(settings, len(placed), len(placed), timeout_s=60)
    assert set(result.decisions) == set(placed)
    assert set(result.decisions.values()) == {"admitted"}
    assert sorted(ev["batch_id"] for ev in result.evaluations) == sorted(
        f"nyc-{i}" for i in range(30)
    )
    assert first.pipeline.batches_committed > 0 and second.pipeline.batches_committed > 0
    assert first.pipeline.batches_committed + second.pipeline.batches_committed == 30


# -- three worker processes over six partitions, one replaced midway ---------------------
PARTITIONS = 6
PER_PHASE = 200


class WorkerProcess:
    """``contract-gate run`` as a process of its own, stopped by SIGTERM to its own id."""

    def __init__(self, settings: Settings, instance_id: str, log_dir: Path) -> None:
        self.instance_id = instance_id
        self.port = free_port()
        t = settings.topics
        argv = [
            sys.executable,
            "-m",
            "worker",
            "run",
            f"--bootstrap-servers={settings.bootstrap_servers}",
            f"--group-id={settings.group_id}",
            f"--instance-id={instance_id}",
            f"--session-timeout-ms={SESSION_TIMEOUT_MS}",
            f"--http-port={self.port}",
            "--http-host=127.0.0.1",
            *(f"--{name}-topic={value}" for name, value in t.__dict__.items()),
        ]
        self.log = log_dir / f"{instance_id}.log"
        with self.log.open("w") as out:
            self.proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT)
        self.final_count: int | None = None
        self.peak_rss_kb = 0

    def status(self) -> dict[str, Any] | None:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/status", timeout=3) as r:
                return dict(json.loads(r.read()))
        except (OSError, ValueError):
            return None

    def committed(self) -> int:
        if self.final_count is not None:
            return self.final_count
        s = self.status()
        return int(s["batches_committed"]) if s else 0

    def sample_rss(self) -> None:
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                self.peak_rss_kb = max(self.peak_rss_kb, int(line.split()[1]))

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.sample_rss()
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=30)
        text = self.log.read_text()
        m = re.search(r"worker stopped after (\d+) events", text)
        self.final_count = int(m.group(1)) if m else None


def _wait_stable(members: list[WorkerProcess], timeout_s: float = 90) -> dict[str, list[str]]:
    """Wait until every member is ready and together they own each partition exactly once."""
    deadline = time.monotonic() + timeout_s
    owned: dict[str, list[str]] = {}
    while time.monotonic() < deadline:
        statuses = {m.instance_id: m.status() for m in members}
        owned = {k: (s or {}).get("partitions_assigned", []) for k, s in statuses.items()}
        flat = [p for parts in owned.values() for p in parts]
        if (
            all(s and s["ready"] for s in statuses.values())
            and len(flat) == PARTITIONS
            and len(set(flat)) == PARTITIONS
        ):
            return owned
        time.sleep(0.5)
    raise AssertionError(f"group never stable with {len(members)} members: {owned}")


def _produce(settings: Settings, first: int, n: int, placed: dict[tuple[int, int], str]) -> None:
    """Produce batches ``first .. first+n-1`` round-robin over the partitions."""
    from confluent_kafka import Producer

    nyc = read_batch_file(
        data_file("nyc_boroughs.parquet"),
        layer="nyc_boroughs",
        crs="EPSG:2263",
        data_time=datetime.now(timezone.utc),
    )
    producer = Producer(settings.producer())
    failures: list[str] = []

    def delivered(batch_id: str) -> Any:
        def callback(err: Any, msg: Any) -> None:  # records only; asserted below
            if err is not None:
                failures.append(f"{batch_id}: {err}")
            else:
                placed[(msg.partition(), msg.offset())] = batch_id

        return callback

    for i in range(first, first + n):
        producer.produce(
            settings.topics.batches,
            key="nyc_boroughs",
            value=encode_batch(replace(nyc, batch_id=f"scale-{i}")),
            partition=i % PARTITIONS,
            on_delivery=delivered(f"scale-{i}"),
        )
        producer.poll(0)
    assert producer.flush(60) == 0
    assert not failures, failures


def _wait_committed(members: list[WorkerProcess], total: int, timeout_s: float = 180) -> float:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        done = sum(m.committed() for m in members)
        if done >= total:
            return time.monotonic()
        for m in members:
            if m.proc.poll() is None:
                m.sample_rss()
        time.sleep(0.1)
    raise AssertionError(f"only {sum(m.committed() for m in members)} of {total} committed")


#: The three-process soak runs only when asked (3-4 minutes; CONTRACT_GATE_SOAK=1): it was an
#: xfail that could not fail, intermittent on the embedded broker (batches of the last phase,
#: after a member is replaced, not collected within 90 s in 2 of 7 full runs on 2026-12-03).
#: Asked for, it fails like any test.
SOAK = os.environ.get("CONTRACT_GATE_SOAK") == "1"


@pytest.mark.skipif(not SOAK, reason="soak test: set CONTRACT_GATE_SOAK=1 to run it (3-4 min)")
def test_three_processes_over_six_partitions_one_replaced_midway(
    broker: Any, tmp_path: Path
) -> None:
    prefix = f"t{uuid.uuid4().hex[:8]}."
    settings = Settings(
        bootstrap_servers=broker.bootstrap_servers,
        group_id=f"{prefix}gate",
        topics=Topics().with_prefix(prefix),
        session_timeout_ms=SESSION_TIMEOUT_MS,
    )
    create_topics(settings, partitions=PARTITIONS)
    publish_demo_contracts(settings, out=io.StringIO())
    members = [WorkerProcess(settings, f"w{i}", tmp_path) for i in (1, 2, 3)]
    everyone = list(members)
    placed: dict[tuple[int, int], str] = {}
    rates: dict[int, float] = {}
    try:
        _wait_stable(members)
        produced = 0

        def phase() -> float:
            """Produce PER_PHASE batches; seconds until all are committed."""
            nonlocal produced
            started = time.monotonic()
            _produce(settings, produced, PER_PHASE, placed)
            produced += PER_PHASE
            return _wait_committed(everyone, produced) - started

        rates[3] = PER_PHASE / phase()  # three members, stable

        # one member stops (SIGTERM) while a phase's batches are in flight
        _produce(settings, produced, PER_PHASE, placed)
        produced += PER_PHASE
        members[0].stop()
        members = members[1:]
        _wait_committed(everyone, produced)
        _wait_stable(members)
        rates[2] = PER_PHASE / phase()  # two members own all six partitions

        # a new member starts while a phase's batches are in flight
        _produce(settings, produced, PER_PHASE, placed)
        produced += PER_PHASE
        newcomer = WorkerProcess(settings, "w4", tmp_path)
        members.append(newcomer)
        everyone.append(newcomer)
        _wait_committed(everyone, produced)
        owned = _wait_stable(members)
        assert all(owned[m.instance_id] for m in members), owned  # nobody idle, none unowned
        rates[4] = PER_PHASE / phase()  # three members again, one of them new
        assert newcomer.committed() > 0  # the member started midway takes work

        result = collect_results(settings, len(placed), len(placed), timeout_s=90)
        assert set(result.decisions) == set(placed)  # every batch decided, at its coordinates
        assert set(result.decisions.values()) == {"admitted"}
        assert {e["batch_id"] for e in result.evaluations} == set(placed.values())
        assert len(placed) == produced == 5 * PER_PHASE
    finally:
        for m in everyone:
            m.stop()
    rss = {m.instance_id: round(m.peak_rss_kb / 1024) for m in everyone}
    print(
        f"\nscale-out: {PER_PHASE} NYC batches per phase, 6 partitions: "
        + f"3 members {rates[3]:.0f} batches/s, 2 members {rates[2]:.0f} batches/s, "
        + f"3 members after the replacement {rates[4]:.0f} batches/s"
        + f"; peak RSS per member (MiB): {rss}"
    )
    for m in everyone:
        assert m.proc.returncode == 0, m.log.read_text()[-2000:]
