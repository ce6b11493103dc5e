"""Avro encoding of every record (fastavro, schemaless; schemas in ``schemas/*.avsc``).

Records (namespace ``gis.contract``; docs/design.md section 6): the data plane's in
:mod:`.events` (BatchArrival decoded, QuarantineRecord and EvaluationRecord encoded; the
BatchArrival encoder is :mod:`.event_writer`), the rest in :mod:`.records` (those two read
back, ContractRecord, ConsumerDeclaration).
Each schema is parsed once at import (:mod:`.avro`).

Every decoder raises :class:`worker.core.errors.DecodeError` with a specific reason on any
failure (truncated bytes, trailing bytes, invalid enum or union index, non-UTF-8 text,
mistyped column values); no other exception escapes. Encoders raise
:class:`worker.core.errors.BatchError` (batches) or :class:`worker.core.errors.ContractGateError`.
"""

from worker.io.codec.event_writer import encode_batch
from worker.io.codec.events import (
    batch_from_event,
    decode_batch,
    decode_event,
    encode_evaluation,
    encode_quarantine,
)
from worker.io.codec.records import (
    decode_consumer_declaration,
    decode_contract_record,
    decode_evaluation,
    decode_quarantine,
    encode_consumer_declaration,
    encode_contract_record,
)

__all__ = [
    "batch_from_event",
    "decode_batch",
    "decode_consumer_declaration",
    "decode_contract_record",
    "decode_evaluation",
    "decode_event",
    "decode_quarantine",
    "encode_batch",
    "encode_consumer_declaration",
    "encode_contract_record",
    "encode_evaluation",
    "encode_quarantine",
]
