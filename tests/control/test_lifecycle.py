"""``contract promote`` guards that need no broker (the config and evaluation reads faked)."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Any

import pytest

import worker.kafka.evaluations
from worker.cli.lifecycle_output import promote_text
from worker.cli.main import main
from worker.cli.scenario import data_file
from worker.control import lifecycle
from worker.control.results import RecordWritten
from worker.core.errors import PolicyError
from worker.core.lifecycle.policy import Published
from worker.io.contract_files import load_contract
from worker.kafka.settings import Settings

V1 = load_contract(data_file("contracts/admin_boundaries.v1.yaml"))
V1_1 = load_contract(data_file("contracts/admin_boundaries.v1.1.yaml"))  # cadence PT6H
T0 = datetime(2026, 1, 5, 0, 0, tzinfo=timezone.utc)


def test_promote_refuses_now_in_the_future(
    capsys: pytest.CaptureFixture[str], no_broker_probe: None
) -> None:
    # found by a fresh-user session: --now a day ahead made any evidence a full cycle
    future = (datetime.now(timezone.utc) + timedelta(hours=1)).isoformat()
    argv = ["contract", "promote", "admin_boundaries", "v1.1", "--yes", "--now", future]
    assert main([*argv, "--bootstrap-servers", "127.0.0.1:9"]) == 2
    err = capsys.readouterr().err
    assert "ahead of the wall clock" in err
    assert "--now is for tests and replays of the past" in err


class FakeRegistry:
    def head(self, layer: str) -> str | None:
        return None

    def published(self, layer: str | None = None) -> list[Published]:
        return [
            Published(V1, "enforcing", "active", None, (), T0, "t"),
            Published(V1_1, "observing", "active", "tightening", (), T0, "t"),
        ]


def evaluation(batch: str, hours: float, passed: bool) -> dict[str, Any]:
    at = T0 + timedelta(hours=hours)
    return {
        "batch_id": batch,
        "layer": "admin_boundaries",
        "version": "v1.1",
        "mode": "observing",
        "passed": passed,
        "evaluated_at": at,
        "data_time": at,
        "clauses": [],
    }


@pytest.fixture
def faked(monkeypatch: pytest.MonkeyPatch) -> list[Published]:
    written: list[Published] = []
    monkeypatch.setattr(lifecycle, "read_published", lambda settings: FakeRegistry())

    def write(
        settings: Settings, records: tuple[Published, ...], **kw: Any
    ) -> tuple[RecordWritten, ...]:
        start = len(written)
        written.extend(records)
        return tuple(
            RecordWritten(f"{p.contract.key}/x", p.contract.key, p.mode, p.state, "t", 0, start + i)
            for i, p in enumerate(records)
        )

    monkeypatch.setattr(lifecycle, "produce_records", write)
    return written


def test_promote_warns_before_confirmation_when_attainment_is_below_objective(
    monkeypatch: pytest.MonkeyPatch, faked: list[Published]
) -> None:
    records = [evaluation("b1", 0, True), evaluation("b2", 3, False), evaluation("b3", 7, True)]
    monkeypatch.setattr(worker.kafka.evaluations, "read_evaluations", lambda s, layer: records)
    questions: list[str] = []

    def confirm(question: str) -> bool:
        questions.append(question)
        return False

    with pytest.raises(PolicyError, match="not confirmed"):
        lifecycle.promote(
            Settings(), "admin_boundaries", "v1.1", now=T0 + timedelta(hours=8), confirm=confirm
        )
    assert not faked
    lines = questions[0].splitlines()
    warning = next(i for i, ln in enumerate(lines) if ln.startswith("WARNING:"))
    assert "0.667 (2/3), below its objective 0.99" in lines[warning]
    assert lines[-1].startswith("promote admin_boundaries/v1.1 to enforcing?")
    assert warning < len(lines) - 1
    result = lifecycle.promote(
        Settings(), "admin_boundaries", "v1.1", now=T0 + timedelta(hours=8), yes=True
    )
    out = promote_text(result)
    assert out.index("WARNING:") < out.index("promoted to enforcing")
    assert result.warning is not None and "0.667 (2/3)" in result.warning
    assert (result.outcome, result.from_mode, result.to_mode) == (
        "promoted",
        "observing",
        "enforcing",
    )
    assert result.evidence is not None and (result.evidence.evaluated, result.evidence.passed) == (
        3,
        2,
    )
    assert result.supersedes == ("v1.0",)
    assert [(r.version, r.state, r.offset) for r in result.records] == [
        ("admin_boundaries/v1.1", "active", 0),
        ("admin_boundaries/v1.0", "superseded", 1),
    ]
    assert [p.contract.key for p in faked] == ["admin_boundaries/v1.1", "admin_boundaries/v1.0"]


def test_promote_counts_the_span_to_the_last_evaluation_not_to_now(
    monkeypatch: pytest.MonkeyPatch, faked: list[Published]
) -> None:
    records = [evaluation("b1", 0, True), evaluation("b2", 1, True)]
    monkeypatch.setattr(worker.kafka.evaluations, "read_evaluations", lambda s, layer: records)
    with pytest.raises(PolicyError, match=r"spans 1\.0 h.*5\.0 h missing"):
        lifecycle.promote(
            Settings(), "admin_boundaries", "v1.1", now=T0 + timedelta(days=2), yes=True
        )
    assert not faked


def test_promote_json_keeps_stdout_one_document_and_stderr_one_error(
    monkeypatch: pytest.MonkeyPatch,
    faked: list[Published],
    capsys: pytest.CaptureFixture[str],
    no_broker_probe: None,
) -> None:
    # issue 28 §2: the confirmation question must not reach stdout or stderr around the JSON
    import json

    records = [evaluation("b1", 0, True), evaluation("b2", 7, True)]
    monkeypatch.setattr(worker.kafka.evaluations, "read_evaluations", lambda s, layer: records)
    argv = ["contract", "promote", "admin_boundaries", "v1.1", "--now", "2026-11-29T08:00:00Z"]
    argv += ["--format", "json"]
    assert main(argv) == 2  # no terminal to answer on: not confirmed
    captured = capsys.readouterr()
    assert captured.out == "" and not faked
    assert json.loads(captured.err) == {
        "error": "admin_boundaries/v1.1: promotion not confirmed (answer y, or pass --yes)",
        "field": "--yes",
        "fix": "answer y, or pass --yes",
    }
    assert main([*argv, "--yes"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert (doc["layer"], doc["version"]) == ("admin_boundaries", "v1.1")
    assert any("promoted to enforcing" in line for line in doc["lines"])
    assert doc["lines"][-2:] == [
        "wrote admin_boundaries/v1.1 enforcing/active at t[0]@0",
        "wrote admin_boundaries/v1.0 enforcing/superseded at t[0]@1",
    ]
    assert (doc["outcome"], doc["from_mode"], doc["to_mode"]) == (
        "promoted",
        "observing",
        "enforcing",
    )
    assert doc["evidence"]["evaluated"] == 2 and doc["evidence"]["span_s"] == 7 * 3600
    assert doc["supersedes"] == ["v1.0"]
    assert [(r["version"], r["state"], r["topic"], r["offset"]) for r in doc["records"]] == [
        ("admin_boundaries/v1.1", "active", "t", 0),
        ("admin_boundaries/v1.0", "superseded", "t", 1),
    ]
