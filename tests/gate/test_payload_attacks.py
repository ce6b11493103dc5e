"""Issue 11 and issue 10 item 3: a producer's ``payload_uri`` must not make the worker read
arbitrary files, block, or exhaust memory.

Each attack is an event routed as the worker routes it (a loader built from
:class:`Settings` with one payload root); each asserts the quarantine reason and that no
content of the target file appears in any output record (value, key, headers) or in any
log line written meanwhile.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Iterator
from dataclasses import replace
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from tests.memory import peak_rss_kb, reset_peak_rss_kb
from worker.cli.scenario import data_file
from worker.core.model import ActiveVersion
from worker.gate.route import Outcome, Source, payload_loader, route
from worker.io import codec
from worker.io.contract_files import load_contract
from worker.io.payloads import read_batch_file
from worker.kafka.settings import Settings, Topics

NOW = datetime(2026, 11, 29, 12, 0, tzinfo=timezone.utc)
V1 = ActiveVersion(load_contract(data_file("contracts/admin_boundaries.v1.yaml")), "enforcing")
EVENT = read_batch_file(
    data_file("admin_boundaries.parquet"),
    layer="admin_boundaries",
    crs="EPSG:4326",
    data_time=NOW - timedelta(hours=1),
    batch_id="attack-1",
)

#: A value that only the attacked files hold: it must never reach an output or a log.
MARKER = "Zq7-SECRET-continent-4711"


def _feature_collection(continent: str) -> str:
    return (
        '{"type": "FeatureCollection", "features": [{"type": "Feature", '
        '"geometry": {"type": "Point", "coordinates": [1, 2]}, '
        f'"properties": {{"continent": "{continent}"}}}}]}}'
    )


@pytest.fixture
def layout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, Path]]:
    """``root`` (the payload root), ``outside`` (a readable GeoJSON beside it whose
    continent value is :data:`MARKER`), and the working directory set to ``tmp_path``."""
    root = tmp_path / "root"
    root.mkdir()
    outside = tmp_path / "outside.geojson"
    outside.write_text(_feature_collection(MARKER))
    monkeypatch.chdir(tmp_path)
    yield {"root": root, "outside": outside, "tmp": tmp_path}


def _route(uri: str, root: Path, caplog: pytest.LogCaptureFixture) -> Outcome:
    """The event for ``uri`` routed by a pipeline's loader with ``root`` as the only root."""
    settings = Settings.from_env({}, payload_roots=[root.as_uri()])
    loader = payload_loader(settings)
    value = codec.encode_batch(EVENT, inline=False, payload_uri=uri)
    with caplog.at_level(logging.DEBUG):
        return route(
            Source("gis.batches", 0, 9, b"admin_boundaries", value),
            lambda layer: (V1,),
            Topics(),
            now=NOW,
            worker_id="w",
            payload_loader=loader,
        )


def _assert_refused(
    out: Outcome, reason: str, caplog: pytest.LogCaptureFixture, *secrets: str
) -> dict:
    """One quarantine record with ``reason``, none of ``secrets`` in any output or log."""
    assert [r.topic for r in out.records] == [Topics().quarantine]
    record = out.records[0]
    rec = codec.decode_quarantine(record.value)
    assert rec["reason_code"] == reason and rec["batch_id"] == "attack-1"
    assert dict(record.headers)["dlq.reason"] == reason.encode()
    blobs = [record.value, *(v or b"" for _, v in record.headers)]
    text = caplog.text
    for secret in secrets:
        assert all(secret.encode() not in b for b in blobs), secret
        assert secret not in text and secret not in rec["reasons"][0]["message"]
    return rec


def test_a_relative_path_is_refused(layout: dict[str, Path], caplog) -> None:  # type: ignore[no-untyped-def]
    # the working directory holds outside.geojson: a relative URI would reach it
    out = _route("outside.geojson", layout["root"], caplog)
    rec = _assert_refused(out, "payload_not_allowed", caplog, MARKER)
    assert "a relative path" in rec["reasons"][0]["message"]


@pytest.mark.parametrize(
    "make_uri",
    [
        lambda root: f"file://{root}/../outside.geojson",
        lambda root: f"{root}/../outside.geojson",
        lambda root: f"file://{root}/%2e%2e/outside.geojson",
    ],
    ids=["file-uri", "plain-path", "percent-encoded"],
)
def test_a_dotdot_traversal_out_of_the_root_is_refused(layout, caplog, make_uri) -> None:  # type: ignore[no-untyped-def]
    out = _route(make_uri(layout["root"]), layout["root"], caplog)
    rec = _assert_refused(out, "payload_not_allowed", caplog, MARKER)
    assert (
        f"outside every payload root ({layout['root'].as_uri()}/)" in rec["reasons"][0]["message"]
    )


def test_etc_passwd_is_refused_without_naming_its_content(layout, caplog) -> None:  # type: ignore[no-untyped-def]
    out = _route("file:///etc/passwd", layout["root"], caplog)
    _assert_refused(out, "payload_not_allowed", caplog, "root:x:0", ":/bin/")


def test_proc_self_environ_is_refused(layout, caplog, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("CG_ATTACK_SECRET", MARKER)
    out = _route("file:///proc/self/environ", layout["root"], caplog)
    rec = _assert_refused(out, "payload_not_allowed", caplog, MARKER, "CG_ATTACK_SECRET")
    assert "kernel or device file system" in rec["reasons"][0]["message"]


@pytest.mark.parametrize("device", ["/dev/zero", "/dev/urandom"])
def test_devices_are_refused_at_once(layout, caplog, device: str) -> None:  # type: ignore[no-untyped-def]
    peak_before = reset_peak_rss_kb()
    started = time.monotonic()
    out = _route(f"file://{device}", layout["root"], caplog)
    _assert_refused(out, "payload_not_allowed", caplog)
    assert time.monotonic() - started < 2.0
    # KiB on Linux: the peak of the process did not grow by reading the device
    assert peak_rss_kb() - peak_before < 50_000


def test_a_device_symlinked_into_the_root_is_refused(layout, caplog) -> None:  # type: ignore[no-untyped-def]
    link = layout["root"] / "zero.geojson"
    link.symlink_to("/dev/zero")
    out = _route(link.as_uri(), layout["root"], caplog)
    _assert_refused(out, "payload_not_allowed", caplog)


def test_a_fifo_in_the_root_is_refused_without_blocking(layout, caplog) -> None:  # type: ignore[no-untyped-def]
    fifo = layout["root"] / "batch.geojson"
    os.mkfifo(fifo)
    result: list[Outcome] = []
    worker = threading.Thread(
        target=lambda: result.append(_route(fifo.as_uri(), layout["root"], caplog)),
        daemon=True,
    )
    worker.start()
    worker.join(timeout=5.0)
    if worker.is_alive():  # unblock the thread (a writer opens the FIFO) before failing
        with open(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK), "wb"):
            pass
        pytest.fail("routing an event naming a FIFO blocked")
    rec = _assert_refused(result[0], "payload_not_allowed", caplog)
    assert "is a FIFO; only regular files are read" in rec["reasons"][0]["message"]


def test_a_symlink_out_of_the_root_is_refused(layout, caplog) -> None:  # type: ignore[no-untyped-def]
    link = layout["root"] / "batch.geojson"
    link.symlink_to(layout["outside"])
    out = _route(link.as_uri(), layout["root"], caplog)
    _assert_refused(out, "payload_not_allowed", caplog, MARKER)
    # a directory symlink out of the root is no way around it either
    (layout["root"] / "sub").symlink_to(layout["tmp"], target_is_directory=True)
    out = _route((layout["root"] / "sub" / "outside.geojson").as_uri(), layout["root"], caplog)
    _assert_refused(out, "payload_not_allowed", caplog, MARKER)


def test_a_symlink_within_the_root_is_followed(layout, caplog) -> None:  # type: ignore[no-untyped-def]
    real = layout["root"] / "real.geojson"
    real.write_text(_feature_collection("Europe"))
    link = layout["root"] / "link.geojson"
    link.symlink_to(real)
    out = _route(link.as_uri(), layout["root"], caplog)
    rec = codec.decode_quarantine(out.records[-1].value)
    assert rec["reason_code"] == "contract_break" and out.decision.verdicts  # read, evaluated


def test_a_sparse_2_gib_file_is_too_large_before_any_read(layout, caplog) -> None:  # type: ignore[no-untyped-def]
    big = layout["root"] / "big.parquet"
    with open(big, "wb") as fh:
        fh.truncate(2 * 1024**3 + 1)  # sparse: no disk used
    peak_before = reset_peak_rss_kb()
    started = time.monotonic()
    out = _route(big.as_uri(), layout["root"], caplog)
    rec = _assert_refused(out, "payload_too_large", caplog)
    message = rec["reasons"][0]["message"]
    assert "2147483649 bytes" in message and "limit of 2147483648 bytes" in message
    assert time.monotonic() - started < 2.0
    assert peak_rss_kb() - peak_before < 50_000


def test_a_geojson_above_its_limit_is_too_large_with_both_figures(layout, caplog) -> None:  # type: ignore[no-untyped-def]
    big = layout["root"] / "big.json"
    with open(big, "wb") as fh:
        fh.write(b'{"type": "FeatureCollection", "features": [')
        fh.truncate(300 * 1024**2)  # sparse tail
    out = _route(big.as_uri(), layout["root"], caplog)
    rec = _assert_refused(out, "payload_too_large", caplog)
    message = rec["reasons"][0]["message"]
    assert "314572800 bytes (300.0 MiB)" in message
    assert "limit of 268435456 bytes (256.0 MiB) for GeoJSON" in message


def test_a_sparse_file_of_zeros_below_the_limit_is_corrupt_unread(layout, caplog) -> None:  # type: ignore[no-untyped-def]
    zeros = layout["root"] / "zeros.geojson"
    with open(zeros, "wb") as fh:
        fh.truncate(2 * 1000**3)  # 2 GB (< 2 GiB): the magic bytes decide, not a parse
    started = time.monotonic()
    out = _route(zeros.as_uri(), layout["root"], caplog)
    rec = _assert_refused(out, "payload_corrupt", caplog)
    assert "not a JSON document" in rec["reasons"][0]["message"]
    assert time.monotonic() - started < 2.0


def test_no_root_configured_refuses_even_a_good_file(layout, caplog) -> None:  # type: ignore[no-untyped-def]
    good = layout["root"] / "good.parquet"
    good.write_bytes(data_file("admin_boundaries.parquet").read_bytes())
    loader = payload_loader(Settings.from_env({}))
    value = codec.encode_batch(EVENT, inline=False, payload_uri=good.as_uri())
    out = route(
        Source("gis.batches", 0, 9, b"admin_boundaries", value),
        lambda layer: (V1,),
        Topics(),
        now=NOW,
        worker_id="w",
        payload_loader=loader,
    )
    rec = _assert_refused(out, "payload_not_allowed", caplog)
    assert "--payload-root" in rec["reasons"][0]["message"]


def test_a_good_file_under_the_root_is_admitted(layout, caplog) -> None:  # type: ignore[no-untyped-def]
    good = layout["root"] / "sub" / "world.parquet"
    good.parent.mkdir()
    good.write_bytes(data_file("admin_boundaries.parquet").read_bytes())
    out = _route(good.as_uri(), layout["root"], caplog)
    assert out.decision.decision == "admitted"


@pytest.mark.parametrize(
    ("content", "reason", "message"),
    [
        (b"", "payload_corrupt", "an empty file (0 bytes)"),
        (b"PAR1" + b"\x00" * 100, "payload_corrupt", "does not end with them"),
        (b"GIF89a", "payload_corrupt", "not a JSON document"),
        (b'{"type": "FeatureCollection", "features": [', "payload_corrupt", "truncated: the file"),
        (b'{"type": "Topology"}', "payload_error", "not a GeoJSON FeatureCollection"),
    ],
    ids=["empty", "truncated-parquet", "wrong-magic", "truncated-json", "not-a-collection"],
)
def test_corrupt_and_unusable_payloads_have_their_reasons(  # type: ignore[no-untyped-def]
    layout, caplog, content: bytes, reason: str, message: str
) -> None:
    path = layout["root"] / "batch.bin"
    path.write_bytes(content)
    out = _route(path.as_uri(), layout["root"], caplog)
    rec = _assert_refused(out, reason, caplog)
    assert message in rec["reasons"][0]["message"]


def test_a_truncated_geoparquet_is_corrupt(layout, caplog) -> None:  # type: ignore[no-untyped-def]
    whole = data_file("admin_boundaries.parquet").read_bytes()
    cut = layout["root"] / "cut.parquet"
    cut.write_bytes(whole[: len(whole) // 2] + b"PAR1")  # both magics, footer gone
    out = _route(cut.as_uri(), layout["root"], caplog)
    rec = _assert_refused(out, "payload_corrupt", caplog)
    assert "not a readable Parquet file" in rec["reasons"][0]["message"]


def test_a_missing_file_under_the_root_is_unavailable(layout, caplog) -> None:  # type: ignore[no-untyped-def]
    out = _route((layout["root"] / "later.parquet").as_uri(), layout["root"], caplog)
    rec = _assert_refused(out, "payload_unavailable", caplog)
    assert rec["reasons"][0]["message"].endswith("later.parquet: no such file")


def test_a_missing_file_outside_the_root_does_not_reveal_whether_it_exists(layout, caplog) -> None:  # type: ignore[no-untyped-def]
    missing = _route((layout["tmp"] / "nope.geojson").as_uri(), layout["root"], caplog)
    present = _route(layout["outside"].as_uri(), layout["root"], caplog)
    texts = [
        codec.decode_quarantine(o.records[0].value)["reasons"][0]["message"]
        for o in (missing, present)
    ]
    assert [t.split(": ", 2)[-1] for t in texts] == [texts[0].split(": ", 2)[-1]] * 2


def test_credentials_in_a_payload_uri_are_refused_and_masked(layout, caplog) -> None:  # type: ignore[no-untyped-def]
    # the producer's own event (carried as `original`) holds them; nothing the gate writes
    out = _route("s3://AKIAEXAMPLE:hunter2@bucket/key.parquet", layout["root"], caplog)
    rec = _assert_refused(out, "payload_not_allowed", caplog)
    message = rec["reasons"][0]["message"]
    assert "s3://***@bucket/key.parquet" in message and "hunter2" not in message
    assert b"hunter2" not in dict(out.records[0].headers)["dlq.message"]
    assert "hunter2" not in caplog.text


def test_the_same_file_inline_reason_codes_are_unchanged(layout, caplog) -> None:  # type: ignore[no-untyped-def]
    # inline events never touch the allow-list: a contract break stays a contract break
    stale = replace(EVENT, data_time=NOW - timedelta(days=3))
    out = route(
        Source("gis.batches", 0, 9, b"admin_boundaries", codec.encode_batch(stale)),
        lambda layer: (V1,),
        Topics(),
        now=NOW,
        worker_id="w",
    )
    assert codec.decode_quarantine(out.records[-1].value)["reason_code"] == "contract_break"
