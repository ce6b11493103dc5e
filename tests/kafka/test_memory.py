"""The in-memory broker keeps Kafka's semantics the gate relies on."""

from __future__ import annotations

import pytest
from confluent_kafka import KafkaError, KafkaException

from worker.core.errors import BrokerError, BrokerTimeout, InstanceFenced
from worker.kafka.clients import (
    OFFSET_BEGINNING,
    OFFSET_END,
    OFFSET_INVALID,
    PARTITION_EOF,
    map_kafka_errors,
)
from worker.kafka.memory import BrokerFault, MemoryBroker, MemoryMessage
from worker.kafka.protocols import (
    ConsumerLike,
    MessageLike,
    ProducerLike,
    TopicPartition,
    TransactionalProducerLike,
)


def _broker(partitions: int = 1) -> MemoryBroker:
    broker = MemoryBroker(clock_ms=lambda: 1_700_000_000_000)
    broker.create_topic("in", partitions)
    broker.create_topic("out", partitions)
    return broker


def _values(msgs: list[MemoryMessage]) -> list[bytes | None]:
    return [m.value() for m in msgs if m.error() is None]


def test_the_clients_implement_the_protocols() -> None:
    broker = _broker()
    producer = broker.producer("tx-1")
    consumer = broker.consumer("g")
    assert isinstance(consumer, ConsumerLike)
    assert isinstance(producer, ProducerLike)
    assert isinstance(producer, TransactionalProducerLike)
    broker.producer().produce("in", b"v", key=b"k")
    consumer.subscribe(["in"])
    msg = consumer.poll(0)
    assert isinstance(msg, MessageLike)
    assert msg is not None
    assert (msg.topic(), msg.partition(), msg.offset(), msg.key(), msg.value()) == (
        "in",
        0,
        0,
        b"k",
        b"v",
    )
    assert msg.timestamp() == (1, 1_700_000_000_000)


def test_produce_then_consume_in_order_with_delivery_reports() -> None:
    broker = _broker()
    producer = broker.producer()
    delivered: list[tuple[object, int | None]] = []
    for i in range(3):
        producer.produce(
            "in",
            f"v{i}".encode(),
            headers=[("n", str(i).encode())],
            on_delivery=lambda err, msg: delivered.append((err, msg.offset())),
        )
    assert delivered == []  # reports are served by poll/flush, as librdkafka does
    assert producer.flush(1.0) == 0
    assert delivered == [(None, 0), (None, 1), (None, 2)]
    consumer = broker.consumer("g")
    consumer.subscribe(["in"])
    msgs = consumer.consume(10, 0)
    assert _values(msgs) == [b"v0", b"v1", b"v2"]
    assert [m.headers() for m in msgs] == [[("n", b"0")], [("n", b"1")], [("n", b"2")]]
    assert consumer.poll(0) is None


def test_keys_choose_a_stable_partition() -> None:
    broker = _broker(partitions=3)
    producer = broker.producer()
    for _ in range(4):
        producer.produce("in", b"x", key=b"layer-a")
    counts = [broker.watermarks("in", p)[1] for p in range(3)]
    assert sorted(counts) == [0, 0, 4]


def test_an_aborted_transaction_is_invisible_to_read_committed_only() -> None:
    broker = _broker()
    producer = broker.producer("tx-1")
    producer.init_transactions()
    producer.begin_transaction()
    producer.produce("out", b"lost")
    producer.abort_transaction()
    producer.begin_transaction()
    producer.produce("out", b"kept")
    producer.commit_transaction()
    committed = broker.consumer("a")
    committed.assign([TopicPartition("out", 0, OFFSET_BEGINNING)])
    assert _values(committed.consume(10)) == [b"kept"]
    everything = broker.consumer("b", read_committed=False)
    everything.assign([TopicPartition("out", 0, OFFSET_BEGINNING)])
    assert _values(everything.consume(10)) == [b"lost", b"kept"]
    # two records and two control markers: the markers take offsets, never delivered
    assert broker.watermarks("out", 0) == (0, 4)


def test_read_committed_stops_at_an_open_transaction() -> None:
    broker = _broker()
    producer = broker.producer("tx-1")
    producer.init_transactions()
    broker.producer().produce("out", b"before")
    producer.begin_transaction()
    producer.produce("out", b"pending")
    consumer = broker.consumer("g")
    consumer.assign([TopicPartition("out", 0, OFFSET_BEGINNING)])
    assert _values(consumer.consume(10)) == [b"before"]
    producer.commit_transaction()
    assert _values(consumer.consume(10)) == [b"pending"]


def test_offsets_sent_to_a_transaction_are_committed_on_commit_only() -> None:
    broker = _broker()
    for i in range(3):
        broker.producer().produce("in", f"e{i}".encode())
    consumer = broker.consumer("gate")
    consumer.subscribe(["in"])
    producer = broker.producer("tx-1")
    producer.init_transactions()
    meta = consumer.consumer_group_metadata()

    producer.begin_transaction()
    producer.produce("out", b"admitted")
    producer.send_offsets_to_transaction([TopicPartition("in", 0, 2)], meta)
    producer.abort_transaction()
    assert broker.committed("gate") == {}

    producer.begin_transaction()
    producer.send_offsets_to_transaction([TopicPartition("in", 0, 2)], meta)
    producer.commit_transaction()
    assert broker.committed("gate") == {("in", 0): 2}
    # a new member of the group starts at the committed offset
    again = broker.consumer("gate")
    again.subscribe(["in"])
    assert _values(again.consume(10)) == [b"e2"]


def test_subscribe_calls_on_assign_with_every_partition() -> None:
    broker = _broker(partitions=2)
    seen: list[list[tuple[str, int]]] = []
    consumer = broker.consumer("g")
    consumer.subscribe(
        ["in"], on_assign=lambda c, parts: seen.append([(p.topic, p.partition) for p in parts])
    )
    assert consumer.poll(0) is None
    assert seen == [[("in", 0), ("in", 1)]]
    positions = consumer.position([TopicPartition("in", 0), TopicPartition("in", 1)])
    assert [p.offset for p in positions] == [0, 0]


def test_seek_position_and_watermarks() -> None:
    broker = _broker()
    for i in range(5):
        broker.producer().produce("in", f"e{i}".encode())
    consumer = broker.consumer("g")
    consumer.assign([TopicPartition("in", 0, 1)])
    assert consumer.get_watermark_offsets(TopicPartition("in", 0)) == (0, 5)
    assert _values(consumer.consume(2)) == [b"e1", b"e2"]
    assert consumer.position([TopicPartition("in", 0)])[0].offset == 3
    consumer.seek(TopicPartition("in", 0, 1))  # rewind: consumed again
    assert _values(consumer.consume(1)) == [b"e1"]
    consumer.seek(TopicPartition("in", 0, OFFSET_END))
    assert consumer.poll(0) is None
    assert consumer.position([TopicPartition("in", 9)])[0].offset == OFFSET_INVALID
    with pytest.raises(BrokerError, match=r"in \[9\] is not assigned"), map_kafka_errors():
        consumer.seek(TopicPartition("in", 9, 0))


def test_partition_eof_is_reported_once_per_end_reached() -> None:
    broker = _broker()
    broker.producer().produce("in", b"a")
    consumer = broker.consumer("r", partition_eof=True)
    consumer.assign([TopicPartition("in", 0, OFFSET_BEGINNING)])
    first, eof = consumer.poll(0), consumer.poll(0)
    assert first is not None and first.value() == b"a"
    assert eof is not None and eof.error().code() == PARTITION_EOF and eof.offset() == 1
    assert consumer.poll(0) is None
    broker.producer().produce("in", b"b")
    assert [m.value() for m in consumer.consume(5)] == [b"b", None]


def test_a_second_producer_with_the_same_id_fences_the_first() -> None:
    broker = _broker()
    old = broker.producer("tx-1")
    old.init_transactions()
    old.begin_transaction()
    old.produce("out", b"zombie")
    new = broker.producer("tx-1")
    new.init_transactions()  # aborts the open transaction of the old one
    fenced = pytest.raises(InstanceFenced, match="fenced by a newer producer")
    with fenced as caught, map_kafka_errors():
        old.begin_transaction()
    assert caught.value.fatal
    consumer = broker.consumer("g")
    consumer.assign([TopicPartition("out", 0, OFFSET_BEGINNING)])
    assert _values(consumer.consume(10)) == []


def test_misuse_is_refused_as_librdkafka_refuses_it() -> None:
    broker = _broker()
    producer = broker.producer("tx-1")
    with pytest.raises(BrokerError, match="init_transactions"), map_kafka_errors():
        producer.begin_transaction()
    producer.init_transactions()
    with pytest.raises(BrokerError, match="no transaction is open"), map_kafka_errors():
        producer.produce("out", b"x")
    with pytest.raises(BrokerError, match="unknown topic nowhere"), map_kafka_errors():
        broker.producer().produce("nowhere", b"x")
    assert broker.metadata("nowhere").topics["nowhere"].error is not None
    assert sorted(broker.metadata().topics) == ["in", "out"]


# -- faults armed by a test (fail_next) --------------------------------------------------


@pytest.mark.parametrize(
    ("fault", "kind", "flags"),
    [
        (BrokerFault.ABORTABLE, BrokerTimeout, (False, False, True)),
        (BrokerFault.RETRIABLE, BrokerTimeout, (False, True, False)),
        (BrokerFault.FENCED, InstanceFenced, (True, False, False)),
        (BrokerFault.STATE, BrokerError, (False, False, False)),
        (BrokerFault.TOO_LARGE, BrokerError, (False, False, False)),
    ],
)
def test_an_armed_fault_is_raised_as_confluent_kafka_raises_it_and_mapped(
    fault: BrokerFault, kind: type[BrokerError], flags: tuple[bool, bool, bool]
) -> None:
    broker = _broker()
    producer = broker.producer("tx-1")
    producer.init_transactions()
    producer.begin_transaction()
    broker.fail_next("commit_transaction", fault)
    with pytest.raises(KafkaException) as raw:  # what the real client raises
        producer.commit_transaction()
    err = raw.value.args[0]
    assert isinstance(err, KafkaError) and err.code() == fault.value[0]
    assert (err.fatal(), err.retriable(), err.txn_requires_abort()) == flags
    broker.fail_next("commit_transaction", fault)
    with pytest.raises(BrokerError) as mapped, map_kafka_errors():  # what the gate sees
        producer.commit_transaction()
    assert type(mapped.value) is kind and mapped.value.code == fault.value[0]
    assert (mapped.value.fatal, mapped.value.retriable) == flags[:2]
    producer.commit_transaction()  # nothing armed any more: the open transaction commits
    assert broker.calls.count("commit_transaction") == 3


def test_after_and_times_choose_which_calls_fail() -> None:
    broker = _broker()
    producer = broker.producer("tx-1")
    producer.init_transactions()
    broker.fail_next("begin_transaction", BrokerFault.STATE, after=1, times=2)
    outcomes = []
    for _ in range(4):
        try:
            producer.begin_transaction()
            producer.abort_transaction()
            outcomes.append("ok")
        except KafkaException:
            outcomes.append("failed")
    assert outcomes == ["ok", "failed", "failed", "ok"]
    broker.fail_next("seek", BrokerFault.STATE, times=None)
    consumer = broker.consumer("g")
    consumer.assign([TopicPartition("in", 0, 0)])
    for _ in range(3):
        with pytest.raises(KafkaException):
            consumer.seek(TopicPartition("in", 0, 0))
    assert broker.calls[-3:] == ["seek in[0]@0"] * 3


def test_fail_next_refuses_a_call_it_cannot_fail_and_bad_counts() -> None:
    broker = _broker()
    with pytest.raises(ValueError, match="no fault can be armed for 'flush'"):
        broker.fail_next("flush", BrokerFault.STATE)
    with pytest.raises(ValueError, match="times must be 1 or more"):
        broker.fail_next("produce", BrokerFault.STATE, times=0)
    with pytest.raises(ValueError, match="after 0 or more"):
        broker.fail_next("produce", BrokerFault.STATE, after=-1)


def test_a_producer_with_max_message_bytes_refuses_a_larger_record_at_produce() -> None:
    broker = _broker()
    producer = broker.producer(max_message_bytes=10)
    producer.produce("in", b"12345", key=b"12345")  # 10 bytes: taken
    with pytest.raises(KafkaException) as raw:
        producer.produce("in", b"123456", key=b"12345")
    assert raw.value.args[0].code() == KafkaError.MSG_SIZE_TOO_LARGE
    consumer = broker.consumer("g")
    consumer.subscribe(["in"])
    assert _values(consumer.consume(10, timeout=0)) == [b"12345"]


def test_memory_message_of_builds_a_bare_record() -> None:
    m = MemoryMessage.of("in", 1, 7, key="k", value=b"v", headers=[("h", b"1")])
    assert (m.topic(), m.partition(), m.offset(), m.key(), m.value()) == ("in", 1, 7, b"k", b"v")
    assert m.headers() == [("h", b"1")] and m.error() is None
