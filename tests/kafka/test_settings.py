"""Settings from flags and environment; secrets never printed."""

from __future__ import annotations

from worker.kafka.settings import Settings, Topics, describe_settings


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


def test_topic_prefix() -> None:
    t = Topics().with_prefix("x.")
    assert (t.batches, t.contracts) == ("x.gis.batches", "x.gis.contracts")
