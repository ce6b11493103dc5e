"""What of the Kafka settings may be printed: secret keys masked, the one-line description.

A librdkafka property is printed with its value only when it is in :data:`PRINTABLE_KEYS`
and names none of :data:`SECRET_KEYS`; every other value, unknown or misspelt keys
included, is printed as ``***`` by :func:`describe_settings`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from worker.core._util.text import clip

if TYPE_CHECKING:
    from worker.kafka.settings import Settings

__all__ = ["PRINTABLE_KEYS", "SECRET_KEYS", "describe_settings", "is_secret_key"]

#: Parts of librdkafka property names whose values are never printed, even when the key is
#: misspelt (``sasl.pasword``): any key containing one of these is masked.
SECRET_KEYS = ("pass", "pasw", "secret", "token", "key", "credential", "oauthbearer", "jaas", "pem")

#: librdkafka properties whose values are printed as given (nothing secret in them). Every
#: other key, unknown or misspelt ones included, is printed with its value masked.
PRINTABLE_KEYS = frozenset(
    {
        "acks",
        "allow.auto.create.topics",
        "auto.offset.reset",
        "batch.size",
        "client.id",
        "client.rack",
        "compression.type",
        "debug",
        "enable.idempotence",
        "fetch.max.bytes",
        "heartbeat.interval.ms",
        "isolation.level",
        "linger.ms",
        "max.partition.fetch.bytes",
        "max.poll.interval.ms",
        "message.max.bytes",
        "message.timeout.ms",
        "metadata.max.age.ms",
        "queue.buffering.max.messages",
        "receive.message.max.bytes",
        "reconnect.backoff.max.ms",
        "reconnect.backoff.ms",
        "request.timeout.ms",
        "retry.backoff.ms",
        "sasl.kerberos.service.name",
        "sasl.mechanism",
        "sasl.mechanisms",
        "sasl.username",
        "security.protocol",
        "session.timeout.ms",
        "socket.timeout.ms",
        "ssl.ca.location",
        "ssl.certificate.location",
        "ssl.endpoint.identification.algorithm",
        "statistics.interval.ms",
        "topic.metadata.refresh.interval.ms",
        "transaction.timeout.ms",
    }
)


def is_secret_key(key: str) -> bool:
    """Whether the value of librdkafka property ``key`` must never be printed."""
    lowered = key.lower()
    return key not in PRINTABLE_KEYS or any(part in lowered for part in SECRET_KEYS)


def describe_settings(settings: Settings) -> str:
    """One line describing the settings; only values of :data:`PRINTABLE_KEYS` are shown.

    Every other value (secrets, and keys that are unknown or misspelt, which may be
    secrets typed wrong) is printed as ``***``; long values are clipped.
    """
    extra = ", ".join(
        f"{k}={'***' if is_secret_key(k) else clip(str(v), 200)}"
        for k, v in sorted(settings.extra.items())
    )
    return (
        f"bootstrap={settings.bootstrap_servers} group={settings.group_id} "
        f"instance={settings.instance_id}"
        + (" static-membership" if settings.static_membership else "")
        + (f" extra[{extra}]" if extra else "")
        + f"; {settings.payload.describe()}"
        + (f"; {settings.schema_registry.describe()}" if settings.schema_registry else "")
    )
