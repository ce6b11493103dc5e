"""Confluent Schema Registry wire format: the frame header, subjects and our schemas.

A framed record is the magic byte ``0``, the schema id as 4 bytes big-endian, then the
Avro binary body written with that schema (Confluent, "Wire format",
https://docs.confluent.io/platform/current/schema-registry/fundamentals/serdes-develop/index.html#wire-format).
Subjects follow the default TopicNameStrategy: ``<topic>-value``. The codec that frames
and deframes with a registry client is :class:`worker.kafka.wire.RegistryCodec`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from importlib import resources
from typing import Any

from worker.core.errors import ContractGateError
from worker.io.codec import avro as _avro

__all__ = [
    "HEADER_BYTES",
    "KINDS",
    "MAGIC_BYTE",
    "RegistryUnavailable",
    "reader_schema",
    "schema_id_of",
    "subject_of",
]

#: First byte of a framed record (Confluent wire format, schema id framing).
MAGIC_BYTE = 0
#: Magic byte plus 4-byte big-endian schema id.
HEADER_BYTES = 5

#: Record kind -> (schema file under ``worker/schemas``, parsed schema).
KINDS: Mapping[str, tuple[str, Any]] = {
    "BatchArrival": ("batch_arrival", _avro.BATCH_ARRIVAL),
    "QuarantineRecord": ("quarantine_record", _avro.QUARANTINE_RECORD),
    "EvaluationRecord": ("evaluation_record", _avro.EVALUATION_RECORD),
    "ContractRecord": ("contract_record", _avro.CONTRACT_RECORD),
    "ConsumerDeclaration": ("consumer_declaration", _avro.CONSUMER_DECLARATION),
}


class RegistryUnavailable(ContractGateError):
    """Our schema could not be registered or looked up: the record cannot be framed."""


def subject_of(topic: str) -> str:
    """The TopicNameStrategy subject of a record value on ``topic``: ``<topic>-value``."""
    return f"{topic}-value"


def schema_id_of(data: bytes) -> int | None:
    """The schema id of a framed record, or None when ``data`` is not framed (shorter than
    the 5-byte header or a magic byte other than 0)."""
    if len(data) < HEADER_BYTES or data[0] != MAGIC_BYTE:
        return None
    return int.from_bytes(data[1:HEADER_BYTES], "big")


def _schema_text(kind: str) -> str:
    name = KINDS[kind][0]
    return resources.files("worker").joinpath(f"schemas/{name}.avsc").read_text("utf-8").strip()


def _schema(kind: str) -> Any:
    """Our ``kind`` schema as the client's ``Schema`` (the one object registered and used
    by the serializer, so registering it first and serializing later are one version)."""
    from confluent_kafka.schema_registry import Schema

    return Schema(_schema_text(kind), "AVRO")


def _lookup_reason(exc: BaseException) -> str:
    """Why a registry call failed, without credentials (the client's messages name the
    status and the registry's error; transport errors name the kind of failure)."""
    from confluent_kafka.schema_registry.error import SchemaRegistryError

    if isinstance(exc, SchemaRegistryError):
        return f"the registry answered HTTP {exc.http_status_code}: {exc.error_message}"
    text = re.sub(r"//[^/@\s]*@", "//***@", str(exc))  # never credentials of a URL
    return f"the registry is unreachable ({type(exc).__name__}: {text or 'no detail'})"


def reader_schema(kind: str) -> dict[str, Any]:
    """Our schema of ``kind`` as JSON (for tests and tools evolving a writer schema)."""
    loaded: dict[str, Any] = json.loads(_schema_text(kind))
    return loaded
