"""s3:// payloads through pyarrow's S3 filesystem, against a moto server on loopback.

The server is started by the test module (``python -m moto.server``) and ended by its pid;
the gate reads endpoint, region and credentials from the standard AWS environment.
"""

from __future__ import annotations

import logging
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from tests.s3server import ACCESS_KEY, SECRET_KEY, make_bucket, moto_server, s3_env
from worker.cli.main import main
from worker.cli.scenario import data_file
from worker.core.errors import (
    PayloadCorrupt,
    PayloadError,
    PayloadNotAllowed,
    PayloadTooLarge,
    PayloadUnavailable,
)
from worker.core.model import ActiveVersion
from worker.gate.route import Source, payload_loader, route
from worker.io import codec
from worker.io.contract_files import load_contract
from worker.io.payloads import load_payload, read_batch_file, read_features
from worker.io.payloads.policy import UNRESTRICTED, PayloadPolicy
from worker.io.payloads.s3 import s3_filesystem
from worker.io.payloads.upload import upload_payload
from worker.kafka.settings import Settings, Topics

__all__ = ["moto_server", "s3_env"]  # fixtures used by name

NOW = datetime(2026, 11, 29, 12, 0, tzinfo=timezone.utc)
WORLD = data_file("admin_boundaries.parquet")
NYC = data_file("nyc_boroughs.parquet")
UNDER_IN = PayloadPolicy.from_strings(["s3://landing/in/"])


@pytest.fixture
def bucket(s3_env) -> str:  # type: ignore[no-untyped-def]
    make_bucket("landing")
    return "landing"


def _put(name: str, data: bytes) -> str:
    """Write ``data`` as ``s3://landing/in/<name>`` as is (``upload_payload`` would refuse
    a corrupt file); the URI."""
    with s3_filesystem().open_output_stream(f"landing/in/{name}") as out:
        out.write(data)
    return f"s3://landing/in/{name}"


def test_round_trip_upload_then_load_by_reference(bucket: str, tmp_path: Path) -> None:
    uri = upload_payload(NYC, "s3://landing/in/", "b-1/nyc.parquet", UNRESTRICTED)
    assert uri == "s3://landing/in/b-1/nyc.parquet"
    event = read_batch_file(NYC, layer="nyc_boroughs", batch_id="b-1")
    loaded = load_payload(uri, event, policy=UNDER_IN)
    local = read_features(NYC)
    assert loaded.geometries_wkb == local.geometries_wkb and len(loaded.geometries_wkb) == 5
    assert loaded.attributes.equals(local.attributes)
    assert loaded.payload_uri == uri
    # GeoJSON too, its format from the bytes (the key has no suffix)
    doc = tmp_path / "p.geojson"
    doc.write_text(
        '{"type": "FeatureCollection", "features": [{"type": "Feature", "properties": '
        '{"n": 1}, "geometry": {"type": "Point", "coordinates": [1, 2]}}]}'
    )
    geo_uri = upload_payload(doc, "s3://landing/in", "b-2/payload", UNRESTRICTED)
    assert read_features(geo_uri, policy=UNDER_IN).attributes.to_pylist() == [{"n": 1}]
    # an announced payload is never replaced
    with pytest.raises(ValueError, match=r"s3://landing/in/b-1/nyc.parquet exists already"):
        upload_payload(doc, "s3://landing/in/", "b-1/nyc.parquet", UNRESTRICTED)
    assert load_payload(uri, event, policy=UNDER_IN).geometries_wkb == local.geometries_wkb


def test_the_worker_evaluates_an_s3_payload_under_its_root(bucket: str, caplog) -> None:  # type: ignore[no-untyped-def]
    uri = upload_payload(WORLD, "s3://landing/in/", "w/world.parquet", UNRESTRICTED)
    event = read_batch_file(
        WORLD, layer="admin_boundaries", crs="EPSG:4326", data_time=NOW - timedelta(hours=1)
    )
    v1 = ActiveVersion(load_contract(data_file("contracts/admin_boundaries.v1.yaml")), "enforcing")
    loader = payload_loader(Settings.from_env({}, payload_roots=["s3://landing/in/"]))
    with caplog.at_level(logging.DEBUG):
        out = route(
            Source("gis.batches", 0, 1, b"admin_boundaries", codec.encode_batch(
                event, inline=False, payload_uri=uri)),
            lambda layer: (v1,),
            Topics(),
            now=NOW,
            worker_id="w",
            payload_loader=loader,
        )  # fmt: skip
    assert out.decision.decision == "admitted"
    assert SECRET_KEY not in caplog.text and ACCESS_KEY not in caplog.text


@pytest.mark.parametrize(
    "uri",
    [
        "s3://landing/other/x.parquet",
        "s3://landing/inbox/x.parquet",
        "s3://landing/in/../other/x.parquet",
        "s3://landing/in//x.parquet",
        "s3://elsewhere/in/x.parquet",
        "s3://landing/in/",
    ],
)
def test_keys_outside_the_prefix_are_not_allowed(bucket: str, uri: str) -> None:
    with pytest.raises(PayloadNotAllowed) as info:
        read_features(uri, policy=UNDER_IN)
    assert info.value.reason == "payload_not_allowed"


def test_a_missing_object_is_unavailable_at_once(bucket: str) -> None:
    started = time.monotonic()
    with pytest.raises(PayloadUnavailable, match=r"in/nope\.parquet: no such object$"):
        read_features("s3://landing/in/nope.parquet", policy=UNDER_IN)
    assert time.monotonic() - started < 2.0  # not retried


def test_size_and_corruption_on_s3(bucket: str, tmp_path: Path) -> None:
    whole = NYC.read_bytes()
    uri = _put("nyc.parquet", whole)
    tight = PayloadPolicy(UNDER_IN.roots, {"parquet": 1000})
    with pytest.raises(PayloadTooLarge, match=f"{len(whole)} bytes .*limit of 1000 bytes"):
        read_features(uri, policy=tight)
    cut = _put("cut.parquet", whole[: len(whole) // 2])
    with pytest.raises(PayloadCorrupt, match="does not end with them"):
        read_features(cut, policy=UNDER_IN)
    bad = tmp_path / "bad.parquet"
    bad.write_bytes(whole[: len(whole) // 2])
    with pytest.raises(PayloadCorrupt, match="not a readable Parquet file"):
        upload_payload(bad, "s3://landing/in/", "x", UNRESTRICTED)  # checked before upload
    torn = _put("torn.parquet", whole[: len(whole) // 2] + b"PAR1")
    with pytest.raises(PayloadCorrupt, match="not a readable Parquet file"):
        read_features(torn, policy=UNDER_IN)


def test_an_unreachable_endpoint_is_retried_then_unavailable(
    bucket: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    import socket

    with socket.socket() as s:  # a loopback port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    monkeypatch.setenv("AWS_ENDPOINT_URL", f"http://127.0.0.1:{port}")
    policy = PayloadPolicy(UNDER_IN.roots, attempts=2, backoff_s=0.05)
    started = time.monotonic()
    with pytest.raises(PayloadUnavailable) as info:
        read_features("s3://landing/in/x.parquet", policy=policy)
    message = str(info.value)
    assert "unreachable" in message and message.endswith("(after 2 attempts)")
    assert SECRET_KEY not in message and ACCESS_KEY not in message
    assert time.monotonic() - started < 30.0


def test_check_reads_an_s3_uri(bucket: str, capsys: pytest.CaptureFixture[str]) -> None:
    uri = upload_payload(NYC, "s3://landing/in/", "c/nyc.parquet", UNRESTRICTED)
    contract = str(data_file("contracts/nyc_boroughs.v1.yaml"))
    # without --data-time the object's modification time (just now) is the data time
    assert main(["check", uri, "--contract", contract]) == 0
    out = capsys.readouterr().out
    assert f"batch {uri}: 5 features" in out
    assert main(["check", "s3://landing/in/c/none.parquet", "--contract", contract]) == 2
    err = capsys.readouterr().err
    assert "none.parquet: no such object" in err and SECRET_KEY not in err


def test_upload_errors_name_the_destination_not_the_credentials(s3_env) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(PayloadError) as info:
        upload_payload(NYC, "s3://no-such-bucket/in/", "x/nyc.parquet", UNRESTRICTED)
    assert "s3://no-such-bucket/in/x/nyc.parquet: upload failed" in str(info.value)
    assert SECRET_KEY not in str(info.value)
