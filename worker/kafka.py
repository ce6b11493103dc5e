"""The thin confluent-kafka adapter: settings, client configurations, topic creation.

Everything that talks to librdkafka directly lives here or in :mod:`worker.pipeline` and
:mod:`worker.config_topic`; errors of confluent-kafka are translated to
:class:`worker.errors.KafkaError` at this boundary.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from worker.errors import KafkaError

__all__ = [
    "MAX_MESSAGE_BYTES",
    "SECRET_KEYS",
    "Settings",
    "Topics",
    "create_topics",
    "describe_settings",
    "produce_one",
    "read_topic",
]

#: Largest record the gate produces or accepts (bytes): high-vertex layers travel inline.
MAX_MESSAGE_BYTES = 16 * 1024 * 1024

#: librdkafka properties whose values are never printed.
SECRET_KEYS = ("password", "secret", "sasl.oauthbearer.config", "ssl.key.pem", "token")


@dataclass(frozen=True)
class Topics:
    """Topic names of DESIGN.md section 6 (all configurable)."""

    batches: str = "gis.batches"
    admitted: str = "gis.batches.admitted"
    quarantine: str = "gis.batches.quarantine"
    contracts: str = "gis.contracts"
    consumers: str = "gis.contract.consumers"
    evaluations: str = "gis.contract.evaluations"

    def with_prefix(self, prefix: str) -> Topics:
        """The same names under ``prefix`` (used by tests and the demo on shared clusters)."""
        return Topics(**{k: prefix + v for k, v in self.__dict__.items()})


@dataclass(frozen=True)
class Settings:
    """Connection and naming settings shared by every command that talks to Kafka.

    ``extra`` holds any librdkafka property (``--kafka-property key=value`` or environment
    ``CONTRACT_GATE_KAFKA_<KEY>`` with dots as underscores); it is applied to every client.
    """

    bootstrap_servers: str = "localhost:9092"
    group_id: str = "contract-gate"
    topics: Topics = field(default_factory=Topics)
    transactional_id_prefix: str = "contract-gate"
    instance_id: str = field(default_factory=lambda: f"{socket.gethostname()}-{os.getpid()}")
    session_timeout_ms: int = 45000
    extra: Mapping[str, str] = field(default_factory=dict)

    def with_(self, **changes: Any) -> Settings:
        return replace(self, **changes)

    def base(self) -> dict[str, Any]:
        # librdkafka's own log lines go to the "librdkafka" Python logger (quiet unless
        # --log-level DEBUG): failures reach the caller as errors, not as log spam.
        conf: dict[str, Any] = {
            "bootstrap.servers": self.bootstrap_servers,
            "logger": logging.getLogger("librdkafka"),
        }
        conf.update(self.extra)
        return conf

    def consumer(self, **overrides: Any) -> dict[str, Any]:
        """Configuration of the input consumer (group member, read_committed, manual commit)."""
        conf = self.base()
        conf.update(
            {
                "group.id": self.group_id,
                "enable.auto.commit": False,
                "auto.offset.reset": "earliest",
                "isolation.level": "read_committed",
                "session.timeout.ms": self.session_timeout_ms,
                "heartbeat.interval.ms": max(500, self.session_timeout_ms // 6),
                "fetch.max.bytes": MAX_MESSAGE_BYTES * 4,
                "max.partition.fetch.bytes": MAX_MESSAGE_BYTES,
                "receive.message.max.bytes": MAX_MESSAGE_BYTES * 4 + 1024 * 1024,
            }
        )
        conf.update(overrides)
        return conf

    def reader(self, **overrides: Any) -> dict[str, Any]:
        """Configuration of a group-less reader (assign, no commits) for topic scans."""
        conf = self.consumer()
        conf.update(
            {
                "group.id": f"{self.group_id}-reader-{self.instance_id}",
                "enable.partition.eof": True,
            }
        )
        conf.update(overrides)
        return conf

    def producer(self, *, transactional: bool = False, **overrides: Any) -> dict[str, Any]:
        """Configuration of a producer; ``transactional`` gives it ``transactional.id``."""
        conf = self.base()
        conf.update(
            {
                "message.max.bytes": MAX_MESSAGE_BYTES + 1024 * 1024,
                "enable.idempotence": True,
                "linger.ms": 5,
                "compression.type": "lz4",
            }
        )
        if transactional:
            conf["transactional.id"] = f"{self.transactional_id_prefix}-{self.instance_id}"
            conf["transaction.timeout.ms"] = 60000
        conf.update(overrides)
        return conf

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, **overrides: Any) -> Settings:
        """Settings from ``KAFKA_BOOTSTRAP_SERVERS``, ``CONTRACT_GATE_*`` and ``overrides``.

        Overrides whose value is None are ignored, so CLI flags that were not given keep
        the environment's value.
        """
        env = os.environ if env is None else env
        kwargs: dict[str, Any] = {}
        if env.get("KAFKA_BOOTSTRAP_SERVERS"):
            kwargs["bootstrap_servers"] = env["KAFKA_BOOTSTRAP_SERVERS"]
        if env.get("CONTRACT_GATE_GROUP_ID"):
            kwargs["group_id"] = env["CONTRACT_GATE_GROUP_ID"]
        if env.get("CONTRACT_GATE_TRANSACTIONAL_ID_PREFIX"):
            kwargs["transactional_id_prefix"] = env["CONTRACT_GATE_TRANSACTIONAL_ID_PREFIX"]
        if env.get("CONTRACT_GATE_INSTANCE_ID"):
            kwargs["instance_id"] = env["CONTRACT_GATE_INSTANCE_ID"]
        extra = {
            k[len("CONTRACT_GATE_KAFKA_") :].lower().replace("_", "."): v
            for k, v in env.items()
            if k.startswith("CONTRACT_GATE_KAFKA_")
        }
        extra.update(overrides.pop("extra", None) or {})
        kwargs["extra"] = extra
        kwargs.update({k: v for k, v in overrides.items() if v is not None})
        return cls(**kwargs)


def describe_settings(settings: Settings) -> str:
    """One line describing the settings, with every secret value masked."""
    extra = ", ".join(
        f"{k}={'***' if any(s in k for s in SECRET_KEYS) else v}"
        for k, v in sorted(settings.extra.items())
    )
    return (
        f"bootstrap={settings.bootstrap_servers} group={settings.group_id} "
        f"instance={settings.instance_id}" + (f" extra[{extra}]" if extra else "")
    )


def create_topics(
    settings: Settings, *, partitions: int = 3, replication_factor: int = 1, timeout_s: float = 30
) -> dict[str, str]:
    """Create the six topics of DESIGN.md section 6; existing topics are left alone.

    The config (``gis.contracts``) and consumers topics are compacted; every topic accepts
    records up to :data:`MAX_MESSAGE_BYTES`. Returns ``{topic: "created" | "exists"}``.

    Raises
    ------
    KafkaError
        When the broker refuses a topic for another reason than that it exists.
    """
    from confluent_kafka import KafkaError as CKError
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AdminClient, NewTopic

    t = settings.topics
    big = {"max.message.bytes": str(MAX_MESSAGE_BYTES + 1024 * 1024)}
    compacted = {**big, "cleanup.policy": "compact"}
    specs = {
        t.batches: (partitions, big),
        t.admitted: (partitions, big),
        t.quarantine: (partitions, big),
        t.evaluations: (partitions, big),
        t.contracts: (1, compacted),
        t.consumers: (1, compacted),
    }
    admin = AdminClient(settings.base())
    try:
        admin.list_topics(timeout=min(10.0, timeout_s))
    except KafkaException as exc:
        raise KafkaError(
            f"cannot reach Kafka at {settings.bootstrap_servers}: {exc.args[0].str()}; check "
            "--bootstrap-servers / KAFKA_BOOTSTRAP_SERVERS"
        ) from exc
    futures = admin.create_topics(
        [NewTopic(name, n, replication_factor, config=cfg) for name, (n, cfg) in specs.items()],
        request_timeout=timeout_s,
    )
    outcome: dict[str, str] = {}
    for name, fut in futures.items():
        try:
            fut.result()
            outcome[name] = "created"
        except KafkaException as exc:
            err = exc.args[0]
            if err.code() == CKError.TOPIC_ALREADY_EXISTS:
                outcome[name] = "exists"
            else:
                raise KafkaError(f"cannot create topic {name}: {err.str()}") from exc
    return outcome


def produce_one(
    settings: Settings,
    topic: str,
    key: str | None,
    value: bytes | None,
    *,
    headers: list[tuple[str, str | bytes | None]] | None = None,
    partition: int | None = None,
    timeout_s: float = 30,
) -> tuple[int, int]:
    """Produce one record and wait for its delivery; returns ``(partition, offset)``.

    ``partition`` None lets the default partitioner choose (by key hash).

    Raises
    ------
    KafkaError
        When delivery fails or does not complete within ``timeout_s``.
    """
    from confluent_kafka import Producer

    result: dict[str, Any] = {}

    def on_delivery(err: Any, msg: Any) -> None:  # callback: only records the outcome
        result["err"], result["msg"] = err, msg

    producer = Producer(settings.producer())
    try:
        extra: dict[str, Any] = {} if partition is None else {"partition": partition}
        producer.produce(
            topic, key=key, value=value, headers=headers, on_delivery=on_delivery, **extra
        )
    except Exception as exc:
        raise KafkaError(f"cannot produce to {topic}: {exc}") from exc
    remaining = producer.flush(timeout_s)
    if remaining or "msg" not in result:
        raise KafkaError(
            f"record to {topic} not delivered within {timeout_s:.0f} s: is Kafka reachable "
            f"at {settings.bootstrap_servers}? (--bootstrap-servers / KAFKA_BOOTSTRAP_SERVERS)"
        )
    if result["err"] is not None:
        raise KafkaError(f"record to {topic} refused: {result['err'].str()}")
    return int(result["msg"].partition()), int(result["msg"].offset())


def read_topic(
    settings: Settings,
    topic: str,
    *,
    start: Mapping[int, int] | None = None,
    tail: int | None = None,
    timeout_s: float = 30.0,
    follow: bool = False,
    stop: threading.Event | None = None,
) -> Iterator[Any]:
    """Yield the records of ``topic`` with a group-less reader (assign, no commits).

    Every partition is read from its beginning, from ``start[partition]`` when given, or
    from ``tail`` records before its high watermark. Without ``follow`` the iteration
    ends when every partition reached EOF (``enable.partition.eof``: never a ListOffsets
    figure alone, DESIGN.md section 8); with it, it goes on until ``stop`` is set or the
    caller stops iterating.

    Raises
    ------
    KafkaError
        The topic does not exist, a read fails, or EOF is not reached on every partition
        within ``timeout_s`` seconds (without ``follow``).
    """
    from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaException, TopicPartition
    from confluent_kafka import KafkaError as CKError

    consumer = Consumer(settings.reader())
    try:
        meta = consumer.list_topics(topic, timeout=10).topics.get(topic)
        if meta is None or meta.error is not None or not meta.partitions:
            raise KafkaError(
                f"topic {topic} does not exist; create it with `contract-gate topics create`"
            )
        assignment = []
        for p in sorted(meta.partitions):
            offset = OFFSET_BEGINNING
            if start is not None and p in start:
                offset = start[p]
            elif tail is not None:
                low, high = consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)
                offset = max(low, high - tail)
            assignment.append(TopicPartition(topic, p, offset))
        consumer.assign(assignment)
        at_eof: set[int] = set()
        deadline = time.monotonic() + timeout_s
        while stop is None or not stop.is_set():
            if not follow and len(at_eof) == len(assignment):
                return
            if not follow and time.monotonic() > deadline:
                raise KafkaError(
                    f"{topic} not read to its end within {timeout_s:.0f} s "
                    f"({len(at_eof)}/{len(assignment)} partitions at EOF)"
                )
            msg = consumer.poll(0.5)
            if msg is None:
                continue
            err = msg.error()
            if err is not None:
                if err.code() == CKError._PARTITION_EOF:
                    at_eof.add(int(msg.partition() or 0))
                    continue
                raise KafkaError(f"reading {topic} failed: {err.str()}")
            at_eof.discard(int(msg.partition() or 0))
            yield msg
    except KafkaException as exc:  # confluent-kafka errors, translated at the boundary
        raise KafkaError(f"reading {topic} failed: {exc.args[0].str()}") from exc
    finally:
        consumer.close()
