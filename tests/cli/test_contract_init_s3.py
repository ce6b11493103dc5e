"""`contract init` reads an s3:// sample as `check` does (moto server on loopback)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.s3server import make_bucket, moto_server, s3_env
from worker.cli.main import main
from worker.cli.scenario import data_file
from worker.io.contract_files import load_contract
from worker.io.payloads.policy import UNRESTRICTED
from worker.io.payloads.upload import upload_payload

__all__ = ["moto_server", "s3_env"]  # fixtures used by name


def test_an_s3_sample_drafts_the_same_contract_as_the_local_file(
    s3_env,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],  # type: ignore[no-untyped-def]
) -> None:
    make_bucket("landing")
    local = data_file("nyc_boroughs.parquet")
    uri = upload_payload(local, "s3://landing/in/", "nyc.parquet", UNRESTRICTED)
    assert main(["contract", "init", uri, "--layer", "nyc"]) == 0
    from_s3 = capsys.readouterr().out
    assert main(["contract", "init", str(local), "--layer", "nyc"]) == 0
    from_file = capsys.readouterr().out
    assert from_s3.replace("(nyc.parquet)", "") == from_file.replace("(nyc_boroughs.parquet)", "")
    draft = tmp_path / "d.yaml"
    draft.write_text(from_s3)
    assert load_contract(draft).clause("srid").params["expect"] == "EPSG:2263"  # type: ignore[union-attr]
