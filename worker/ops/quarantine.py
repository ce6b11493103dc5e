"""Operator tools for the quarantine topic: list, show and replay quarantined batches.

The topic is read by a group-less reader (``Settings.reader()``: assigned partitions, no
commits, ``read_committed``) from the beginning to *partition EOF* on every partition, as
the config bootstrap does (a ListOffsets watermark alone can be too low on some brokers,
DESIGN.md section 8); ``follow`` keeps reading after that.

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
import textwrap
import threading
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from worker.core._util.jsonsafe import dumps_json
from worker.core._util.text import clip
from worker.core.errors import ContractGateError, DecodeError
from worker.core.model import Batch
from worker.gate.route import REPLAY_FORCE, REPLAY_OF
from worker.io import codec
from worker.io.reports.text import brief, offender_lines
from worker.kafka.admin import produce_one, read_topic
from worker.kafka.schema_registry import codec_for, plain_value
from worker.kafka.settings import Settings
from worker.kafka.wire import schema_id_of

__all__ = [
    "QuarantineEntry",
    "check_not_admitted",
    "entries_since",
    "entry_batch",
    "entry_to_json",
    "find_entry",
    "original_of",
    "read_admitted",
    "read_quarantine",
    "render_entry",
    "render_line",
    "replay",
    "replay_headers",
    "table_rows",
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
    KafkaError
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
            "PARTITION@OFFSET)"
        )
    return found


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
    KafkaError
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
            f"another event with batch id {clip(batch_id, 200)} was admitted (at "
            f"{admitted[batch_id]}; its bytes differ from this record's original): a batch "
            "id names one batch. If it is this batch published again, it is admitted "
            "already; if not, publish the fixed batch under a new batch id (`batch publish "
            "--batch-id`). Not replayed; use --force to replay it anyway"
        )
    raise ContractGateError(
        f"batch {batch_id} was already admitted (at {admitted[batch_id]}); "
        "replaying it would admit it twice. Not replayed; use --force to replay it anyway"
    )


def _when(entry: QuarantineEntry) -> str:
    at = entry.record.get("quarantined_at") if entry.record else None
    if not isinstance(at, datetime):
        return "?"
    return at.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _broken(record: dict[str, Any]) -> list[str]:
    return [
        f"{r['version']}:{r['clause']}" if r.get("clause") else r["code"] for r in record["reasons"]
    ] or [record["reason_code"]]


def render_line(entry: QuarantineEntry) -> str:
    """One readable line: time, layer, batch id, what broke, diagnoses, coordinates."""
    if entry.record is None:
        return (
            f"?  {_text(entry.layer or '-')}  {_text(entry.batch_id or '-')}  undecodable "
            f"record: {entry.error}"
        )
    r = entry.record
    replay = "  replay" if entry.headers.get(REPLAY_OF) else ""
    line = (
        f"{_when(entry)}  {_text(entry.layer or '-')}  {_text(entry.batch_id or '-')}{replay}  "
        f"{', '.join(_broken(r))}"
    )
    if r["diagnoses"]:
        line += f"  [{'; '.join(r['diagnoses'])}]"
    return f"{line}  ({entry.partition}@{entry.offset})"


def _what(record: Mapping[str, Any]) -> str:
    """What broke, in words: ``v1.0:valid (1 invalid: Self-intersection[0.5 0.5])``, or the
    reason code and the head of its message."""
    parts = []
    for r in record["reasons"]:
        if r.get("clause"):
            parts.append(
                f"{r['version']}:{r['clause']} ({brief(None, r.get('measured'), r['message'], 60)})"
            )
        else:
            # the batch id is in its own column: show why, not "payload of batch <id> ..."
            message = re.sub(
                r"^(payload of )?batch \S+ (cannot be loaded: )?", "", str(r["message"])
            )
            parts.append(f"{r['code']} ({brief(None, None, message, 100)})")
    return "; ".join(parts) or record["reason_code"]


def table_rows(entries: Iterable[QuarantineEntry]) -> list[str]:
    """``quarantine tail``'s lines for ``entries``: ordered by quarantine time across
    partitions (records without a readable time last), columns aligned: time, layer,
    batch id, ``replay`` when the batch is a replay (header ``replay-of``), record
    coordinates ``partition@offset``, what broke in words, diagnoses."""
    rows = []
    for e in sorted(entries, key=_sort_key):
        if e.record is None:
            rows.append(
                (
                    "?",
                    _text(e.layer or "-"),
                    _text(e.batch_id or "-"),
                    "",
                    f"{e.partition}@{e.offset}",
                    f"undecodable record: {e.error}",
                )
            )
            continue
        replay = "replay" if e.headers.get(REPLAY_OF) else ""
        what = _what(e.record)
        if e.record["diagnoses"]:
            what += f"  [{'; '.join(e.record['diagnoses'])}]"
        rows.append(
            (
                _when(e),
                _text(e.layer or "-"),
                _text(e.batch_id or "-"),
                replay,
                f"{e.partition}@{e.offset}",
                what,
            )
        )
    if not rows:
        return []
    head = ("quarantined at", "layer", "batch", "replay", "record", "what broke")
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(5)]
    return [
        "  ".join(c.ljust(w) for c, w in zip(r[:5], widths, strict=True)) + "  " + r[5]
        for r in [head, *rows]
    ]


#: Characters of a layer or batch id shown in a table cell (both are a producer's).
MAX_CELL_CHARS = 64
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def _text(value: Any) -> str:
    """A producer's value fit for one table cell: decoded, control characters escaped
    (``\\x0a``: a newline or NUL in a forged layer broke the table and reached the
    terminal), clipped to :data:`MAX_CELL_CHARS`."""
    text = value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)
    escaped = _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text)
    return clip(escaped, MAX_CELL_CHARS)


def _sort_key(entry: QuarantineEntry) -> tuple[int, datetime, int, int]:
    at = entry.record.get("quarantined_at") if entry.record else None
    if not isinstance(at, datetime):
        return (1, datetime.min.replace(tzinfo=timezone.utc), entry.partition, entry.offset)
    at = at if at.tzinfo else at.replace(tzinfo=timezone.utc)
    return (0, at, entry.partition, entry.offset)


def _value(v: Any) -> str:
    return dumps_json(v, sort_keys=True, default=str)


def render_entry(entry: QuarantineEntry) -> str:
    """The full record: source, every reason with measured versus expected, diagnoses."""
    if entry.record is None:
        return f"{entry.coordinates}: undecodable quarantine record: {entry.error}"
    r = entry.record
    lines = [
        f"batch {entry.batch_id or '-'} of layer {entry.layer or '-'}: quarantined "
        f"{_when(entry)} by {r['worker_id']} ({r['reason_code']})",
        f"  record:   {entry.coordinates}",
        f"  source:   {r['source_topic']}[{r['source_partition']}]@{r['source_offset']}, "
        + (
            f"original {len(r['original'])} bytes (replayable)"
            if r["original"]
            else "original not carried (too large or empty): not replayable"
        ),
    ]
    if r["diagnoses"]:
        lines.append(f"  diagnoses: {'; '.join(r['diagnoses'])}")
    lines.append("  reasons:")
    for reason in r["reasons"]:
        head = (
            f"{reason['version']} ({reason['mode']}) {reason['clause']}"
            if reason.get("clause")
            else reason["code"]
        )
        lines.extend(_wrap(f"{head}: {reason['message']}", "    ", "      "))
        if isinstance(reason.get("offenders"), dict):
            for line in offender_lines(reason["offenders"], kind=_kind(reason)):
                lines.extend(_wrap(line, "      ", "        "))
        if reason.get("measured") is not None or reason.get("expected") is not None:
            lines.append(f"      measured: {_value(reason['measured'])}")
            lines.append(f"      expected: {_value(reason['expected'])}")
    return "\n".join(lines)


def _kind(reason: Mapping[str, Any]) -> str:
    """The clause kind of a reason, as far as its measured value tells (the record does not
    carry kinds): ``domain`` when it measured unknown codes."""
    m = reason.get("measured")
    return "domain" if isinstance(m, dict) and "unknown" in m else ""


def _wrap(text: str, first: str, rest: str) -> list[str]:
    return textwrap.wrap(
        text,
        100,
        initial_indent=first,
        subsequent_indent=rest,
        break_long_words=False,
        break_on_hyphens=False,
    ) or [first]


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
            "be shown (the source coordinates locate the event)"
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
            f"to show ({exc})"
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
    KafkaError
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
            )
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
