"""Confluent Schema Registry wire format: framing and deframing of the gate's Avro records.

The frame (magic byte, schema id, Avro body), the subjects and our schemas are in
:mod:`worker.kafka.framing`.

Everything goes through confluent-kafka's schema-registry client
(``confluent_kafka.schema_registry.SchemaRegistryClient``, or its ``mock://`` client in
tests) and its ``AvroSerializer`` / ``AvroDeserializer`` (fastavro underneath):

* reading (:meth:`RegistryCodec.decode_event`): the writer schema is fetched by the id in
  the frame (the client caches it), the body is decoded with it and resolved into our
  reader schema (``schemas/*.avsc``, Avro schema resolution), so producers may evolve their
  schema compatibly (e.g. add an optional field);
* writing (:meth:`RegistryCodec.frame`): a record already encoded with our schema
  (:mod:`worker.io.codec`) is written again by the serializer, which registers our schema
  under ``<topic>-value`` once (then cached) and prefixes its id.

Every decode failure raises :class:`worker.core.errors.DecodeError` with a specific reason
naming the schema id: a wrong magic byte, an unknown schema id, a failed or timed-out
registry lookup (bounded by the client's ``timeout`` and retries; a failed lookup is
remembered for :data:`FAILED_LOOKUP_TTL_S` seconds, so a burst of events with the same id
costs one lookup, not one each), a schema that is not Avro or cannot be resolved into ours,
a body that does not decode. Framing raises
:class:`worker.kafka.framing.RegistryUnavailable`.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from worker.core.errors import DecodeError
from worker.io.codec import avro as _avro
from worker.io.codec.checked import _write
from worker.io.codec.events import batch_from_event, decode_event
from worker.io.codec.read_errors import as_datetimes, read_error
from worker.io.codec.records import decode_contract_record
from worker.kafka.framing import (
    HEADER_BYTES,
    KINDS,
    MAGIC_BYTE,
    RegistryUnavailable,
    _lookup_reason,
    _schema,
    subject_of,
)

__all__ = ["FAILED_LOOKUP_TTL_S", "RegistryCodec"]

#: Seconds a failed writer-schema lookup (unknown id, registry unreachable) is remembered.
FAILED_LOOKUP_TTL_S = 10.0


class RegistryCodec:
    """Frame and deframe the gate's Avro records with a Schema Registry client.

    Parameters
    ----------
    client : confluent_kafka.schema_registry.SchemaRegistryClient
        Configured with its URL, credentials and HTTP ``timeout`` (seconds): lookups are
        bounded by them. ``SchemaRegistryClient.new_client({"url": "mock://..."})`` gives
        the library's in-memory registry (one store per client instance).
    clock : callable
        Monotonic seconds (the failed-lookup cache); injectable for tests.

    Thread-safe: the client, serializers and deserializer are.
    """

    def __init__(self, client: Any, *, clock: Callable[[], float] = time.monotonic) -> None:
        from confluent_kafka.schema_registry import topic_subject_name_strategy

        self.client = client
        self._clock = clock
        self._strategy = topic_subject_name_strategy
        self._readers: dict[str, Any] = {}
        self._serializers: dict[str, Any] = {}
        self._failed: dict[int, tuple[float, str]] = {}
        self._lock = threading.Lock()

    # -- reading ------------------------------------------------------------------------
    def _writer_schema(self, schema_id: int, what: str) -> None:
        """Fetch (or find in the client's cache) writer schema ``schema_id``; raise
        DecodeError naming it when it is unknown, not Avro, or the lookup fails."""
        from confluent_kafka.schema_registry.error import SchemaRegistryError

        now = self._clock()
        with self._lock:
            failed = self._failed.get(schema_id)
        if failed is not None and now - failed[0] < FAILED_LOOKUP_TTL_S:
            raise DecodeError(failed[1])
        try:
            schema = self.client.get_schema(schema_id)
        except SchemaRegistryError as exc:
            if exc.http_status_code == 404:
                reason = (
                    f"not a {what}: schema id {schema_id} is unknown to the schema registry "
                    f"({exc.error_message}); was the event produced against another registry?"
                )
            else:
                reason = (
                    f"not a {what}: writer schema id {schema_id} cannot be looked up: "
                    f"{_lookup_reason(exc)}"
                )
            self._remember(schema_id, now, reason)
            raise DecodeError(reason) from None
        except Exception as exc:  # httpx transport errors, timeouts, OS errors
            reason = (
                f"not a {what}: writer schema id {schema_id} cannot be looked up: "
                f"{_lookup_reason(exc)}"
            )
            self._remember(schema_id, now, reason)
            raise DecodeError(reason) from None
        kind = getattr(schema, "schema_type", "AVRO") or "AVRO"
        if kind != "AVRO":
            raise DecodeError(f"not a {what}: schema id {schema_id} is a {kind} schema, not Avro")

    def _remember(self, schema_id: int, now: float, reason: str) -> None:
        with self._lock:
            self._failed[schema_id] = (now, reason)

    def _deserializer(self, kind: str) -> Any:
        from confluent_kafka.schema_registry.avro import AvroDeserializer

        with self._lock:
            reader = self._readers.get(kind)
            if reader is None:
                reader = AvroDeserializer(
                    self.client, _schema(kind), conf={"subject.name.strategy": self._strategy}
                )
                self._readers[kind] = reader
            return reader

    def decode(self, data: bytes, topic: str, kind: str) -> dict[str, Any]:
        """Decode a framed ``kind`` record read from ``topic`` into our reader schema.

        Returns the record as a dict shaped as our ``schemas/*.avsc`` of ``kind`` (fields
        the writer added are dropped, fields it lacks take our defaults).

        Raises
        ------
        DecodeError
            Not framed (fewer than 6 bytes, magic byte not 0), unknown schema id,
            failed registry lookup, writer schema not resolvable into ours, body not
            decodable; the reason names the schema id.
        """
        from confluent_kafka.serialization import MessageField, SerializationContext

        what = f"Schema Registry framed {kind}"
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise DecodeError(f"not a {what}: expected bytes, got {type(data).__name__}")
        raw = bytes(data)
        if len(raw) <= HEADER_BYTES:
            raise DecodeError(
                f"not a {what}: {len(raw)} bytes, not more than the {HEADER_BYTES}-byte "
                "header (magic byte 0 + schema id)"
            )
        if raw[0] != MAGIC_BYTE:
            hint = " (schema GUID framing is not supported)" if raw[0] == 1 else ""
            raise DecodeError(
                f"not a {what}: magic byte {raw[0]}, expected {MAGIC_BYTE}{hint}; was the "
                "record produced without the Schema Registry serializer (plain Avro)?"
            )
        schema_id = int.from_bytes(raw[1:HEADER_BYTES], "big")
        self._writer_schema(schema_id, what)
        try:
            record = self._deserializer(kind)(raw, SerializationContext(topic, MessageField.VALUE))
        except Exception as exc:  # schema resolution or body decoding
            raise DecodeError(
                f"not a {what}: the body written with schema id {schema_id} cannot be read "
                f"as {kind}: {read_error(exc, KINDS[kind][1], raw[HEADER_BYTES:])}"
            ) from None
        if not isinstance(record, dict):
            raise DecodeError(
                f"not a {what}: schema id {schema_id} decoded to {type(record).__name__}"
            )
        return as_datetimes(KINDS[kind][1], record, what)

    def decode_event(self, data: bytes, topic: str) -> dict[str, Any]:
        """Decode a framed BatchArrival read from ``topic`` (see :meth:`decode`)."""
        return self.decode(data, topic, "BatchArrival")

    def event_decoder(self, topic: str) -> Callable[[bytes], dict[str, Any]]:
        """``data -> record``: :meth:`decode_event` for events read from ``topic``."""
        return lambda data: self.decode_event(data, topic)

    def to_plain(self, data: bytes, topic: str, kind: str) -> bytes:
        """A framed ``kind`` record as plain Avro of our schema, for the decoders of
        :mod:`worker.io.codec` (``decode_quarantine``, ``decode_evaluation``, ...).

        Raises
        ------
        DecodeError
            As :meth:`decode`.
        """
        record = self.decode(data, topic, kind)
        return _write(KINDS[kind][1], record, kind, DecodeError)

    def decode_batch(self, data: bytes, topic: str) -> Any:
        """Decode a framed BatchArrival to a :class:`worker.core.model.Batch`.

        Raises
        ------
        DecodeError
            As :meth:`decode_event`, or an unusable record (see
            :func:`worker.io.codec.batch_from_event`).
        """
        event = self.decode_event(data, topic)
        try:
            return batch_from_event(event)
        except DecodeError:
            raise
        except Exception as exc:
            raise DecodeError(f"not a usable BatchArrival: {type(exc).__name__}: {exc}") from None

    # -- writing ------------------------------------------------------------------------
    def _serializer(self, kind: str) -> Any:
        from confluent_kafka.schema_registry.avro import AvroSerializer

        with self._lock:
            ser = self._serializers.get(kind)
            if ser is None:
                schema = KINDS[kind][1]

                def to_dict(plain: Any, ctx: Any) -> dict[str, Any]:
                    if kind == "BatchArrival":  # events omit trailing fields at defaults
                        return decode_event(plain)
                    if kind == "ContractRecord":  # ... and records without supersedes
                        return decode_contract_record(plain)
                    return _avro._read(schema, plain, kind)

                ser = AvroSerializer(
                    self.client,
                    _schema(kind),
                    to_dict=to_dict,
                    conf={
                        "auto.register.schemas": True,
                        "subject.name.strategy": self._strategy,
                    },
                )
                self._serializers[kind] = ser
            return ser

    def register(self, topic: str, kind: str) -> int:
        """Register our ``kind`` schema under ``<topic>-value`` (a no-op when it is already
        there) and return its id; the client caches it, so framing needs no lookup after.

        Raises
        ------
        RegistryUnavailable
            The registry refused the schema (e.g. incompatible with the subject's
            latest version) or could not be reached.
        """
        try:
            registered = self.client.register_schema(subject_of(topic), _schema(kind))
        except Exception as exc:
            raise RegistryUnavailable(
                f"cannot register the {kind} schema under subject {subject_of(topic)!r}: "
                f"{_lookup_reason(exc)}"
            ) from None
        return int(registered)

    def frame(self, plain: bytes, topic: str, kind: str) -> bytes:
        """``plain`` (a ``kind`` record encoded by :mod:`worker.io.codec`) written by the
        Avro serializer for ``topic``: magic byte, schema id of ``<topic>-value``, body.

        Raises
        ------
        DecodeError
            ``plain`` is not a ``kind`` record.
        RegistryUnavailable
            The schema could not be registered or looked up.
        """
        from confluent_kafka.serialization import MessageField, SerializationContext

        ser = self._serializer(kind)
        try:
            framed = ser(plain, SerializationContext(topic, MessageField.VALUE))
        except DecodeError:
            raise
        except Exception as exc:
            raise RegistryUnavailable(
                f"cannot frame a {kind} for {topic}: {_lookup_reason(exc)}"
            ) from None
        return bytes(framed)
