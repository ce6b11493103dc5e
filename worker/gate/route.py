"""Route one consumed event: decode -> load features -> evaluate -> output records.

No Kafka client here: the input is a :class:`Source` (topic, partition, offset, key,
value) and the output an :class:`Outcome` with the records the pipeline writes in its
transaction. Bad input never raises: an undecodable event, a payload that cannot be
loaded and a layer without an active contract each become a quarantine record with a
specific reason (``decode_error``; ``payload_not_allowed``, ``payload_unavailable``,
``payload_corrupt``, ``payload_too_large`` or else ``payload_error``;
``no_active_contract``).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import TYPE_CHECKING, Any

from worker.core._util.text import clip
from worker.core.chunks import ChunkedBatch, evaluate_chunked
from worker.core.errors import DecodeError, PayloadError
from worker.core.evaluate import evaluate
from worker.core.lifecycle.read_paths import opts_in, passing_majors
from worker.core.model import ActiveVersion, Batch, Decision, QuarantineReason
from worker.io import codec
from worker.io.payloads import derive_schema, load_payload
from worker.kafka.settings import MAX_MESSAGE_BYTES, Topics

if TYPE_CHECKING:
    from worker.kafka.wire import RegistryCodec

__all__ = [
    "REPLAY_OF",
    "OutRecord",
    "Outcome",
    "Source",
    "largest_record_bytes",
    "record_too_large",
    "replay_forced",
    "route",
]

Headers = list[tuple[str, bytes]]

#: Input header of a replayed event (``contract-gate quarantine replay``), carried forward
#: to its admitted or quarantine record.
REPLAY_OF = "replay-of"

#: Input header of a replay forced by its operator (``quarantine replay --force``): admitted
#: even when a replay of the same batch was admitted before (no ``duplicate_replay``).
REPLAY_FORCE = "replay-force"


@dataclass(frozen=True)
class Source:
    """Coordinates, content and headers of one consumed record."""

    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...] = ()


@dataclass(frozen=True)
class OutRecord:
    """One record to produce: topic, key (the layer), value bytes and headers.

    ``per_major`` marks a record for a per-major read path (``read_paths: per_major``):
    the pipeline leaves it out, with an error in the log, while its topic does not exist.
    """

    topic: str
    key: str | bytes | None
    value: bytes
    headers: Headers
    per_major: bool = False


#: The label of outcomes whose layer has no active contract version (or no layer at all).
UNKNOWN_LAYER = "unknown"


def counted_layer(
    layer: str | None, key: bytes | None, active_versions: Callable[[str], Sequence[Any]]
) -> str:
    """The layer an outcome is counted under: the decoded layer, else (undecodable event)
    the source key as ``quarantine tail`` shows it, when that layer has active contract
    versions; else :data:`UNKNOWN_LAYER`.

    Event layers and keys are a producer's: counting them as they come would let forged
    layers grow the metric series and ``/status`` without bound (a fresh-user session
    made 200 series with 200 events), so only the layers the config topic gives a
    contract are labels.
    """
    name = layer or (key.decode("utf-8", "replace") if key else None)
    return name if name and active_versions(name) else UNKNOWN_LAYER


@dataclass(frozen=True)
class Outcome:
    """The routing result of one event: its decision and the records to write."""

    source: Source
    layer: str | None
    batch_id: str | None
    decision: Decision
    records: tuple[OutRecord, ...]
    duration_s: float

    #: the layer to count the outcome under (metrics labels, ``/status`` counts), see
    #: :func:`counted_layer`: set by :func:`route`
    layer_label: str = UNKNOWN_LAYER


def _source_headers(source: Source) -> Headers:
    return [
        ("source-topic", source.topic.encode()),
        ("source-partition", str(source.partition).encode()),
        ("source-offset", str(source.offset).encode()),
    ]


def _replay_of(source: Source) -> Headers:
    """The input's ``replay-of`` header, carried forward to the output record."""
    return [(k, v) for k, v in source.headers if k == REPLAY_OF and v is not None]


def _quarantine(
    source: Source,
    layer: str | None,
    batch_id: str | None,
    decision: Decision,
    topics: Topics,
    now: datetime,
    worker_id: str,
    max_record_bytes: int = MAX_MESSAGE_BYTES,
) -> OutRecord:
    reason_code = decision.reasons[0].code if decision.reasons else "contract_break"
    original = source.value or b""
    if len(original) > max_record_bytes - min(1024 * 1024, max_record_bytes // 2):
        original = b""  # too large to carry twice; the source coordinates locate it

    def encode(original: bytes) -> bytes:
        return codec.encode_quarantine(
            decision,
            batch_id=batch_id,
            layer=layer,
            source_topic=source.topic,
            source_partition=source.partition,
            source_offset=source.offset,
            original=original,
            quarantined_at=now,
            worker_id=worker_id,
        )

    value = encode(original)
    broken = sorted({f"{r.version}:{r.clause}" for r in decision.reasons if r.clause})
    headers = [
        ("dlq.reason", reason_code.encode()),
        ("dlq.message", (decision.reasons[0].message if decision.reasons else "").encode()[:1000]),
        ("dlq.broken", ",".join(broken).encode()),
        ("batch-id", (batch_id or "").encode()),
        ("layer", (layer or "").encode()),
        *_source_headers(source),
        *_replay_of(source),  # a replayed event quarantined again names its original
    ]
    key = layer if layer is not None else source.key  # undecodable: source key byte for byte
    record = OutRecord(topics.quarantine, key, value, headers)
    if original and _record_bytes(record) > max_record_bytes:
        # the rest of the record left no room for the original
        record = replace(record, value=encode(b""))
    return record


def _failed(code: str, message: str) -> Decision:
    return Decision("quarantined", (), (QuarantineReason(code=code, message=message),))


def route(
    source: Source,
    active_versions: Callable[[str], Sequence[ActiveVersion]],
    topics: Topics,
    *,
    now: datetime,
    worker_id: str,
    payload_loader: Callable[[str, Batch], Batch | ChunkedBatch] | None = None,
    registry: RegistryCodec | None = None,
    max_record_bytes: int = MAX_MESSAGE_BYTES,
) -> Outcome:
    """Decide one event and build its output records.

    Parameters
    ----------
    source : Source
        The consumed record.
    active_versions : callable
        ``layer -> active versions`` (the registry's current view).
    topics : Topics
        Output topic names.
    now : datetime
        Evaluation time (aware, UTC), used by freshness and record timestamps.
    worker_id : str
        Written into quarantine records.
    payload_loader : callable, optional
        ``(payload_uri, batch) -> batch with features``, or a
        :class:`~worker.core.chunks.ChunkedBatch` evaluated chunk by chunk (the worker
        passes :func:`worker.io.payloads.load_payload_chunked`: GeoParquet payloads in
        bounded memory; a read error met while evaluating is the payload's reason); default
        :func:`worker.io.payloads.load_payload` with no payload root, which refuses every
        URI (``payload_not_allowed``): the worker passes one with its configured roots.
    registry : RegistryCodec, optional
        Read the event in the Schema Registry wire format (writer schema by id); a wrong
        magic byte, an unknown id or a failed lookup is a ``decode_error``. Default: plain
        Avro. Output records are framed by the pipeline when it produces them.
    max_record_bytes : int
        Largest output record (key, value, headers), bytes: a batch whose records would
        be larger is quarantined (``record_too_large``) with a record that fits
        (:meth:`worker.kafka.settings.Settings.max_record_bytes`; default
        :data:`~worker.kafka.settings.MAX_MESSAGE_BYTES`).

    Returns
    -------
    Outcome
        Admitted: the original bytes to ``topics.admitted`` plus one evaluation record per
        version. Quarantined: a quarantine record plus the evaluation records. For a
        layer with ``read_paths: per_major``, also the original bytes to
        ``topics.admitted_for(layer, major)`` for every enforcing major that passed.
    """
    started = time.perf_counter()
    batch: Batch | None = None
    chunked: ChunkedBatch | None = None
    per_major = False
    layer: str | None = None
    salvaged_id: str | None = None
    versions: Sequence[ActiveVersion] = ()
    try:
        if source.value is None:
            raise DecodeError("event has no value (null record)")
        if registry is None:
            batch = codec.decode_batch(source.value)
        else:
            batch = registry.decode_batch(source.value, source.topic)
        layer = batch.layer
        if batch.payload_uri and not batch.geometries_wkb:
            loaded = (payload_loader or load_payload)(batch.payload_uri, batch)
            chunked = loaded if isinstance(loaded, ChunkedBatch) else None
            batch = loaded.batch if isinstance(loaded, ChunkedBatch) else loaded
        else:
            # the schema clause checks the columns sent, not the producer's declaration
            # (found by a data-path review: a declared integer column carrying strings, an
            # undeclared extra column and a missing one all passed)
            batch = replace(batch, schema_fields=derive_schema(batch.attributes))
    except DecodeError as exc:
        decision = _failed("decode_error", f"undecodable batch-arrival event: {exc}")
        layer, salvaged_id = _salvage(
            source.value,
            codec.decode_event if registry is None else registry.event_decoder(source.topic),
        )
    except PayloadError as exc:  # its reason code; the message names the URI, not content
        decision = _failed(
            exc.reason,
            f"payload of batch {batch.batch_id if batch else '?'} cannot be loaded: {exc}",
        )
    except Exception as exc:  # payload loading must never crash the worker
        decision = _failed(
            "payload_error",
            f"payload of batch {batch.batch_id if batch else '?'} cannot be loaded: {exc}",
        )
    else:
        versions = active_versions(batch.layer)
        if not versions:
            decision = _failed(
                "no_active_contract",
                f"layer {batch.layer!r} has no active contract version; publish one with "
                "`contract-gate contract publish`",
            )
        elif chunked is not None:
            try:
                decision = evaluate_chunked(chunked, versions, now=now)
                per_major = opts_in(v.contract for v in versions)
            except PayloadError as exc:
                decision = _failed(
                    exc.reason, f"payload of batch {batch.batch_id} cannot be read: {exc}"
                )
            except Exception as exc:  # reading the payload must never crash the worker
                decision = _failed(
                    "payload_error", f"payload of batch {batch.batch_id} cannot be read: {exc}"
                )
        else:
            decision = evaluate(batch, versions, now=now)
            per_major = opts_in(v.contract for v in versions)
    batch_id = batch.batch_id if batch else salvaged_id
    duration_s = time.perf_counter() - started

    if decision.admitted and source.value is not None and len(source.value) > max_record_bytes:
        decision = Decision(
            "quarantined",
            decision.verdicts,
            (
                QuarantineReason(
                    code="record_too_large",
                    message=f"the event is {len(source.value)} bytes, above the "
                    f"{max_record_bytes} bytes the admitted topic takes; send it by "
                    "reference (payload_uri) instead",
                ),
            ),
            decision.diagnoses,
        )
    try:
        records = _records(
            source, batch, layer, batch_id, decision, topics, now, worker_id, max_record_bytes
        )
        if per_major and batch is not None:
            records += _per_major_records(source, batch, decision, topics, max_record_bytes)
    except Exception as exc:  # a record we cannot build must not stop the partition
        decision = _failed("encode_error", f"output records cannot be encoded: {exc}")
        records = [
            _quarantine(source, layer, None, decision, topics, now, worker_id, max_record_bytes)
        ]
    oversized = [r for r in records if _record_bytes(r) > max_record_bytes]
    if oversized:
        # a record the broker refuses would abort the transaction and the batch would be
        # consumed again, forever: quarantine it with a record that surely fits
        r = oversized[0]
        decision = _failed(
            "record_too_large",
            f"the {r.topic} record for this batch would be {_record_bytes(r)} bytes, above "
            f"the {max_record_bytes} bytes a record may take; the original is not carried "
            "(the source coordinates locate it)",
        )
        small = replace(source, value=b"")
        records = [
            _quarantine(small, layer, batch_id, decision, topics, now, worker_id, max_record_bytes)
        ]
    return Outcome(
        source,
        layer,
        batch_id,
        decision,
        tuple(records),
        duration_s,
        # the versions evaluated already say the layer has a contract: no second lookup
        layer if versions and layer else counted_layer(layer, source.key, active_versions),
    )


#: Bytes counted for a record's framing beside its key, value and headers, and for each
#: header's: at least what librdkafka counts against ``message.max.bytes`` (a review
#: measured a record of 8 headers accepted at 53 bytes above key, value and headers).
RECORD_FRAMING_BYTES, HEADER_FRAMING_BYTES = 64, 8


def _record_bytes(record: OutRecord) -> int:
    """Bytes of one output record as the producer counts them, at most: key, value and
    headers with their framing."""
    key = record.key.encode() if isinstance(record.key, str) else (record.key or b"")
    headers = sum(len(k) + len(v or b"") + HEADER_FRAMING_BYTES for k, v in record.headers)
    return RECORD_FRAMING_BYTES + len(key) + len(record.value or b"") + headers


def _records(
    source: Source,
    batch: Batch | None,
    layer: str | None,
    batch_id: str | None,
    decision: Decision,
    topics: Topics,
    now: datetime,
    worker_id: str,
    max_record_bytes: int = MAX_MESSAGE_BYTES,
) -> list[OutRecord]:
    """The evaluation records and the admitted or quarantine record of one decision."""
    records: list[OutRecord] = []
    for verdict in decision.verdicts:
        if batch is None:  # verdicts exist only for a decoded batch
            raise ValueError("a verdict without a decoded batch")
        records.append(
            OutRecord(
                topics.evaluations,
                batch.layer,
                codec.encode_evaluation(
                    verdict,
                    batch_id=batch.batch_id,
                    data_time=batch.data_time,
                    evaluated_at=now,
                    source_topic=source.topic,
                    source_partition=source.partition,
                    source_offset=source.offset,
                ),
                [("batch-id", batch.batch_id.encode())],
            )
        )
    if decision.admitted:
        if batch is None or source.value is None:
            raise ValueError("an admitted decision without a decoded batch")
        headers = _admitted_headers(source, batch, decision)
        records.append(OutRecord(topics.admitted, batch.layer, source.value, headers))
    else:
        records.append(
            _quarantine(source, layer, batch_id, decision, topics, now, worker_id, max_record_bytes)
        )
    return records


def _admitted_headers(source: Source, batch: Batch, decision: Decision) -> Headers:
    """Headers of an admitted record: batch id, layer, the enforcing versions passed, the
    observing results, the source coordinates (and ``replay-of``)."""
    observing = ";".join(
        f"{v.version}={'pass' if v.passed else 'break'}"
        for v in decision.verdicts
        if v.mode == "observing"
    )
    return [
        ("batch-id", batch.batch_id.encode()),
        ("layer", batch.layer.encode()),
        ("contract-versions-enforced", ",".join(decision.enforcing_passed).encode()),
        ("contract-versions-observing", observing.encode()),
        *_source_headers(source),
        *_replay_of(source),
    ]


def _per_major_records(
    source: Source,
    batch: Batch,
    decision: Decision,
    topics: Topics,
    max_record_bytes: int = MAX_MESSAGE_BYTES,
) -> list[OutRecord]:
    """The original bytes to the admitted topic of every enforcing major whose verdict
    passed (:func:`worker.core.lifecycle.read_paths.passing_majors`), with the admitted record's
    headers, whether or not the shared topic admits the batch."""
    value = source.value
    if value is None or len(value) > max_record_bytes:
        return []
    headers = _admitted_headers(source, batch, decision)
    return [
        OutRecord(topics.admitted_for(batch.layer, m), batch.layer, value, headers, per_major=True)
        for m in passing_majors(decision.verdicts)
    ]


def _salvage(
    value: bytes | None, decode_event: Callable[[bytes], Mapping[str, object]]
) -> tuple[str | None, str | None]:
    """``(layer, batch_id)`` of an event whose Avro record parses but does not make a
    valid batch (e.g. neither features nor payload_uri), so its quarantine record can be
    found by batch id; ``(None, None)`` when even the record does not parse."""
    if value is None:
        return None, None
    try:
        record = decode_event(value)
    except Exception:
        return None, None
    layer, batch_id = record.get("layer"), record.get("batch_id")
    return (
        layer if isinstance(layer, str) else None,
        batch_id if isinstance(batch_id, str) else None,
    )


def replay_forced(source: Source) -> bool:
    """Whether a consumed record carries ``replay-force: 1`` (:data:`REPLAY_FORCE`)."""
    return any(key == REPLAY_FORCE and value == b"1" for key, value in source.headers)


def replay_of(source: Source) -> str | None:
    """The ``replay-of`` header of a consumed record (the replayed original), or None."""
    for key, value in source.headers:
        if key == REPLAY_OF and value:
            return value.decode("utf-8", "replace")
    return None


def duplicate_replay(
    outcome: Outcome,
    original: str,
    topics: Topics,
    *,
    now: datetime,
    worker_id: str,
    max_record_bytes: int = MAX_MESSAGE_BYTES,
) -> Outcome:
    """The outcome of a replay whose original was already admitted: one quarantine
    record (``duplicate_replay``, at most ``max_record_bytes``: without the original when
    it would not fit), no evaluation records (the batch was judged already)."""
    decision = _failed(
        "duplicate_replay",
        f"batch {outcome.batch_id or '?'} is a replay of {clip(original, 200)}, which was "
        "already admitted after another replay; a batch is admitted once",
    )
    record = _quarantine(
        outcome.source,
        outcome.layer,
        outcome.batch_id,
        decision,
        topics,
        now,
        worker_id,
        max_record_bytes,
    )
    return replace(outcome, decision=decision, records=(record,))


def record_too_large(
    outcome: Outcome,
    topics: Topics,
    *,
    record_bytes: int,
    limit_bytes: int,
    error: str,
    now: datetime,
    worker_id: str,
) -> Outcome:
    """The outcome of an event whose output records Kafka refused as too large (the
    producer's ``message.max.bytes`` or the broker's limit): one ``record_too_large``
    quarantine record naming both sizes, without the original (the source coordinates
    locate it in the batches topic) and without evaluation records.

    ``record_bytes`` is the largest of the event's records (key, value and headers),
    ``limit_bytes`` the producer's ``message.max.bytes``, ``error`` Kafka's error text.
    """
    decision = _failed(
        "record_too_large",
        f"the largest output record of batch {clip(outcome.batch_id or '?', 200)} is "
        f"{record_bytes} bytes; Kafka refused it ({clip(error, 200)}; the producer's "
        f"message.max.bytes is {limit_bytes} bytes, a broker or topic may take less); the "
        "original is not carried (the source coordinates locate it)",
    )
    small = replace(outcome.source, value=b"")
    record = _quarantine(small, outcome.layer, outcome.batch_id, decision, topics, now, worker_id)
    return replace(outcome, decision=decision, records=(record,))


def largest_record_bytes(outcome: Outcome) -> int:
    """Bytes of the largest output record of ``outcome`` (:func:`_record_bytes`)."""
    return max((_record_bytes(r) for r in outcome.records), default=0)
