"""Cases found by a fresh-user session: bad input gives a clear error, never a traceback,
and a bad payload never crashes the worker (it is quarantined as payload_error)."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import shapely

from worker.cli.main import main
from worker.core.contracts.parse import parse_contract
from worker.core.errors import PayloadError
from worker.core.model import ActiveVersion, Batch
from worker.gate.route import Source, route
from worker.io import codec
from worker.io.payloads import derive_schema, load_payload, read_features
from worker.io.payloads.policy import PayloadPolicy
from worker.kafka.settings import Topics

CONTRACT = (
    "layer: t\nversion: v1\ncadence: P1D\nobjective: 0.9\nowner: me\nchangelog: t\n"
    "clauses:\n  - {name: v, kind: validity, max_invalid_fraction: 0.0}\n"
)


def bigint_geojson(path: Path) -> Path:
    path.write_text(json.dumps({"type": "FeatureCollection", "features": [
        {"type": "Feature", "geometry": {"type": "Point", "coordinates": [1, 2]},
         "properties": {"a": 2**64}}]}))  # fmt: skip
    return path


def not_json(path: Path) -> Path:
    path.write_text('{"type": "FeatureCollection", "features": [')
    return path


def geo_not_object(path: Path) -> Path:
    t = pa.table({"geometry": [shapely.to_wkb(shapely.Point(1, 2))]})
    pq.write_table(t.replace_schema_metadata({"geo": "[1,2]"}), path)
    return path


def test_integer_beyond_int64_is_read_as_text_not_a_payload_error(tmp_path: Path) -> None:
    # issue 9: one column arrow cannot type never makes the whole file bad input; it is
    # read as text with a type no contract can name, so a schema clause naming it breaks
    data = read_features(bigint_geojson(tmp_path / "b.geojson"))
    assert data.attributes.column("a").to_pylist() == [str(2**64)]
    assert [(f.name, f.type) for f in derive_schema(data.attributes)] == [("a", "other")]


def test_truncated_json_is_a_payload_error(tmp_path: Path) -> None:
    with pytest.raises(
        PayloadError, match=r"n\.geojson: truncated: the file ends inside its JSON document"
    ):
        read_features(not_json(tmp_path / "n.geojson"))


def test_geo_metadata_that_is_not_an_object_is_a_payload_error(tmp_path: Path) -> None:
    with pytest.raises(PayloadError, match=r"g\.parquet"):
        read_features(geo_not_object(tmp_path / "g.parquet"))


def test_check_exits_2_on_unreadable_content(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    contract = tmp_path / "c.yaml"
    contract.write_text(CONTRACT)
    assert main(["check", str(not_json(tmp_path / "b.geojson")), "--contract", str(contract)]) == 2
    assert "b.geojson" in capsys.readouterr().err


@pytest.mark.parametrize("make", [not_json, geo_not_object])
def test_worker_quarantines_a_by_reference_batch_it_cannot_read(tmp_path: Path, make) -> None:  # type: ignore[no-untyped-def]
    path = make(tmp_path / ("p.geojson" if make is not_json else "p.parquet"))
    now = datetime(2026, 11, 29, tzinfo=timezone.utc)
    event = Batch(
        "b1", "t", "p", now, now, "OGC:CRS84", "east_north", (), 1, (), pa.table({}), None
    )
    value = codec.encode_batch(event, inline=False, payload_uri=path.as_uri())
    version = ActiveVersion(parse_contract(CONTRACT), "enforcing")
    policy = PayloadPolicy.from_strings([tmp_path.as_uri()])
    out = route(
        Source("gis.batches", 0, 7, b"t", value),
        lambda _: (version,),
        Topics(),
        now=now,
        worker_id="w",
        payload_loader=lambda uri, batch: load_payload(uri, batch, policy=policy),
    )
    rec = codec.decode_quarantine(out.records[-1].value)
    # truncated JSON is corrupt bytes; JSON `geo` metadata of the wrong shape is content
    # that is readable but not a usable batch
    expected = "payload_corrupt" if make is not_json else "payload_error"
    assert rec["reason_code"] == expected and rec["batch_id"] == "b1"
    assert path.name in rec["reasons"][0]["message"]


def test_unknown_kafka_property_is_a_clear_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    contract = tmp_path / "c.yaml"
    contract.write_text(CONTRACT)
    argv = ["contract", "publish", str(contract), "--bootstrap-servers", "127.0.0.1:1",
            "--kafka-property", "foo.bar=1"]  # fmt: skip
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "foo.bar" in err and "Traceback" not in err


def test_topics_create_refuses_zero_partitions(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["topics", "create", "--partitions", "0"])
    assert exc.value.code == 2
    assert "'0' is not a whole number >= 1" in capsys.readouterr().err


def test_a_parquet_suffix_without_parquet_content_is_named(tmp_path: Path) -> None:
    fake = tmp_path / "fake.parquet"
    fake.write_text("{}")
    with pytest.raises(PayloadError, match="not a Parquet file"):
        read_features(fake)


def test_by_reference_schema_is_the_files_not_the_declared_one(tmp_path: Path) -> None:
    # found by a fresh-user session: a retyped column was admitted by reference
    from worker.io.payloads import read_batch_file

    good = tmp_path / "good.geojson"
    bad = tmp_path / "bad.geojson"
    feature = {"type": "Feature", "geometry": {"type": "Point", "coordinates": [1, 2]}}
    for path, props in ((good, {"pop_est": 5}), (bad, {"pop_est": "5", "foo": 1})):
        doc = {"type": "FeatureCollection", "features": [{**feature, "properties": props}]}
        path.write_text(json.dumps(doc))
    event = read_batch_file(good, layer="t")
    loaded = load_payload(
        bad.as_uri(), event, policy=PayloadPolicy.from_strings([tmp_path.as_uri()])
    )
    assert {(f.name, f.type) for f in loaded.schema_fields} == {
        ("pop_est", "string"),
        ("foo", "integer"),
    }


@pytest.mark.parametrize(
    ("argv", "error"),
    [
        (["--max-batch-events", "0"], "argument --max-batch-events: 0 is outside 1..1000000"),
        (["--max-batch-events", "-5"], "argument --max-batch-events: -5 is outside 1..1000000"),
        (["--max-batch-wait-ms", "-1"], "argument --max-batch-wait-ms: -1 is outside 0..60000"),
        (["--batch-deadline-s", "-1"], "argument --batch-deadline-s: '-1' is not a number of "),
        (["--stop-grace-s", "inf"], "argument --stop-grace-s: 'inf' is not a number of seconds"),
        (["--config-timeout-s", "0"], "argument --config-timeout-s: '0' is not a number of sec"),
        (["--http-port", "70000"], "argument --http-port: 70000 is outside 0..65535"),
        (["--session-timeout-ms", "x"], "argument --session-timeout-ms: 'x' is not a whole number"),
    ],
)
def test_worker_settings_out_of_range_are_refused_before_anything_starts(
    argv: list[str], error: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # found by a new-user session: --max-batch-events 0 ran a worker that never decided
    # anything while /healthz said 200, -5 crashed it with a traceback after joining
    with pytest.raises(SystemExit) as exit_:
        main(["run", *argv])
    assert exit_.value.code == 2
    assert error in capsys.readouterr().err
