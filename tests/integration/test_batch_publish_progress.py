"""``batch publish`` shows its stages on a terminal's stderr (read, sent: features, seconds,
rate) and nothing without a terminal or with ``--quiet`` (issue 28 §3)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.cli.interrupts import ROOT
from tests.cli.test_interrupts_and_progress import _under_pty
from tests.integration.cli import kafka_argv
from worker.kafka.settings import Settings

pytestmark = pytest.mark.integration

BATCH = str(ROOT / "worker" / "data" / "admin_boundaries.parquet")


def _argv(settings: Settings, *extra: str) -> list[str]:
    return ["batch", "publish", BATCH, "--layer", "admin_boundaries", *kafka_argv(settings), *extra]


def test_batch_publish_shows_its_stages_on_a_terminal(settings: Settings) -> None:
    status, err = _under_pty(_argv(settings))
    assert status == 0, err
    lines = [s.strip() for s in err.splitlines()]
    assert f"batch publish: reading {BATCH} ..." in lines
    read = [s for s in lines if s.startswith("batch publish: read: ")]
    sent = [s for s in lines if s.startswith("batch publish: sent: ")]
    assert len(read) == 1 and len(sent) == 1, err
    assert read[0].split()[3] == "177" and "features/s" in read[0]  # 177 countries


def test_batch_publish_prints_no_stages_with_quiet_or_without_a_terminal(
    settings: Settings,
) -> None:
    status, err = _under_pty(_argv(settings, "--quiet"))
    assert status == 0 and "batch publish:" not in err
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(
        [sys.executable, "-m", "worker", *_argv(settings)], capture_output=True, env=env
    )
    assert proc.returncode == 0
    assert "batch publish:" not in proc.stderr.decode()
    assert proc.stdout.decode().startswith("published batch ")
