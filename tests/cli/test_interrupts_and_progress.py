"""Ctrl-C in ``check`` is one line ``interrupted`` and status 130 within 2 s, with no
traceback, also in the middle of reading a large file; ``check`` of a large file shows
its progress on a terminal's stderr and nothing without a terminal or with ``--quiet``
(issue 28 §3)."""

from __future__ import annotations

import json
import os
import pty
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import shapely

from tests.cli.interrupts import ROOT, Interrupted, assert_interrupted

CONTRACT = """layer: points
version: v1
cadence: P1D
objective: 0.99
owner: qa
changelog: t
clauses:
  - {name: extent, kind: extent, region: [0, 40, 10, 50]}
  - {name: types, kind: geometry_type, allowed: [Point]}
  - {name: valid, kind: validity, max_invalid_fraction: 0.0}
"""
TIMES = ["--data-time", "2026-11-29T06:00:00Z", "--now", "2026-11-29T07:00:00Z"]


def _points(path: Path, n: int) -> Path:
    """``n`` seeded points in [0, 10] x [40, 50] as GeoParquet, row groups of 20,000."""
    rng = np.random.default_rng(28)
    pts = shapely.points(rng.uniform(0, 10, n), rng.uniform(40, 50, n))
    geo = {
        "version": "1.0.0",
        "primary_column": "geometry",
        "columns": {"geometry": {"encoding": "WKB", "geometry_types": ["Point"]}},
    }
    table = pa.table({"id": np.arange(n), "geometry": pa.array(shapely.to_wkb(pts), pa.binary())})
    pq.write_table(table.replace_schema_metadata({"geo": json.dumps(geo)}), path, 20_000)
    return path


@pytest.fixture(scope="module")
def big(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    d = tmp_path_factory.mktemp("big")
    (d / "points.yaml").write_text(CONTRACT)
    return _points(d / "points.parquet", 1_500_000), d / "points.yaml"


def _check_argv(big: tuple[Path, Path], *extra: str) -> list[str]:
    return ["check", str(big[0]), "--contract", str(big[1]), *TIMES, *extra]


def test_ctrl_c_in_check_mid_read_is_one_line_and_130(big: tuple[Path, Path]) -> None:
    # stderr on a terminal: the progress line says the chunks are being read, and Ctrl-C
    # comes then (a fixed sleep raced a fast read: 1,500,000 points on two threads)
    leader, follower = pty.openpty()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "worker", *_check_argv(big, "--eval-threads", "1")],
        stdout=subprocess.PIPE,
        stderr=follower,
        env=env,
        start_new_session=True,  # its own group: SIGINT to the group is a terminal's ^C
    )
    os.close(follower)
    err = b""
    try:
        while b"check: " not in err:  # the first progress line: reading has begun
            ready, _, _ = select.select([leader], [], [], 60)
            assert ready, f"no progress line within 60 s: {err[-500:]!r}"
            err += os.read(leader, 65536)
        started = time.monotonic()
        os.killpg(proc.pid, signal.SIGINT)
        status = proc.wait(timeout=10)
        seconds = time.monotonic() - started
        while True:
            try:
                data = os.read(leader, 65536)
            except OSError:  # EIO: the process closed the terminal
                break
            if not data:
                break
            err += data
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)
        os.close(leader)
    assert proc.stdout is not None
    with proc.stdout:
        stdout = proc.stdout.read().decode()
    text = err.decode("utf-8", "replace").replace("\r\n", "\n")
    # what the terminal shows: the last redraw of each line, erased by CR and EL
    shown = [s.split("\r")[-1].replace("\x1b[K", "") for s in text.split("\n")]
    lines = [s.strip() for s in shown]
    result = Interrupted(status, seconds, stdout, "\n".join(lines))
    assert_interrupted(result)
    assert result.stdout == ""  # no half decision on stdout


def _under_pty(argv: list[str]) -> tuple[int, str]:
    """Run ``python -m worker ARGV`` with stderr on a pseudo-terminal: (status, stderr)."""
    leader, follower = pty.openpty()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "worker", *argv],
        stdout=subprocess.DEVNULL,
        stderr=follower,
        env=env,
    )
    os.close(follower)
    chunks = []
    while True:
        try:
            data = os.read(leader, 65536)
        except OSError:  # EIO: the process closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    os.close(leader)
    return proc.wait(timeout=120), b"".join(chunks).decode("utf-8", "replace")


def test_check_shows_progress_on_a_terminal(big: tuple[Path, Path]) -> None:
    status, err = _under_pty(_check_argv(big))
    assert status == 0, err[-500:]
    lines = [s for s in err.split("\r") if s.startswith("check: ")]
    assert lines, err[-500:]
    last = lines[-1]
    assert "of 1,500,000" in last and "chunks" in last and "features/s" in last, last
    read = [int(s.split()[1].replace(",", "")) for s in lines]
    assert read == sorted(read) and read[-1] <= 1_500_000
    assert err.rstrip().endswith("\r") or err.strip() == "" or "\r" in err  # line cleared


def test_check_quiet_on_a_terminal_prints_no_progress(big: tuple[Path, Path]) -> None:
    status, err = _under_pty(_check_argv(big, "--quiet"))
    assert status == 0
    assert "features read" not in err and err.strip() == ""


def test_check_without_a_terminal_prints_no_progress(big: tuple[Path, Path]) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(
        [sys.executable, "-m", "worker", *_check_argv(big)],
        capture_output=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0
    assert proc.stderr.decode() == ""
    assert "1500000 features" in proc.stdout.decode()
