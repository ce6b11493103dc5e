"""Offsets of a run: what a transaction commits, where the consumer rewinds to.

The offsets committed with a run are those after its last event in each partition
(:func:`next_offsets`); after a failed transaction or past a poll batch's deadline, the
consumer seeks back to the first undecided event of each partition (:func:`rewind`), so the
rest is consumed again, in order: nothing lost, nothing decided twice.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from worker.core.errors import BrokerError
from worker.kafka.clients import map_kafka_errors
from worker.kafka.protocols import ConsumerLike, TopicPartition

__all__ = ["next_offsets", "rewind", "rewind_offsets", "starts"]


def next_offsets(events: Sequence[Any]) -> list[TopicPartition]:
    """The offset after the last of ``events`` in each partition (what is committed)."""
    after: dict[tuple[str, int], int] = {}
    for m in events:
        tp = (m.topic(), m.partition())
        after[tp] = max(after.get(tp, 0), m.offset() + 1)
    return [TopicPartition(t, p, o) for (t, p), o in after.items()]


def rewind_offsets(rest: Sequence[Any]) -> dict[tuple[str, int], int]:
    """``(topic, partition) -> offset`` of the first undecided event of each partition
    (consumed records: ``topic()``, ``partition()``, ``offset()``)."""
    out: dict[tuple[str, int], int] = {}
    for m in rest:
        tp = (m.topic(), m.partition())
        out[tp] = min(out.get(tp, m.offset()), m.offset())
    return out


def rewind(consumer: ConsumerLike, rest: Sequence[Any], assigned: frozenset[Any], why: str) -> None:
    """Seek each still-assigned partition of ``rest`` back to its first event; partitions
    revoked meanwhile resume, at their next owner, from the committed offsets.

    Raises
    ------
    BrokerError
        A seek failed: continuing would commit offsets past events never decided, so the
        worker stops instead (a restart resumes from the committed offsets).
    """
    for (t, p), offset in rewind_offsets(rest).items():
        if (t, p) not in assigned:
            continue
        try:
            with map_kafka_errors():
                consumer.seek(TopicPartition(t, p, offset))
        except BrokerError as exc:
            raise BrokerError(
                f"cannot rewind {t}[{p}] to {offset} after {why} "
                f"({exc.detail}); stopping so a restart resumes from the "
                "committed offsets"
            ) from exc


def starts(events: Sequence[Any]) -> list[tuple[str, int, int]]:
    """``(topic, partition, first offset)`` of each partition of a run."""
    first: dict[tuple[str, int], int] = {}
    for m in events:
        first.setdefault((m.topic(), m.partition()), m.offset())
    return [(t, p, o) for (t, p), o in first.items()]
