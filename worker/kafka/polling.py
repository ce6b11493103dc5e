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
"""

from __future__ import annotations

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
#: 100% CPU, found by a new-user session).
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
) -> list[Any]:
    """Consume the records of one poll batch (one transaction).

    Parameters
    ----------
    consumer : confluent_kafka.Consumer
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

    Returns
    -------
    list of confluent_kafka.Message
        The records librdkafka had fetched (up to ``max_events``), then, while fewer
        than ``max_events`` records and fewer than ``ready_bytes`` bytes are held, those
        that arrive within ``wait_s``; error events included (the caller sorts them).
        When nothing is queued, the first record is awaited up to ``max(wait_s,
        IDLE_WAIT_S)``: empty after that.
    """
    started = clock()
    messages = list(consumer.consume(max_events, timeout=0))
    held = _value_bytes(messages)
    while len(messages) < max_events and held < ready_bytes:
        window_s = wait_s if messages else max(wait_s, IDLE_WAIT_S)
        left_s = window_s - (clock() - started)
        if left_s <= 0 or (keep_waiting is not None and not keep_waiting()):
            break
        more = consumer.consume(max_events - len(messages), timeout=min(_SLICE_S, left_s))
        messages.extend(more)
        held += _value_bytes(more)
    return messages
