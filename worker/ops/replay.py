"""Replay of quarantined batches to the batches topic.

A replay republishes a record's ``original`` bytes, unchanged, to the batches topic with a
``replay-of`` header (the batch id) and ``replay-source`` (the quarantine record's
coordinates); the worker re-evaluates it like any other event under the contract
versions active then, and its admitted record carries ``replay-of`` forward. Replaying
never duplicates an admitted batch: a batch whose id is already on the admitted topic
(header ``batch-id``) is refused unless forced (:func:`check_not_admitted`).
:func:`entries_since` selects every batch quarantined since a time (``--all-since``).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping
from datetime import datetime, timezone

from worker.core._util.text import one_line
from worker.core.errors import BrokerError, ContractGateError
from worker.gate.route import REPLAY_FORCE, REPLAY_OF
from worker.kafka.admin import produce_one, read_topic
from worker.kafka.settings import Settings
from worker.ops.quarantine import QuarantineEntry

__all__ = [
    "check_not_admitted",
    "entries_since",
    "original_of",
    "read_admitted",
    "replay",
    "replay_headers",
    "where_admitted",
]


def original_of(
    entry: QuarantineEntry, replay_of: Mapping[tuple[str, int, int], str] | None = None
) -> str:
    """What the entry is a quarantine of: its batch id, else (an undecodable event) the
    source coordinates of the original event, ``PARTITION@OFFSET`` on the batches topic.

    A replayed undecodable event quarantined again points at the replayed copy; its
    ``replay-of`` header (carried forward by the worker), or else the ``replay-of`` header
    of that copy (``replay_of``: ``(topic, partition, offset) -> header``, from
    :func:`replay_headers`), names the original.
    """
    if entry.batch_id:
        return entry.batch_id
    if entry.headers.get(REPLAY_OF):
        return "@" + entry.headers[REPLAY_OF]
    r = entry.record
    if r is None:
        return f"@@{entry.partition}@{entry.offset}"
    src = (r["source_topic"], r["source_partition"], r["source_offset"])
    if replay_of and src in replay_of:
        return "@" + replay_of[src]
    return f"@{r['source_partition']}@{r['source_offset']}"


def replay_headers(
    settings: Settings, entries: Iterable[QuarantineEntry], *, timeout_s: float = 30.0
) -> dict[tuple[str, int, int], str]:
    """``replay-of`` headers of the source events of undecodable entries that carry none
    themselves (quarantined by a worker that did not carry it forward): ``(topic,
    partition, offset) -> header``, read from the batches topic from the lowest source
    offset of each partition."""
    wanted = {
        (r["source_topic"], r["source_partition"], r["source_offset"])
        for e in entries
        if (r := e.record) is not None and not e.batch_id and REPLAY_OF not in e.headers
    }
    wanted = {w for w in wanted if w[0] == settings.topics.batches}
    if not wanted:
        return {}
    start: dict[int, int] = {}
    for _, p, o in wanted:
        start[p] = min(o, start.get(p, o))
    found: dict[tuple[str, int, int], str] = {}
    for msg in read_topic(
        settings, settings.topics.batches, start=start, tail=0, timeout_s=timeout_s
    ):
        coord = (msg.topic(), msg.partition(), msg.offset())
        if coord in wanted:
            for k, v in msg.headers() or []:
                if k == REPLAY_OF and v:
                    found[coord] = v.decode("utf-8", "replace")
    return found


def entries_since(
    entries: Iterable[QuarantineEntry],
    since: datetime,
    replay_of: Mapping[tuple[str, int, int], str] | None = None,
) -> tuple[list[QuarantineEntry], list[QuarantineEntry]]:
    """``(selected, unreadable)``: the latest record of every batch quarantined at or after
    ``since`` (aware), oldest first, and the records that carry no readable time.

    A batch quarantined more than once (again after a replay) is selected once, with its
    latest record; undecodable events (no batch id) are told apart by the coordinates of
    their original event (:func:`original_of`), so a replayed one is selected once too.
    """
    latest: dict[str, QuarantineEntry] = {}
    unreadable: list[QuarantineEntry] = []
    for entry in entries:
        at = entry.record.get("quarantined_at") if entry.record else None
        if not isinstance(at, datetime):
            unreadable.append(entry)
            continue
        if at.tzinfo is None:
            at = at.replace(tzinfo=timezone.utc)
        if at < since:
            continue
        key = original_of(entry, replay_of)
        known = latest.get(key)
        if known is None or _at(known) <= at:
            latest[key] = entry
    return sorted(latest.values(), key=_at), unreadable


def _at(entry: QuarantineEntry) -> datetime:
    at = entry.record["quarantined_at"] if entry.record else None
    assert isinstance(at, datetime)
    return at if at.tzinfo else at.replace(tzinfo=timezone.utc)


def read_admitted(
    settings: Settings,
    *,
    layer: str | None = None,
    timeout_s: float = 30.0,
    digests: dict[str, str] | None = None,
) -> dict[str, str]:
    """Batch id (header ``batch-id``) -> coordinates of its latest record on the admitted
    topic, read to partition EOF by a group-less reader; ``layer`` keeps that layer's
    records (by key). ``digests``, when given, receives batch id -> sha256 (hex) of that
    record's value (the event as admitted: :func:`check_not_admitted` tells a replay of
    the same batch from another batch published under the same id).

    Raises
    ------
    BrokerError
        When the topic does not exist or cannot be read to its end within ``timeout_s``.
    """

    topic = settings.topics.admitted
    out: dict[str, str] = {}
    for msg in read_topic(settings, topic, timeout_s=timeout_s):
        if layer is not None and (msg.key() or b"").decode("utf-8", "replace") != layer:
            continue
        headers = dict(msg.headers() or [])
        batch_id = (headers.get("batch-id") or b"").decode("utf-8", "replace")
        if batch_id:
            out[batch_id] = f"{topic}[{msg.partition()}]@{msg.offset()}"
            if digests is not None:
                digests[batch_id] = hashlib.sha256(msg.value() or b"").hexdigest()
    return out


def where_admitted(
    settings: Settings, batch_id: str | None, *, missing_ok: bool = False
) -> str | None:
    """The coordinates (``TOPIC[P]@O``) of batch ``batch_id``'s latest record on the
    admitted topic, or None (no such record, no batch id, or a ``PARTITION@OFFSET``).

    Raises
    ------
    BrokerError
        The admitted topic cannot be read (:func:`read_admitted`); with ``missing_ok`` the
        answer is None instead (``quarantine show`` of a quarantined batch still shows it).
    """
    if not batch_id or re.fullmatch(r"\d+@\d+", batch_id):
        return None
    try:
        return read_admitted(settings).get(batch_id)
    except BrokerError:
        if missing_ok:
            return None
        raise


def check_not_admitted(
    entry: QuarantineEntry,
    admitted: Mapping[str, str],
    digests: Mapping[str, str] | None = None,
) -> None:
    """Refuse to replay a batch that is already on the admitted topic.

    ``admitted`` maps batch ids to admitted coordinates and ``digests`` (optional) to the
    sha256 of the admitted event (:func:`read_admitted`): an admitted event other than
    this record's original is named as such (another batch published under the same batch
    id, or the same batch published again), not as this batch admitted already.

    Raises
    ------
    ContractGateError
        When ``entry``'s batch id is admitted; the message names where and ``--force``.
    """
    batch_id = entry.batch_id
    if not batch_id or batch_id not in admitted:
        return
    original = entry.record.get("original") if entry.record else None
    digest = (digests or {}).get(batch_id)
    if digest is not None and original and hashlib.sha256(original).hexdigest() != digest:
        raise ContractGateError(
            f"another event with batch id {one_line(batch_id, 200)} was admitted (at "
            f"{admitted[batch_id]}; its bytes differ from this record's original): a batch "
            "id names one batch. If it is this batch published again, it is admitted "
            "already; if not, publish the fixed batch under a new batch id (`batch publish "
            "--batch-id`). Not replayed; use --force to replay it anyway",
            field="--force",
            fix="publish the fixed batch under a new batch id (`batch publish --batch-id`), or "
            "use --force",
        )
    raise ContractGateError(
        f"batch {one_line(batch_id, 200)} was already admitted (at {admitted[batch_id]}); "
        "replaying it would admit it twice. Not replayed; use --force to replay it anyway",
        field="--force",
        fix="use --force to replay it anyway",
    )


def replay(settings: Settings, entry: QuarantineEntry, *, force: bool = False) -> tuple[int, int]:
    """Republish the entry's original event to the batches topic; returns its coordinates.

    Headers: ``replay-of`` (the batch id; for an undecodable event the coordinates of the
    original event, kept through replays) and ``replay-source`` (the quarantine record's
    coordinates); with ``force``, ``replay-force: 1``, which tells the worker to admit the
    replay even when a replay of the same batch was admitted before (otherwise it is
    quarantined as ``duplicate_replay``: a batch is admitted once).

    Raises
    ------
    ContractGateError
        When the record carries no original bytes (too large to carry, or undecodable).
    BrokerError
        When the event cannot be delivered.
    """
    if entry.record is None or not entry.record["original"]:
        raise ContractGateError(
            f"{entry.coordinates} carries no original event bytes, so it cannot be replayed"
            + (
                f"; the event is at {entry.record['source_topic']}"
                f"[{entry.record['source_partition']}]@{entry.record['source_offset']}"
                if entry.record
                else ""
            ),
            field="BATCH_ID",
            fix="republish the event from its source coordinates",
        )
    r = entry.record
    headers: list[tuple[str, str | bytes | None]] = [
        (
            REPLAY_OF,
            entry.batch_id
            or entry.headers.get(REPLAY_OF)
            or f"{r['source_partition']}@{r['source_offset']}",
        ),
        ("replay-source", entry.coordinates),
        *([(REPLAY_FORCE, "1")] if force else []),
    ]
    return produce_one(
        settings, settings.topics.batches, entry.layer, bytes(r["original"]), headers=headers
    )
