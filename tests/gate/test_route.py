"""Routing one event to its output records (no broker): every failure path is a record."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pyarrow.parquet as pq
from hypothesis import given, settings
from hypothesis import strategies as st

from worker.cli.scenario import data_file
from worker.core.model import ActiveVersion
from worker.gate.route import Source, route
from worker.io import codec
from worker.io.contract_files import load_contract
from worker.io.payloads import load_payload, load_payload_chunked, read_batch_file
from worker.io.payloads.policy import PayloadPolicy
from worker.kafka.settings import Topics

NOW = datetime(2026, 11, 29, 12, 0, tzinfo=timezone.utc)
TOPICS = Topics()
V1 = ActiveVersion(load_contract(data_file("contracts/admin_boundaries.v1.yaml")), "enforcing")
V11 = ActiveVersion(load_contract(data_file("contracts/admin_boundaries.v1.1.yaml")), "observing")
WORLD = read_batch_file(
    data_file("admin_boundaries.parquet"),
    layer="admin_boundaries",
    crs="EPSG:4326",
    data_time=NOW - timedelta(hours=1),
    batch_id="b1",
)


REAL_EVENT = codec.encode_batch(WORLD)


def loader_under(*roots: str):  # type: ignore[no-untyped-def]
    """A payload loader reading under ``roots`` (file:///dir/ or s3://bucket/prefix/)."""
    policy = PayloadPolicy.from_strings(roots)
    return lambda uri, batch: load_payload(uri, batch, policy=policy)


def versions(layer: str) -> tuple[ActiveVersion, ...]:
    return (V1, V11) if layer == "admin_boundaries" else ()


def go(value: bytes | None, key: bytes | None = b"admin_boundaries", loader=None, **kw):  # type: ignore[no-untyped-def]
    return route(
        Source("gis.batches", 2, 41, key, value),
        versions,
        TOPICS,
        now=NOW,
        worker_id="w",
        payload_loader=loader,
        **kw,
    )


def test_admitted_carries_original_bytes_headers_and_one_evaluation_per_version() -> None:
    value = codec.encode_batch(WORLD)
    out = go(value)
    assert out.decision.decision == "admitted"
    topics = [r.topic for r in out.records]
    assert topics == [TOPICS.evaluations, TOPICS.evaluations, TOPICS.admitted]
    admitted = out.records[-1]
    assert admitted.value == value and admitted.key == "admin_boundaries"
    headers = dict(admitted.headers)
    assert headers["contract-versions-enforced"] == b"v1.0"
    assert headers["contract-versions-observing"] == b"v1.1=break"
    assert (headers["source-partition"], headers["source-offset"]) == (b"2", b"41")
    evs = [codec.decode_evaluation(r.value) for r in out.records[:2]]
    assert [(e["version"], e["mode"], e["passed"]) for e in evs] == [
        ("v1.0", "enforcing", True),
        ("v1.1", "observing", False),
    ]


def test_contract_break_goes_to_quarantine_with_reasons_and_original() -> None:
    stale = codec.encode_batch(replace(WORLD, data_time=NOW - timedelta(days=2)))
    out = go(stale)
    q = out.records[-1]
    assert q.topic == TOPICS.quarantine
    rec = codec.decode_quarantine(q.value)
    assert rec["reason_code"] == "contract_break"
    assert [(r["version"], r["clause"]) for r in rec["reasons"]] == [("v1.0", "fresh")]
    assert rec["reasons"][0]["measured"] == 2 * 86400.0
    assert rec["original"] == stale
    assert dict(q.headers)["dlq.broken"] == b"v1.0:fresh"


def test_undecodable_null_unknown_layer_and_bad_payload_are_quarantined() -> None:
    garbage = go(b"\x02\x00\xffnot avro")
    assert [codec.decode_quarantine(r.value)["reason_code"] for r in garbage.records] == [
        "decode_error"
    ]
    assert garbage.records[0].key == b"admin_boundaries"  # falls back to the source key
    odd_key = go(b"\x02\x00", key=b"\xff\xfe")
    assert odd_key.records[0].key == b"\xff\xfe"  # not a UTF-8 replacement
    null = go(None, key=None)
    assert codec.decode_quarantine(null.records[0].value)["reason_code"] == "decode_error"
    roads = go(codec.encode_batch(replace(WORLD, layer="roads")))
    rec = codec.decode_quarantine(roads.records[0].value)
    assert rec["reason_code"] == "no_active_contract" and "roads" in rec["reasons"][0]["message"]
    by_ref = codec.encode_batch(
        WORLD, inline=False, payload_uri="file:///nonexistent/world.parquet"
    )
    missing = go(by_ref, loader=loader_under("file:///nonexistent/"))
    rec = codec.decode_quarantine(missing.records[0].value)
    assert rec["reason_code"] == "payload_unavailable" and rec["batch_id"] == "b1"
    assert "no such file" in rec["reasons"][0]["message"]
    # no root configured (route's default loader): refused before any file is touched
    refused = codec.decode_quarantine(go(by_ref).records[0].value)
    assert refused["reason_code"] == "payload_not_allowed"
    assert "no payload root is configured" in refused["reasons"][0]["message"]


def test_payload_uri_is_loaded_and_evaluated() -> None:
    path = data_file("admin_boundaries.parquet")
    uri = path.as_uri()
    out = go(
        codec.encode_batch(WORLD, inline=False, payload_uri=uri),
        loader=loader_under(path.parent.as_uri()),
    )
    assert out.decision.decision == "admitted"
    assert len(out.decision.verdicts) == 2


def test_chunked_payload_is_evaluated_as_the_whole_one(tmp_path: Path) -> None:
    """The worker's loader (load_payload_chunked) and the whole-batch one decide alike; a
    row group that cannot be decoded, met while evaluating, is the payload's reason."""
    path = data_file("admin_boundaries.parquet")
    policy = PayloadPolicy.from_strings([path.parent.as_uri()])
    event = codec.encode_batch(WORLD, inline=False, payload_uri=path.as_uri())
    whole = go(event, loader=loader_under(path.parent.as_uri()))
    chunked = go(
        event, loader=lambda uri, b: load_payload_chunked(uri, b, policy=policy, chunk_rows=10)
    )
    assert chunked.decision == whole.decision
    assert [r.value for r in chunked.records] == [r.value for r in whole.records]
    with ThreadPoolExecutor(2) as pool:  # the chunks measured on two threads (issue 27)
        threaded = go(
            event,
            loader=lambda uri, b: load_payload_chunked(uri, b, policy=policy, chunk_rows=10),
            chunk_pool=(pool, 2),
        )
    assert [r.value for r in threaded.records] == [r.value for r in whole.records]

    # the same file with its data pages overwritten, footer intact
    bad = tmp_path / "world.parquet"
    pq.write_table(pq.read_table(path), bad, compression="snappy", row_group_size=50)
    raw = bytearray(bad.read_bytes())
    raw[200:60000] = b"\xff" * (60000 - 200)
    bad.write_bytes(bytes(raw))
    policy = PayloadPolicy.from_strings([tmp_path.as_uri()])
    out = go(
        codec.encode_batch(WORLD, inline=False, payload_uri=bad.as_uri()),
        loader=lambda uri, b: load_payload_chunked(uri, b, policy=policy),
    )
    rec = codec.decode_quarantine(out.records[-1].value)
    assert rec["reason_code"] == "payload_corrupt", rec["reasons"]
    message = rec["reasons"][0]["message"]
    assert "cannot be read:" in message and "not a readable Parquet file" in message  # evaluating


def test_admitted_record_of_a_replay_carries_replay_of_forward() -> None:
    value = codec.encode_batch(WORLD)
    source = Source("gis.batches", 0, 9, b"admin_boundaries", value, (("replay-of", b"b1"),))
    out = route(source, versions, TOPICS, now=NOW, worker_id="w")
    assert dict(out.records[-1].headers)["replay-of"] == b"b1"
    assert "replay-of" not in dict(go(value).records[-1].headers)


def test_layer_label_of_an_undecodable_event_is_its_source_key() -> None:
    # found by a fresh-user session: /status counted undecodable events under "unknown"
    # while `quarantine tail` showed the record's key layer
    from worker.ops.quarantine import QuarantineEntry

    garbage = go(b"\x02\x00\xffnot avro")
    assert garbage.layer is None and garbage.layer_label == "admin_boundaries"
    key = garbage.records[0].key
    assert isinstance(key, bytes)
    entry = QuarantineEntry("q", 0, 0, key.decode(), {}, None)  # as quarantine.tail reads it
    assert entry.layer == garbage.layer_label
    assert go(None, key=None).layer_label == "unknown"
    assert go(codec.encode_batch(WORLD)).layer_label == WORLD.layer


def test_layers_without_a_contract_are_counted_under_one_label() -> None:
    # found by a new-user session: 200 events with layers forged-0..199 made 200 metric
    # series and 200 /status keys; a layer with "\n\x00" reached /metrics
    labels = {
        go(codec.encode_batch(replace(WORLD, layer=f"forged-{i}\n\x00")), key=None).layer_label
        for i in range(20)
    }
    assert labels == {"unknown"}
    assert go(b"\x02junk", key=b"forged-key").layer_label == "unknown"


def test_a_parsed_event_without_features_keeps_its_batch_id_in_quarantine() -> None:
    # found by a fresh-user session: an empty payload_uri lost the batch id
    value = codec.encode_batch(WORLD, inline=False, payload_uri="")
    out = go(value)
    rec = codec.decode_quarantine(out.records[-1].value)
    assert rec["reason_code"] == "decode_error"
    assert (rec["batch_id"], rec["layer"]) == ("b1", "admin_boundaries")
    assert "neither inline features nor a payload_uri" in rec["reasons"][0]["message"]


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=512), st.one_of(st.none(), st.binary(max_size=16)))
def test_any_bytes_route_to_exactly_one_decision_record(value: bytes, key: bytes | None) -> None:
    """Bad input never crashes the worker and never loses a record."""
    out = go(value, key=key)
    decisions = [r for r in out.records if r.topic in (TOPICS.admitted, TOPICS.quarantine)]
    assert len(decisions) == 1


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_corrupted_real_events_route_to_exactly_one_decision_record(data: st.DataObject) -> None:
    value = bytearray(REAL_EVENT)
    for _ in range(data.draw(st.integers(1, 8))):
        i = data.draw(st.integers(0, len(value) - 1))
        value[i] = data.draw(st.integers(0, 255))
    cut = data.draw(st.integers(1, len(value)))
    out = go(bytes(value[:cut]))
    decisions = [r for r in out.records if r.topic in (TOPICS.admitted, TOPICS.quarantine)]
    assert len(decisions) == 1


def test_a_record_that_cannot_be_encoded_is_quarantined_not_a_crash(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    # poison pill: an exception while building output records must not stop the partition
    def broken(*args: object, **kwargs: object) -> bytes:
        raise ValueError("value out of range for long")

    monkeypatch.setattr(codec, "encode_evaluation", broken)
    out = go(REAL_EVENT)
    (record,) = out.records
    rec = codec.decode_quarantine(record.value)
    assert rec["reason_code"] == "encode_error"
    assert "value out of range for long" in rec["reasons"][0]["message"]


def test_an_admitted_event_above_the_record_limit_is_quarantined() -> None:
    out = go(REAL_EVENT, max_record_bytes=len(REAL_EVENT) - 1)
    rec = codec.decode_quarantine(out.records[-1].value)
    assert rec["reason_code"] == "record_too_large"
    assert f"the event is {len(REAL_EVENT)} bytes" in rec["reasons"][0]["message"]
    assert rec["original"] == b""  # too large to carry twice


def test_inline_schema_is_the_columns_sent_not_the_declaration() -> None:
    from worker.core.model import FieldSpec

    schema = [f for f in V1.contract.clauses if f.kind == "schema"]
    assert schema  # the demo contract has a schema clause
    lying = replace(
        WORLD,
        schema_fields=WORLD.schema_fields,  # declares pop_est integer ...
        attributes=WORLD.attributes.set_column(
            WORLD.attributes.schema.get_field_index("pop_est"),
            "pop_est",
            WORLD.attributes.column("pop_est").cast("string"),  # ... but sends strings
        ),
    )
    assert FieldSpec("pop_est", "integer") in lying.schema_fields
    out = go(codec.encode_batch(lying))
    rec = codec.decode_quarantine(out.records[-1].value)
    assert [(r["version"], r["clause"]) for r in rec["reasons"]] == [("v1.0", "schema")]
    assert "field 'pop_est' has type string, expected integer" in rec["reasons"][0]["message"]


def test_any_output_record_above_the_limit_becomes_one_small_quarantine_record() -> None:
    # issue 10: an oversized record aborted the transaction and the batch came back forever
    sizes = [len(r.value) for r in go(REAL_EVENT).records if r.topic.endswith("evaluations")]
    out = go(REAL_EVENT, max_record_bytes=min(sizes) - 1)
    assert [r.topic for r in out.records] == [TOPICS.quarantine]
    rec = codec.decode_quarantine(out.records[0].value)
    assert rec["reason_code"] == "record_too_large"
    assert rec["reasons"][0]["message"].startswith(
        f"the {TOPICS.evaluations} record for this batch would be "
    )
    assert rec["original"] == b"" and rec["batch_id"] == WORLD.batch_id
    assert len(out.records[0].value) < min(sizes)


def test_open_ring_and_mixed_column_are_judged_inline_and_by_reference(tmp_path) -> None:  # type: ignore[no-untyped-def]
    # issue 9: one bad feature or column is a contract verdict (validity), never a
    # payload_error, whether the features come inline or by reference
    import json

    ring = [[0, 0], [10, 0], [10, 10], [0, 10]]  # open
    features = [
        {"type": "Feature", "properties": {"note": note},
         "geometry": {"type": "Polygon", "coordinates": [ring]}}
        for note in (42, "see survey")
    ]  # fmt: skip
    path = tmp_path / "open.geojson"
    path.write_text(json.dumps({"type": "FeatureCollection", "features": features}))
    batch = read_batch_file(path, layer="admin_boundaries", data_time=NOW, batch_id="b9")
    by_reference = codec.encode_batch(batch, inline=False, payload_uri=path.as_uri())
    for value in (codec.encode_batch(batch), by_reference):
        out = go(value, loader=loader_under(tmp_path.as_uri()))
        rec = codec.decode_quarantine(out.records[-1].value)
        assert rec["reason_code"] == "contract_break"
        broken = {(r["version"], r["clause"]) for r in rec["reasons"]}
        assert ("v1.0", "valid") in broken
        assert any("do not form a closed linestring" in r["message"] for r in rec["reasons"])


def test_a_deeply_nested_collection_is_a_finding_not_a_crash() -> None:
    # issue 10 item 2: a 180 KB event, one GeometryCollection 20,000 levels deep, killed the
    # worker with SIGSEGV inside GEOS and every restart died again on the same offset
    from tests.core.test_wkb import nested_collection

    one = replace(
        WORLD,
        batch_id="deep-gc",
        geometries_wkb=(nested_collection(20_000),),
        feature_count=1,
        attributes=WORLD.attributes.slice(0, 1),
    )
    event = codec.encode_batch(one)
    assert len(event) > 180_000
    out = go(event)
    assert out.decision.decision == "quarantined"
    rec = codec.decode_quarantine(out.records[-1].value)
    valid = [r for r in rec["reasons"] if r["clause"] == "valid"]
    assert valid and "collections nest deeper than 32 levels" in valid[0]["message"]


# --- per-major read paths (read_paths: per_major) ---------------------------------------

_V1_TEXT = data_file("contracts/admin_boundaries.v1.yaml").read_text()
_V7_TEXT = _V1_TEXT.replace("version: v1\n", "version: v7\nread_paths: per_major\n")
_V8_TEXT = _V7_TEXT.replace("version: v7\n", "version: v8\n").replace(
    '      "Seven seas (open ocean)": Islands in the open ocean (e.g. French Southern and '
    "Antarctic Lands)\n",
    "",
)


def _pair(per_major: bool = True) -> tuple[ActiveVersion, ...]:
    from worker.core.contracts.parse import parse_contract

    v7, v8 = _V7_TEXT, _V8_TEXT
    if not per_major:
        v7, v8 = (t.replace("read_paths: per_major\n", "") for t in (v7, v8))
    return (
        ActiveVersion(parse_contract(v7), "enforcing"),
        ActiveVersion(parse_contract(v8), "enforcing"),
    )


def test_per_major_path_gets_the_batch_its_major_admits_while_shared_quarantines() -> None:
    pair = _pair()
    assert [v.contract.read_paths for v in pair] == ["per_major", "per_major"]
    out = route(
        Source("gis.batches", 0, 7, b"admin_boundaries", REAL_EVENT),
        lambda layer: pair,
        TOPICS,
        now=NOW,
        worker_id="w",
    )
    assert out.decision.decision == "quarantined"
    topics = [(r.topic, r.per_major) for r in out.records]
    assert topics == [
        (TOPICS.evaluations, False),
        (TOPICS.evaluations, False),
        (TOPICS.quarantine, False),
        ("gis.batches.admitted.admin_boundaries.v7", True),
    ]
    q = codec.decode_quarantine(out.records[2].value)
    assert [(r["version"], r["clause"]) for r in q["reasons"]] == [("v8.0", "continent")]
    v7 = out.records[3]
    assert v7.value == REAL_EVENT and v7.key == "admin_boundaries"
    headers = dict(v7.headers)
    assert headers["contract-versions-enforced"] == b"v7.0"
    assert (headers["batch-id"], headers["source-offset"]) == (b"b1", b"7")


def test_per_major_paths_of_an_admitted_batch_carry_the_shared_headers() -> None:
    pair = (
        _pair()[0],
        replace(_pair()[0], contract=replace(_pair()[0].contract, version="v9.0", major=9)),
    )
    out = route(
        Source("gis.batches", 0, 8, b"admin_boundaries", REAL_EVENT),
        lambda layer: pair,
        TOPICS,
        now=NOW,
        worker_id="w",
    )
    assert out.decision.decision == "admitted"
    shared = next(r for r in out.records if r.topic == TOPICS.admitted)
    paths = [r for r in out.records if r.per_major]
    assert [r.topic for r in paths] == [
        "gis.batches.admitted.admin_boundaries.v7",
        "gis.batches.admitted.admin_boundaries.v9",
    ]
    assert all(r.headers == shared.headers for r in paths)
    assert dict(shared.headers)["contract-versions-enforced"] == b"v7.0,v9.0"


def test_without_the_opt_in_there_is_no_per_major_record() -> None:
    pair = _pair(per_major=False)
    out = route(
        Source("gis.batches", 0, 7, b"admin_boundaries", REAL_EVENT),
        lambda layer: pair,
        TOPICS.with_prefix("p."),
        now=NOW,
        worker_id="w",
    )
    assert [r.per_major for r in out.records] == [False, False, False]


def test_a_second_admitted_replay_of_one_original_is_quarantined_as_duplicate() -> None:
    # issue 10 item 12: two replays of the same batch in flight were both admitted
    from worker.core.replays import ReplayLedger
    from worker.gate.replays import dedupe_replays, replay_of
    from worker.gate.route import Outcome, Source, route
    from worker.kafka.settings import Settings

    def replayed(offset: int) -> Outcome:
        source = Source(
            "gis.batches", 0, offset, b"admin_boundaries", REAL_EVENT, (("replay-of", b"b-42"),)
        )
        return route(source, versions, TOPICS, now=NOW, worker_id="w")

    first, second, plain = replayed(10), replayed(11), go(REAL_EVENT)
    assert first.decision.admitted and second.decision.admitted and plain.decision.admitted
    assert replay_of(first.source) == "b-42" and replay_of(plain.source) is None
    ledger = ReplayLedger()

    def dedupe(outcomes: list[Outcome]) -> tuple[list[Outcome], list[str]]:
        return dedupe_replays(outcomes, ledger, Settings().topics, now=NOW, worker_id="w")

    out, admitted = dedupe([first, second, plain])
    assert admitted == ["b-42"]
    assert [o.decision.decision for o in out] == ["admitted", "quarantined", "admitted"]
    dup = codec.decode_quarantine(out[1].records[0].value)
    assert dup["reason_code"] == "duplicate_replay" and len(out[1].records) == 1
    assert "replay of b-42, which was already admitted" in dup["reasons"][0]["message"]
    ledger.add(admitted)  # committed: a later replay is a duplicate too
    later, _ = dedupe([replayed(12)])
    assert later[0].decision.reasons[0].code == "duplicate_replay"
    # a replay its operator forced (`quarantine replay --force`) is admitted again: the
    # CLI said "replayed" while the worker quarantined it (a fresh-user finding)
    forced_source = Source(
        "gis.batches", 0, 13, b"admin_boundaries", REAL_EVENT,
        (("replay-of", b"b-42"), ("replay-force", b"1")),
    )  # fmt: skip
    forced = route(forced_source, versions, TOPICS, now=NOW, worker_id="w")
    again, admitted_again = dedupe([forced])
    assert again[0].decision.admitted and admitted_again == ["b-42"]


def test_a_duplicate_replay_record_fits_the_producers_limit() -> None:
    """A review: the duplicate_replay quarantine record carried the original up to the
    16 MiB default whatever the producer took; with a limit just above the admitted record,
    librdkafka refused it and aborted the transaction."""
    from worker.gate.records import record_bytes
    from worker.gate.replays import duplicate_replay

    admitted = go(REAL_EVENT)
    assert admitted.decision.admitted
    limit = len(REAL_EVENT) + 1024  # the admitted record fits, the original twice does not
    out = duplicate_replay(admitted, "0@7", TOPICS, now=NOW, worker_id="w", max_record_bytes=limit)
    (record,) = out.records
    assert record_bytes(record) <= limit
    rec = codec.decode_quarantine(record.value)
    assert rec["reason_code"] == "duplicate_replay" and rec["original"] == b""
    roomy = duplicate_replay(admitted, "0@7", TOPICS, now=NOW, worker_id="w")
    assert codec.decode_quarantine(roomy.records[0].value)["original"] == REAL_EVENT


class _BrokenDecoder:
    """A registry codec whose decoder fails as a gate bug would (not a DecodeError)."""

    def decode_batch(self, value: bytes, topic: str) -> object:
        raise KeyError("schema_fields")

    def event_decoder(self, topic: str):  # type: ignore[no-untyped-def]
        return codec.decode_event


def test_a_decoder_failure_that_is_no_decode_error_is_a_gate_error_not_a_payload_error() -> None:
    out = go(REAL_EVENT, registry=_BrokenDecoder())
    assert out.decision.decision == "quarantined"
    reason = out.decision.reasons[0]
    assert reason.code == "gate_error"
    assert "decoding batch ?: KeyError: 'schema_fields'" in reason.message
    assert "replay it once the gate is fixed" in reason.message
    rec = codec.decode_quarantine(out.records[-1].value)
    assert rec["reason_code"] == "gate_error" and rec["original"] == REAL_EVENT


def test_a_payload_loader_failure_stays_a_payload_error(tmp_path: Path) -> None:
    def failing_loader(uri: str, batch: object) -> object:
        raise RuntimeError("store hiccup")

    value = codec.encode_batch(WORLD, inline=False, payload_uri=(tmp_path / "x.parquet").as_uri())
    out = go(value, loader=failing_loader)
    reason = out.decision.reasons[0]
    assert (reason.code, reason.message) == (
        "payload_error",
        "payload of batch b1 cannot be loaded: store hiccup",
    )
