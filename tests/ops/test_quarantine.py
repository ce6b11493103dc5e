"""Quarantine rendering and replay refusals, on records built by the router (no Kafka)."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import datetime, timezone
from typing import Any

import pytest

from tests.catalogue import HOSTILE_NAMES, assert_one_line_each
from tests.gate.test_route import TOPICS, WORLD, go
from worker.core.errors import ContractGateError
from worker.io import codec
from worker.kafka.memory import MemoryMessage
from worker.kafka.settings import Settings
from worker.ops import replay as quarantine_replay
from worker.ops.quarantine import QuarantineEntry, entry_to_json
from worker.ops.quarantine_view import render_entry, render_line
from worker.ops.replay import check_not_admitted, entries_since, replay


def entry_of(value: bytes | None, offset: int = 7) -> QuarantineEntry:
    out = go(value)
    (rec,) = [r for r in out.records if r.topic == TOPICS.quarantine]
    decoded = codec.decode_quarantine(rec.value)
    headers = {k: v.decode() for k, v in rec.headers}
    return QuarantineEntry(TOPICS.quarantine, 2, offset, rec.key, headers, decoded)


STALE = codec.encode_batch(
    replace(WORLD, batch_id="ab-stale", data_time=datetime(2020, 1, 1, tzinfo=timezone.utc))
)


def test_line_names_time_layer_batch_broken_clauses_and_coordinates() -> None:
    line = render_line(entry_of(STALE))
    assert line.startswith("2026-11-29T12:00:00Z  admin_boundaries  ab-stale  ")
    assert "v1.0:fresh" in line and line.endswith("(2@7)")


def test_line_of_undecodable_event_shows_the_reason_code() -> None:
    e = entry_of(b"\x00junk")
    assert e.batch_id is None
    assert "decode_error" in render_line(e)


def test_show_has_measured_versus_expected_and_source() -> None:
    text = render_entry(entry_of(STALE))
    assert "batch ab-stale of layer admin_boundaries" in text
    assert "v1.0 (enforcing) fresh:" in text
    assert "measured:" in text and "expected:" in text
    assert f"record:   {TOPICS.quarantine}[2]@7" in text
    assert "(replayable)" in text


def test_json_view_replaces_original_bytes_by_their_size() -> None:
    doc = entry_to_json(entry_of(STALE))
    json.dumps(doc, default=str)
    assert doc["record"]["original_bytes"] == len(STALE)
    assert doc["record"]["batch_id"] == "ab-stale"
    assert doc["headers"]["dlq.reason"] == "contract_break"


def test_replay_refuses_records_without_original_bytes() -> None:
    e = entry_of(STALE)
    assert e.record is not None
    empty = replace(e, record={**e.record, "original": b""})
    with pytest.raises(ContractGateError, match="cannot be replayed; the event is at"):
        replay(Settings(bootstrap_servers="127.0.0.1:1"), empty)
    undecodable = replace(e, record=None, error="bad")
    with pytest.raises(ContractGateError, match="cannot be replayed"):
        replay(Settings(bootstrap_servers="127.0.0.1:1"), undecodable)


def at(entry: QuarantineEntry, when: datetime, offset: int) -> QuarantineEntry:
    assert entry.record is not None
    return replace(entry, offset=offset, record={**entry.record, "quarantined_at": when})


def test_entries_since_keeps_the_latest_record_of_each_batch_since_the_time() -> None:
    stale, junk = entry_of(STALE), entry_of(b"\x00junk")
    t = datetime(2026, 11, 29, 6, 0, tzinfo=timezone.utc)
    entries = [
        at(stale, t.replace(hour=5), 1),  # before TIME
        at(junk, t.replace(hour=7), 2),
        at(stale, t.replace(hour=8), 3),
        at(stale, t.replace(hour=9), 4),  # quarantined again after a replay: the latest
        replace(stale, offset=5, record=None, error="bad"),  # no readable time
    ]
    selected, unreadable = entries_since(entries, t)
    assert [(e.batch_id, e.offset) for e in selected] == [(None, 2), ("ab-stale", 4)]
    assert [e.offset for e in unreadable] == [5]
    assert entries_since(entries, t.replace(hour=10))[0] == []


def test_replay_of_an_admitted_batch_is_refused_with_where_and_force() -> None:
    e = entry_of(STALE)
    with pytest.raises(ContractGateError, match=r"already admitted \(at adm\[0\]@3\).*--force"):
        check_not_admitted(e, {"ab-stale": "adm[0]@3"})
    check_not_admitted(e, {"other": "adm[0]@1"})
    check_not_admitted(entry_of(b"\x00junk"), {"": "x"})  # no batch id: never admitted


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["replay"], "either BATCH_ID or --all-since"),
        (["replay", "b1", "--all-since", "2026-11-29T06:00:00Z"], "either BATCH_ID"),
        (["replay", "b1", "--layer", "x"], "--layer selects batches for --all-since only"),
    ],
)
def test_replay_arguments(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    from worker.cli.main import main

    assert main(["quarantine", *argv, "--bootstrap-servers", "127.0.0.1:1"]) == 2
    assert message in capsys.readouterr().err


def test_all_since_needs_an_offset(capsys: pytest.CaptureFixture[str]) -> None:
    from worker.cli.main import main

    with pytest.raises(SystemExit):
        main(["quarantine", "replay", "--all-since", "2026-11-29T06:00:00"])
    assert "has no UTC offset" in capsys.readouterr().err


def _quarantined_replay(
    value: bytes, source_offset: int, headers: tuple[tuple[str, bytes | None], ...]
) -> QuarantineEntry:
    """The quarantine entry of an event consumed at gis.batches[0]@source_offset."""
    from tests.gate.test_route import versions
    from worker.gate.route import Source, route

    out = route(
        Source("gis.batches", 0, source_offset, b"admin_boundaries", value, headers),
        versions,
        TOPICS,
        now=datetime(2026, 11, 29, 12, 0, tzinfo=timezone.utc),
        worker_id="w",
    )
    (rec,) = [r for r in out.records if r.topic == TOPICS.quarantine]
    decoded = codec.decode_quarantine(rec.value)
    return QuarantineEntry(
        TOPICS.quarantine,
        1,
        36,
        "admin_boundaries",
        {k: v.decode() for k, v in rec.headers},
        decoded,
    )


def test_a_replayed_undecodable_event_is_selected_once(monkeypatch: pytest.MonkeyPatch) -> None:
    # found by a fresh-user session: replay --all-since replayed an undecodable event twice,
    # the original quarantined at 1@30 and its re-quarantined replay at 1@36
    t = datetime(2026, 11, 29, 6, 0, tzinfo=timezone.utc)
    original = at(entry_of(b"\x00junk", offset=30), t.replace(hour=7), 30)  # source 2@41
    replay_source = ("replay-source", f"{TOPICS.quarantine}[2]@30".encode())
    again = _quarantined_replay(b"\x00junk", 5, (("replay-of", b"2@41"), replay_source))
    assert again.headers["replay-of"] == "2@41"  # the worker carries it forward
    again = at(again, t.replace(hour=8), 36)
    selected, _ = entries_since([original, again], t)
    assert [e.offset for e in selected] == [36]
    # quarantined by an older worker: only the batches record of the copy names the original
    legacy = replace(again, headers={k: v for k, v in again.headers.items() if k != "replay-of"})
    assert len(entries_since([original, legacy], t)[0]) == 2
    lookup = {("gis.batches", 0, 5): "2@41"}
    assert [e.offset for e in entries_since([original, legacy], t, lookup)[0]] == [36]
    # replaying the copy names the original event again, not the copy
    sent: list[Any] = []
    monkeypatch.setattr(
        quarantine_replay, "produce_one", lambda *a, **kw: sent.append(kw["headers"]) or (0, 9)
    )
    replay(Settings(), again)
    assert dict(sent[0])["replay-of"] == "2@41"


def test_replay_headers_reads_the_copies_of_undecodable_entries(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    legacy = replace(_quarantined_replay(b"\x00junk", 5, ()), headers={})  # no replay-of

    def msg(offset: int, headers: list[tuple[str, bytes | None]]) -> MemoryMessage:
        return MemoryMessage.of("gis.batches", 0, offset, headers=headers)

    starts: list[Any] = []

    def read_topic(settings: Settings, topic: str, **kw: Any) -> Any:
        starts.append((topic, kw["start"]))
        return iter([msg(4, []), msg(5, [("replay-of", b"2@41")]), msg(6, [])])

    monkeypatch.setattr(quarantine_replay, "read_topic", read_topic)
    assert quarantine_replay.replay_headers(Settings(), [legacy, entry_of(STALE)]) == {
        ("gis.batches", 0, 5): "2@41"
    }
    assert starts == [("gis.batches", {0: 5})]
    assert quarantine_replay.replay_headers(Settings(), [entry_of(STALE)]) == {}  # nothing to read


def test_show_names_offending_features_and_writes_them_as_geojson() -> None:
    import shapely

    from worker.io.formats.offenders_file import offenders_collection
    from worker.io.reports.offenders import offenders_of_record
    from worker.ops.quarantine import entry_batch

    bowtie = shapely.to_wkb(shapely.Polygon([(0, 0), (1, 1), (1, 0), (0, 1), (0, 0)]))
    wkb = list(WORLD.geometries_wkb)
    wkb[5] = bowtie
    broken = replace(WORLD, batch_id="ab-bowtie", geometries_wkb=tuple(wkb))
    entry = entry_of(codec.encode_batch(broken))
    text = render_entry(entry)
    assert "1 offending feature (#index in the batch, id, why the geometry is invalid):" in text
    assert "#5: Self-intersection[0.5 0.5]" in text
    doc = offenders_collection(entry_batch(entry), offenders_of_record(entry.record["reasons"]))
    (feature,) = doc["features"]
    assert feature["properties"]["gate_index"] == 5
    assert feature["properties"]["gate_broken"] == "v1.0:valid"
    assert feature["geometry"]["type"] == "Polygon"
    assert feature["properties"]["name"] == WORLD.attributes.column("name")[5].as_py()


def test_entry_batch_refuses_a_record_without_original_bytes() -> None:
    from worker.ops.quarantine import entry_batch

    e = entry_of(STALE)
    bare = replace(e, record={**e.record, "original": b""})  # type: ignore[dict-item]
    with pytest.raises(ContractGateError, match="carries no original event bytes"):
        entry_batch(bare)


def test_tail_table_is_ordered_by_time_across_partitions_aligned_and_marks_replays() -> None:
    from worker.ops.quarantine_view import table_rows

    late = entry_of(STALE, offset=3)
    late.record["quarantined_at"] = datetime(2026, 11, 29, 13, 0, tzinfo=timezone.utc)  # type: ignore[index]
    early = replace(entry_of(STALE, offset=9), partition=0)
    early.record["quarantined_at"] = datetime(2026, 11, 29, 11, 0, tzinfo=timezone.utc)  # type: ignore[index]
    replayed = replace(entry_of(b"\x00junk", offset=1), headers={"replay-of": "ab-x"})
    replayed.record["quarantined_at"] = datetime(2026, 11, 29, 12, 0, tzinfo=timezone.utc)  # type: ignore[index]
    head, *rows = table_rows([late, early, replayed])
    assert [r.split()[0] for r in rows] == [
        "2026-11-29T11:00:00Z",
        "2026-11-29T12:00:00Z",
        "2026-11-29T13:00:00Z",
    ]
    assert head.index("what broke") == rows[0].index("v1.0:fresh") == rows[2].index("v1.0:fresh")
    assert " replay " in rows[1] and " replay " not in rows[0]
    assert "v1.0:fresh (data time 2020-01-01T00:00:00+00:00 is 2524.5 days old)" in rows[0]
    assert "decode_error (undecodable batch-arrival event" in rows[1]


def test_tail_shows_why_a_payload_was_refused_not_the_batch_id_again() -> None:
    # found by a fresh-user session: "payload_not_allowed (payload of batch 4db7b706-... can...)"
    from worker.ops.quarantine_view import table_rows

    by_reference = codec.encode_batch(
        replace(WORLD, batch_id="ref-1"), inline=False, payload_uri="file:///data/in/b.parquet"
    )
    (row,) = table_rows([entry_of(by_reference)])[1:]
    what = row[row.index("payload_not_allowed") :]
    assert "ref-1" not in what
    assert "no payload root" in what or "not allowed" in what, what


def test_entry_batch_reads_a_by_reference_payload_under_the_settings_roots(tmp_path) -> None:  # type: ignore[no-untyped-def]
    # found by a new-user session: `quarantine show --geojson` of a by-reference batch
    # always failed with "no payload root is configured", whatever the flags or environment
    import shutil

    from worker.cli.scenario import data_file
    from worker.io.payloads.policy import PayloadPolicy
    from worker.ops.quarantine import entry_batch

    payload = tmp_path / "in" / "world.parquet"
    payload.parent.mkdir()
    shutil.copyfile(data_file("admin_boundaries.parquet"), payload)
    by_ref = replace(
        WORLD,
        batch_id="ab-ref",
        geometries_wkb=(),
        attributes=WORLD.attributes.slice(0, 0),
        payload_uri=payload.as_uri(),
    )
    e = entry_of(STALE)
    original = codec.encode_batch(by_ref, inline=False)
    entry = replace(e, record={**e.record, "original": original})  # type: ignore[dict-item]
    with pytest.raises(ContractGateError, match="no payload root is configured"):
        entry_batch(entry, Settings())
    allowed = Settings(payload=PayloadPolicy.from_strings([payload.parent.as_uri()]))
    batch = entry_batch(entry, allowed)
    assert batch.batch_id == "ab-ref"
    assert len(batch.geometries_wkb) == WORLD.feature_count == batch.attributes.num_rows
    outside = Settings(payload=PayloadPolicy.from_strings([(tmp_path / "elsewhere").as_uri()]))
    with pytest.raises(ContractGateError, match="outside every payload root"):
        entry_batch(entry, outside)


def test_a_forged_layer_or_batch_id_cannot_break_the_table() -> None:
    # found by a new-user session: a layer with "\n\x00" and 1,000 characters was printed
    # raw by `quarantine tail`, the newline reaching the terminal
    from worker.ops.quarantine_view import table_rows

    forged = replace(WORLD, layer="roads\n\x00" + "x" * 1000, batch_id="b\r\x1b[31mred")
    entry = entry_of(codec.encode_batch(forged))
    line = render_line(entry)
    assert "\n" not in line and "\x00" not in line and "\x1b" not in line
    assert "roads\\x0a\\x00xxx" in line and "b\\x0d\\x1b[31mred" in line
    assert "[clipped: 1013 chars in all]" in line  # 1,007 characters, two escaped (4 each)
    rows = table_rows([entry])
    assert all("\n" not in r and "\x00" not in r for r in rows)


def test_replay_refused_for_another_batch_under_the_same_id_says_so() -> None:
    # a fresh-user finding: a fixed batch published under the id of a quarantined one was
    # admitted; replaying the quarantined one was refused as "already admitted"
    import hashlib

    e = entry_of(STALE)
    same = {"ab-stale": hashlib.sha256(STALE).hexdigest()}
    with pytest.raises(ContractGateError, match=r"batch ab-stale was already admitted"):
        check_not_admitted(e, {"ab-stale": "adm[0]@3"}, same)
    other = {"ab-stale": hashlib.sha256(b"another event").hexdigest()}
    with pytest.raises(ContractGateError) as refused:
        check_not_admitted(e, {"ab-stale": "adm[0]@3"}, other)
    message = str(refused.value)
    assert message.startswith("another event with batch id ab-stale was admitted (at adm[0]@3;")
    assert "publish the fixed batch under a new batch id" in message and "--force" in message


def test_tail_follow_prints_the_tables_header_columns_and_measured_values() -> None:
    # issue 28 §4: `tail --follow` printed bare lines (no header, no replay column, no
    # measured values) while `tail` printed a table
    from worker.ops.quarantine_view import FOLLOW_WIDTHS, follow_rows, table_rows

    stale = entry_of(STALE, offset=3)
    replayed = replace(entry_of(STALE, offset=4), headers={"replay-of": "ab-x"})
    followed = list(follow_rows(iter([stale, replayed])))
    table = table_rows([stale, replayed])
    assert len(followed) == len(table) == 3
    assert followed[0].split() == table[0].split()  # the same header, word for word
    for got, want in zip(followed[1:], table[1:], strict=True):
        assert got.split() == want.split()  # the same cells, padded to other widths
        assert "v1.0:fresh (data time 2020-01-01T00:00:00+00:00 is 2524.5 days old)" in got
    start = sum(FOLLOW_WIDTHS) + 2 * len(FOLLOW_WIDTHS)
    assert followed[0].index("what broke") == start == followed[1].index("v1.0:fresh")
    replay_at = followed[0].index("replay")
    assert followed[2][replay_at:].startswith("replay ") and followed[1][replay_at] == " "


@pytest.mark.parametrize("field", ["layer", "batch_id"])
@pytest.mark.parametrize("name", HOSTILE_NAMES)
def test_quarantine_show_heads_a_forged_record_with_one_line(field: str, name: str) -> None:
    # found by a new-user session: `quarantine tail` escaped a forged layer or batch id,
    # but `quarantine show` of the same record printed it raw in its first line
    old = datetime(2020, 1, 1, tzinfo=timezone.utc)  # quarantined whatever the layer
    entry = entry_of(codec.encode_batch(replace(WORLD, data_time=old, **{field: name})))
    head = render_entry(entry).split("\n  record:")[0]
    assert head.startswith("batch ") and ": quarantined " in head
    assert_one_line_each(head, name, 1)


@pytest.mark.parametrize("same_bytes", [True, False], ids=["same event", "another event"])
@pytest.mark.parametrize("name", HOSTILE_NAMES)
def test_a_replay_refusal_names_a_forged_batch_id_on_one_line(same_bytes: bool, name: str) -> None:
    # found by a new-user session: `quarantine replay --all-since` printed "not replayed
    # <batch id>: batch <batch id> was already admitted" with the id raw
    import hashlib

    old = datetime(2020, 1, 1, tzinfo=timezone.utc)
    value = codec.encode_batch(replace(WORLD, batch_id=name, data_time=old))
    e = entry_of(value)
    digest = hashlib.sha256(value if same_bytes else b"another event").hexdigest()
    with pytest.raises(ContractGateError) as refused:
        check_not_admitted(e, {name: "adm[0]@3"}, {name: digest})
    assert_one_line_each(str(refused.value), name, 1, 200)
