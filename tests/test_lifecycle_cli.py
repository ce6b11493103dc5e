"""`contract-gate contract classify` (offline)."""

from __future__ import annotations

import json

import pytest

from worker.cli import main
from worker.scenario import data_file

V1 = str(data_file("contracts/admin_boundaries.v1.yaml"))
V1_1 = str(data_file("contracts/admin_boundaries.v1.1.yaml"))


def test_classify_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["contract", "classify", V1, V1_1, "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["class"] == "tightening"
    assert {
        "clause": "continent",
        "kind": "domain",
        "class": "tightening",
        "reason": "domain codes removed: 'Seven seas (open ocean)'",
    } in out["differences"]


def test_classify_text_and_identical(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["contract", "classify", V1, V1]) == 0
    out = capsys.readouterr().out
    assert "change class none" in out and "identical content" in out
    assert main(["contract", "classify", V1_1, V1]) == 0
    assert "change class minor" in capsys.readouterr().out


def test_classify_bad_file_is_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["contract", "classify", V1, "/nonexistent.yaml"]) == 2
    assert "cannot read" in capsys.readouterr().err
