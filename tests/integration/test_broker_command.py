"""``contract-gate broker`` as users run it: a foreground process stopped by SIGTERM."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from confluent_kafka.admin import AdminClient

from worker.kafka.settings import Topics


def test_broker_prints_the_export_line_creates_topics_and_stops_on_sigterm() -> None:
    with subprocess.Popen(
        [sys.executable, "-m", "worker", "broker", "--create-topics", "--partitions", "2"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={k: v for k, v in os.environ.items() if k != "KAFKA_BOOTSTRAP_SERVERS"},
    ) as proc:
        try:
            assert proc.stdout is not None and proc.stderr is not None
            line = proc.stdout.readline().strip()  # blocks until the broker answers
            assert line.startswith("export KAFKA_BOOTSTRAP_SERVERS=127.0.0.1:"), line
            bootstrap = line.split("=", 1)[1]
            meta = AdminClient({"bootstrap.servers": bootstrap}).list_topics(timeout=10)
            partitions = {name: len(t.partitions) for name, t in meta.topics.items()}
            t = Topics()
            assert partitions[t.batches] == 2 and partitions[t.contracts] == 1
            assert set(Topics().names()) <= set(partitions)

            first = ""
            deadline = time.monotonic() + 10
            while "Tansu broker pid" not in first and time.monotonic() < deadline:
                first = proc.stderr.readline()
            tansu_pid = int(first.split("Tansu broker pid ")[1].split()[0])
            assert Path(f"/proc/{tansu_pid}").exists()

            proc.send_signal(signal.SIGTERM)
            assert proc.wait(timeout=30) == 0
            assert "broker stopped" in proc.stderr.read()
            # the broker process is gone (or a zombie reaped by nobody: never still running)
            status = Path(f"/proc/{tansu_pid}/status")
            assert not status.exists() or "State:\tZ" in status.read_text()
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait(timeout=30)
