"""Read the compacted config topic to its end before evaluating, then follow it live.

The bootstrap ends on *partition EOF* for every partition (``enable.partition.eof``),
never on a ListOffsets high watermark alone: on some brokers (Tansu) ListOffsets can
report a watermark that is too low after multi-record produce batches (docs/design.md
section 8). Empty partitions, compacted gaps and transaction markers all end in EOF, so
none of them can hang the bootstrap.

The deadline counts time *without progress* (no record and no EOF received), not the
total: a topic of many slow-to-refuse records (issue 30: 30 records of 830 KB at 2.5 s each)
still finishes. A worker passes ``on_stall``: it then never gives up; each stall is
reported (the reason stays in :attr:`ConfigFollower.stalled`, shown by ``/readyz``) and the
read goes on, so the worker stays up and not ready instead of exiting into a crash loop.

Config records are bounded by size before they are decoded (:data:`MAX_CONFIG_RECORD_BYTES`,
1 MiB; environment ``CONTRACT_GATE_CONFIG_MAX_RECORD_BYTES``) and their documents parsed
under a time budget (:func:`worker.io.config_records.parse_budget`); with a verify key
(``--verify-key``) unsigned or wrongly signed records are refused (:mod:`worker.io.signing`).
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable
from datetime import datetime, timezone
from typing import Any, TypeVar

from worker.core._util.text import clip
from worker.core.errors import BrokerError
from worker.core.lifecycle.config_events import ConfigEvent
from worker.core.lifecycle.registry import Registry
from worker.io.config_records import MAX_CONFIG_RECORD_BYTES, apply_config_value
from worker.kafka.clients import (
    OFFSET_BEGINNING,
    PARTITION_EOF,
    broker_error,
    make_consumer,
    map_kafka_errors,
)
from worker.kafka.config_integrity import TopicLister, lost_reason
from worker.kafka.protocols import ConsumerLike, TopicPartition
from worker.kafka.settings import Settings

__all__ = ["ConfigFollower", "config_max_record_bytes", "read_config"]

#: Environment variable overriding :data:`MAX_CONFIG_RECORD_BYTES` (a positive integer).
MAX_RECORD_BYTES_ENV = "CONTRACT_GATE_CONFIG_MAX_RECORD_BYTES"


def config_max_record_bytes(env: Any = None) -> int:
    """The config record size bound: ``CONTRACT_GATE_CONFIG_MAX_RECORD_BYTES`` or 1 MiB.

    Raises
    ------
    BrokerError
        The variable is set but not a positive integer.
    """
    text = (os.environ if env is None else env).get(MAX_RECORD_BYTES_ENV, "").strip()
    if not text:
        return MAX_CONFIG_RECORD_BYTES
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value <= 0:
        raise BrokerError(
            f"{MAX_RECORD_BYTES_ENV}={clip(text, 40)!r} is not a positive number of bytes"
        )
    return value


log = logging.getLogger(__name__)


def _stamp(registry: Registry, key: str | None, msg: Any) -> None:
    """Keep the record's Kafka timestamp as the time of the change it made (the operator
    page's overlap timeline); a record without a timestamp (0 or negative) is not kept."""
    try:
        _kind, ms = msg.timestamp()
    except (AttributeError, TypeError, ValueError):
        return
    if key is not None and isinstance(ms, int) and ms > 0:
        registry.stamp(key, datetime.fromtimestamp(ms / 1000.0, timezone.utc))


class ConfigFollower:
    """A group-less reader of the config topic that keeps a :class:`Registry` current.

    Parameters
    ----------
    settings : Settings
        Connection settings; the topic is ``settings.topics.contracts``.
    registry : Registry
        The registry to feed.
    on_event : callable, optional
        Called with every :class:`ConfigEvent` (metrics, logging). Must not raise.
    quiet_rejections : bool
        Log rejected records at DEBUG instead of WARNING: for CLI reads, where a rejected
        record (an edit in place the worker ignores) is not a failure of the command.
    max_record_bytes : int, optional
        Largest config record decoded (:func:`config_max_record_bytes` by default).
    """

    def __init__(
        self,
        settings: Settings,
        registry: Registry,
        on_event: Callable[[ConfigEvent], None] | None = None,
        *,
        quiet_rejections: bool = False,
        max_record_bytes: int | None = None,
    ) -> None:
        self.settings = settings
        self.max_record_bytes = max_record_bytes or config_max_record_bytes()
        #: why the bootstrap is not finished yet, while it has stalled (None otherwise)
        self.stalled: str | None = None
        self.registry = registry
        self.on_event = on_event
        self.quiet_rejections = quiet_rejections
        self.bootstrapped = False
        self.records_read = 0
        self.partitions_total = 0
        self.partitions_at_eof = 0
        #: partition -> next offset after what was read (a record, or the end at EOF)
        self.read_up_to: dict[int, int] = {}
        #: why the topic no longer holds what was read (sticky: see :meth:`check_intact`)
        self.lost: str | None = None
        self._suspect: str | None = None
        self._consumer: ConsumerLike | None = None

    def _open(self) -> ConsumerLike:
        consumer = make_consumer(self.settings, reader=True)
        topic = self.settings.topics.contracts
        try:
            with map_kafka_errors(
                f"cannot read metadata of config topic {topic} from "
                f"{self.settings.bootstrap_servers}",
                hint="check --bootstrap-servers / KAFKA_BOOTSTRAP_SERVERS and that the broker is "
                "up",
            ):
                meta = consumer.list_topics(topic, timeout=10)
        except BrokerError:
            consumer.close()
            raise
        tmeta = meta.topics.get(topic)
        if tmeta is None or tmeta.error is not None or not tmeta.partitions:
            consumer.close()
            raise BrokerError(
                f"config topic {topic} does not exist or has no partitions; "
                "create it with `contract-gate topics create`"
            )
        parts = sorted(tmeta.partitions)
        with map_kafka_errors("config topic read failed"):
            consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in parts])
        self.partitions_total = len(parts)
        return consumer

    def bootstrap(
        self,
        timeout_s: float = 60.0,
        progress: Callable[[str], None] | None = None,
        on_stall: Callable[[str], None] | None = None,
        should_stop: Callable[[], bool] | None = None,
    ) -> int:
        """Read every partition of the config topic to EOF; returns the records read.

        Parameters
        ----------
        timeout_s : float
            Seconds without progress (no record, no EOF) that count as a stall.
        progress : callable, optional
            Given a line every 100 records.
        on_stall : callable, optional
            Given the reason of each stall (also kept in :attr:`stalled`); the read then
            goes on. Without it a stall raises.
        should_stop : callable, optional
            Asked between polls; True ends the read (:attr:`bootstrapped` stays False).

        Raises
        ------
        BrokerError
            When the topic is missing; without ``on_stall``, when there is no progress for
            ``timeout_s`` seconds or a partition cannot be read.
        """
        self._consumer = self._open()
        at_eof: set[int] = set()
        last_progress = time.monotonic()
        topic = self.settings.topics.contracts
        while len(at_eof) < self.partitions_total:
            if should_stop is not None and should_stop():
                return self.records_read
            if time.monotonic() - last_progress > timeout_s:
                why = (
                    f"config bootstrap made no progress on {topic} for {timeout_s:g} s "
                    f"({len(at_eof)}/{self.partitions_total} partitions at EOF, "
                    f"{self.records_read} records read)"
                )
                if on_stall is None:
                    raise BrokerError(why)
                self._stall(why, on_stall)
                last_progress = time.monotonic()
            with map_kafka_errors("config topic read failed"):
                msg = self._consumer.poll(0.5)
            if msg is None:
                continue
            err = msg.error()
            if err is not None:
                if err.code() == PARTITION_EOF:
                    last_progress = time.monotonic()
                    at_eof.add(int(msg.partition() or 0))
                    self._read_to(msg, int(msg.offset() or 0))
                    self.partitions_at_eof = len(at_eof)
                    continue
                if on_stall is None or err.fatal():
                    raise broker_error(err, "config topic read failed")
                self._stall(f"config topic read failed: {err.str()} (retrying)", on_stall)
                continue
            last_progress = time.monotonic()
            at_eof.discard(int(msg.partition() or 0))
            self.apply(msg)
            if progress and self.records_read % 100 == 0:
                progress(f"config bootstrap: {self.records_read} records")
        self.stalled = None
        self.bootstrapped = True
        return self.records_read

    def _stall(self, why: str, on_stall: Callable[[str], None]) -> None:
        self.stalled = why
        log.warning("%s; still reading, not ready until it ends", why)
        on_stall(why)

    def poll_updates(self, max_records: int = 100) -> list[ConfigEvent]:
        """Apply config records that arrived since the last call (non-blocking).

        Raises
        ------
        BrokerError
            On a fatal client error; transient errors are logged and retried by the
            client, EOF notifications after the bootstrap are ignored.
        """
        if self._consumer is None:
            return []
        with map_kafka_errors("config topic read failed"):
            msgs = self._consumer.consume(num_messages=max_records, timeout=0)
        events = []
        for msg in msgs:
            err = msg.error()
            if err is None:
                events.append(self.apply(msg))
            elif err.fatal():
                raise broker_error(err, "config topic read failed")
            elif err.code() != PARTITION_EOF:
                log.warning("config topic: %s (the client retries)", err.str())
        return events

    def apply(self, msg: Any) -> ConfigEvent:
        """Apply one consumed config record (a :class:`~worker.kafka.protocols.MessageLike`)
        to the registry: bounded in size, its signature checked when a verify key is set,
        logged, counted in :attr:`records_read`, and reported to the follower's callback.
        Never raises for a bad record: it is refused with its reason in the event."""
        raw_key = msg.key()
        key = raw_key.decode("utf-8", "replace") if raw_key is not None else None
        sig = self.settings.signing.verifier  # None: signatures are not looked at
        event = apply_config_value(
            self.registry, key, msg.value(), max_bytes=self.max_record_bytes, verifier=sig,
            topic=self.settings.topics.contracts, headers=msg.headers() if sig else None,
            raw_key=raw_key,
        )  # fmt: skip
        self.records_read += 1
        _stamp(self.registry, key, msg)
        self._read_to(msg, int(msg.offset() or 0) + 1)
        if event.outcome == "rejected":
            log.log(
                logging.DEBUG if self.quiet_rejections else logging.WARNING,
                "config record %s rejected (%s): %s",
                clip(key or "<no key>", 200),
                event.reason,
                clip(event.message),
            )
        elif event.outcome == "unchanged" and not event.tombstone:
            log.debug("config %s: %s", event.outcome, clip(event.message))
        else:  # added, updated (mode/state change), a tombstone (deletes a version: WARNING)
            active = self.registry.active(event.layer) if event.layer else ()
            level = logging.INFO
            if event.tombstone:
                level = logging.DEBUG if self.quiet_rejections else logging.WARNING
            log.log(
                level,
                "config %s: %s; active versions of %s: %s",
                event.outcome,
                clip(event.message),
                clip(event.layer or "?", 200),
                ", ".join(f"{v.contract.version} {v.mode}" for v in active) or "none",
            )
        if self.on_event is not None:
            self.on_event(event)
        return event

    def _read_to(self, msg: Any, offset: int) -> None:
        partition = int(msg.partition() or 0)
        self.read_up_to[partition] = max(self.read_up_to.get(partition, 0), offset)

    def check_intact(
        self, timeout_s: float = 1.0, metadata: TopicLister | None = None
    ) -> str | None:
        """After the bootstrap: the reason the config topic lost what was read from it, or
        None (:func:`worker.kafka.config_integrity.lost_reason`; ``metadata``: the client
        asked for the topic's metadata, default the follower's reader, whose requests wait
        behind its long-poll fetch). A loss counts once seen
        on two checks in a row (a watermark read during a broker's start can lag); it is
        then kept in :attr:`lost` for good: the registry holds versions the broker no
        longer has, so the worker stays not ready until it is restarted on a restored
        topic. Logged at ERROR once."""
        if self.lost is not None or self._consumer is None or not self.bootstrapped:
            return self.lost
        topic = self.settings.topics.contracts
        reason = lost_reason(self._consumer, topic, self.read_up_to, timeout_s, metadata)
        if reason is not None and self._suspect is not None:
            self.lost = reason
            log.error(
                "%s; not ready: the worker enforces versions the broker no longer holds. "
                "Restore the topic (or publish the contracts again) and restart the worker",
                reason,
            )
        self._suspect = reason
        return self.lost

    def close(self) -> None:
        """Close the reader (idempotent)."""
        if self._consumer is not None:
            self._consumer.close()
            self._consumer = None


RegistryT = TypeVar("RegistryT", bound=Registry)


def read_config(settings: Settings, registry: RegistryT, timeout_s: float = 30.0) -> RegistryT:
    """Read the config topic to partition EOF into ``registry`` and return it.

    For CLI reads: rejected records are logged at DEBUG (the worker logs them at WARNING).

    Raises
    ------
    BrokerError
        As :meth:`ConfigFollower.bootstrap`.
    """
    follower = ConfigFollower(settings, registry, quiet_rejections=True)
    try:
        follower.bootstrap(timeout_s)
    finally:
        follower.close()
    return registry
