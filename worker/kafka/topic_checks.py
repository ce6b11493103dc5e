"""What is wrong with an existing compacted topic's settings, for ``topics create`` (which
leaves an existing topic alone): its ``cleanup.policy`` and, for the config topic, its
``delete.retention.ms`` against what :func:`worker.kafka.admin.create_topics` would set."""

from __future__ import annotations

from typing import Any

from worker.core._util.text import clip

__all__ = ["NOT_COMPACTED", "TOMBSTONES_DROPPED", "compaction_problem"]


#: Marks a topic that exists but is not compacted in ``topics create``'s answer.
NOT_COMPACTED = "NOT compacted"
#: Marks an existing config topic whose tombstones Kafka's cleaner drops sooner than
#: :data:`worker.kafka.admin.CONFIG_TOMBSTONE_RETENTION_MS` in ``topics create``'s answer
#: (a warning: the contracts are kept, the trace of a damaged record is not).
TOMBSTONES_DROPPED = "tombstones dropped"
#: Kafka's default ``delete.retention.ms`` (24 h), where a broker lists only set values.
_DEFAULT_DELETE_RETENTION_MS = 24 * 3600 * 1000


def compaction_problem(admin: Any, name: str, cfg: dict[str, str], timeout_s: float) -> str:
    """``""`` when the existing topic ``name`` has the compaction settings ``cfg`` that
    :func:`worker.kafka.admin.create_topics` gives it (``cleanup.policy``, and
    ``delete.retention.ms`` at least as long), else what is wrong and the fix for each.

    A config topic made by other tooling with the defaults (``cleanup.policy=delete``)
    loses its contract records after ``retention.ms``: a worker started then finds no
    contract (``topics create`` only answered "exists"). One made before the config topic
    kept its tombstones (or by other tooling) drops them after a day."""
    from confluent_kafka.admin import ConfigResource

    resource = ConfigResource("topic", name)
    try:
        entries = admin.describe_configs([resource], request_timeout=timeout_s)[resource].result()
    except Exception as exc:  # a broker without DescribeConfigs: said, not assumed
        return f" (its cleanup.policy could not be read: {clip(str(exc), 120)})"
    return _policy_problem(name, entries) + _tombstone_problem(name, entries, cfg)


def _policy_problem(name: str, entries: dict[str, Any]) -> str:
    # a broker that lists only the settings made on the topic (Tansu) leaves out a
    # default cleanup.policy: Kafka's default, delete
    entry = entries.get("cleanup.policy")
    policy = str(entry.value or "") if entry is not None else "delete (the default)"
    if "compact" in policy.split(","):
        return ""
    return (
        f", {NOT_COMPACTED} (cleanup.policy={policy or 'unset'}): its records are deleted after "
        f"retention.ms; set cleanup.policy=compact on it (kafka-configs --alter --entity-type "
        f"topics --entity-name {name} --add-config cleanup.policy=compact)"
    )


def _tombstone_problem(name: str, entries: dict[str, Any], cfg: dict[str, str]) -> str:
    wanted = cfg.get("delete.retention.ms")
    if wanted is None:
        return ""
    entry = entries.get("delete.retention.ms")
    text = str(entry.value or "") if entry is not None else ""
    have = int(text) if text.lstrip("-").isdigit() else _DEFAULT_DELETE_RETENTION_MS
    if have >= int(wanted):
        return ""
    return (
        f", {TOMBSTONES_DROPPED} after {have / 3_600_000:g} h (delete.retention.ms="
        f"{text or f'{have} (the default)'}): a damaged contract record's tombstone is how a "
        f"fresh worker learns of the damage; set delete.retention.ms={wanted} on it "
        f"(kafka-configs --alter --entity-type topics --entity-name {name} --add-config "
        f"delete.retention.ms={wanted})"
    )
