"""By-reference batches end to end: ``batch publish --upload s3://...`` announces a file
that a real worker process reads from a moto S3 server under its ``--payload-root``;
attacks named by ``payload_uri`` are quarantined with their reasons while the worker goes
on, and nothing of the attacked files reaches an output record or the worker's log."""

from __future__ import annotations

import io
import os
import re
import signal
import subprocess
import sys
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path

import pytest

from tests.broker_timing import SESSION_TIMEOUT_MS
from tests.s3server import ACCESS_KEY, SECRET_KEY, make_bucket, moto_server, s3_env
from worker.cli.demo import collect_results, publish_demo_contracts
from worker.cli.main import main
from worker.cli.scenario import data_file
from worker.io.codec import encode_batch
from worker.io.payloads import read_batch_file
from worker.kafka.admin import produce_one
from worker.kafka.settings import Settings

__all__ = ["moto_server", "s3_env"]  # fixtures used by name

MARKER = "Zq7-SECRET-continent-4711"


def _worker(settings: Settings, roots: list[str], log: Path) -> subprocess.Popen[bytes]:
    t = settings.topics
    argv = [
        sys.executable, "-m", "worker", "--log-level", "DEBUG", "run",
        "--bootstrap-servers", settings.bootstrap_servers,
        "--group-id", settings.group_id, "--instance-id", "payload-1",
        "--session-timeout-ms", str(SESSION_TIMEOUT_MS), "--max-batch-events", "5",
        "--batches-topic", t.batches, "--admitted-topic", t.admitted,
        "--quarantine-topic", t.quarantine, "--contracts-topic", t.contracts,
        "--consumers-topic", t.consumers, "--evaluations-topic", t.evaluations,
    ]  # fmt: skip
    for root in roots:
        argv += ["--payload-root", root]
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    env["CONTRACT_GATE_HTTP_PORT"] = "0"
    with log.open("wb") as out:
        return subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, env=env)


def _stop(proc: subprocess.Popen[bytes]) -> int:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    return proc.returncode


def test_upload_announce_and_attacks_against_a_worker_process(
    settings: Settings,
    s3_env,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,  # type: ignore[no-untyped-def]
) -> None:
    make_bucket("landing")
    local_root = tmp_path / "root"
    local_root.mkdir()
    secret = tmp_path / "outside.geojson"
    secret.write_text(
        '{"type": "FeatureCollection", "features": [{"type": "Feature", "geometry": '
        f'{{"type": "Point", "coordinates": [1, 2]}}, "properties": {{"BoroName": "{MARKER}"}}}}]}}'
    )
    fifo = local_root / "pipe.parquet"
    os.mkfifo(fifo)
    publish_demo_contracts(settings, out=io.StringIO())

    # 1. the producer's way: upload to S3 and announce, through the CLI
    monkeypatch.chdir(tmp_path)
    t = settings.topics
    kafka = ["--bootstrap-servers", settings.bootstrap_servers, "--batches-topic", t.batches]
    argv = ["batch", "publish", str(data_file("nyc_boroughs.parquet")), "--layer",
            "nyc_boroughs", "--crs", "EPSG:2263", "--batch-id", "up-1",
            # data time given: the file's mtime (the default) is the checkout's age, and
            # the contract's freshness is PT6H
            "--data-time", datetime.now(timezone.utc).isoformat(),
            "--upload", "s3://landing/in/", *kafka]  # fmt: skip
    assert main(argv) == 0

    # 2. attacks, each an event naming a payload the worker must not read
    nyc = read_batch_file(
        data_file("nyc_boroughs.parquet"), layer="nyc_boroughs", crs="EPSG:2263",
        data_time=datetime.now(timezone.utc),
    )  # fmt: skip
    attacks = {
        "outside.geojson": "payload_not_allowed",  # relative to the worker's directory
        f"file://{local_root}/../outside.geojson": "payload_not_allowed",
        "file:///etc/passwd": "payload_not_allowed",
        "file:///proc/self/environ": "payload_not_allowed",
        "file:///dev/zero": "payload_not_allowed",
        fifo.as_uri(): "payload_not_allowed",
        "s3://landing/elsewhere/x.parquet": "payload_not_allowed",
        "s3://landing/in/missing.parquet": "payload_unavailable",
    }
    placed: dict[tuple[int, int], str] = {}
    for i, uri in enumerate(attacks):
        event = encode_batch(replace(nyc, batch_id=f"attack-{i}"), inline=False, payload_uri=uri)
        placed[produce_one(settings, t.batches, "nyc_boroughs", event)] = uri

    proc = _worker(settings, ["s3://landing/in/", local_root.as_uri()], tmp_path / "w.log")
    try:
        result = collect_results(settings, len(placed) + 1, 1, timeout_s=90)
        alive = proc.poll() is None
    finally:
        code = _stop(proc)
    log = (tmp_path / "w.log").read_text()
    assert alive and code == 0, log
    uploaded = [c for c, d in result.decisions.items() if c not in placed]
    assert [result.decisions[c] for c in uploaded] == ["admitted"]
    for coord, uri in placed.items():
        rec = result.quarantine[coord]
        assert rec["reason_code"] == attacks[uri], (uri, rec["reasons"])
    # nothing of the attacked files, nor the AWS credentials, in records or the log
    everything = log + "".join(str(q) for q in result.quarantine.values())
    for leaked in (MARKER, "root:x:0", SECRET_KEY, ACCESS_KEY):
        assert leaked not in everything, leaked
    assert re.search(r"payload roots: s3://landing/in/, file://\S+/root/", log)
