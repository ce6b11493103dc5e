"""Failed transaction attempts per poll batch, so one batch cannot be retried forever.

A poll batch whose transaction fails is aborted and consumed again
(:mod:`worker.gate.pipeline`). When the failure is caused by the batch itself, e.g. an
output record larger than the producer's ``message.max.bytes`` or the broker's limit,
every retry fails the same way and the partition stalls. :class:`BatchAttempts` counts
failed attempts per ``(topic, partition, first offset)`` of the batch; after
:data:`MAX_BATCH_ATTEMPTS` the pipeline commits the batch one event per transaction and
quarantines an event whose records Kafka refuses as too large (``record_too_large``),
so the other events of the batch proceed.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from datetime import datetime

from worker.core._util.text import clip
from worker.gate.records import Outcome, failed, quarantine_record, record_bytes
from worker.kafka.clients import RECORD_TOO_LARGE_CODES
from worker.kafka.settings import Topics

__all__ = [
    "MAX_BATCH_ATTEMPTS",
    "BatchAttempts",
    "largest_record_bytes",
    "record_too_large",
    "size_refused",
]

#: Failed transactions of the same poll batch before it is committed event by event.
MAX_BATCH_ATTEMPTS = 3
#: Most batch starts remembered (a bound on memory; an entry is dropped on success).
MAX_TRACKED = 10_000

Start = tuple[str, int, int]  # topic, partition, first offset of the batch


def _size_codes() -> frozenset[int]:
    return RECORD_TOO_LARGE_CODES


#: Kafka error codes meaning "this record is too large": local (produce() against the
#: producer's ``message.max.bytes``) and from the broker (its or the topic's limit).
SIZE_CODES = _size_codes()


def size_refused(codes: Iterable[int]) -> bool:
    """True when one of the error ``codes`` of a failed attempt says a record is too large."""
    return any(code in SIZE_CODES for code in codes)


class BatchAttempts:
    """Failed transaction attempts per batch start ``(topic, partition, first offset)``."""

    def __init__(self, max_attempts: int = MAX_BATCH_ATTEMPTS) -> None:
        self.max_attempts = max_attempts
        self._failed: dict[Start, int] = {}

    def failed(self, starts: Iterable[Start]) -> None:
        """One more failed attempt of the batch beginning at ``starts``."""
        if len(self._failed) > MAX_TRACKED:
            self._failed.clear()
        for start in starts:
            self._failed[start] = self._failed.get(start, 0) + 1

    def exhausted(self, starts: Iterable[Start]) -> bool:
        """True when a partition of the batch has failed ``max_attempts`` times from there."""
        return any(self._failed.get(s, 0) >= self.max_attempts for s in starts)

    def attempts(self, start: Start) -> int:
        """Failed attempts counted for ``start`` so far."""
        return self._failed.get(start, 0)

    def committed(self, partitions: Iterable[tuple[str, int]]) -> None:
        """Forget the counts of these partitions (their batch was committed)."""
        done = set(partitions)
        for start in [s for s in self._failed if (s[0], s[1]) in done]:
            del self._failed[start]


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
    decision = failed(
        "record_too_large",
        f"the largest output record of batch {clip(outcome.batch_id or '?', 200)} is "
        f"{record_bytes} bytes; Kafka refused it ({clip(error, 200)}; the producer's "
        f"message.max.bytes is {limit_bytes} bytes, a broker or topic may take less); the "
        "original is not carried (the source coordinates locate it)",
    )
    small = replace(outcome.source, value=b"")
    record = quarantine_record(
        small, outcome.layer, outcome.batch_id, decision, topics, now, worker_id
    )
    return replace(outcome, decision=decision, records=(record,))


def largest_record_bytes(outcome: Outcome) -> int:
    """Bytes of the largest output record of ``outcome`` (:func:`record_bytes`)."""
    return max((record_bytes(r) for r in outcome.records), default=0)
