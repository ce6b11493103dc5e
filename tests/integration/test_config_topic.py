"""Config-topic bootstrap against a real broker: empty topic, tombstones, live follow."""

from __future__ import annotations

import time
from typing import Any

from worker.cli.scenario import data_file
from worker.control.publish import contract_record
from worker.core.lifecycle.registry import Registry
from worker.io.codec import encode_contract_record
from worker.io.contract_files import load_contract
from worker.kafka.admin import produce_one
from worker.kafka.config_topic import ConfigFollower
from worker.kafka.settings import Settings


def _publish(settings: Settings, name: str, mode: str = "enforcing", state: str = "active") -> str:
    contract = load_contract(data_file(f"contracts/{name}"))
    value = encode_contract_record(contract_record(contract, mode=mode, state=state))
    produce_one(settings, settings.topics.contracts, contract.key, value)
    return contract.key


def test_bootstrap_completes_on_an_empty_topic(settings: Settings) -> None:
    follower = ConfigFollower(settings, Registry())
    started = time.monotonic()
    try:
        assert follower.bootstrap(timeout_s=20) == 0
    finally:
        follower.close()
    assert follower.bootstrapped
    assert time.monotonic() - started < 15


def test_bootstrap_refuses_tombstones_and_fails_closed_for_their_layer(settings: Settings) -> None:
    k1 = _publish(settings, "admin_boundaries.v1.yaml")
    k2 = _publish(settings, "admin_boundaries.v1.1.yaml", mode="observing")
    k3 = _publish(settings, "nyc_boroughs.v1.yaml")
    produce_one(settings, settings.topics.contracts, k2, None)  # tombstone
    registry = Registry()
    follower = ConfigFollower(settings, registry)
    try:
        assert follower.bootstrap(timeout_s=20) == 4
    finally:
        follower.close()
    assert registry.get(k1) is not None and registry.get(k3) is not None
    assert registry.breaks("admin_boundaries") == (
        f"{k2}: a tombstone where a contract record was",
    )
    assert registry.active("admin_boundaries") == ()  # fails closed (issue 30)
    assert [v.contract.version for v in registry.active("nyc_boroughs")] == ["v1.0"]


def test_edit_in_place_is_ignored_and_lifecycle_changes_are_followed_live(
    settings: Settings,
) -> None:
    key = _publish(settings, "admin_boundaries.v1.yaml")
    registry = Registry()
    follower = ConfigFollower(settings, registry)
    try:
        follower.bootstrap(timeout_s=20)
        original = registry.get(key)
        assert original is not None
        # an edited document under the same key: refused, the original stays in force
        edited = load_contract(data_file("contracts/admin_boundaries.v1.yaml"))
        text = edited.text.replace("max_age: PT6H", "max_age: PT1H")
        from worker.core.contracts.parse import parse_contract

        value = encode_contract_record(contract_record(parse_contract(text), mode="enforcing"))
        produce_one(settings, settings.topics.contracts, key, value)
        # a lifecycle change (retirement) with the same document is applied
        _publish(settings, "admin_boundaries.v1.yaml", state="retired")
        events: list[Any] = []
        deadline = time.monotonic() + 20
        while len(events) < 2 and time.monotonic() < deadline:
            events += follower.poll_updates()
            time.sleep(0.1)
    finally:
        follower.close()
    # the edit replaced the document under a key without the digest: refused and the
    # layer broken until the genuine document is written there again (the retirement)
    assert [(e.outcome, e.reason) for e in events] == [
        ("rejected", "edit_in_place"),
        ("added", None),
    ]
    current = registry.get(key)
    assert current is not None
    assert current.contract.digest == original.contract.digest
    assert current.state == "retired"
    assert registry.active("admin_boundaries") == ()


def test_topics_create_says_when_an_existing_config_topic_is_not_compacted(
    broker: Any,
) -> None:
    """A fresh-user session: a config topic made by other tooling with the defaults
    (cleanup.policy=delete) was answered "exists", and its contracts would be deleted
    after retention.ms."""
    import uuid

    from confluent_kafka.admin import AdminClient, NewTopic

    from worker.kafka.admin import NOT_COMPACTED, create_topics
    from worker.kafka.settings import Settings, Topics

    prefix = f"nc{uuid.uuid4().hex[:6]}."
    settings = Settings(
        bootstrap_servers=broker.bootstrap_servers, topics=Topics().with_prefix(prefix)
    )
    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    contracts = settings.topics.contracts
    admin.create_topics([NewTopic(contracts, 1, 1)])[contracts].result(30)
    outcome = create_topics(settings)
    assert outcome[contracts].startswith(f"exists, {NOT_COMPACTED} (cleanup.policy=delete")
    assert "cleanup.policy=compact" in outcome[contracts]
    assert outcome[settings.topics.consumers] == "created"
    assert create_topics(settings)[settings.topics.consumers] == "exists"  # compacted: fine


def test_topics_create_keeps_the_config_topics_tombstones(broker: Any) -> None:
    """The config topic is created with a delete.retention.ms of 100 years, so Kafka's
    cleaner does not drop the tombstone of a damaged record after a day (the default) and a
    fresh worker still sees the break (docs/reliability-history.md, "Limit"); the other
    topics keep the broker's default."""
    import uuid

    from confluent_kafka.admin import AdminClient, ConfigResource

    from worker.kafka.admin import CONFIG_TOMBSTONE_RETENTION_MS, create_topics
    from worker.kafka.settings import Settings, Topics

    settings = Settings(
        bootstrap_servers=broker.bootstrap_servers,
        topics=Topics().with_prefix(f"dr{uuid.uuid4().hex[:6]}."),
    )
    assert set(create_topics(settings).values()) == {"created"}
    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})

    def retention(topic: str) -> str | None:
        resource = ConfigResource("topic", topic)
        entry = admin.describe_configs([resource])[resource].result(30).get("delete.retention.ms")
        return None if entry is None else str(entry.value)

    assert retention(settings.topics.contracts) == str(CONFIG_TOMBSTONE_RETENTION_MS)
    assert CONFIG_TOMBSTONE_RETENTION_MS == 3_153_600_000_000
    assert retention(settings.topics.consumers) != str(CONFIG_TOMBSTONE_RETENTION_MS)


def test_topics_create_says_when_an_existing_config_topic_drops_its_tombstones(broker: Any) -> None:
    """Stop 38: a config topic made before ``topics create`` set delete.retention.ms (or by
    other tooling), compacted but with Kafka's default of 24 h, was answered "exists"
    alone: every deployment older than the setting kept dropping tombstones unseen. The
    answer now names the setting, its value and the fix; a topic with it is "exists"."""
    import uuid

    from confluent_kafka.admin import AdminClient, NewTopic

    from worker.kafka.admin import CONFIG_TOMBSTONE_RETENTION_MS, NOT_COMPACTED, create_topics
    from worker.kafka.settings import Settings, Topics

    settings = Settings(
        bootstrap_servers=broker.bootstrap_servers,
        topics=Topics().with_prefix(f"ts{uuid.uuid4().hex[:6]}."),
    )
    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    contracts = settings.topics.contracts
    older = NewTopic(contracts, 1, 1, config={"cleanup.policy": "compact"})  # as made before
    admin.create_topics([older])[contracts].result(30)
    outcome = create_topics(settings)[contracts]
    assert outcome.startswith("exists, tombstones dropped after 24 h (delete.retention.ms=")
    assert NOT_COMPACTED not in outcome
    assert f"--add-config delete.retention.ms={CONFIG_TOMBSTONE_RETENTION_MS})" in outcome
    # the consumers topic keeps no tombstones on purpose: "exists" alone, as the fixed one
    again = create_topics(settings)
    assert again[settings.topics.consumers] == "exists"
    fixed = Settings(
        bootstrap_servers=broker.bootstrap_servers,
        topics=Topics().with_prefix(f"tk{uuid.uuid4().hex[:6]}."),
    )
    assert set(create_topics(fixed).values()) == {"created"}
    assert create_topics(fixed)[fixed.topics.contracts] == "exists"
