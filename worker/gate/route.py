"""Route one consumed event: decode -> load features -> evaluate -> output records.

No Kafka client here: a :class:`Source` in, an :class:`Outcome` out, with the records the
checkpoint writes in its transaction (built by :mod:`worker.gate.records`). Bad input
never raises: an undecodable event, a payload that cannot be loaded and a layer without an
active contract each become a quarantine record with a specific reason (``decode_error``;
``payload_not_allowed``, ``payload_unavailable``, ``payload_corrupt``, ``payload_too_large``
or else ``payload_error``; ``no_active_contract``; ``contract_history_broken`` for a layer
whose contract history on the config topic is broken:
:class:`worker.core.lifecycle.config_events.BrokenLayer`).
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Executor
from dataclasses import dataclass, replace
from datetime import datetime
from typing import TYPE_CHECKING, Any

from worker.core.chunks import ChunkedBatch, evaluate_chunked
from worker.core.columns import derive_schema
from worker.core.errors import DecodeError, PayloadError
from worker.core.evaluate import evaluate
from worker.core.lifecycle.read_paths import opts_in
from worker.core.model import ActiveVersion, Batch, Decision, QuarantineReason
from worker.gate.records import (
    REPLAY_FORCE,
    REPLAY_OF,
    UNKNOWN_LAYER,
    Outcome,
    OutRecord,
    Source,
    failed,
    per_major_records,
    quarantine_record,
    record_bytes,
    records_of,
    unexpected_failure,
)
from worker.io import codec
from worker.io.codec.read_errors import salvage
from worker.io.payloads import load_payload, load_payload_chunked
from worker.kafka.protocols import MessageLike
from worker.kafka.settings import MAX_MESSAGE_BYTES, Settings, Topics

if TYPE_CHECKING:
    from worker.kafka.wire import RegistryCodec

__all__ = [
    "REPLAY_FORCE",
    "REPLAY_OF",
    "UNKNOWN_LAYER",
    "OutRecord",
    "Outcome",
    "Router",
    "Source",
    "counted_layer",
    "payload_loader",
    "route",
]


def counted_layer(
    layer: str | None, key: bytes | None, active_versions: Callable[[str], Sequence[Any]]
) -> str:
    """The layer an outcome is counted under: the decoded layer, else (undecodable event)
    the source key, when that layer has active contract versions; else
    :data:`UNKNOWN_LAYER` (forged layers must not grow the metric series without bound)."""
    name = layer or (key.decode("utf-8", "replace") if key else None)
    return name if name and active_versions(name) else UNKNOWN_LAYER


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
    chunk_pool: tuple[Executor | None, int] = (None, 1),
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
        ``(payload_uri, batch) -> batch with features`` or a
        :class:`~worker.core.chunks.ChunkedBatch` (the worker's: :func:`payload_loader`);
        default :func:`worker.io.payloads.load_payload`, which refuses every URI.
    registry : RegistryCodec, optional
        Read the event in the Schema Registry wire format (a wrong magic byte, an unknown
        id or a failed lookup is a ``decode_error``); default plain Avro (output records
        are framed by the checkpoint).
    max_record_bytes : int
        Largest output record (key, value, headers), bytes: a batch whose records would
        be larger is quarantined (``record_too_large``) with a record that fits
        (:meth:`worker.kafka.settings.Settings.max_record_bytes`; default
        :data:`~worker.kafka.settings.MAX_MESSAGE_BYTES`).
    chunk_pool : (Executor or None, int)
        The threads measuring a chunked payload's chunks and the most chunks in flight
        (:func:`~worker.core.chunks.evaluate_chunked`); default: the routing thread alone.

    Returns
    -------
    Outcome
        Admitted: the original bytes to ``topics.admitted`` plus one evaluation record per
        version. Quarantined: a quarantine record plus the evaluation records. For a
        layer with ``read_paths: per_major``, also the original bytes to
        ``topics.admitted_for(layer, major)`` for every enforcing major that passed.
    """
    started = time.perf_counter()
    decoded = decode_source(source, payload_loader, registry)
    versions: Sequence[ActiveVersion] = ()
    if decoded.failed is None and decoded.batch is not None:
        versions = active_versions(decoded.batch.layer)
    decision, per_major = decide_alone(decoded, versions, now, chunk_pool)
    return outcome_of(source, decoded, decision, per_major, versions, active_versions, topics,
                      now=now, worker_id=worker_id, max_record_bytes=max_record_bytes,
                      duration_s=time.perf_counter() - started)  # fmt: skip


@dataclass(frozen=True)
class Decoded:
    """What decoding one consumed record gave (:func:`decode_source`): the batch (with
    features, or None when undecodable), its chunks when read by reference, the layer,
    the batch id, and the failure decision when the event cannot be evaluated."""

    batch: Batch | None
    chunked: ChunkedBatch | None
    layer: str | None
    batch_id: str | None
    failed: Decision | None

    def __init__(self, batch: Batch | None, chunked: ChunkedBatch | None, layer: str | None,
                 batch_id: str | None, failed: Decision | None) -> None:  # fmt: skip
        d = self.__dict__  # written at once, as records.Source's
        d["batch"], d["chunked"], d["layer"] = batch, chunked, layer
        d["batch_id"], d["failed"] = batch_id, failed


def decode_source(
    source: Source,
    payload_loader: Callable[[str, Batch], Batch | ChunkedBatch] | None = None,
    registry: RegistryCodec | None = None,
    decoded: Batch | Exception | None = None,
) -> Decoded:
    """Decode ``source`` and load its payload (see :func:`route`); never raises: an
    undecodable event or a payload that cannot be loaded gives :attr:`Decoded.failed`.
    ``decoded``: the Batch of ``source``'s value (an inline one's schema derived), or what
    decoding it raised, when decoded already (``batches_from_events``, ``derive_schemas``)."""
    batch: Batch | None = None
    chunked: ChunkedBatch | None = None
    layer: str | None = None
    salvaged_id: str | None = None
    try:
        batch = _decoded_batch(source, registry, decoded)
        layer = batch.layer
        if batch.payload_uri and not batch.geometries_wkb:
            loaded = (payload_loader or load_payload)(batch.payload_uri, batch)
            chunked = loaded if isinstance(loaded, ChunkedBatch) else None
            batch = loaded.batch if isinstance(loaded, ChunkedBatch) else loaded
        elif decoded is None:
            # the schema clause checks the columns sent, not the producer's declaration
            # (checked against the declaration, a declared integer column carrying strings,
            # an undeclared extra column and a missing one all passed)
            batch = replace(batch, schema_fields=derive_schema(batch.attributes))
    except DecodeError as exc:
        decision = failed("decode_error", f"undecodable batch-arrival event: {exc}")
        layer, salvaged_id = salvage(
            source.value,
            codec.decode_event if registry is None else registry.event_decoder(source.topic),
        )
        return Decoded(None, None, layer, salvaged_id, decision)
    except PayloadError as exc:  # its reason code; the message names the URI, not content
        decision = failed(
            exc.reason,
            f"payload of batch {batch.batch_id if batch else '?'} cannot be loaded: {exc}",
        )
    except Exception as exc:  # neither loading nor decoding may crash the worker
        decision = unexpected_failure(batch, exc)
    else:
        return Decoded(batch, chunked, layer, batch.batch_id, None)
    return Decoded(batch, None, layer, batch.batch_id if batch else None, decision)


def _decoded_batch(
    source: Source, registry: RegistryCodec | None, decoded: Batch | Exception | None
) -> Batch:
    """The Batch of ``source``'s value (:func:`decode_source`); raises what decoding raised."""
    if source.value is None:
        raise DecodeError("event has no value (null record)")
    if decoded is not None:  # a Batch, or what decoding it raised
        if isinstance(decoded, Exception):
            raise decoded
        return decoded
    if registry is None:
        return codec.decode_batch(source.value)
    return registry.decode_batch(source.value, source.topic)


def refusal(batch: Batch, versions: Sequence[ActiveVersion]) -> Decision | None:
    """The decision of a batch whose layer cannot be evaluated (a broken contract
    history, no active version), else None."""
    history_break = getattr(versions, "history_break", None)  # a BrokenLayer: fail closed
    if history_break:
        return failed("contract_history_broken", history_break)
    if not versions:
        return failed(
            "no_active_contract",
            f"layer {batch.layer!r} has no active contract version; publish one with "
            "`contract-gate contract publish`",
        )
    return None


def decide_alone(
    decoded: Decoded,
    versions: Sequence[ActiveVersion],
    now: datetime,
    chunk_pool: tuple[Executor | None, int] = (None, 1),
) -> tuple[Decision, bool]:
    """The decision of one decoded event against its layer's ``versions`` (see
    :func:`route`), and whether its admitted copies go to the per-major topics too."""
    batch, chunked = decoded.batch, decoded.chunked
    if decoded.failed is not None or batch is None:
        return decoded.failed or failed("decode_error", "undecodable batch-arrival event"), False
    decision = refusal(batch, versions)
    if decision is not None:
        return decision, False
    if chunked is not None:
        decision, read = _evaluate_chunked(batch, chunked, versions, now, chunk_pool)
        return decision, read and opts_in(v.contract for v in versions)
    return evaluate(batch, versions, now=now), opts_in(v.contract for v in versions)


def _evaluate_chunked(
    batch: Batch,
    chunked: ChunkedBatch,
    versions: Sequence[ActiveVersion],
    now: datetime,
    chunk_pool: tuple[Executor | None, int],
) -> tuple[Decision, bool]:
    """The decision of a payload read in chunks, and whether it could be read."""
    try:
        pool, in_flight = chunk_pool
        d = evaluate_chunked(chunked, versions, now=now, executor=pool, in_flight=in_flight)
        return d, True
    except PayloadError as exc:
        return failed(exc.reason, f"payload of batch {batch.batch_id} cannot be read: {exc}"), False
    except Exception as exc:  # reading the payload must never crash the worker
        why = f"payload of batch {batch.batch_id} cannot be read: {exc}"
        return failed("payload_error", why), False


def outcome_of(
    source: Source,
    decoded: Decoded,
    decision: Decision,
    per_major: bool,
    versions: Sequence[ActiveVersion],
    active_versions: Callable[[str], Sequence[ActiveVersion]],
    topics: Topics,
    *,
    now: datetime,
    worker_id: str,
    max_record_bytes: int,
    duration_s: float,
) -> Outcome:
    """The :class:`Outcome` of ``source`` decided ``decision`` (see :func:`route`): its
    records built, a record too large for the broker quarantined instead."""
    batch, layer, batch_id = decoded.batch, decoded.layer, decoded.batch_id
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
        records = records_of(
            source, batch, layer, batch_id, decision, topics, now, worker_id, max_record_bytes
        )
        if per_major and batch is not None:
            records += per_major_records(source, batch, decision, topics, max_record_bytes)
    except Exception as exc:  # a record we cannot build must not stop the partition
        decision = failed("encode_error", f"output records cannot be encoded: {exc}")
        records = [
            quarantine_record(
                source, layer, None, decision, topics, now, worker_id, max_record_bytes
            )
        ]
    oversized = [r for r in records if record_bytes(r) > max_record_bytes]
    if oversized:
        # a record the broker refuses would abort the transaction and the batch would be
        # consumed again, forever: quarantine it with a record that surely fits
        r = oversized[0]
        decision = failed(
            "record_too_large",
            f"the {r.topic} record for this batch would be {record_bytes(r)} bytes, above "
            f"the {max_record_bytes} bytes a record may take; the original is not carried "
            "(the source coordinates locate it)",
        )
        small = replace(source, value=b"")
        records = [
            quarantine_record(
                small, layer, batch_id, decision, topics, now, worker_id, max_record_bytes
            )
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


def payload_loader(settings: Settings) -> Callable[[str, Batch], Batch | ChunkedBatch]:
    """The worker's payload loader: by-reference payloads read under the configured roots
    only (none: every URI refused), a format its reader reads in chunks in bounded
    memory (see :mod:`worker.io.formats`)."""
    return functools.partial(load_payload_chunked, policy=settings.payload)


@dataclass(frozen=True)
class Router:
    """:func:`route` of a consumed record, thread-safe; built by :meth:`for_settings`."""

    settings: Settings
    active_versions: Callable[[str], Sequence[ActiveVersion]]
    clock: Callable[[], datetime]
    wire: RegistryCodec | None = None
    loader: Callable[[str, Batch], Batch | ChunkedBatch] | None = None
    max_record_bytes: int = MAX_MESSAGE_BYTES
    chunk_pool: tuple[Executor | None, int] = (None, 1)  # as route()'s

    @classmethod
    def for_settings(
        cls,
        settings: Settings,
        active_versions: Callable[[str], Sequence[ActiveVersion]],
        clock: Callable[[], datetime],
        wire: RegistryCodec | None = None,
        chunk_pool: tuple[Executor | None, int] = (None, 1),
    ) -> Router:
        """Payloads read under ``settings.payload`` (chunks measured on ``chunk_pool``, as
        :func:`route`'s), records bounded by the producer's ``message.max.bytes``
        (:meth:`Settings.max_record_bytes`)."""
        return cls(settings, active_versions, clock, wire, payload_loader(settings),
                   settings.max_record_bytes(), chunk_pool)  # fmt: skip

    def __call__(self, m: MessageLike) -> Outcome:
        """The :class:`Outcome` of the consumed record ``m``."""
        s = self.settings
        source = Source(m.topic(), m.partition(), m.offset(), m.key(), m.value(),  # type: ignore[arg-type]
                        tuple(m.headers() or ()))  # fmt: skip
        return route(source, self.active_versions, s.topics, now=self.clock(),
                     worker_id=s.instance_id, payload_loader=self.loader, registry=self.wire,
                     max_record_bytes=self.max_record_bytes,
                     chunk_pool=self.chunk_pool)  # fmt: skip
