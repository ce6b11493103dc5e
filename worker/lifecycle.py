"""The config topic read as lifecycle records: every published version with its mode, state,
change class and provenance (for ``contract publish``, ``promote`` and ``list``)."""

from __future__ import annotations

from typing import Any

from worker.codec import decode_contract_record, encode_contract_record
from worker.config_topic import ConfigFollower
from worker.kafka import Settings, produce_one
from worker.policy import Published
from worker.registry import ConfigEvent, Registry

__all__ = ["RecordingRegistry", "read_published", "write_records"]


class RecordingRegistry(Registry):
    """A :class:`Registry` that also keeps the last accepted record of every key.

    Records the registry rejects (edit in place, invalid) are not kept, so what it
    returns is what the workers hold in force.
    """

    def __init__(self) -> None:
        super().__init__()
        self.records: dict[str, dict[str, Any]] = {}

    def apply(self, key: str | None, value: bytes | None) -> ConfigEvent:
        event = super().apply(key, value)
        if event.outcome == "removed":
            self.records.pop(event.key, None)
        elif event.outcome != "rejected" and value is not None and event.version is not None:
            self.records[event.key] = decode_contract_record(value)
        return event

    def published(self, layer: str | None = None) -> list[Published]:
        """Every known version (any state), oldest first, optionally of one layer."""
        return [
            Published.from_record(v.contract, self.records[v.contract.key])
            for v in self.versions(layer)
            if v.contract.key in self.records
        ]


def read_published(settings: Settings, timeout_s: float = 30.0) -> RecordingRegistry:
    """The config topic read to partition EOF into a :class:`RecordingRegistry`."""
    registry = RecordingRegistry()
    follower = ConfigFollower(settings, registry)
    try:
        follower.bootstrap(timeout_s)
    finally:
        follower.close()
    return registry


def write_records(settings: Settings, records: tuple[Published, ...]) -> list[str]:
    """Produce each record to the config topic in order; one summary line per record."""
    lines = []
    for p in records:
        value = encode_contract_record(p.to_record())
        partition, offset = produce_one(settings, settings.topics.contracts, p.contract.key, value)
        lines.append(
            f"wrote {p.contract.key} {p.mode}/{p.state} at "
            f"{settings.topics.contracts}[{partition}]@{offset}"
        )
    return lines
