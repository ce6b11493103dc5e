"""The one seam to Kafka: clients built in worker.kafka.clients, errors mapped at its edge.

In the spirit of httpx's ``test_httpcore_all_exceptions_mapped``: every exception class
confluent-kafka defines comes out of :func:`map_kafka_errors` as a :class:`BrokerError`
with a readable message, and only :mod:`worker.kafka` imports ``confluent_kafka``.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import pkgutil
from pathlib import Path
from types import SimpleNamespace

import confluent_kafka
import pytest
from confluent_kafka import KafkaError, KafkaException

from worker.cli.main import main
from worker.core import errors
from worker.core.errors import (
    BrokerConfigError,
    BrokerError,
    BrokerTimeout,
    BrokerUnavailable,
    ContractGateError,
    InstanceFenced,
    SchemaRegistryFailure,
)
from worker.kafka.clients import (
    ALL_BROKERS_DOWN,
    FENCED,
    INVALID_ARG,
    MSG_TIMED_OUT,
    TIMED_OUT,
    TRANSPORT,
    broker_error,
    make_consumer,
    make_producer,
    make_transactional_producer,
    map_kafka_errors,
)
from worker.kafka.protocols import ConsumerLike, ProducerLike, TransactionalProducerLike
from worker.kafka.settings import Settings

PACKAGE = Path(__file__).resolve().parents[2] / "worker"

#: Modules outside worker/kafka allowed to import confluent_kafka: none (the gate builds
#: its clients through worker.kafka.clients). This set may only shrink: an entry that no
#: longer imports it fails the test below.
PENDING: set[str] = set()


def _confluent_exception_classes() -> list[type[BaseException]]:
    """Every exception class defined in an importable module of confluent_kafka."""
    found: dict[str, type[BaseException]] = {}
    for info in pkgutil.walk_packages(confluent_kafka.__path__, "confluent_kafka."):
        try:
            module = importlib.import_module(info.name)
        except ImportError:  # optional extras (avro, cel, tink, ...) not installed
            continue
        for obj in vars(module).values():
            if (
                inspect.isclass(obj)
                and issubclass(obj, BaseException)
                and obj.__module__.split(".")[0] in ("confluent_kafka", "cimpl")
            ):
                found[f"{obj.__module__}.{obj.__qualname__}"] = obj
    return [found[name] for name in sorted(found)]


#: Arguments of confluent-kafka's exception constructors, by their first parameter's name.
ARGUMENTS: dict[str, tuple[object, ...]] = {
    "exception": (ValueError("bad bytes"),),
    "kafka_error": (KafkaError(TRANSPORT, "connection refused"),),
    "http_status_code": (503, 50301, "service unavailable"),
    "message": ("token refused", 401, "denied"),
    "rule": (SimpleNamespace(name="has_geometry", doc="", expr="message.geometry != null"),),
}


def _instance(cls: type[BaseException]) -> BaseException:
    """An instance of ``cls`` built the way confluent-kafka builds it."""
    try:
        params = list(inspect.signature(cls.__init__).parameters)[1:]
    except (TypeError, ValueError):  # a class of the C extension
        params = []
    if params and params[0] in ARGUMENTS:
        return cls(*ARGUMENTS[params[0]])
    if issubclass(cls, KafkaException):
        return cls(*ARGUMENTS["kafka_error"])
    return cls("broken rule")


EXCEPTIONS = _confluent_exception_classes()


def test_the_walk_finds_confluent_kafka_exceptions() -> None:
    names = {c.__name__ for c in EXCEPTIONS}
    assert {"KafkaException", "ConsumeError", "SerializationError", "SchemaRegistryError"} <= names


@pytest.mark.parametrize("cls", EXCEPTIONS, ids=lambda c: f"{c.__module__}.{c.__qualname__}")
def test_every_confluent_exception_is_mapped(cls: type[BaseException]) -> None:
    original = _instance(cls)
    with pytest.raises(BrokerError) as caught, map_kafka_errors("reading gis.batches failed"):
        raise original
    text = str(caught.value)
    assert text.startswith("reading gis.batches failed: ")
    assert len(text) > len("reading gis.batches failed: ")
    assert "KafkaError{" not in text and "object at 0x" not in text
    assert caught.value.__cause__ is original


@pytest.mark.parametrize(
    ("code", "cls"),
    [
        (ALL_BROKERS_DOWN, BrokerUnavailable),
        (TRANSPORT, BrokerUnavailable),
        (INVALID_ARG, BrokerConfigError),
        (TIMED_OUT, BrokerTimeout),
        (KafkaError.REQUEST_TIMED_OUT, BrokerTimeout),
        (FENCED, InstanceFenced),
        (KafkaError.PRODUCER_FENCED, InstanceFenced),
        (KafkaError.FENCED_INSTANCE_ID, InstanceFenced),
        (KafkaError.TOPIC_AUTHORIZATION_FAILED, BrokerError),
    ],
)
def test_codes_choose_the_subclass_and_keep_the_flags(code: int, cls: type[BrokerError]) -> None:
    err = KafkaError(code, "what librdkafka said", fatal=True, txn_requires_abort=True)
    with pytest.raises(cls) as caught, map_kafka_errors("commit failed", hint="check it"):
        raise KafkaException(err)
    mapped = caught.value
    assert type(mapped) is cls
    assert str(mapped) == "commit failed: what librdkafka said; check it"
    assert (mapped.code, mapped.detail) == (code, "what librdkafka said")
    assert (mapped.fatal, mapped.retriable, mapped.txn_requires_abort) == (True, False, True)


def test_an_error_event_maps_without_raising() -> None:
    eof = broker_error(KafkaError(MSG_TIMED_OUT, "Local: Message timed out"))
    assert isinstance(eof, BrokerTimeout)
    assert str(eof) == "Local: Message timed out"


def test_registry_errors_name_the_status_never_credentials() -> None:
    from confluent_kafka.schema_registry.error import SchemaRegistryError

    with pytest.raises(SchemaRegistryFailure) as caught, map_kafka_errors("schema registry"):
        raise SchemaRegistryError(401, 40101, "Unauthorized for https://bob:s3cret@sr:8081")
    assert str(caught.value) == (
        "schema registry: the registry answered HTTP 401: Unauthorized for https://***@sr:8081"
    )


def test_other_exceptions_pass_through_unchanged() -> None:
    with pytest.raises(KeyError), map_kafka_errors("x"):
        raise KeyError("not ours to translate")
    with pytest.raises(ContractGateError, match=r"^ours$"), map_kafka_errors("x"):
        raise ContractGateError("ours")


def test_clients_are_built_typed_by_the_protocols() -> None:
    settings = Settings(bootstrap_servers="127.0.0.1:1")
    consumer = make_consumer(settings, reader=True)
    producer = make_producer(settings)
    txn = make_transactional_producer(settings, transactional_id="tx-test")
    try:
        assert isinstance(consumer, ConsumerLike)
        assert isinstance(producer, ProducerLike)
        assert isinstance(txn, TransactionalProducerLike)
    finally:
        consumer.close()


def test_a_refused_property_is_a_config_error_with_librdkafkas_text() -> None:
    settings = Settings(bootstrap_servers="127.0.0.1:1", extra={"no.such.property": "1"})
    with pytest.raises(BrokerConfigError) as caught:
        make_consumer(settings)
    assert str(caught.value) == 'No such configuration property: "no.such.property"'


def test_the_command_line_reports_a_refused_property_as_before(
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = ["topics", "create", "--bootstrap-servers", "127.0.0.1:1"]
    assert main([*argv, "--kafka-property", "no.such.property=1"]) == 2
    assert capsys.readouterr().err == (
        'contract-gate topics: Kafka error: No such configuration property: "no.such.property"; '
        "check --bootstrap-servers, --kafka-property and CONTRACT_GATE_KAFKA_* settings\n"
    )


def test_the_old_name_of_broker_error_warns() -> None:
    with pytest.warns(DeprecationWarning, match="KafkaError is deprecated: use BrokerError"):
        old = errors.KafkaError
    assert old is BrokerError
    with pytest.raises(AttributeError):
        _ = errors.NoSuchError


def _imports_confluent(path: Path) -> list[int]:
    lines = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        names = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            names = [node.module or ""]
        if any(n == "confluent_kafka" or n.startswith("confluent_kafka.") for n in names):
            lines.append(node.lineno)
    return lines


def test_only_the_adapter_imports_confluent_kafka() -> None:
    outside = {
        path.relative_to(PACKAGE.parent).as_posix(): lines
        for path in sorted(PACKAGE.rglob("*.py"))
        if path.relative_to(PACKAGE).parts[0] != "kafka" and (lines := _imports_confluent(path))
    }
    unexpected = {p: lines for p, lines in outside.items() if p not in PENDING}
    assert unexpected == {}, f"confluent_kafka imported outside worker/kafka: {unexpected}"
    stale = PENDING - set(outside)
    assert stale == set(), f"no longer importing confluent_kafka, drop from PENDING: {stale}"


def test_a_system_error_over_a_pending_kafka_exception_is_that_exception() -> None:
    """confluent-kafka 2.16: a fenced producer's ``flush`` at close left the fatal
    ``KafkaException`` set while serving delivery reports; the next report's
    ``err.code()`` raised ``SystemError`` chained to it, which escaped ``Pipeline.close``
    and hid the clear "fenced" error (tests/integration/test_fencing.py under load)."""
    err = KafkaError(FENCED, "This instance has been fenced by a newer instance", fatal=True)
    pending = KafkaException(err)
    with pytest.raises(InstanceFenced) as caught, map_kafka_errors("flush at close"):
        try:
            raise pending
        except KafkaException as exc:
            raise SystemError(
                "<method 'code' of 'confluent_kafka.cimpl.KafkaError' objects> returned a "
                "result with an exception set"
            ) from exc
    assert caught.value.code == FENCED and caught.value.fatal
    assert str(caught.value) == "flush at close: This instance has been fenced by a newer instance"
    # a SystemError of anything else is not the client's: it passes through unchanged
    with pytest.raises(SystemError), map_kafka_errors("flush at close"):
        raise SystemError("another library's")
