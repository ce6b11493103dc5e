"""The producer calls of a transaction: produce while the local queue is full, commit
while librdkafka says retry, each blocking call under the watchdog (:class:`Guard`)."""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from worker.core.errors import BrokerError
from worker.gate.records import OutRecord
from worker.kafka.clients import map_kafka_errors
from worker.kafka.health import Watchdog
from worker.kafka.protocols import TransactionalProducerLike

__all__ = ["Guard", "commit_transaction", "produce_record"]

log = logging.getLogger(__name__)


@dataclass
class Guard:
    """Blocking client calls under a :class:`~worker.kafka.health.Watchdog`, once
    :meth:`worker.gate.processor.Processor.run` sets one (else no guard)."""

    watchdog: Watchdog | None = None

    def call(self, name: str, deadline_s: float) -> contextlib.AbstractContextManager[None]:
        """A context in which the blocking call ``name`` may take ``deadline_s`` seconds."""
        if self.watchdog is None:
            return contextlib.nullcontext()
        return self.watchdog.call(name, deadline_s)


def commit_transaction(producer: TransactionalProducerLike, timeout_s: float) -> None:
    """``commit_transaction``, called again while librdkafka says the error is retriable
    (its documented contract for a timed-out commit), up to ``timeout_s``.

    Raises
    ------
    BrokerError
        The client's error (:func:`worker.kafka.clients.map_kafka_errors`) when it is not
        retriable or ``timeout_s`` has passed.
    """
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            with map_kafka_errors():
                producer.commit_transaction(max(1.0, deadline - time.monotonic()))
            return
        except BrokerError as exc:
            if not exc.retriable or time.monotonic() > deadline:
                raise
            log.warning("commit_transaction: %s; retrying", exc.detail)


def produce_record(
    producer: TransactionalProducerLike,
    record: OutRecord,
    value: bytes,
    on_delivery: Callable[[Any, Any], None],
    timeout_s: float,
) -> None:
    """Produce one record; while the local queue is full (BufferError), serve delivery
    reports until there is room (a poll batch of large records can exceed
    ``queue.buffering.max.kbytes``). ``on_delivery`` gets the record's delivery report
    (the worker's producer reports failures only: :func:`worker.gate.startup.new_producer`),
    served by ``commit_transaction``'s flush or by the waits here: no poll per record, a
    call into librdkafka each."""
    headers: list[tuple[str, bytes | None]] = list(record.headers)
    deadline = None
    while True:
        try:
            producer.produce(record.topic, key=record.key, value=value,  # type: ignore[arg-type]
                             headers=headers, on_delivery=on_delivery)  # fmt: skip
            return
        except BufferError:
            deadline = time.monotonic() + timeout_s if deadline is None else deadline
            if time.monotonic() > deadline:
                raise BrokerError(
                    f"local producer queue full for {timeout_s:.0f} s producing to {record.topic}"
                ) from None
            producer.poll(0.5)
