"""Kafka settings of the gate: bootstrap servers, topics, group and instance ids, client configs.

:class:`Settings` is built from flags and ``KAFKA_*`` / ``CONTRACT_GATE_*`` environment
variables; :meth:`Settings.consumer_config` and friends give librdkafka configurations.
Secrets are never printed by :func:`worker.kafka.redaction.describe_settings`; the Schema
Registry settings are in :mod:`worker.kafka.registry_settings`.
"""

from __future__ import annotations

import logging
import os
import socket
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from worker.core._util.text import clip
from worker.core.errors import ContractGateError
from worker.io.payloads.policy import PayloadPolicy
from worker.io.signing import RecordSigning
from worker.kafka.logfilter import install as install_repeat_filter
from worker.kafka.registry_settings import SchemaRegistrySettings, registry_settings_from_env

__all__ = [
    "MAX_MESSAGE_BYTES",
    "RECORD_OVERHEAD_BYTES",
    "Settings",
    "Topics",
    "default_instance_id",
]

#: Largest record the gate produces or accepts (bytes): high-vertex layers travel inline.
MAX_MESSAGE_BYTES = 16 * 1024 * 1024

#: Bytes kept free below the producer's ``message.max.bytes`` for what librdkafka counts
#: beside key, value and headers (the record's framing: a few dozen bytes).
RECORD_OVERHEAD_BYTES = 1024


def default_instance_id() -> str:
    """The default instance id: the host name (in Kubernetes, the pod name).

    Stable across restarts on purpose: the transactional id derives from it, so a
    restarted worker fences its predecessor and aborts its open transaction. A fresh id
    per start would leave a killed worker's transaction open, and the embedded Tansu
    broker never expires it, hiding later records from read_committed readers. Two worker
    processes on one host need distinct ``--instance-id`` values (``host-0``, ``host-1``).
    """
    return socket.gethostname() or "contract-gate"


@dataclass(frozen=True)
class Topics:
    """Topic names of docs/design.md section 6 (all configurable)."""

    batches: str = "gis.batches"
    admitted: str = "gis.batches.admitted"
    quarantine: str = "gis.batches.quarantine"
    contracts: str = "gis.contracts"
    consumers: str = "gis.contract.consumers"
    evaluations: str = "gis.contract.evaluations"
    #: per-major read paths (``read_paths: per_major``): ``{layer}`` and ``{major}`` filled in
    admitted_per_major: str = "gis.batches.admitted.{layer}.v{major}"

    def with_prefix(self, prefix: str) -> Topics:
        """The same names under ``prefix`` (used by tests and the demo on shared clusters)."""
        return Topics(**{k: prefix + v for k, v in self.__dict__.items()})

    def names(self) -> tuple[str, ...]:
        """The six topics every deployment has (not the per-major name template)."""
        return (self.batches, self.admitted, self.quarantine, self.contracts, self.consumers,
                self.evaluations)  # fmt: skip

    def admitted_for(self, layer: str, major: int) -> str:
        """The per-major admitted topic of ``layer`` and ``major``, e.g.
        ``gis.batches.admitted.parcels.v7``."""
        return self.admitted_per_major.replace("{layer}", layer).replace("{major}", str(major))

    def per_major_of(self, topic: str) -> tuple[str, int] | None:
        """``(layer, major)`` when ``topic`` is a per-major admitted topic, else None."""
        import re

        parts = re.split(r"(\{layer\}|\{major\})", self.admitted_per_major)
        pattern = "".join(
            "(?P<layer>.+)"
            if p == "{layer}"
            else "(?P<major>[0-9]+)"
            if p == "{major}"
            else re.escape(p)
            for p in parts
        )
        m = re.fullmatch(pattern, topic)
        if m is None or "layer" not in m.groupdict() or "major" not in m.groupdict():
            return None
        return m.group("layer"), int(m.group("major"))


@dataclass(frozen=True)
class Settings:
    """Connection and naming settings shared by every command that talks to Kafka.

    ``extra`` holds any librdkafka property (``--kafka-property key=value`` or environment
    ``CONTRACT_GATE_KAFKA_<KEY>`` with dots as underscores); it is applied to every client.
    Clients never create topics (``allow.auto.create.topics=false``): a missing topic is an
    error naming it, not a topic silently re-created on an empty broker.
    """

    bootstrap_servers: str = "localhost:9092"
    group_id: str = "contract-gate"
    topics: Topics = field(default_factory=Topics)
    transactional_id_prefix: str = "contract-gate"
    instance_id: str = field(default_factory=default_instance_id)
    session_timeout_ms: int = 45000
    #: KIP-345 static membership: ``group.instance.id`` = the instance id, so a restarted
    #: member gets its partitions back without a rebalance; a dead member's partitions wait
    #: for ``session.timeout.ms`` before anyone takes them over.
    static_membership: bool = False
    extra: Mapping[str, str] = field(default_factory=dict)
    #: Where by-reference payloads may be read and how large they may be (default: no
    #: root, so by-reference events are quarantined with ``payload_not_allowed``).
    payload: PayloadPolicy = field(default_factory=PayloadPolicy)
    #: Confluent Schema Registry wire format for BatchArrival events read and quarantine
    #: and evaluation records written (None: plain Avro).
    schema_registry: SchemaRegistrySettings | None = None
    #: Config-record signatures: keys from --signing-key / --verify-key (:mod:`worker.io.signing`)
    signing: RecordSigning = field(default_factory=RecordSigning)

    def with_(self, **changes: Any) -> Settings:
        return replace(self, **changes)

    def base(self) -> dict[str, Any]:
        # librdkafka's own log lines go to the "librdkafka" Python logger (quiet unless
        # --log-level DEBUG): failures reach the caller as errors, not as log spam.
        install_repeat_filter()  # librdkafka repeats a failing connection's error per retry
        conf: dict[str, Any] = {
            "bootstrap.servers": self.bootstrap_servers,
            "logger": logging.getLogger("librdkafka"),
            "allow.auto.create.topics": False,
        }
        conf.update(self.extra)
        return conf

    def consumer(self, **overrides: Any) -> dict[str, Any]:
        """Configuration of the input consumer (group member, read_committed, manual commit).

        ``session.timeout.ms``, ``heartbeat.interval.ms``, ``auto.offset.reset`` and the
        fetch sizes given in ``extra`` win over the defaults (a ``session.timeout.ms``
        set with ``--kafka-property`` was overwritten);
        ``group.id``, ``enable.auto.commit`` and ``isolation.level`` are the worker's
        (exactly-once needs manual commits and read_committed; the group has its flag).
        """
        conf = self.base()
        given = self.extra.get("session.timeout.ms", self.session_timeout_ms)
        try:
            session_ms = int(given)
        except ValueError:  # a bad value was a ValueError traceback
            raise ContractGateError(
                f"session.timeout.ms {clip(str(given), 40)!r} is not a whole number of "
                "milliseconds; check --kafka-property and CONTRACT_GATE_KAFKA_SESSION_TIMEOUT_MS"
            ) from None
        defaults: dict[str, Any] = {
            "auto.offset.reset": "earliest",
            "session.timeout.ms": self.session_timeout_ms,
            "heartbeat.interval.ms": max(500, session_ms // 6),
            "fetch.max.bytes": MAX_MESSAGE_BYTES * 4,
            "max.partition.fetch.bytes": MAX_MESSAGE_BYTES,
            "receive.message.max.bytes": MAX_MESSAGE_BYTES * 4 + 1024 * 1024,
        }
        conf.update({k: v for k, v in defaults.items() if k not in self.extra})
        conf.update(
            {
                "group.id": self.group_id,
                "enable.auto.commit": False,
                "isolation.level": "read_committed",
            }
        )
        if self.static_membership:
            conf["group.instance.id"] = self.instance_id
        conf.update(overrides)
        return conf

    def reader(self, **overrides: Any) -> dict[str, Any]:
        """Configuration of a group-less reader (assign, no commits) for topic scans."""
        conf = self.consumer()
        conf.pop("group.instance.id", None)  # readers are not group members
        conf.update(
            {
                "group.id": f"{self.group_id}-reader-{self.instance_id}",
                "enable.partition.eof": True,
            }
        )
        conf.update(overrides)
        return conf

    def max_record_bytes(self) -> int:
        """Largest output record the worker writes, in bytes (key, value and headers):
        :data:`MAX_MESSAGE_BYTES`, or less when ``message.max.bytes`` given in ``extra`` is
        smaller, less :data:`RECORD_OVERHEAD_BYTES`. librdkafka refuses a larger record at
        ``produce()``, which aborts the transaction it belongs to: the router quarantines
        such a batch instead (``record_too_large``), so no transaction is aborted for it.
        A limit of the broker or topic, which the client cannot know, is still met by the
        abort-and-retry path (:mod:`worker.gate.attempts`)."""
        try:
            given = int(self.producer()["message.max.bytes"])
        except ValueError:  # librdkafka refuses the value itself when the producer starts
            return MAX_MESSAGE_BYTES
        return max(1, min(MAX_MESSAGE_BYTES, given - RECORD_OVERHEAD_BYTES))

    def producer(self, *, transactional: bool = False, **overrides: Any) -> dict[str, Any]:
        """Configuration of a producer; ``transactional`` gives it ``transactional.id``.

        ``message.max.bytes``, ``linger.ms`` and ``compression.type`` given in ``extra``
        win over the defaults (e.g. a cluster whose brokers take smaller records);
        idempotence is always on.
        """
        conf = self.base()
        defaults: dict[str, Any] = {
            "message.max.bytes": MAX_MESSAGE_BYTES + 1024 * 1024,
            "linger.ms": 5,
            "compression.type": "lz4",
        }
        conf.update({k: v for k, v in defaults.items() if k not in self.extra})
        conf["enable.idempotence"] = True
        if transactional:
            conf["transactional.id"] = f"{self.transactional_id_prefix}-{self.instance_id}"
            # the worker's default; a given one wins, as every other property
            # (--kafka-property transaction.timeout.ms was ignored)
            conf["transaction.timeout.ms"] = self.extra.get("transaction.timeout.ms", 60000)
        conf.update(overrides)
        return conf

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, **overrides: Any) -> Settings:
        """Settings from ``KAFKA_BOOTSTRAP_SERVERS``, ``CONTRACT_GATE_*`` and ``overrides``.

        Overrides whose value is None are ignored, so CLI flags that were not given keep
        the environment's value. ``payload_roots`` (URIs) and ``max_payload_bytes`` (a size
        or ``NAME=SIZE,...``, one per reader of ``worker.io.formats.FORMATS``) override
        ``CONTRACT_GATE_PAYLOAD_ROOTS`` (separated by commas or whitespace) and
        ``CONTRACT_GATE_MAX_PAYLOAD_BYTES``; ``signing_key`` and ``verify_key`` (files)
        ``CONTRACT_GATE_SIGNING_KEY_FILE`` and ``CONTRACT_GATE_VERIFY_KEY_FILE``.

        Raises
        ------
        ContractGateError
            A bad payload root, size limit or key file, naming the value and the fix.
        """
        env = os.environ if env is None else env
        kwargs: dict[str, Any] = {}
        roots = overrides.pop("payload_roots", None)
        if not roots:
            roots = [env.get("CONTRACT_GATE_PAYLOAD_ROOTS", "")]
        # flag values are split as the environment's are: `--payload-root a/,b/` was taken
        # as one directory named "a/,b/" (a comma or space in a name: %2C, %20 in file://)
        roots = [r for value in roots for r in value.replace(",", " ").split()]
        limit = overrides.pop("max_payload_bytes", None)
        limit = limit or env.get("CONTRACT_GATE_MAX_PAYLOAD_BYTES") or None
        try:
            PayloadPolicy.from_strings(roots)
        except ValueError as exc:
            where = "--payload-root, CONTRACT_GATE_PAYLOAD_ROOTS"
            raise ContractGateError(f"{exc} ({where})") from None
        try:
            kwargs["payload"] = PayloadPolicy.from_strings(roots, limit)
        except ValueError as exc:
            raise ContractGateError(
                f"{exc} (--max-payload-bytes, CONTRACT_GATE_MAX_PAYLOAD_BYTES)"
            ) from None
        url = overrides.pop("schema_registry_url", None) or env.get(
            "CONTRACT_GATE_SCHEMA_REGISTRY_URL"
        )
        if url:
            kwargs["schema_registry"] = registry_settings_from_env(url, env)
        kwargs["signing"] = RecordSigning.from_files(
            overrides.pop("signing_key", None) or env.get("CONTRACT_GATE_SIGNING_KEY_FILE"),
            overrides.pop("verify_key", None) or env.get("CONTRACT_GATE_VERIFY_KEY_FILE"),
        )
        if env.get("KAFKA_BOOTSTRAP_SERVERS"):
            kwargs["bootstrap_servers"] = env["KAFKA_BOOTSTRAP_SERVERS"]
        if env.get("CONTRACT_GATE_GROUP_ID"):
            kwargs["group_id"] = env["CONTRACT_GATE_GROUP_ID"]
        if env.get("CONTRACT_GATE_TRANSACTIONAL_ID_PREFIX"):
            kwargs["transactional_id_prefix"] = env["CONTRACT_GATE_TRANSACTIONAL_ID_PREFIX"]
        if env.get("CONTRACT_GATE_INSTANCE_ID"):
            kwargs["instance_id"] = env["CONTRACT_GATE_INSTANCE_ID"]
        if env.get("CONTRACT_GATE_STATIC_MEMBERSHIP", "").lower() in ("1", "true", "yes"):
            kwargs["static_membership"] = True
        extra = {
            k[len("CONTRACT_GATE_KAFKA_") :].lower().replace("_", "."): v
            for k, v in env.items()
            if k.startswith("CONTRACT_GATE_KAFKA_")
        }
        extra.update(overrides.pop("extra", None) or {})
        kwargs["extra"] = extra
        kwargs.update({k: v for k, v in overrides.items() if v is not None})
        return cls(**kwargs)
