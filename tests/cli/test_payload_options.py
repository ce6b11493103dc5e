"""CLI options of by-reference payloads: --payload-root, --max-payload-bytes, check URIs."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from worker.cli.main import main

DATA = Path(__file__).resolve().parents[2] / "worker" / "data"
CHECK = [
    "--contract",
    str(DATA / "contracts" / "nyc_boroughs.v1.yaml"),
    "--data-time",
    "2026-11-29T06:00:00Z",
    "--now",
    "2026-11-29T07:00:00Z",
]


def test_run_refuses_a_relative_payload_root_before_connecting(
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = ["run", "--payload-root", "data/in", "--bootstrap-servers", "127.0.0.1:1"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "payload root 'data/in' is not absolute" in err and "--payload-root" in err


def test_check_accepts_a_file_uri_and_applies_the_size_limit(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "boroughs.bin"  # no suffix: the magic bytes say Parquet
    shutil.copy(DATA / "nyc_boroughs.parquet", path)
    assert main(["check", path.as_uri(), *CHECK]) == 0
    assert "5 features" in capsys.readouterr().out
    size = path.stat().st_size
    assert main(["check", str(path), *CHECK, "--max-payload-bytes", "parquet=1KiB"]) == 2
    err = capsys.readouterr().err
    assert f"{size} bytes" in err and "limit of 1024 bytes" in err and "Parquet" in err


def test_check_refuses_a_fifo_without_blocking(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import os

    fifo = tmp_path / "batch.geojson"
    os.mkfifo(fifo)
    assert main(["check", str(fifo), *CHECK]) == 2
    assert "is a FIFO; only regular files are read" in capsys.readouterr().err
