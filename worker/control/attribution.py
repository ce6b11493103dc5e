"""Which consumers read which major: declarations plus the Kafka admin API (docs/design.md 5, 7).

:func:`migration_view` counts declared and unattributed consumers per layer and major
version (:mod:`worker.core.lifecycle.migration`, pure) from the consumers topic and the admin API
(this module is the thin adapter). A group with committed offsets on a per-major admitted
topic (``gis.batches.admitted.<layer>.v<major>``) is attributed to that major from the
topic it reads.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta, timezone
from typing import Any

from worker.core._util.text import clip
from worker.core.errors import BrokerError, ContractGateError
from worker.core.lifecycle.migration import (
    Declaration,
    MigrationView,
    build_view,
)
from worker.core.lifecycle.registry import Registry
from worker.core.lifecycle.versions import parse_version
from worker.io.codec import decode_consumer_declaration
from worker.kafka.admin import read_topic
from worker.kafka.offsets import group_offsets
from worker.kafka.settings import Settings

log = logging.getLogger(__name__)

__all__ = [
    "DEFAULT_STALE_AFTER",
    "consumer_groups",
    "migration_view",
    "per_major_readers",
    "read_declarations",
]

#: Declarations whose group is gone and that are older than this are shown as stale.
DEFAULT_STALE_AFTER = timedelta(days=7)


# -- reading topics -------------------------------------------------------------------------

#: Coordinates of the ignored declarations already logged at WARNING (bounded).
_REPORTED: set[tuple[str, int, int]] = set()
MAX_REPORTED = 10_000


def read_declarations(settings: Settings, timeout_s: float = 30.0) -> list[Declaration]:
    """The latest declaration per ``consumer/layer`` key (tombstones remove the key).

    A record that does not decode, whose ``consumer/layer`` fields are not its key, or
    whose version is not ``v<major>[.<minor>]`` is ignored with one WARNING naming its
    coordinates and why, and leaves its key empty, as log compaction will (it replaced
    what the key held; a later valid record under the key counts again). Anyone who can
    write the topic could otherwise stop the migration view of every layer (a version
    that names no major) or count a consumer twice (a record under another consumer's
    key, which that consumer's next declaration does not replace).
    """
    latest: dict[str, Declaration] = {}
    for msg in read_topic(settings, settings.topics.consumers, timeout_s=timeout_s):
        key = (msg.key() or b"").decode("utf-8", "replace")
        if msg.value() is None:
            latest.pop(key, None)
            continue
        try:
            decl = _declaration(key, msg.value())
        except ContractGateError as exc:
            _ignored(msg, key, str(exc))
            latest.pop(key, None)  # it replaced what the key held
            continue
        latest[key] = decl
    return list(latest.values())


def _declaration(key: str, value: bytes) -> Declaration:
    """The :class:`Declaration` of one record under ``key``.

    Raises
    ------
    ContractGateError
        The bytes are not a ConsumerDeclaration, its fields do not make its key, or its
        version is not a contract version.
    """
    rec = decode_consumer_declaration(value)
    fix = "declare it again: contract-gate consumers declare CONSUMER LAYER VERSION"
    named = f"{rec['consumer']}/{rec['layer']}"
    if named != key:
        raise ContractGateError(
            f"its consumer/layer {clip(named, 200)!r} is not its key (a declaration is keyed "
            "consumer/layer: `contract-gate consumers declare` writes it so)",
            fix=fix,
        )
    try:
        parse_version(rec["version"])
    except ContractGateError:
        raise ContractGateError(
            f"its version {clip(rec['version'], 40)!r} is not v<major>[.<minor>]", fix=fix
        ) from None
    return Declaration(rec["consumer"], rec["layer"], rec["version"], _aware(rec["declared_at"]))


def _ignored(msg: Any, key: str, why: str) -> None:
    """One WARNING per ignored record (DEBUG when read again: the worker reads the topic
    every minute, and so does every CLI command that counts consumers)."""
    where = (msg.topic(), msg.partition(), msg.offset())
    level = logging.DEBUG if where in _REPORTED else logging.WARNING
    if len(_REPORTED) < MAX_REPORTED:
        _REPORTED.add(where)
    log.log(
        level,
        "consumer declaration %s at %s[%d]@%d ignored: %s",
        clip(key, 200),
        *where,
        why,
    )


def _aware(value: datetime) -> datetime:
    return value if value.tzinfo else value.replace(tzinfo=timezone.utc)


def consumer_groups(settings: Settings, timeout_s: float = 10.0) -> tuple[set[str], set[str]]:
    """``(existing, reading)``: every group the broker lists, and the groups among them with
    committed offsets on the admitted topic (Kafka admin API).

    Raises
    ------
    BrokerError
        When the broker does not answer the admin requests.
    """
    existing, offsets = _group_topics(settings, timeout_s)
    admitted = settings.topics.admitted
    return existing, {g for g, topics in offsets.items() if admitted in topics}


def per_major_readers(
    settings: Settings, offsets: dict[str, set[str]]
) -> list[tuple[str, str, int, str]]:
    """``(group, layer, major, topic)`` for every group with committed offsets on a
    per-major admitted topic (``Topics.admitted_per_major``), from :func:`_group_topics`."""
    out = []
    for group, topics in sorted(offsets.items()):
        for topic in sorted(topics):
            found = settings.topics.per_major_of(topic)
            if found is not None:
                out.append((group, found[0], found[1], topic))
    return out


def _group_topics(settings: Settings, timeout_s: float) -> tuple[set[str], dict[str, set[str]]]:
    """Every group the broker lists, and per group the topics it has committed offsets on."""
    existing, offsets, _ = _group_offsets(settings, timeout_s)
    return existing, offsets


def _group_offsets(
    settings: Settings, timeout_s: float
) -> tuple[set[str], dict[str, set[str]], dict[str, dict[int, int]]]:
    """:func:`_group_topics` plus, per group, its committed offsets on the admitted topic
    (``{partition: offset}``)."""
    listed = group_offsets(settings, timeout_s)
    offsets: dict[str, set[str]] = {}
    admitted: dict[str, dict[int, int]] = {}
    for group, committed in listed.items():
        topics = {topic for topic, _, offset in committed if offset >= 0}
        if topics:
            offsets.setdefault(group, set()).update(topics)
        for topic, partition, offset in committed:
            if topic == settings.topics.admitted and offset >= 0:
                admitted.setdefault(group, {})[partition] = offset
    return set(listed), offsets, admitted


def migration_view(
    settings: Settings,
    *,
    registry: Registry | None = None,
    stale_after: timedelta = DEFAULT_STALE_AFTER,
    now: datetime | None = None,
    with_layers_read: bool = False,
) -> MigrationView:
    """Declared, unattributed and stale consumers per layer and major version.

    The gate's own groups (``settings.group_id`` and its ``-reader-`` prefix) are never
    consumers. With ``with_layers_read`` each unattributed group also carries the layers
    of the records before its committed offsets (:func:`worker.control.layers_read.layers_read`:
    bounded, at most a few seconds; shown, never used to count it less).
    """
    from worker.control.publish import read_registry

    registry = registry if registry is not None else read_registry(settings)
    active = {
        layer: [v.contract.version for v in registry.active(layer)] for layer in registry.layers()
    }
    existing, offsets, committed = _group_offsets(settings, 10.0)
    reading = {g for g, topics in offsets.items() if settings.topics.admitted in topics}
    undeclared = {g: committed[g] for g in reading if g in committed}
    seen: dict[str, tuple[str, ...]] = {}
    if with_layers_read and undeclared:
        from worker.control.layers_read import layers_read

        try:
            seen = layers_read(settings, undeclared)
        except BrokerError as exc:  # evidence only: the counts stand without it
            log.warning("layers read by undeclared groups not sampled: %s", exc)
    return build_view(
        active,
        read_declarations(settings),
        reading,
        existing,
        now=now or datetime.now(timezone.utc),
        stale_after=stale_after,
        excluded=[settings.group_id],
        excluded_prefixes=[f"{settings.group_id}-reader-"],
        path_readers=per_major_readers(settings, offsets),
        layers_read=seen,
    )
