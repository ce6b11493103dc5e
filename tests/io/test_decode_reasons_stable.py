"""A decode error's reason is the same for the same bytes in every process (stop 43).

fastavro names its buffer in some messages ("cannot read double from <_io.BytesIO object
at 0x7f...>"); that text went into quarantine records and logs, so one bad event gave
different record bytes on each worker and each replay. Every decoder of the codec is
walked over every one-byte change of a real record of its kind."""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import datetime, timezone
from typing import Any

import pytest

from benchmarks.broker import make_events
from worker.cli.scenario import data_file
from worker.control.publish import contract_record
from worker.core.errors import DecodeError
from worker.io import codec
from worker.io.contract_files import load_contract

T0 = datetime(2026, 12, 4, 12, 0, tzinfo=timezone.utc)


def _contract() -> bytes:
    contract = load_contract(data_file("contracts/admin_boundaries.v1.yaml"))
    return codec.encode_contract_record(contract_record(contract, mode="enforcing"))


DECODERS: dict[str, tuple[Callable[[bytes], Any], Callable[[], bytes]]] = {
    "event": (codec.decode_event, lambda: make_events(1, 1)[0]),
    "contract_record": (codec.decode_contract_record, _contract),
    "consumer_declaration": (
        codec.decode_consumer_declaration,
        lambda: codec.encode_consumer_declaration("team-a", "parcels", "v7.0", T0),
    ),
}
_ADDRESS = re.compile(r"0x[0-9a-fA-F]{6,}")


def _reasons(decode: Callable[[bytes], Any], data: bytes, values: range) -> set[str]:
    out = set()
    for i in range(len(data)):
        for v in values:
            changed = data[:i] + bytes([v]) + data[i + 1 :]
            try:
                decode(changed)
            except DecodeError as exc:
                out.add(str(exc))
    return out


@pytest.mark.parametrize("kind", list(DECODERS))
def test_no_reason_names_an_object_address(kind: str) -> None:
    decode, record = DECODERS[kind]
    data = record()
    reasons = _reasons(decode, data, range(256) if kind == "event" else range(0, 256, 17))
    assert reasons  # bytes changed so that they no longer read
    assert [r for r in reasons if _ADDRESS.search(r)] == []


def test_the_buffer_is_named_by_what_it_is() -> None:
    decode, record = DECODERS["event"]
    reasons = _reasons(decode, record(), range(256))
    named = sorted(r for r in reasons if "the record's bytes" in r)
    assert named == ["not a BatchArrival record: truncated bytes (cannot read double from "
                     "the record's bytes)"]  # fmt: skip
