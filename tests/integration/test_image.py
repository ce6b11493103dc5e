"""deploy/Dockerfile: the image builds, and its entry point decides a batch on a real broker.

Built and run without a Docker engine (see :mod:`tests.integration.container`); skipped
where buildah, mmdebstrap or podman is missing (``.ci/run`` installs them). The worker in
the container reaches the embedded broker on loopback through the host network, and is
stopped with SIGTERM sent to its own process id, as Kubernetes stops a pod.
"""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import time
import urllib.error
import urllib.request
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest

from tests.broker_timing import SESSION_TIMEOUT_MS
from tests.integration.container import (
    Container,
    build_image,
    descendants,
    image_config,
    missing_tools,
)
from worker import __version__
from worker.cli.demo import collect_results, publish_demo_contracts
from worker.cli.scenario import data_file
from worker.io.codec import encode_batch
from worker.io.payloads import read_batch_file
from worker.kafka.admin import produce_one
from worker.kafka.embedded import free_port
from worker.kafka.settings import Settings

pytestmark = pytest.mark.skipif(
    bool(missing_tools()),
    reason=f"container tools not installed: {', '.join(missing_tools())} "
    "(apt-get install -y buildah mmdebstrap podman; .ci/run does)",
)


def _get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=3) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()
    except OSError:
        return 0, ""


@pytest.fixture(scope="module")
def image() -> Any:
    built = build_image()
    print(
        f"\nimage {built.ref}: {built.size_bytes / 1e6:.0f} MB, "
        + (f"built in {built.build_seconds:.0f} s" if built.build_seconds else "reused")
    )
    return built


def test_image_config_runs_the_worker_as_non_root(image: Any) -> None:
    config = image_config(image.ref)
    assert config["Entrypoint"] == ["contract-gate", "run"]
    assert config["User"] == "10001:10001"
    assert "8080/tcp" in dict(config["ExposedPorts"])  # type: ignore[arg-type]
    assert "CONTRACT_GATE_HTTP_PORT=8080" in list(config["Env"])  # type: ignore[call-overload]
    labels = dict(config["Labels"])  # type: ignore[call-overload]
    assert labels["org.opencontainers.image.version"] == __version__
    assert labels["org.opencontainers.image.licenses"] == "Apache-2.0"

    container = Container(image.ref)
    try:
        version = container.run(["contract-gate", "--version"])
        assert version.returncode == 0, version.stderr
        assert version.stdout.strip() == f"contract-gate {__version__}"
        who = container.run(["id", "-u"])
        assert who.stdout.strip() == "10001"
        compilers = container.run(["sh", "-c", "command -v gcc cc c++ make || true"])
        assert compilers.stdout.strip() == "", f"compilers in the final stage: {compilers.stdout}"
    finally:
        container.remove()


def test_image_entry_point_decides_a_batch(image: Any, settings: Settings) -> None:
    publish_demo_contracts(settings, out=io.StringIO())
    port = free_port()
    t = settings.topics
    topic_flags = [
        f"--{name}-topic={getattr(t, name)}"
        for name in ("batches", "admitted", "quarantine", "contracts", "consumers", "evaluations")
    ]
    entry = list(image_config(image.ref)["Entrypoint"])  # type: ignore[call-overload]
    container = Container(image.ref)
    argv = [
        *entry,
        f"--session-timeout-ms={SESSION_TIMEOUT_MS}",
        "--http-host=127.0.0.1",
        *topic_flags,
    ]
    env = {  # as deploy/k8s passes them: the environment, not flags
        "KAFKA_BOOTSTRAP_SERVERS": settings.bootstrap_servers,
        "CONTRACT_GATE_GROUP_ID": settings.group_id,
        "CONTRACT_GATE_INSTANCE_ID": "contract-gate-0",
        "CONTRACT_GATE_HTTP_PORT": str(port),
    }
    proc = subprocess.Popen(
        container.command(argv, env),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        started = time.monotonic()
        status, body = 0, ""
        while time.monotonic() - started < 60 and proc.poll() is None:
            status, body = _get(f"http://127.0.0.1:{port}/readyz")
            if status == 200:
                break
            time.sleep(0.5)
        assert status == 200, f"/readyz never 200: {status} {body}"
        ready_s = time.monotonic() - started

        nyc = read_batch_file(
            data_file("nyc_boroughs.parquet"),
            layer="nyc_boroughs",
            crs="EPSG:2263",
            data_time=datetime.now(timezone.utc),
        )
        placed = produce_one(
            settings,
            t.batches,
            "nyc_boroughs",
            encode_batch(replace(nyc, batch_id="image-nyc-1")),
        )
        result = collect_results(settings, 1, 1, timeout_s=60)
        assert result.decisions == {placed: "admitted"}
        assert [e["batch_id"] for e in result.evaluations] == ["image-nyc-1"]
        status, body = _get(f"http://127.0.0.1:{port}/status")
        assert status == 200
        assert json.loads(body)["batches_committed"] == 1

        workers = [
            p
            for p in descendants(proc.pid)
            if Path(f"/proc/{p}/comm").read_text().strip() == "contract-gate"
        ]
        assert len(workers) == 1, workers
        rss_kb = next(
            int(line.split()[1])
            for line in Path(f"/proc/{workers[0]}/status").read_text().splitlines()
            if line.startswith("VmHWM:")
        )
        print(f"\nimage worker ready after {ready_s:.1f} s; peak RSS {rss_kb / 1024:.0f} MiB")
        os.kill(workers[0], signal.SIGTERM)  # as the kubelet stops the container
        out, _ = proc.communicate(timeout=60)
        assert proc.returncode == 0, out
        assert "worker stopped after 1 events" in out
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate(timeout=30)
        container.remove()
