"""Output records of an outcome: admitted, quarantine, evaluation and per-major records.

Pure: no Kafka client. :func:`worker.gate.route.route` asks :func:`records_of` for the
records of a decision; replays and the checkpoint replace them by one quarantine record
(``duplicate_replay``, ``record_too_large``). Sizes as the producer counts them.

:class:`Source`, :class:`OutRecord` and :class:`Outcome` are built once or twice per event:
their ``__init__`` writes the fields into the instance's ``__dict__`` (0.25 us against a
frozen dataclass's 0.6: one ``object.__setattr__`` call per field); they stay frozen.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime

from worker import __version__
from worker.core._util.text import clip
from worker.core.lifecycle.read_paths import passing_majors
from worker.core.model import Batch, Decision, QuarantineReason
from worker.io import codec
from worker.kafka.settings import MAX_MESSAGE_BYTES, Topics

__all__ = [
    "HEADER_FRAMING_BYTES", "RECORD_FRAMING_BYTES", "REPLAY_FORCE", "REPLAY_OF", "UNKNOWN_LAYER",
    "Headers", "OutRecord", "Outcome", "Source", "failed", "per_major_records",
    "quarantine_record", "record_bytes", "records_of", "unexpected_failure",
]  # fmt: skip


Headers = list[tuple[str, bytes]]
_InHeaders = tuple[tuple[str, bytes | None], ...]  # a consumed record's

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
    headers: _InHeaders = ()

    def __init__(self, topic: str, partition: int, offset: int, key: bytes | None,
                 value: bytes | None, headers: _InHeaders = ()) -> None:  # fmt: skip
        d = self.__dict__  # the fields written at once (see the module docstring)
        d["topic"], d["partition"], d["offset"] = topic, partition, offset
        d["key"], d["value"], d["headers"] = key, value, headers


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

    def __init__(self, topic: str, key: str | bytes | None, value: bytes, headers: Headers,
                 per_major: bool = False) -> None:  # fmt: skip
        d = self.__dict__
        d["topic"], d["key"], d["value"] = topic, key, value
        d["headers"], d["per_major"] = headers, per_major


#: The label of outcomes whose layer has no active contract version (or no layer at all).
UNKNOWN_LAYER = "unknown"


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
    #: :func:`worker.gate.route.counted_layer`: set by :func:`worker.gate.route.route`
    layer_label: str = UNKNOWN_LAYER

    def __init__(self, source: Source, layer: str | None, batch_id: str | None,
                 decision: Decision, records: tuple[OutRecord, ...], duration_s: float,
                 layer_label: str = UNKNOWN_LAYER) -> None:  # fmt: skip
        d = self.__dict__
        d["source"], d["layer"], d["batch_id"], d["decision"] = source, layer, batch_id, decision
        d["records"], d["duration_s"], d["layer_label"] = records, duration_s, layer_label


def _source_headers(source: Source) -> Headers:
    return [
        ("source-topic", source.topic.encode()),
        ("source-partition", str(source.partition).encode()),
        ("source-offset", str(source.offset).encode()),
    ]


def _replay_of(source: Source) -> Headers:
    """The input's ``replay-of`` header, carried forward to the output record."""
    return [(k, v) for k, v in source.headers if k == REPLAY_OF and v is not None]


def quarantine_record(
    source: Source,
    layer: str | None,
    batch_id: str | None,
    decision: Decision,
    topics: Topics,
    now: datetime,
    worker_id: str,
    max_record_bytes: int = MAX_MESSAGE_BYTES,
) -> OutRecord:
    """The quarantine record of a decision, at most ``max_record_bytes`` (key, value, headers).

    The original event bytes are carried when the record still fits; else it is left out
    (the ``source-*`` headers locate it). The key is the layer, or for an undecodable event
    the source key byte for byte.

    Returns
    -------
    OutRecord
        To ``topics.quarantine``, headers ``dlq.reason``, ``dlq.message``, ``dlq.broken``,
        ``batch-id``, ``layer``, the source coordinates and the ``replay-of`` carried.
    """
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
    if original and record_bytes(record) > max_record_bytes:
        # the rest of the record left no room for the original
        record = replace(record, value=encode(b""))
    return record


def failed(code: str, message: str) -> Decision:
    """A quarantined decision with one reason (``code``, ``message``) and no verdicts."""
    return Decision("quarantined", (), (QuarantineReason(code=code, message=message),))


#: Bytes counted for a record's framing beside its key, value and headers, and for each
#: header's: at least what librdkafka counts against ``message.max.bytes`` (a review
#: measured a record of 8 headers accepted at 53 bytes above key, value and headers).
RECORD_FRAMING_BYTES, HEADER_FRAMING_BYTES = 64, 8


def record_bytes(record: OutRecord) -> int:
    """Bytes of one output record as the producer counts them, at most: key, value and
    headers with their framing."""
    key = record.key.encode() if isinstance(record.key, str) else (record.key or b"")
    headers = sum(len(k) + len(v or b"") + HEADER_FRAMING_BYTES for k, v in record.headers)
    return RECORD_FRAMING_BYTES + len(key) + len(record.value or b"") + headers


def records_of(
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
            quarantine_record(
                source, layer, batch_id, decision, topics, now, worker_id, max_record_bytes
            )
        )
    return records


def _admitted_headers(source: Source, batch: Batch, decision: Decision) -> Headers:
    """Headers of an admitted record: batch id, layer, the enforcing versions passed, the
    observing results, the source coordinates (and ``replay-of``)."""
    observing = ";".join([f"{v.version}={'pass' if v.passed else 'break'}"
                          for v in decision.verdicts if v.mode == "observing"])  # fmt: skip
    headers = [
        ("batch-id", batch.batch_id.encode()),
        ("layer", batch.layer.encode()),
        ("contract-versions-enforced", ",".join(decision.enforcing_passed).encode()),
        ("contract-versions-observing", observing.encode()),
        *_source_headers(source),
    ]
    return headers + _replay_of(source) if source.headers else headers


def per_major_records(
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


def unexpected_failure(batch: Batch | None, exc: Exception) -> Decision:
    """The decision of an event whose payload loading (``payload_error``) or decoding
    raised what no reader error is. Decoding raises only :class:`DecodeError` for bad
    bytes, so anything else there is the gate's fault (``gate_error``: replay it once the
    gate is fixed), not "a payload that cannot be loaded" of an event that names none."""
    if batch is not None and batch.payload_uri and not batch.geometries_wkb:
        return failed("payload_error", f"payload of batch {batch.batch_id} cannot be loaded: {exc}")
    what, batch_id = clip(f"{type(exc).__name__}: {exc}", 500), batch.batch_id if batch else "?"
    return failed("gate_error", f"gate error (contract-gate {__version__}) decoding batch "
                  f"{clip(batch_id, 200)}: {what}; the gate failed, not the event: it is "
                  "quarantined, replay it once the gate is fixed")  # fmt: skip
