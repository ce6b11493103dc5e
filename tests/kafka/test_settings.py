"""Settings from flags and environment; secrets never printed."""

from __future__ import annotations

from worker.kafka.redaction import describe_settings
from worker.kafka.settings import Settings, Topics


def test_env_then_flags_and_extra_properties() -> None:
    env = {
        "KAFKA_BOOTSTRAP_SERVERS": "k1:9092,k2:9092",
        "CONTRACT_GATE_GROUP_ID": "gate-prod",
        "CONTRACT_GATE_KAFKA_SECURITY_PROTOCOL": "SASL_SSL",
        "CONTRACT_GATE_KAFKA_SASL_PASSWORD": "hunter2",
    }
    s = Settings.from_env(env, group_id=None, instance_id="pod-0", extra={"client.rack": "a"})
    assert s.bootstrap_servers == "k1:9092,k2:9092"
    assert s.group_id == "gate-prod"
    assert s.extra == {
        "security.protocol": "SASL_SSL",
        "sasl.password": "hunter2",
        "client.rack": "a",
    }
    assert s.consumer()["sasl.password"] == "hunter2"
    assert s.producer(transactional=True)["transactional.id"] == "contract-gate-pod-0"
    line = describe_settings(s)
    assert "hunter2" not in line and "sasl.password=***" in line and "client.rack=a" in line


def test_consumer_is_read_committed_with_manual_commits() -> None:
    c = Settings().consumer()
    assert c["isolation.level"] == "read_committed"
    assert c["enable.auto.commit"] is False


def test_kafka_properties_win_over_consumer_defaults_but_not_over_exactly_once() -> None:
    # a new-user finding: --kafka-property session.timeout.ms=6000 was overwritten, so
    # max.poll.interval.ms=20000 was refused as below the session timeout
    extra = {
        "session.timeout.ms": "6000",
        "max.poll.interval.ms": "20000",
        "auto.offset.reset": "latest",
        "isolation.level": "read_uncommitted",
        "enable.auto.commit": "true",
    }
    c = Settings(extra=extra).consumer()
    assert c["session.timeout.ms"] == "6000" and c["heartbeat.interval.ms"] == 1000
    assert c["max.poll.interval.ms"] == "20000" and c["auto.offset.reset"] == "latest"
    assert c["isolation.level"] == "read_committed" and c["enable.auto.commit"] is False
    from confluent_kafka import Consumer

    Consumer({k: v for k, v in c.items() if k != "logger"}).close()  # librdkafka takes it


def test_topic_prefix() -> None:
    t = Topics().with_prefix("x.")
    assert (t.batches, t.contracts) == ("x.gis.batches", "x.gis.contracts")


def test_misspelt_and_unknown_keys_are_masked_known_ones_printed() -> None:
    s = Settings(
        extra={
            "sasl.pasword": "typo-secret",  # a typo of sasl.password: still a secret
            "sasl.jaas.config": "user pw",
            "ssl.key.location": "/k.pem",
            "my.custom.thing": "unknown-value",
            "security.protocol": "SASL_SSL",
            "linger.ms": "x" * 5000,
        }
    )
    line = describe_settings(s)
    for hidden in ("typo-secret", "user pw", "/k.pem", "unknown-value"):
        assert hidden not in line
    assert "sasl.pasword=***" in line and "my.custom.thing=***" in line
    assert "security.protocol=SASL_SSL" in line
    assert "[clipped: 5000 chars in all]" in line and len(line) < 600


def test_default_instance_id_is_stable_across_processes() -> None:
    import socket
    import subprocess
    import sys

    code = "from worker.kafka.settings import Settings; print(Settings().instance_id)"
    ids = {
        subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=True
        ).stdout.strip()
        for _ in range(2)
    }
    assert ids == {socket.gethostname()}


def test_static_membership_sets_group_instance_id_for_members_only() -> None:
    s = Settings.from_env({"CONTRACT_GATE_STATIC_MEMBERSHIP": "true"}, instance_id="pod-3")
    assert s.consumer()["group.instance.id"] == "pod-3"
    assert "group.instance.id" not in s.reader()
    assert "group.instance.id" not in Settings(instance_id="pod-3").consumer()
    assert "static-membership" in describe_settings(s)


def test_no_client_creates_topics() -> None:
    s = Settings()
    assert s.consumer()["allow.auto.create.topics"] is False
    assert s.producer(transactional=True)["allow.auto.create.topics"] is False


def test_per_major_topic_names_from_the_template() -> None:
    from worker.kafka.settings import Topics

    t = Topics().with_prefix("p.")
    assert t.admitted_for("parcels", 7) == "p.gis.batches.admitted.parcels.v7"
    assert t.per_major_of("p.gis.batches.admitted.parcels.v7") == ("parcels", 7)
    assert t.per_major_of("p.gis.batches.admitted.a.b.v12") == ("a.b", 12)
    assert t.per_major_of("p.gis.batches.admitted") is None
    assert t.per_major_of("p.gis.batches.admitted.parcels.vX") is None
    custom = Topics(admitted_per_major="vendor-{major}-{layer}")
    assert custom.admitted_for("roads", 2) == "vendor-2-roads"
    assert custom.per_major_of("vendor-2-roads") == ("roads", 2)


def test_topic_names_are_the_six_topics_not_the_per_major_template() -> None:
    names = Topics().with_prefix("p.").names()
    assert len(names) == 6 and all(n.startswith("p.gis.") for n in names)
    assert not any("{" in n for n in names)


def test_payload_roots_and_limits_from_env_and_flags(tmp_path) -> None:  # type: ignore[no-untyped-def]
    import pytest

    from worker.core.errors import ContractGateError
    from worker.io.payloads.policy import PayloadRoot

    env = {
        "CONTRACT_GATE_PAYLOAD_ROOTS": f"{tmp_path.as_uri()}/, s3://landing/batches/",
        "CONTRACT_GATE_MAX_PAYLOAD_BYTES": "geojson=64MiB",
    }
    s = Settings.from_env(env)
    assert s.payload.roots == (
        PayloadRoot("file", str(tmp_path)),
        PayloadRoot("s3", "landing/batches/"),
    )
    assert (s.payload.limits["parquet"], s.payload.limits["geojson"]) == (2 * 1024**3, 64 * 1024**2)
    # flags win over the environment
    s = Settings.from_env(env, payload_roots=["s3://other/"], max_payload_bytes="1GiB")
    assert s.payload.roots == (PayloadRoot("s3", "other/"),)
    assert s.payload.limits["geojson"] == 1024**3
    assert "payload roots: s3://other/;" in describe_settings(s)
    assert Settings.from_env({}).payload.roots == ()  # none: by-reference refused
    # a flag value lists roots as the environment does (found by a new-user session: one
    # root named "<dir>/,s3:/other/" was accepted silently)
    (tmp_path / "a dir").mkdir()
    listed = f"{tmp_path.as_uri()}/,s3://other/ {(tmp_path / 'a dir').as_uri()}/"
    s = Settings.from_env({}, payload_roots=[listed, "s3://third/"])
    assert s.payload.roots == (
        PayloadRoot("file", str(tmp_path)),
        PayloadRoot("s3", "other/"),
        PayloadRoot("file", str(tmp_path / "a dir")),
        PayloadRoot("s3", "third/"),
    )
    with pytest.raises(ContractGateError, match=r"is not absolute: .*--payload-root"):
        Settings.from_env({"CONTRACT_GATE_PAYLOAD_ROOTS": "data/"})
    with pytest.raises(ContractGateError, match=r"bad size '2GB!'.*--max-payload-bytes"):
        Settings.from_env({}, max_payload_bytes="2GB!")


def test_the_routed_record_limit_follows_a_smaller_producer_message_max_bytes() -> None:
    """A record librdkafka refuses at produce() aborts its transaction, and on Tansu the
    aborted records reach read_committed readers (the fault suite's record-too-large row
    read duplicates): the router quarantines such a batch first, below the limit given."""
    from worker.kafka.settings import MAX_MESSAGE_BYTES, RECORD_OVERHEAD_BYTES

    assert Settings().max_record_bytes() == MAX_MESSAGE_BYTES
    small = Settings(extra={"message.max.bytes": "600000"})
    assert small.max_record_bytes() == 600000 - RECORD_OVERHEAD_BYTES
    assert int(small.producer()["message.max.bytes"]) == 600000
    huge = Settings(extra={"message.max.bytes": str(10 * MAX_MESSAGE_BYTES)})
    assert huge.max_record_bytes() == MAX_MESSAGE_BYTES  # the consumers' fetch bounds
    assert Settings(extra={"message.max.bytes": "lots"}).max_record_bytes() == MAX_MESSAGE_BYTES


def test_a_session_timeout_that_is_no_number_is_one_error_naming_it() -> None:
    import pytest

    from worker.core.errors import ContractGateError

    # a fresh-user session: `--kafka-property session.timeout.ms=abc` was a traceback
    for bad in ("abc", "1.5"):
        with pytest.raises(ContractGateError, match=rf"session.timeout.ms '{bad}' is not a whole"):
            Settings(extra={"session.timeout.ms": bad}).consumer()
    assert (
        Settings(extra={"session.timeout.ms": "7000"}).consumer()["heartbeat.interval.ms"] == 1166
    )


def test_a_transaction_timeout_given_wins_over_the_workers_default() -> None:
    assert Settings().producer(transactional=True)["transaction.timeout.ms"] == 60000
    given = Settings(extra={"transaction.timeout.ms": "30000"}).producer(transactional=True)
    assert given["transaction.timeout.ms"] == "30000"
