"""One poll batch: take the records already fetched, wait only while the batch is small.

``Consumer.consume(n, timeout)`` returns when ``n`` records are there or ``timeout`` has
passed. Called with the poll-batch bounds (500 events, 100 ms), it left the worker idle
for the whole window whenever fewer than 500 large events were queued, although
librdkafka had fetched them while the previous batch was being routed: 100 ms per poll
batch of 1 MB events, about 5 ms an event. :func:`poll_batch` takes what is queued at
once and waits for more, in short slices, only while the batch is small in both events
and bytes: then the wait amortizes the transaction's fixed cost (its commit round trips)
over more events; a batch holding megabytes of geometry costs far more to route than the
wait would save.

A rebalance runs inside ``consume()``. librdkafka drops the records of a revoked
assignment that one ``consume()`` call has gathered (its version barrier,
confluentinc/librdkafka#3269, for confluent-kafka-python#1013), but not those an earlier
call returned: a poll batch made of several calls would route and commit records of a
partition it no longer owns while the partition's next owner, reading from the committed
offset, decides them too. So the records of a partition revoked during the poll batch that
earlier calls returned are dropped (the partition's next owner, or this worker when the
partition comes back, reads them again from the committed offset), and the batch ends at
the call that saw the rebalance.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

__all__ = [
    "DEFAULT_MAX_BATCH_EVENTS",
    "DEFAULT_MAX_BATCH_WAIT_MS",
    "DEFAULT_READY_BYTES",
    "IDLE_WAIT_S",
    "MAX_BATCH_WAIT_MS",
    "poll_batch",
]

log = logging.getLogger(__name__)

Partition = tuple[str, int]

#: Default bounds of one poll batch (one transaction): most events, and milliseconds a
#: small batch waits to fill.
DEFAULT_MAX_BATCH_EVENTS = 500
DEFAULT_MAX_BATCH_WAIT_MS = 100

#: Bytes of record values past which a poll batch is routed without waiting for more: a
#: few megabytes of WKB take tens of milliseconds to evaluate, more than a transaction's
#: commit adds.
DEFAULT_READY_BYTES = 4 * 1024 * 1024

#: Longest single wait while a small batch fills (seconds).
_SLICE_S = 0.01

#: Longest wait for a first record when none is queued (seconds), whatever ``wait_s``: an
#: idle worker blocks here instead of spinning (``--max-batch-wait-ms 0`` made one run at
#: 100% CPU).
IDLE_WAIT_S = 0.1

#: Highest ``--max-batch-wait-ms``: contract changes from the config topic are applied
#: between poll batches, so at most this late.
MAX_BATCH_WAIT_MS = 60_000


def _value_bytes(messages: list[Any]) -> int:
    return sum(len(m.value() or b"") for m in messages)


def poll_batch(
    consumer: Any,
    max_events: int,
    wait_s: float,
    *,
    ready_bytes: int = DEFAULT_READY_BYTES,
    clock: Callable[[], float] = time.monotonic,
    keep_waiting: Callable[[], bool] | None = None,
    take_revoked: Callable[[], frozenset[Partition]] | None = None,
) -> list[Any]:
    """Consume the records of one poll batch (one transaction).

    Parameters
    ----------
    consumer : worker.kafka.protocols.ConsumerLike
        A subscribed consumer.
    max_events : int
        Most records returned (>= 1).
    wait_s : float
        Longest wait for a batch to fill, seconds from the call (>= 0).
    ready_bytes : int
        Bytes of record values at which the batch is taken without waiting for more.
    clock : callable
        Monotonic seconds (injectable for tests).
    keep_waiting : callable, optional
        Called between waits (every 10 ms at most); False ends the wait at once (the
        worker stops). The worker also marks its loop alive there.
    take_revoked : callable, optional
        The ``(topic, partition)`` pairs revoked (by the consumer's ``on_revoke``) since
        its last call, which forgets them. Records of those partitions returned by an
        earlier ``consume()`` of this poll batch are dropped, and the batch ends.

    Returns
    -------
    list of worker.kafka.protocols.MessageLike
        The records librdkafka had fetched (up to ``max_events``), then, while fewer
        than ``max_events`` records and fewer than ``ready_bytes`` bytes are held, those
        that arrive within ``wait_s``; error events included (the caller sorts them).
        When nothing is queued, the first record is awaited up to ``max(wait_s,
        IDLE_WAIT_S)``: empty after that.
    """
    started = clock()
    if take_revoked is not None:
        take_revoked()  # revoked before this poll batch: none of its records is held
    messages: list[Any] = []
    held = 0
    timeout_s = 0.0
    while True:
        more = consumer.consume(max_events - len(messages), timeout=timeout_s)
        revoked = take_revoked() if take_revoked is not None else frozenset()
        if revoked:
            return _without(messages, revoked) + list(more)
        messages.extend(more)
        held += _value_bytes(more)
        if len(messages) >= max_events or held >= ready_bytes:
            return messages
        window_s = wait_s if messages else max(wait_s, IDLE_WAIT_S)
        left_s = window_s - (clock() - started)
        if left_s <= 0 or (keep_waiting is not None and not keep_waiting()):
            return messages
        timeout_s = min(_SLICE_S, left_s)


def _without(messages: list[Any], revoked: frozenset[Partition]) -> list[Any]:
    """``messages`` less the records of ``revoked`` partitions (logged when any)."""
    kept = [m for m in messages if (m.topic(), m.partition()) not in revoked]
    if len(kept) < len(messages):
        log.warning(
            "a rebalance revoked %s during a poll batch: %d records of them, consumed "
            "before it, are dropped (read again from the committed offsets by the "
            "partitions' next owner)",
            ", ".join(f"{t}[{p}]" for t, p in sorted(revoked)),
            len(messages) - len(kept),
        )
    return kept
