"""Ctrl-C in ``demo`` and ``run`` (real processes, the embedded broker): one line
``interrupted``, status 130 within 2 s, no traceback, and no broker left behind (issue
28 §3). The demo's broker runs in its own session, so the terminal's SIGINT reaches the
demo, which stops its worker and then its broker."""

from __future__ import annotations

import re
import time

import pytest

from tests.cli.interrupts import Command, assert_interrupted, tansu_processes_on
from tests.integration.cli import kafka_argv
from worker.kafka.settings import Settings

pytestmark = pytest.mark.integration


@pytest.mark.parametrize("moment", ["contracts:", "batches:"])
def test_ctrl_c_in_the_demo(moment: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KAFKA_BOOTSTRAP_SERVERS", raising=False)
    cmd = Command("demo", "--timeout-s", "120", env={"KAFKA_BOOTSTRAP_SERVERS": ""})
    try:
        cmd.wait_for(moment, timeout_s=90)
    except AssertionError:
        pytest.skip("the demo did not reach that step (no embedded broker here?)")
    found = re.search(r"broker: embedded at 127\.0\.0\.1:(\d+)", "".join(cmd.out))
    assert found, cmd.out
    port = int(found.group(1))
    result = cmd.interrupt()
    assert_interrupted(result)
    deadline = time.monotonic() + 2
    while tansu_processes_on(port) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert tansu_processes_on(port) == []


def test_ctrl_c_in_run(settings: Settings) -> None:
    cmd = Command("run", "--http-port", "0", *kafka_argv(settings))
    cmd.wait_for("worker running", timeout_s=60)
    time.sleep(1.0)  # in the poll loop, a member of the group
    assert_interrupted(cmd.interrupt())


def test_ctrl_c_in_quarantine_tail_follow(settings: Settings) -> None:
    cmd = Command("quarantine", "tail", "--follow", *kafka_argv(settings))
    time.sleep(4.0)  # reading, then waiting for new records
    assert cmd.proc.poll() is None, cmd.err
    assert_interrupted(cmd.interrupt())


def test_the_demo_timeout_bounds_the_whole_demo(monkeypatch: pytest.MonkeyPatch) -> None:
    cmd = Command("demo", "--timeout-s", "4", env={"KAFKA_BOOTSTRAP_SERVERS": ""})
    started = time.monotonic()
    try:
        status = cmd.proc.wait(timeout=30)
    finally:
        cmd.kill()
    seconds = time.monotonic() - started
    err, out = "".join(cmd.err), "".join(cmd.out)
    assert seconds < 4 + 8, seconds  # the deadline, then the worker and broker stopped
    assert "Traceback" not in err
    if status == 2:  # the deadline struck during a step
        assert "did not finish within --timeout-s 4 s" in err, err
    else:  # the wait for decisions ran out first
        assert status == 1, (status, err)
        assert "no decision within the timeout for:" in out, out
    found = re.search(r"broker: embedded at 127\.0\.0\.1:(\d+)", "".join(cmd.out))
    if found:
        assert tansu_processes_on(int(found.group(1))) == []
