"""Quarantine rendering and replay refusals, on records built by the router (no Kafka)."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import datetime, timezone

import pytest

from tests.test_routing import TOPICS, WORLD, go
from worker import codec
from worker.errors import ContractGateError
from worker.kafka import Settings
from worker.quarantine import QuarantineEntry, entry_to_json, render_entry, render_line, replay


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
