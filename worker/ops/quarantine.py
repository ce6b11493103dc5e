"""Operator tools for the quarantine topic: list and show quarantined batches.

The topic is read by a group-less reader (``Settings.reader()``: assigned partitions, no
commits, ``read_committed``) from the beginning to *partition EOF* on every partition, as
the config bootstrap does (a ListOffsets watermark alone can be too low on some brokers,
docs/design.md section 8); ``follow`` keeps reading after that. Text renderings are in
:mod:`worker.ops.quarantine_view`, replays in :mod:`worker.ops.replay`.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from worker.core.errors import ContractGateError, DecodeError
from worker.core.model import Batch
from worker.io import codec
from worker.kafka.admin import read_topic
from worker.kafka.framing import schema_id_of
from worker.kafka.schema_registry import codec_for, plain_value
from worker.kafka.settings import Settings

__all__ = [
    "QuarantineEntry",
    "entry_batch",
    "entry_to_json",
    "find_entry",
    "read_quarantine",
]

_COORD = re.compile(r"^(\d+)@(\d+)$")


@dataclass(frozen=True)
class QuarantineEntry:
    """One record of the quarantine topic.

    ``record`` is the decoded QuarantineRecord (:func:`worker.io.codec.decode_quarantine`),
    or None when the value does not decode (``error`` then says why).
    """

    topic: str
    partition: int
    offset: int
    key: str | None
    headers: dict[str, str]
    record: dict[str, Any] | None
    error: str | None = None

    @property
    def batch_id(self) -> str | None:
        return self.record.get("batch_id") if self.record else self.headers.get("batch-id")

    @property
    def layer(self) -> str | None:
        return (self.record.get("layer") if self.record else None) or self.key

    @property
    def coordinates(self) -> str:
        return f"{self.topic}[{self.partition}]@{self.offset}"


def _entry(msg: Any, settings: Settings | None = None) -> QuarantineEntry:
    raw_key = msg.key()
    headers = {k: (v or b"").decode("utf-8", "replace") for k, v in (msg.headers() or [])}
    record: dict[str, Any] | None = None
    error: str | None = None
    try:
        value = msg.value() or b""
        if settings is not None:  # framed in the Schema Registry wire format when configured
            value = plain_value(settings, msg.topic(), value)
        record = codec.decode_quarantine(value)
    except DecodeError as exc:
        error = str(exc)
    return QuarantineEntry(
        msg.topic(),
        msg.partition(),
        msg.offset(),
        raw_key.decode("utf-8", "replace") if raw_key is not None else None,
        headers,
        record,
        error,
    )


def read_quarantine(
    settings: Settings,
    *,
    layer: str | None = None,
    follow: bool = False,
    stop: threading.Event | None = None,
    timeout_s: float = 30.0,
) -> Iterator[QuarantineEntry]:
    """Yield the quarantine topic's records, oldest first per partition.

    Without ``follow`` the iteration ends when every partition reached EOF; with it, it
    goes on until ``stop`` is set (or the caller stops iterating). ``layer`` keeps only
    that layer's records.

    Raises
    ------
    BrokerError
        When the topic does not exist or EOF is not reached within ``timeout_s`` seconds
        (without ``follow``).
    """
    for msg in read_topic(
        settings, settings.topics.quarantine, timeout_s=timeout_s, follow=follow, stop=stop
    ):
        entry = _entry(msg, settings)
        if layer is None or entry.layer == layer:
            yield entry


def find_entry(settings: Settings, ref: str, *, timeout_s: float = 30.0) -> QuarantineEntry:
    """The latest quarantine record of batch ``ref``, or the one at ``PARTITION@OFFSET``.

    Raises
    ------
    ContractGateError
        When no record matches (the message says how to list them).
    """
    coord = _COORD.match(ref)
    found: QuarantineEntry | None = None
    for entry in read_quarantine(settings, timeout_s=timeout_s):
        if (coord and (entry.partition, entry.offset) == tuple(map(int, coord.groups()))) or (
            not coord and entry.batch_id == ref
        ):
            found = entry  # keep the latest: a batch quarantined again after a replay
    if found is None:
        raise ContractGateError(
            f"no quarantined batch {ref!r} on {settings.topics.quarantine}; list them with "
            "`contract-gate quarantine tail` (undecodable events have no batch id: use "
            "PARTITION@OFFSET)",
            field="BATCH_ID",
            fix="list them with `contract-gate quarantine tail` (undecodable events: use "
            "PARTITION@OFFSET)",
        )
    return found


def _when(entry: QuarantineEntry) -> str:
    at = entry.record.get("quarantined_at") if entry.record else None
    if not isinstance(at, datetime):
        return "?"
    return at.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def entry_batch(entry: QuarantineEntry, settings: Settings | None = None) -> Batch:
    """The batch of a quarantine record, decoded from the original event bytes it carries
    (with its features loaded from ``payload_uri`` when sent by reference, under the
    payload roots and size limits of ``settings``, as a worker would; without ``settings``
    no location is allowed). With ``settings`` of a Schema Registry, a framed original is
    read with its writer schema.

    Raises
    ------
    ContractGateError
        The record carries no original bytes (too large, or the entry is undecodable), or
        they do not decode as a batch (a ``decode_error`` record), or the payload cannot be
        loaded; the message says which.
    """
    r = entry.record
    if r is None or not r["original"]:
        raise ContractGateError(
            f"{entry.coordinates} carries no original event bytes, so its features cannot "
            "be shown (the source coordinates locate the event)",
            field="BATCH_ID",
            fix="read the event at its source coordinates",
        )
    try:
        registry = codec_for(settings) if settings is not None else None
        original = bytes(r["original"])
        if registry is not None and schema_id_of(original) is not None:
            batch = registry.decode_batch(original, r["source_topic"])  # framed
        else:
            batch = codec.decode_batch(original)
    except DecodeError as exc:
        raise ContractGateError(
            f"{entry.coordinates}: the original event does not decode, it has no features "
            f"to show ({exc})",
            field="BATCH_ID",
        ) from None
    if batch.payload_uri and not batch.geometries_wkb:
        from worker.io.payloads import load_payload
        from worker.io.payloads.policy import PayloadPolicy

        policy = settings.payload if settings is not None else PayloadPolicy()
        batch = load_payload(batch.payload_uri, batch, policy=policy)
    return batch


def entry_to_json(entry: QuarantineEntry) -> dict[str, Any]:
    """A JSON-ready view of the entry (``original`` as its size, not its bytes)."""
    doc: dict[str, Any] = {
        "topic": entry.topic,
        "partition": entry.partition,
        "offset": entry.offset,
        "key": entry.key,
        "headers": entry.headers,
        "error": entry.error,
    }
    if entry.record is not None:
        record = dict(entry.record)
        record["original_bytes"] = len(record.pop("original"))
        record["quarantined_at"] = _when(entry)
        doc["record"] = record
    return doc
