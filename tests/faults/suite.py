"""The fault suite: real worker processes on a real broker, each fault measured in figures.

Every scenario starts ``contract-gate run`` processes (by their own ids, on loopback),
feeds them one kind of fault, reads the output topics to their end and reports a
:class:`Row`: runs, inputs, output records, lost and duplicated batches, whether every
worker stayed up, the peak RSS of the workers (``VmHWM``), and the time to the last
decision. A scenario passes when nothing is lost, duplicates stay within what docs/design.md
section 8 allows (Tansu's read_committed readers also see aborted records: at most one
poll batch per partition per crash), every poison input gave exactly one quarantine
record, and no worker died or outgrew the RSS ceiling.

``python -m tests.faults`` runs the whole suite and prints the table (under 10 minutes
here); ``tests/integration/test_faults.py`` runs the short subset in CI. More scenarios live in
:mod:`tests.faults.fuzz`, :mod:`tests.faults.failover`, :mod:`tests.faults.broker_outage`
and :mod:`tests.faults.payload_race`.
"""

from __future__ import annotations

import io
import os
import signal
import struct
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path

import shapely

from tests.broker_timing import SESSION_TIMEOUT_MS
from tests.faults.fuzz import FULL_EXAMPLES, QUICK_EXAMPLES
from worker.cli.demo import publish_demo_contracts
from worker.cli.scenario import data_file
from worker.control.publish import contract_record
from worker.core.lifecycle.registry import config_key
from worker.io import codec
from worker.io.contract_files import load_contract
from worker.io.payloads import read_batch_file
from worker.kafka.admin import create_topics, produce_one, read_topic
from worker.kafka.settings import Settings, Topics

#: Peak RSS a worker may reach in any scenario (MiB); a quiet worker uses about 200.
RSS_CEILING_MIB = 700
PARTITIONS = 3
MAX_BATCH_EVENTS = 5
#: The producer's ``message.max.bytes`` of the record-too-large scenario: above the admin
#: boundaries batch (~180 KB), below the NYC boroughs batch (~1.2 MB).
SMALL_MAX_BYTES = 600_000


@dataclass
class Row:
    """One scenario's figures."""

    name: str
    runs: int = 1
    inputs: int = 0
    outputs: int = 0
    lost: int = 0
    duplicated: int = 0
    stayed_up: bool = True
    peak_rss_mib: float = 0.0
    decide_s: float = 0.0
    ok: bool = False
    note: str = ""
    #: a measurement of the broker rather than a check of the gate: shown as INFO, never
    #: failing the suite
    informational: bool = False


@dataclass
class Worker:
    """One ``contract-gate run`` process and its log."""

    proc: subprocess.Popen[bytes]
    log: Path
    peak_rss_mib: float = 0.0

    def sample(self) -> None:
        """Read the process's peak RSS (``VmHWM``) while it lives."""
        try:
            for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
                if line.startswith("VmHWM:"):
                    self.peak_rss_mib = max(self.peak_rss_mib, int(line.split()[1]) / 1024)
        except OSError:
            pass

    def alive(self) -> bool:
        return self.proc.poll() is None

    def stop(self, sig: int = signal.SIGTERM) -> int:
        self.sample()
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout=40)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return int(self.proc.returncode)


@dataclass
class Lab:
    """A topic prefix, its settings and the workers started in it."""

    settings: Settings
    workdir: Path
    workers: list[Worker] = field(default_factory=list)

    def start_worker(self, instance: str, *extra_args: str) -> Worker:
        t = self.settings.topics
        argv = [
            sys.executable, "-m", "worker", "run",
            "--bootstrap-servers", self.settings.bootstrap_servers,
            "--group-id", self.settings.group_id,
            "--instance-id", instance,
            "--session-timeout-ms", str(SESSION_TIMEOUT_MS),
            "--max-batch-events", str(MAX_BATCH_EVENTS),
            "--batches-topic", t.batches, "--admitted-topic", t.admitted,
            "--quarantine-topic", t.quarantine, "--contracts-topic", t.contracts,
            "--consumers-topic", t.consumers, "--evaluations-topic", t.evaluations,
            *extra_args,
        ]  # fmt: skip
        env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
        env["CONTRACT_GATE_HTTP_PORT"] = "0"
        log = self.workdir / f"{instance}-{len(self.workers)}.log"
        with log.open("wb") as out:
            proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, env=env)
        worker = Worker(proc, log)
        self.workers.append(worker)
        return worker

    def stop_all(self) -> None:
        for w in self.workers:
            w.stop()

    def peak_rss_mib(self) -> float:
        for w in self.workers:
            w.sample()
        return max((w.peak_rss_mib for w in self.workers), default=0.0)


@contextmanager
def lab(bootstrap_servers: str) -> Iterator[Lab]:
    """Fresh topics (own prefix) with the demo contracts published; workers stopped at the end."""
    prefix = f"f{uuid.uuid4().hex[:8]}."
    settings = Settings(
        bootstrap_servers=bootstrap_servers,
        group_id=f"{prefix}gate",
        topics=Topics().with_prefix(prefix),
        session_timeout_ms=SESSION_TIMEOUT_MS,
        instance_id=f"{prefix}cli",
    )
    create_topics(settings, partitions=PARTITIONS)
    publish_demo_contracts(settings, out=io.StringIO())
    with tempfile.TemporaryDirectory(prefix="faults-") as tmp:
        running = Lab(settings, Path(tmp))
        try:
            yield running
        finally:
            running.stop_all()


# -- inputs -----------------------------------------------------------------------------


def nyc_event(batch_id: str) -> bytes:
    nyc = read_batch_file(
        data_file("nyc_boroughs.parquet"), layer="nyc_boroughs", crs="EPSG:2263",
        data_time=datetime.now(timezone.utc),
    )  # fmt: skip
    return codec.encode_batch(replace(nyc, batch_id=batch_id))


def world_event(batch_id: str) -> bytes:
    """The admin boundaries batch (about 180 KB): admitted by the demo contracts."""
    return codec.encode_batch(_world(batch_id))


def _world(batch_id: str):  # type: ignore[no-untyped-def]
    return replace(
        read_batch_file(
            data_file("admin_boundaries.parquet"),
            layer="admin_boundaries",
            crs="EPSG:4326",
            data_time=datetime.now(timezone.utc),
        ),
        batch_id=batch_id,
    )


def deep_collection_event(batch_id: str, depth: int = 20_000) -> bytes:
    """One feature whose WKB is a GeometryCollection nested ``depth`` levels (GEOS SIGSEGV)."""
    wkb = shapely.to_wkb(shapely.Point(1, 2))
    for _ in range(depth):
        wkb = struct.pack("<BII", 1, 7, 1) + wkb
    world = _world(batch_id)
    one = replace(
        world, geometries_wkb=(wkb,), feature_count=1, attributes=world.attributes.slice(0, 1)
    )
    return codec.encode_batch(one)


def huge_value_event(batch_id: str, size: int = 10_000_000) -> bytes:
    """One country whose domain-governed ``continent`` is a ``size``-character string."""
    import pyarrow as pa

    world = _world(batch_id)
    one = world.attributes.slice(0, 1)
    index = one.schema.get_field_index("continent")
    one = one.set_column(index, "continent", pa.array(["x" * size]))
    return codec.encode_batch(
        replace(world, geometries_wkb=world.geometries_wkb[:1], feature_count=1, attributes=one)
    )


def by_reference_event(batch_id: str, uri: str) -> bytes:
    world = _world(batch_id)
    return codec.encode_batch(replace(world, payload_uri=uri), inline=False, payload_uri=uri)


def billion_laughs_record() -> bytes:
    """A 2.3 KB ContractRecord: 9 levels of aliases, each a list of 9, then a valid contract."""
    v1 = load_contract(data_file("contracts/admin_boundaries.v1.yaml"))
    lines = ['a0: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    for n in range(1, 10):
        lines.append(f"a{n}: &a{n} [" + ", ".join([f"*a{n - 1}"] * 9) + "]")
    record = contract_record(v1, mode="enforcing")
    record["document"] = "\n".join(lines) + "\n" + v1.text
    return codec.encode_contract_record(record)


# -- reading the outputs ----------------------------------------------------------------


def outputs(settings: Settings) -> Counter[tuple[int, int]]:
    """Admitted and quarantine records per source ``(partition, offset)`` (read to EOF)."""
    seen: Counter[tuple[int, int]] = Counter()
    for topic in (settings.topics.admitted, settings.topics.quarantine):
        for msg in read_topic(settings, topic, timeout_s=30):
            headers = {k: (v or b"").decode() for k, v in msg.headers() or ()}
            seen[(int(headers["source-partition"]), int(headers["source-offset"]))] += 1
    return seen


def wait_decided(
    running: Lab, placed: list[tuple[int, int]], timeout_s: float, *, sample: bool = True
) -> tuple[Counter[tuple[int, int]], float]:
    """Outputs once every placed event is decided (or at the timeout), and the wait in s."""
    started = time.monotonic()
    deadline = started + timeout_s
    got: Counter[tuple[int, int]] = Counter()
    while time.monotonic() < deadline:
        if sample:
            running.peak_rss_mib()
        got = outputs(running.settings)
        if all(got[p] for p in placed):
            break
        time.sleep(0.5)
    return got, time.monotonic() - started


def _judge(row: Row, placed: list[tuple[int, int]], got: Counter[tuple[int, int]]) -> Row:
    row.inputs = len(placed)
    row.outputs = sum(got[p] for p in placed)
    row.lost = sum(1 for p in placed if not got[p])
    row.duplicated = sum(got[p] - 1 for p in placed if got[p] > 1)
    return row


# -- scenarios ----------------------------------------------------------------------------


def poison(
    bootstrap: str,
    name: str,
    make: Callable[[int], bytes],
    count: int = 3,
    worker_args: tuple[str, ...] = (),
    good: Callable[[int], bytes] | None = None,
    reason: str | None = None,
    partition: int | None = None,
) -> Row:
    """``count`` poison events between good ones (``good``, default an NYC batch): each
    exactly one quarantine record (with ``reason`` when given), the good ones decided
    otherwise, the worker (started with ``worker_args``) alive and under the RSS ceiling.
    ``partition`` puts every event in that partition (default: by key)."""
    row = Row(name)
    with lab(bootstrap) as running:
        worker = running.start_worker("poison", *worker_args)
        placed, poisoned = [], []
        t = running.settings.topics
        make_good = good or (lambda i: nyc_event(f"g{i}"))
        for i in range(count):
            fine = produce_one(
                running.settings, t.batches, "nyc_boroughs", make_good(i), partition=partition
            )
            bad = produce_one(
                running.settings, t.batches, "admin_boundaries", make(i), partition=partition
            )
            placed += [fine, bad]
            poisoned.append(bad)
        if partition is not None:  # a good event after the last poison one, same partition
            placed.append(
                produce_one(
                    running.settings,
                    t.batches,
                    "nyc_boroughs",
                    make_good(count),
                    partition=partition,
                )
            )
        got, row.decide_s = wait_decided(running, placed, 120)
        row.peak_rss_mib = running.peak_rss_mib()
        row.stayed_up = worker.alive()
        quarantined: Counter[tuple[int, int]] = Counter()
        reasons: dict[tuple[int, int], str] = {}
        for msg in read_topic(running.settings, t.quarantine, timeout_s=30):
            h = {k: (v or b"").decode() for k, v in msg.headers() or ()}
            at = (int(h["source-partition"]), int(h["source-offset"]))
            quarantined[at] += 1
            reasons[at] = h.get("dlq.reason", "")
        _judge(row, placed, got)
        exact = all(quarantined[p] == 1 for p in poisoned)
        if reason is not None:
            exact = exact and all(reasons.get(p) == reason for p in poisoned)
            exact = exact and not any(quarantined[p] for p in placed if p not in poisoned)
        row.ok = (
            row.lost == 0
            and row.duplicated == 0
            and exact
            and row.stayed_up
            and row.peak_rss_mib < RSS_CEILING_MIB
        )
        if not exact:
            row.note = "a poison input did not give exactly one quarantine record"
    return row


def bad_config(bootstrap: str) -> Row:
    """A billion-laughs config record and a tombstone of the only enforcing version:
    both refused, the worker alive, a bad batch still quarantined, a good one admitted."""
    row = Row("config: billion laughs + tombstone of enforcing v1.0")
    with lab(bootstrap) as running:
        s, t = running.settings, running.settings.topics
        v1 = load_contract(data_file("contracts/admin_boundaries.v1.yaml"))
        produce_one(s, t.contracts, "admin_boundaries/v9.0", billion_laughs_record())
        produce_one(s, t.contracts, config_key(v1), None)
        worker = running.start_worker("config")
        stale = replace(_world("stale"), data_time=datetime(2000, 1, 1, tzinfo=timezone.utc))
        placed = [
            produce_one(s, t.batches, "admin_boundaries", codec.encode_batch(stale)),
            produce_one(s, t.batches, "nyc_boroughs", nyc_event("good")),
        ]
        got, row.decide_s = wait_decided(running, placed, 90)
        row.peak_rss_mib = running.peak_rss_mib()
        row.stayed_up = worker.alive()
        _judge(row, placed, got)
        admitted = set()
        for m in read_topic(s, t.admitted, timeout_s=30):
            h = {k: (v or b"").decode() for k, v in m.headers() or ()}
            admitted.add((int(h["source-partition"]), int(h["source-offset"])))
        log = worker.log.read_text(errors="replace")
        refused = "unretired_tombstone" in log and "admin_boundaries/v9.0 rejected" in log
        row.ok = (
            row.lost == 0
            and row.stayed_up
            and placed[0] not in admitted  # enforcement stayed on
            and placed[1] in admitted
            and refused
            and row.peak_rss_mib < RSS_CEILING_MIB
        )
        row.note = "both refused in the log" if refused else "a refusal is missing in the log"
    return row


def sigkill(bootstrap: str, kills: int, events: int) -> Row:
    """``kills`` SIGKILLs mid-stream, each followed by a restart with the same instance id.

    The events are produced while the workers run, ``events // kills`` in each worker's
    life (the rest before the last one), so every kill meets events still arriving; the
    kill comes 8, 4 or 10 s after the start (a worker process takes 2-3 s to start, and
    Tansu completes its join about half a ``session.timeout.ms`` later, tests/broker_timing.py:
    two kills in three while the worker routes, one while it starts or joins, interrupting
    fencing, the join or the config bootstrap).
    """
    row = Row(f"SIGKILL x{kills}, stable instance id", runs=kills)
    per_life = events // kills
    with lab(bootstrap) as running:
        s, t = running.settings, running.settings.topics
        placed: list[tuple[int, int]] = []

        def place(n: int) -> None:
            for _ in range(n):
                i = len(placed)
                event, partition = nyc_event(f"k{i}"), i % PARTITIONS
                placed.append(produce_one(s, t.batches, "nyc_boroughs", event, partition=partition))

        started = time.monotonic()
        for k in range(kills):
            worker = running.start_worker("killed")
            life_ends = time.monotonic() + (8, 4, 10)[k % 3]
            place(per_life)
            time.sleep(max(0.0, life_ends - time.monotonic()))
            worker.stop(signal.SIGKILL)
        running.start_worker("killed")
        place(events - len(placed))
        got, _ = wait_decided(running, placed, 120)
        row.decide_s = time.monotonic() - started
        row.peak_rss_mib = running.peak_rss_mib()
        row.stayed_up = running.workers[-1].alive()
        _judge(row, placed, got)
        allowed = kills * PARTITIONS * MAX_BATCH_EVENTS
        row.ok = row.lost == 0 and row.duplicated <= allowed and row.stayed_up
        row.note = f"duplicates allowed: {allowed} (Tansu shows aborted records)"
    return row


def one_of_two_killed(bootstrap: str, events: int) -> Row:
    """Two workers in one group; one is SIGKILLed mid-stream; the other takes over."""
    row = Row("two workers, one SIGKILLed")
    with lab(bootstrap) as running:
        s, t = running.settings, running.settings.topics
        first, second = running.start_worker("w1"), running.start_worker("w2")
        time.sleep(8)
        placed = [
            produce_one(s, t.batches, "nyc_boroughs", nyc_event(f"t{i}"), partition=i % PARTITIONS)
            for i in range(events)
        ]
        time.sleep(2)
        first.stop(signal.SIGKILL)
        got, row.decide_s = wait_decided(running, placed, 120)
        row.peak_rss_mib = running.peak_rss_mib()
        row.stayed_up = second.alive()
        _judge(row, placed, got)
        allowed = PARTITIONS * MAX_BATCH_EVENTS
        row.ok = row.lost == 0 and row.duplicated <= allowed and row.stayed_up
    return row


def fuzzing(examples: int) -> Row:
    """Hypothesis fuzzing of the parsers (:mod:`tests.faults.fuzz`) in a child process:
    ``in`` is the examples run, ``lost`` the targets with a failing input (an exception
    outside ContractGateError, a hang) and a crash of the child (a C library's signal)
    is a failure too. ``FAULTS_FUZZ_EXAMPLES`` overrides ``examples`` (per target)."""
    import json

    examples = int(os.environ.get("FAULTS_FUZZ_EXAMPLES", examples))
    row = Row(f"Hypothesis fuzzing, {examples} examples per parser")
    with tempfile.TemporaryDirectory(prefix="faults-fuzz-") as tmp:
        log = Path(tmp) / "fuzz.log"
        trace = Path(tmp) / "last-input.txt"
        argv = [sys.executable, "-m", "tests.faults.fuzz", "--examples", str(examples)]
        env = {**os.environ, "FUZZ_TRACE": str(trace)}
        started = time.monotonic()
        with log.open("wb") as err:
            proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=err, env=env)
            child = Worker(proc, log)
            while proc.poll() is None and time.monotonic() - started < 300:
                child.sample()
                time.sleep(0.5)
            out = proc.communicate(timeout=60)[0] if proc.poll() is not None else b""
        child.stop(signal.SIGKILL)
        row.decide_s = time.monotonic() - started
        row.peak_rss_mib = child.peak_rss_mib
        row.stayed_up = proc.returncode in (0, 1)
        try:
            figures = json.loads(out.decode().strip().splitlines()[-1])
        except (ValueError, IndexError):
            last = trace.read_text()[:300] if trace.exists() else "?"
            row.note = f"the fuzzer died (exit {proc.returncode}) on input {last}"
            return row
    failures = figures["failures"]
    row.runs, row.inputs = figures["targets"], figures["examples"]
    row.outputs, row.lost = row.inputs - len(failures), len(failures)
    row.ok = not failures and proc.returncode == 0
    row.note = "; ".join(
        f"{f['target']}: {f['error'][:120]} on {f['input'][:200]}" for f in failures
    )
    return row


def malformed(i: int) -> bytes:
    return b"\x00\x01 not avro " + bytes([i]) * 40


def fifo_payload(bootstrap: str) -> Row:
    """Events whose ``payload_uri`` names a FIFO (made here, removed afterwards)."""
    with tempfile.TemporaryDirectory(prefix="faults-fifo-") as tmp:
        fifo = Path(tmp) / "pipe.geojson"
        os.mkfifo(fifo)
        return poison(
            bootstrap,
            "payload_uri of a FIFO",
            lambda i: by_reference_event(f"p{i}", fifo.as_uri()),
        )


def _config_history(bootstrap: str) -> Row:
    from tests.faults.config_history import compacted_history

    return compacted_history(bootstrap)


def _compacted_damage(state: str, damage: str) -> Callable[[str], Row]:
    def run(bootstrap: str) -> Row:
        from tests.faults.config_history import compacted_damage

        return compacted_damage(bootstrap, state, damage)

    return run


def _forged_signature(bootstrap: str) -> Row:
    from tests.faults.config_history import forged_signature

    return forged_signature(bootstrap)


def _config_flood(bootstrap: str) -> Row:
    from tests.faults.config_history import config_flood

    return config_flood(bootstrap)


def scenarios(quick: bool) -> list[tuple[str, Callable[[str], Row]]]:
    """The suite (``quick``: the CI subset)."""
    runs: list[tuple[str, Callable[[str], Row]]] = [
        ("malformed Avro", lambda b: poison(b, "malformed Avro events", malformed)),
        (
            "deep collection",
            lambda b: poison(
                b, "GeometryCollection 20,000 deep", lambda i: deep_collection_event(f"d{i}")
            ),
        ),
        ("config", bad_config),
        ("config history", _config_history),
        ("config signature", _forged_signature),
        ("config flood", _config_flood),
        ("fuzzing", lambda b: fuzzing(QUICK_EXAMPLES if quick else FULL_EXAMPLES)),
    ]
    if not quick:  # SIGKILL mid-stream is also in tests/integration/test_worker_process.py
        runs += [
            ("sigkill", lambda b: sigkill(b, 20, 200)),
            (
                "10 MB value",
                lambda b: poison(
                    b, "10 MB attribute value", lambda i: huge_value_event(f"h{i}"), count=2
                ),
            ),
            (
                "/dev/zero",
                lambda b: poison(
                    b,
                    "payload_uri file:///dev/zero",
                    lambda i: by_reference_event(f"z{i}", "file:///dev/zero"),
                ),
            ),
            ("FIFO", fifo_payload),
            ("two workers", lambda b: one_of_two_killed(b, 60)),
        ]
        runs += [  # issue 30; in CI as tests/integration/test_history_compaction.py
            (f"config history {damage} {state}", _compacted_damage(state, damage))
            for state in ("superseded", "retired")
            for damage in ("tombstone", "garbage")
        ]
    if not quick:
        from tests.faults.broker_outage import broker_outage
        from tests.faults.failover import takeover
        from tests.faults.payload_race import payload_race

        runs += [
            ("broker outage", broker_outage),
            ("failover dynamic", lambda b: takeover(b, static=False)),
            ("failover static", lambda b: takeover(b, static=True)),
            ("payload race", payload_race),
        ]
    runs.append(
        (
            "record too large",
            lambda b: poison(
                b,
                f"record above message.max.bytes={SMALL_MAX_BYTES}",
                lambda i: nyc_event(f"big{i}"),
                count=2,
                partition=0,
                worker_args=("--kafka-property", f"message.max.bytes={SMALL_MAX_BYTES}"),
                good=lambda i: world_event(f"w{i}"),
                reason="record_too_large",
            ),
        )
    )
    return runs


def render(rows: list[Row]) -> str:
    head = (
        f"{'scenario':<52} {'runs':>4} {'in':>4} {'out':>4} {'lost':>4} {'dup':>4} "
        f"{'up':>3} {'RSS MiB':>8} {'decide s':>8}  result"
    )
    lines = [head, "-" * len(head)]
    for r in rows:
        lines.append(
            f"{r.name:<52} {r.runs:>4} {r.inputs:>4} {r.outputs:>4} {r.lost:>4} "
            f"{r.duplicated:>4} {'yes' if r.stayed_up else 'NO':>3} {r.peak_rss_mib:>8.0f} "
            f"{r.decide_s:>8.1f}  {'INFO' if r.informational else 'PASS' if r.ok else 'FAIL'}"
            + (f"  {r.note}" if r.note else "")
        )
    return "\n".join(lines)
