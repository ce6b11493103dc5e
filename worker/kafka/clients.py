"""Building confluent-kafka clients, and translating their errors at the adapter's edge.

Every Kafka client of the package is built here: consumers (group members and group-less
readers), producers (plain and transactional) and admin clients, each returned typed by
the protocols of :mod:`worker.kafka.protocols` and built inside :func:`map_kafka_errors`,
which turns confluent-kafka's exceptions into the :class:`~worker.core.errors.BrokerError`
branch of the package's tree (httpx's ``map_httpcore_exceptions`` is the model)::

    confluent-kafka                                   worker.core.errors
    KafkaException / KafkaError code                  BrokerError subclass
      _ALL_BROKERS_DOWN _TRANSPORT _RESOLVE             BrokerUnavailable
      BROKER_NOT_AVAILABLE NETWORK_EXCEPTION
      _INVALID_ARG INVALID_CONFIG                       BrokerConfigError
      _TIMED_OUT _MSG_TIMED_OUT _TIMED_OUT_QUEUE        BrokerTimeout
      REQUEST_TIMED_OUT
      _FENCED PRODUCER_FENCED INVALID_PRODUCER_EPOCH    InstanceFenced
      FENCED_INSTANCE_ID
      any other code                                    BrokerError
    schema_registry errors (HTTP, OAuth, rules)       SchemaRegistryFailure
    any other exception class of confluent_kafka      BrokerError

The clients are cast to the protocols: confluent-kafka's stubs type record headers as
``dict | list`` of ``str | bytes`` (what ``produce`` accepts), where a consumed record's
headers are always a list of ``(str, bytes | None)``, the protocols' narrower type.

The mapped error keeps librdkafka's code and flags (``code``, ``fatal``, ``retriable``,
``txn_requires_abort``), so a caller decides without importing ``confluent_kafka``; the
error codes and offsets it compares with are the constants of this module.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any, cast

from confluent_kafka import (
    OFFSET_BEGINNING,
    OFFSET_END,
    OFFSET_INVALID,
    Consumer,
    KafkaError,
    KafkaException,
    Producer,
)
from confluent_kafka.admin import AdminClient

from worker.core.errors import (
    BrokerConfigError,
    BrokerError,
    BrokerTimeout,
    BrokerUnavailable,
    InstanceFenced,
    SchemaRegistryFailure,
)
from worker.kafka.protocols import ConsumerLike, ProducerLike, TransactionalProducerLike
from worker.kafka.settings import Settings

__all__ = [
    "ALL_BROKERS_DOWN",
    "FENCED",
    "FENCED_CODES",
    "INVALID_ARG",
    "MSG_TIMED_OUT",
    "OFFSET_BEGINNING",
    "OFFSET_END",
    "OFFSET_INVALID",
    "PARTITION_EOF",
    "RECORD_TOO_LARGE_CODES",
    "STATE",
    "TIMED_OUT",
    "TOPIC_ALREADY_EXISTS",
    "TRANSPORT",
    "UNKNOWN_TOPIC_OR_PART",
    "broker_error",
    "make_admin",
    "make_consumer",
    "make_producer",
    "make_transactional_producer",
    "map_kafka_errors",
]

#: A partition read to its end (a consumer with ``enable.partition.eof``): not a failure.
PARTITION_EOF: int = KafkaError._PARTITION_EOF
#: A newer producer with the same ``transactional.id`` took over: this one must stop.
FENCED_CODES: frozenset[int] = frozenset(
    {KafkaError._FENCED, KafkaError.PRODUCER_FENCED, KafkaError.INVALID_PRODUCER_EPOCH}
)
#: A record too large: local (``message.max.bytes``) or the broker's or topic's limit.
RECORD_TOO_LARGE_CODES: frozenset[int] = frozenset(
    {KafkaError.MSG_SIZE_TOO_LARGE, KafkaError.RECORD_LIST_TOO_LARGE}
)
TOPIC_ALREADY_EXISTS: int = KafkaError.TOPIC_ALREADY_EXISTS
UNKNOWN_TOPIC_OR_PART: int = KafkaError.UNKNOWN_TOPIC_OR_PART

#: librdkafka's local error codes (negative; confluent-kafka names them with a leading
#: underscore), for callers and tests that compare with or build a ``KafkaError``.
ALL_BROKERS_DOWN: int = KafkaError._ALL_BROKERS_DOWN
TRANSPORT: int = KafkaError._TRANSPORT
INVALID_ARG: int = KafkaError._INVALID_ARG
TIMED_OUT: int = KafkaError._TIMED_OUT
MSG_TIMED_OUT: int = KafkaError._MSG_TIMED_OUT
FENCED: int = KafkaError._FENCED
STATE: int = KafkaError._STATE

_CLASS_OF_CODE: dict[int, type[BrokerError]] = {
    **dict.fromkeys(
        (
            KafkaError._ALL_BROKERS_DOWN,
            KafkaError._TRANSPORT,
            KafkaError._RESOLVE,
            KafkaError.BROKER_NOT_AVAILABLE,
            KafkaError.NETWORK_EXCEPTION,
        ),
        BrokerUnavailable,
    ),
    **dict.fromkeys((KafkaError._INVALID_ARG, KafkaError.INVALID_CONFIG), BrokerConfigError),
    **dict.fromkeys(
        (
            KafkaError._TIMED_OUT,
            KafkaError._MSG_TIMED_OUT,
            KafkaError._TIMED_OUT_QUEUE,
            KafkaError.REQUEST_TIMED_OUT,
        ),
        BrokerTimeout,
    ),
    **dict.fromkeys((*FENCED_CODES, KafkaError.FENCED_INSTANCE_ID), InstanceFenced),
}


def _redacted(text: str) -> str:
    """``text`` without the credentials of a URL (``//user:secret@host``)."""
    return re.sub(r"//[^/@\s]*@", "//***@", text)


def _message(detail: str, context: str | None, hint: str | None) -> str:
    text = f"{context}: {detail}" if context else detail
    return f"{text}; {hint}" if hint else text


def broker_error(err: Any, context: str | None = None, *, hint: str | None = None) -> BrokerError:
    """The :class:`BrokerError` of one ``confluent_kafka.KafkaError`` (e.g. ``msg.error()``).

    Parameters
    ----------
    err : confluent_kafka.KafkaError
        The client's error object: its ``code()``, ``str()`` and flags are kept.
    context : str, optional
        What was being done (``"reading gis.contracts failed"``): the message is
        ``"<context>: <librdkafka's text>"``, or librdkafka's text alone.
    hint : str, optional
        What to check, appended as ``"; <hint>"``.

    Returns
    -------
    BrokerError
        The subclass of the code's row in the module's table, not raised.
    """
    detail = str(err.str())
    cls = _CLASS_OF_CODE.get(err.code(), BrokerError)
    return cls(
        _message(detail, context, hint),
        code=int(err.code()),
        detail=detail,
        fatal=bool(err.fatal()),
        retriable=bool(err.retriable()),
        txn_requires_abort=bool(err.txn_requires_abort()),
    )


def _translate(exc: BaseException, context: str | None, hint: str | None) -> BrokerError | None:
    """The :class:`BrokerError` of a confluent-kafka exception, None for any other; a
    ``SystemError`` caused by a ``KafkaException`` is that exception's (confluent-kafka 2.16's
    ``flush`` serves delivery reports with a fatal error still set: "returned a result with
    an exception set")."""
    if isinstance(exc, SystemError) and isinstance(exc.__cause__, KafkaException):
        exc = exc.__cause__
    if isinstance(exc, KafkaException):
        if exc.args and isinstance(exc.args[0], KafkaError):
            return broker_error(exc.args[0], context, hint=hint)
        detail = _redacted(str(exc)) or type(exc).__name__
    elif type(exc).__module__.startswith("confluent_kafka.schema_registry"):
        status = getattr(exc, "http_status_code", None)
        if status is not None and status >= 0:
            reason = getattr(exc, "error_message", "") or str(exc)
            detail = f"the registry answered HTTP {status}: {_redacted(str(reason))}"
        else:
            detail = f"{type(exc).__name__}: {_redacted(str(exc)) or 'no detail'}"
        return SchemaRegistryFailure(_message(detail, context, hint), detail=detail)
    elif type(exc).__module__.split(".")[0] in ("confluent_kafka", "cimpl"):
        detail = f"{type(exc).__name__}: {_redacted(str(exc)) or 'no detail'}"
    else:
        return None
    return BrokerError(_message(detail, context, hint), detail=detail)


@contextmanager
def map_kafka_errors(context: str | None = None, *, hint: str | None = None) -> Iterator[None]:
    """Translate confluent-kafka's exceptions raised in the block into :class:`BrokerError`.

    Parameters
    ----------
    context : str, optional
        Prefix of the translated message (what was being done); without it the message is
        librdkafka's text alone.
    hint : str, optional
        What to check, appended as ``"; <hint>"``.

    Raises
    ------
    BrokerError
        A subclass chosen by librdkafka's error code (see the module's table), chained to
        the original exception; exceptions of other libraries pass through unchanged.
    """
    try:
        yield
    except Exception as exc:
        mapped = _translate(exc, context, hint)
        if mapped is None:
            raise
        raise mapped from exc


def make_consumer(settings: Settings, *, reader: bool = False, **overrides: Any) -> ConsumerLike:
    """A ``confluent_kafka.Consumer`` of the settings.

    Parameters
    ----------
    settings : Settings
        Connection settings.
    reader : bool
        False: the input consumer, a member of ``settings.group_id`` (read_committed,
        manual commits, :meth:`Settings.consumer`); True: a group-less reader for topic
        scans (assign, no commits, partition EOF, :meth:`Settings.reader`).
    **overrides
        librdkafka properties that win over both (e.g. ``group.id``, callbacks).

    Raises
    ------
    BrokerConfigError
        librdkafka refuses a property (unknown name, bad value).
    """
    conf = settings.reader(**overrides) if reader else settings.consumer(**overrides)
    with map_kafka_errors():
        return cast(ConsumerLike, Consumer(conf))


def make_producer(settings: Settings, **overrides: Any) -> ProducerLike:
    """An idempotent, non-transactional ``confluent_kafka.Producer`` of the settings.

    Raises
    ------
    BrokerConfigError
        librdkafka refuses a property (unknown name, bad value).
    """
    conf = settings.producer(**overrides)
    with map_kafka_errors():
        return cast(ProducerLike, Producer(conf))


def make_transactional_producer(
    settings: Settings, *, transactional_id: str | None = None, **overrides: Any
) -> TransactionalProducerLike:
    """A transactional ``confluent_kafka.Producer`` (transactions not yet initialised).

    Parameters
    ----------
    settings : Settings
        Connection settings.
    transactional_id : str, optional
        The producer's ``transactional.id``; by default the settings' own,
        ``<transactional_id_prefix>-<instance_id>``.
    **overrides
        librdkafka properties that win over the settings' (e.g. callbacks).

    Raises
    ------
    BrokerConfigError
        librdkafka refuses a property (unknown name, bad value).
    """
    conf = settings.producer(transactional=True, **overrides)
    if transactional_id is not None:
        conf["transactional.id"] = transactional_id
    with map_kafka_errors():
        return cast(TransactionalProducerLike, Producer(conf))


def make_admin(settings: Settings | Mapping[str, Any]) -> Any:
    """A ``confluent_kafka.admin.AdminClient`` of the settings (or of a raw librdkafka
    configuration, for the embedded broker's readiness probe, which has no settings yet).

    Raises
    ------
    BrokerConfigError
        librdkafka refuses a property (unknown name, bad value).
    """
    conf = settings.base() if isinstance(settings, Settings) else dict(settings)
    with map_kafka_errors():
        return AdminClient(conf)
