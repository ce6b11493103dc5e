"""Every Kafka command fails within about 10 s when no broker answers, with one line that
names the bootstrap servers and says they came from KAFKA_BOOTSTRAP_SERVERS (issue 28 §5):
a closed loopback port, each command in-process as a user runs it."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.cli.interrupts import ROOT
from worker.cli.main import main
from worker.kafka.embedded import free_port

CONTRACT = str(ROOT / "worker" / "data" / "contracts" / "admin_boundaries.v1.yaml")
BATCH = str(ROOT / "worker" / "data" / "admin_boundaries.parquet")

KAFKA_COMMANDS = [
    ["topics", "create"],
    ["contract", "publish", CONTRACT],
    ["contract", "list"],
    ["contract", "evidence", "admin_boundaries", "v1"],
    ["contract", "promote", "admin_boundaries", "v1"],
    ["contract", "retire", "admin_boundaries", "v1"],
    ["consumers", "declare", "reader", "admin_boundaries", "v1"],
    ["consumers", "assert", "admin_boundaries", "v1"],
    ["consumers", "status"],
    ["quarantine", "tail"],
    ["quarantine", "show", "b1"],
    ["quarantine", "replay", "b1"],
    ["verify", "overlap", "admin_boundaries"],
    ["batch", "publish", BATCH, "--layer", "admin_boundaries"],
    ["run", "--http-port", "0"],
]


@pytest.fixture
def closed_port() -> int:
    return free_port()  # bound and released: nothing listens there


@pytest.mark.parametrize("argv", KAFKA_COMMANDS, ids=lambda a: " ".join(a[:2]))
def test_a_kafka_command_with_no_broker_fails_fast_in_one_line(
    argv: list[str],
    closed_port: int,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    servers = f"127.0.0.1:{closed_port}"
    monkeypatch.setenv("KAFKA_BOOTSTRAP_SERVERS", servers)
    started = time.monotonic()
    status = main(argv)
    seconds = time.monotonic() - started
    err = capsys.readouterr().err
    assert status == 2
    assert seconds < 15, seconds
    lines = [s for s in err.splitlines() if s.startswith("contract-gate ")]
    errors = [s for s in lines if ": error: " in s]
    assert len(errors) == 1, err
    assert f"cannot reach Kafka at {servers} (from KAFKA_BOOTSTRAP_SERVERS)" in errors[0]
    assert "Traceback" not in err


def test_the_flag_is_named_when_it_gave_the_servers(
    closed_port: int, capsys: pytest.CaptureFixture[str]
) -> None:
    servers = f"127.0.0.1:{closed_port}"
    assert main(["contract", "list", "--bootstrap-servers", servers]) == 2
    assert f"cannot reach Kafka at {servers} (from --bootstrap-servers)" in capsys.readouterr().err


def test_the_demo_with_an_unreachable_cluster_fails_fast_without_install_advice(
    closed_port: int,
) -> None:
    servers = f"127.0.0.1:{closed_port}"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "KAFKA_BOOTSTRAP_SERVERS": servers}
    started = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-m", "worker", "demo"], capture_output=True, env=env, timeout=60
    )
    seconds = time.monotonic() - started
    err = proc.stderr.decode()
    assert proc.returncode == 2, err
    assert seconds < 15, seconds
    assert f"{servers} (from KAFKA_BOOTSTRAP_SERVERS)" in err
    assert "pip install" not in err and len(err.strip().splitlines()) == 1, err


def test_module_paths_exist() -> None:
    assert Path(CONTRACT).is_file() and Path(BATCH).is_file()


def test_a_refused_address_fails_in_about_a_second(
    closed_port: int, capsys: pytest.CaptureFixture[str]
) -> None:
    # nothing listens: librdkafka reports "all brokers down" and the probe stops after
    # REFUSED_AFTER_S rather than its whole timeout
    from worker.kafka.reach import REACH_TIMEOUT_S, REFUSED_AFTER_S

    started = time.monotonic()
    assert main(["contract", "list", "--bootstrap-servers", f"127.0.0.1:{closed_port}"]) == 2
    seconds = time.monotonic() - started
    assert REFUSED_AFTER_S <= seconds < REACH_TIMEOUT_S, seconds
    assert "every server refused the connection" in capsys.readouterr().err


def test_an_address_that_accepts_but_never_answers_takes_the_whole_timeout(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # a listening socket whose connections are never served (the kernel completes the
    # handshake from the backlog): no refusal, so the probe waits REACH_TIMEOUT_S
    import socket

    from worker.kafka.reach import REACH_TIMEOUT_S

    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        port = silent.getsockname()[1]
        started = time.monotonic()
        assert main(["contract", "list", "--bootstrap-servers", f"127.0.0.1:{port}"]) == 2
        seconds = time.monotonic() - started
    assert REACH_TIMEOUT_S <= seconds < REACH_TIMEOUT_S + 6, seconds
    err = capsys.readouterr().err
    assert f"no answer within {REACH_TIMEOUT_S:g} s" in err and "Traceback" not in err
