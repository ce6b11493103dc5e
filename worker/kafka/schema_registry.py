"""Schema Registry wiring: the client of the settings, and which topics are framed.

With :attr:`worker.kafka.settings.Settings.schema_registry` set, the worker reads
BatchArrival events on ``topics.batches`` in the Confluent wire format and writes its
QuarantineRecords and EvaluationRecords framed the same way (subjects ``<topic>-value``);
admitted records keep the original bytes, framed or not. The gate's own control topics
(``gis.contracts``, ``gis.contract.consumers``) stay plain Avro: only the gate reads and
writes them. Framing itself lives in :mod:`worker.kafka.wire` (the codec) and
:mod:`worker.kafka.framing` (the header, subjects and schemas).
"""

from __future__ import annotations

import threading
from typing import Any

from worker.core.errors import DecodeError
from worker.kafka.framing import schema_id_of
from worker.kafka.registry_settings import SchemaRegistrySettings
from worker.kafka.settings import Settings, Topics
from worker.kafka.wire import RegistryCodec

__all__ = ["codec_for", "output_kinds", "plain_value", "registry_client"]

_clients: dict[SchemaRegistrySettings, Any] = {}
_codecs: dict[SchemaRegistrySettings, RegistryCodec] = {}
_lock = threading.Lock()


def registry_client(sr: SchemaRegistrySettings) -> Any:
    """The process's ``SchemaRegistryClient`` for ``sr`` (one per settings, so its schema
    cache is shared by every pipeline and command of the process; a ``mock://`` URL gives
    the library's in-memory registry, shared the same way)."""
    from confluent_kafka.schema_registry import SchemaRegistryClient

    with _lock:
        client = _clients.get(sr)
        if client is None:
            client = SchemaRegistryClient.new_client(sr.client_config())
            _clients[sr] = client
        return client


def codec_for(settings: Settings) -> RegistryCodec | None:
    """The :class:`RegistryCodec` of the settings' registry, or None (plain Avro)."""
    sr = settings.schema_registry
    if sr is None:
        return None
    client = registry_client(sr)
    with _lock:
        codec = _codecs.get(sr)
        if codec is None:
            codec = _codecs[sr] = RegistryCodec(client)
        return codec


def output_kinds(topics: Topics) -> dict[str, str]:
    """Output topic -> record kind of the records the worker writes framed."""
    return {topics.quarantine: "QuarantineRecord", topics.evaluations: "EvaluationRecord"}


def plain_value(settings: Settings, topic: str, value: bytes | None) -> bytes:
    """A record value of one of the framed output topics as plain Avro of our schema, for
    the decoders of :mod:`worker.io.codec`: deframed (writer schema by id) when a registry
    is configured and the value is framed, else as it is (records written before the
    registry was configured stay readable; a value that fails to deframe is passed on as it
    is, and the plain decoder names what is wrong with it)."""
    raw = value or b""
    kind = output_kinds(settings.topics).get(topic)
    sr = codec_for(settings)
    if sr is None or kind is None or schema_id_of(raw) is None:
        return raw
    try:
        return sr.to_plain(raw, topic, kind)
    except DecodeError:
        return raw
