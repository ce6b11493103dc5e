"""Every writer of the config topic signs when a signing key is configured (issue 30)."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest

from tests.io.test_signing import ed25519_pair
from worker.cli.main import main
from worker.cli.scenario import data_file
from worker.control.lifecycle import write_records
from worker.core.lifecycle.policy import Published
from worker.io.contract_files import load_contract
from worker.io.signing import RecordSigning, load_verify_key
from worker.kafka import config_writer
from worker.kafka.settings import Settings

NOW = datetime(2026, 11, 29, 12, tzinfo=timezone.utc)
V1 = load_contract(data_file("contracts/admin_boundaries.v1.yaml"))


def _capture(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    sent: list[dict[str, Any]] = []

    def produce_one(settings: Settings, topic: str, key: str, value: bytes, **kw: Any) -> Any:
        sent.append({"topic": topic, "key": key, "value": value, **kw})
        return 0, len(sent) - 1

    monkeypatch.setattr(config_writer, "produce_one", produce_one)
    return sent


def test_write_records_signs_each_record_it_writes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    private, public = ed25519_pair(tmp_path, "a")
    settings = Settings.from_env({}, signing_key=private)
    sent = _capture(monkeypatch)
    records = (
        Published(V1, "enforcing", "active", None, (), NOW, "t"),
        Published(V1, "enforcing", "retired", None, (), NOW, "t"),
    )
    lines = write_records(settings, records)
    assert lines[1].endswith("at gis.contracts[0]@1")
    verifier = load_verify_key(public)
    assert [s["topic"] for s in sent] == ["gis.contracts", "gis.contracts"]
    for s in sent:
        assert verifier.check(s["topic"], s["key"], s["value"], s["headers"]) is None
    assert [s["key"].rsplit("/", 1)[1] for s in sent] == ["enforcing-active", "enforcing-retired"]


def test_without_a_signing_key_records_are_written_unsigned(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    sent = _capture(monkeypatch)
    write_records(Settings(), (Published(V1, "enforcing", "active", None, (), NOW, "t"),))
    assert sent[0]["headers"] is None


def test_key_files_come_from_flags_or_the_environment(tmp_path: Path) -> None:
    private, public = ed25519_pair(tmp_path, "a")
    env = {"CONTRACT_GATE_SIGNING_KEY_FILE": private, "CONTRACT_GATE_VERIFY_KEY_FILE": public}
    signing = Settings.from_env(env).signing
    assert (signing.signer.source, signing.verifier.source) == (private, public)  # type: ignore[union-attr]
    assert Settings.from_env({}).signing == RecordSigning()


def test_a_bad_key_file_is_one_line_naming_the_flag(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    contract = str(data_file("contracts/admin_boundaries.v1.yaml"))
    argv = ["contract", "publish", contract, "--bootstrap-servers", "127.0.0.1:1",
            "--signing-key", str(tmp_path / "no.pem")]  # fmt: skip
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "--signing-key / CONTRACT_GATE_SIGNING_KEY_FILE: cannot read key file" in err
    assert "Traceback" not in err
