"""Consumer side of the gate: declarations, the reader-side check, the migration view.

DESIGN.md sections 2, 5 and 7. Downstream readers of the admitted topic

* declare the contract version they read against with :func:`declare` (a
  ConsumerDeclaration on the compacted ``gis.contract.consumers``, key ``consumer/layer``,
  and the gauge ``gis_consumer_contract_version{consumer,layer,version} = 1``);
* check every record they receive with :func:`assert_admitted_under`, which raises
  :class:`~worker.errors.VersionMismatchError` when the record was not admitted under
  (a revision of) the major they were built for.

A consumer is its Kafka consumer group id. :func:`migration_view` counts declared and
unattributed consumers per layer and major version (:mod:`worker.migration`, pure) from
the consumers topic and the Kafka admin API (this module is the thin adapter).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable, Mapping
from datetime import datetime, timedelta, timezone
from typing import Any

from opentelemetry import metrics

from worker.codec import decode_consumer_declaration, encode_consumer_declaration
from worker.config_topic import read_config
from worker.errors import ContractGateError, KafkaError, PolicyError, VersionMismatchError
from worker.kafka import Settings, produce_one, read_topic
from worker.migration import (
    Declaration,
    MigrationView,
    build_view,
    parse_version,
    version_covers,
)
from worker.registry import Registry

__all__ = [
    "DEFAULT_STALE_AFTER",
    "ENFORCED_HEADER",
    "MigrationExporter",
    "assert_admitted_under",
    "check_admitted",
    "consumer_groups",
    "declare",
    "latest_of_layer",
    "migration_view",
    "read_declarations",
]

log = logging.getLogger(__name__)

#: Header of admitted records listing the enforcing versions the batch passed.
ENFORCED_HEADER = "contract-versions-enforced"

#: Declarations whose group is gone and that are older than this are shown as stale.
DEFAULT_STALE_AFTER = timedelta(days=7)

GAUGE_NAME = "gis_consumer_contract_version"
_gauges: dict[int, tuple[metrics.Meter, Any]] = {}
_last_declared: dict[tuple[str, str], str] = {}


def _gauge(meter: metrics.Meter | None) -> Any:
    meter = meter or metrics.get_meter("spatial-contract-gate")
    cached = _gauges.get(id(meter))
    if cached is None:
        gauge = meter.create_gauge(
            GAUGE_NAME,
            description="1 for the contract version a consumer reads against, by consumer, "
            "layer and version (0 for the version it left)",
        )
        cached = _gauges[id(meter)] = (meter, gauge)
    return cached[1]


def declare(
    settings: Settings,
    consumer: str,
    layer: str,
    version: str,
    *,
    meter: metrics.Meter | None = None,
    now: datetime | None = None,
    force: bool = False,
) -> tuple[int, int]:
    """Declare that ``consumer`` (its consumer group id) reads ``layer`` against ``version``.

    Unless ``force``, the config topic is read first and the declaration is refused when
    ``layer`` has no published version (in any state) of ``version``'s major: a typo would
    otherwise count a consumer against a version that never existed.

    Writes a ConsumerDeclaration keyed ``consumer/layer`` (the latest one wins after
    compaction) and sets ``gis_consumer_contract_version{consumer,layer,version}`` to 1; the
    series of the version this process declared before for the same key goes to 0.
    Returns ``(partition, offset)`` of the declaration.

    Raises
    ------
    ContractGateError
        ``version`` is not ``v<major>[.<minor>]`` or a name is empty.
    PolicyError
        ``(layer, major)`` was never published on the config topic (and not ``force``).
    KafkaError
        The config topic cannot be read, or the declaration was not delivered.
    """
    if not consumer or not layer:
        raise ContractGateError("a declaration needs a consumer (its group id) and a layer")
    major, minor = parse_version(version)
    version = f"v{major}.{minor}"
    if not force:
        published = read_config(settings, Registry()).versions(layer)
        if not any(v.contract.major == major for v in published):
            listed = ", ".join(f"{v.contract.version} ({v.state})" for v in published)
            raise PolicyError(
                f"{layer} v{major} is not published on {settings.topics.contracts} "
                f"(versions of {layer}: {listed or 'none'}); declare a published version, "
                "or pass --force (force=True) to declare it anyway"
            )
    at = now or datetime.now(timezone.utc)
    value = encode_consumer_declaration(consumer, layer, version, at)
    coord = produce_one(settings, settings.topics.consumers, f"{consumer}/{layer}", value)
    gauge = _gauge(meter)
    previous = _last_declared.get((consumer, layer))
    if previous is not None and previous != version:
        gauge.set(0, {"consumer": consumer, "layer": layer, "version": previous})
    gauge.set(1, {"consumer": consumer, "layer": layer, "version": version})
    _last_declared[(consumer, layer)] = version
    return coord


def _header_map(headers: Any) -> dict[str, str]:
    if headers is None:
        return {}
    items = headers.items() if isinstance(headers, Mapping) else headers
    out: dict[str, str] = {}
    for key, value in items:
        if isinstance(value, bytes):
            value = value.decode("utf-8", "replace")
        out[str(key)] = "" if value is None else str(value)
    return out


def assert_admitted_under(headers: Any, version: str) -> tuple[str, ...]:
    """Raise unless a record of the admitted topic was admitted under ``version``.

    ``headers`` are the record's headers (``msg.headers()``: a list of ``(name, bytes)``,
    or a mapping). The record qualifies when one of the enforcing versions it passed
    (header ``contract-versions-enforced``) has the reader's major and at least its minor.
    Returns the enforced versions.

    Raises
    ------
    VersionMismatchError
        The record was admitted without the reader's version (or carries no such header).
    """
    h = _header_map(headers)
    parse_version(version)
    if ENFORCED_HEADER not in h:
        raise VersionMismatchError(
            f"record has no {ENFORCED_HEADER} header: it is not a record of the admitted topic"
        )
    enforced = tuple(v for v in h[ENFORCED_HEADER].split(",") if v)
    if not any(version_covers(e, version) for e in enforced):
        what = (
            f"batch {h['batch-id']} of layer {h.get('layer', '?')}"
            if "batch-id" in h
            else ("record")
        )
        raise VersionMismatchError(
            f"{what} was admitted under {', '.join(enforced) or 'no enforcing version'}, "
            f"not under {version} that this reader was built for; its meaning may have "
            "changed: migrate the reader and declare the new version "
            "(contract-gate consumers declare)"
        )
    return enforced


# -- reading topics -------------------------------------------------------------------------


def read_declarations(settings: Settings, timeout_s: float = 30.0) -> list[Declaration]:
    """The latest declaration per ``consumer/layer`` key (tombstones remove the key)."""
    latest: dict[str, Declaration] = {}
    for msg in read_topic(settings, settings.topics.consumers, timeout_s=timeout_s):
        key = (msg.key() or b"").decode("utf-8", "replace")
        if msg.value() is None:
            latest.pop(key, None)
            continue
        try:
            rec = decode_consumer_declaration(msg.value())
        except ContractGateError as exc:
            log.warning("consumer declaration %s ignored: %s", key, exc)
            continue
        latest[key] = Declaration(
            rec["consumer"], rec["layer"], rec["version"], _aware(rec["declared_at"])
        )
    return list(latest.values())


def _aware(value: datetime) -> datetime:
    return value if value.tzinfo else value.replace(tzinfo=timezone.utc)


def consumer_groups(settings: Settings, timeout_s: float = 10.0) -> tuple[set[str], set[str]]:
    """``(existing, reading)``: every group the broker lists, and the groups among them with
    committed offsets on the admitted topic (Kafka admin API).

    Raises
    ------
    KafkaError
        When the broker does not answer the admin requests.
    """
    from confluent_kafka import ConsumerGroupTopicPartitions
    from confluent_kafka.admin import AdminClient

    admitted = settings.topics.admitted
    admin = AdminClient(settings.base())
    try:
        listed = admin.list_consumer_groups(request_timeout=timeout_s).result()
        existing = {g.group_id for g in listed.valid}
        reading: set[str] = set()
        for group in sorted(existing):
            futures = admin.list_consumer_group_offsets(
                [ConsumerGroupTopicPartitions(group)], request_timeout=timeout_s
            )
            for fut in futures.values():
                result = fut.result()
                if any(
                    tp.topic == admitted and tp.offset >= 0 for tp in result.topic_partitions or []
                ):
                    reading.add(group)
    except Exception as exc:
        raise KafkaError(f"cannot list consumer groups and their offsets: {exc}") from exc
    return existing, reading


def migration_view(
    settings: Settings,
    *,
    registry: Registry | None = None,
    stale_after: timedelta = DEFAULT_STALE_AFTER,
    now: datetime | None = None,
) -> MigrationView:
    """Declared, unattributed and stale consumers per layer and major version.

    The gate's own groups (``settings.group_id`` and its ``-reader-`` prefix) are never
    consumers.
    """
    from worker.publish import read_registry

    registry = registry if registry is not None else read_registry(settings)
    active = {
        layer: [v.contract.version for v in registry.active(layer)] for layer in registry.layers()
    }
    existing, reading = consumer_groups(settings)
    return build_view(
        active,
        read_declarations(settings),
        reading,
        existing,
        now=now or datetime.now(timezone.utc),
        stale_after=stale_after,
        excluded=[settings.group_id],
        excluded_prefixes=[f"{settings.group_id}-reader-"],
    )


def _watermarks(settings: Settings, topic: str) -> dict[int, tuple[int, int]]:
    """``{partition: (low, high)}`` of ``topic`` (ListOffsets: only a starting point for a
    read that still ends on partition EOF, DESIGN.md section 8).

    Raises
    ------
    KafkaError
        The topic does not exist or the broker does not answer.
    """
    from confluent_kafka import Consumer, KafkaException, TopicPartition

    consumer = Consumer(settings.reader())
    try:
        meta = consumer.list_topics(topic, timeout=10).topics.get(topic)
        if meta is None or meta.error is not None or not meta.partitions:
            raise KafkaError(
                f"topic {topic} does not exist; create it with `contract-gate topics create`"
            )
        marks: dict[int, tuple[int, int]] = {}
        for p in sorted(meta.partitions):
            low, high = consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)
            marks[p] = (int(low), int(high))
        return marks
    except KafkaException as exc:
        raise KafkaError(f"reading {topic} failed: {exc.args[0].str()}") from exc
    finally:
        consumer.close()


def _key(msg: Any) -> str:
    return (msg.key() or b"").decode("utf-8", "replace")


def latest_of_layer(settings: Settings, layer: str, last: int) -> list[Any]:
    """The latest ``last`` records of ``layer`` (by key) on the admitted topic, oldest first.

    Reads a window before each partition's end and widens it (x4) until it holds ``last``
    records of the layer or starts at the beginning of every partition: the records of
    other layers in between never hide the layer's own.
    """
    topic = settings.topics.admitted
    marks = _watermarks(settings, topic)
    window = max(4 * last, 64)
    while True:
        start = {p: max(low, high - window) for p, (low, high) in marks.items()}
        msgs = [m for m in read_topic(settings, topic, start=start) if _key(m) == layer]
        if len(msgs) >= last or all(start[p] <= low for p, (low, _) in marks.items()):
            break
        window *= 4
    msgs.sort(key=lambda m: (m.timestamp()[1], m.partition(), m.offset()))
    return msgs[-last:]


def check_admitted(
    settings: Settings,
    layer: str,
    version: str,
    *,
    last: int = 10,
    partition: int | None = None,
    offset: int | None = None,
) -> str:
    """Run :func:`assert_admitted_under` on admitted records of ``layer``.

    With ``partition`` and ``offset``: that one record, which must be of ``layer``.
    Otherwise the latest ``last`` (>= 1) records of the layer (:func:`latest_of_layer`).
    Returns a one-line summary.

    Raises
    ------
    VersionMismatchError
        On the first record not admitted under ``version`` (named by partition@offset).
    ContractGateError
        The record at ``partition@offset`` is missing or of another layer; no record of
        ``layer`` was found; ``last`` < 1.
    """
    topic = settings.topics.admitted
    selected: list[Any]
    if partition is not None:
        if offset is None:
            raise ContractGateError("give --offset with --partition")
        found = [
            m
            for m in read_topic(settings, topic, start={partition: offset}, tail=0)
            if m.partition() == partition and m.offset() == offset
        ]
        if not found:
            raise ContractGateError(f"no admitted record at {topic}[{partition}]@{offset}")
        actual = _key(found[0]) or _header_map(found[0].headers()).get("layer", "")
        if actual != layer:
            raise ContractGateError(
                f"the record at {topic}[{partition}]@{offset} is of layer "
                f"{actual or '(no key)'}, not {layer}: check the layer or the coordinates"
            )
        selected = found[:1]
    else:
        if last < 1:
            raise ContractGateError(f"--last must be at least 1 (got {last})")
        selected = latest_of_layer(settings, layer, last)
        if not selected:
            raise ContractGateError(
                f"no admitted record of {layer} found on {topic}: nothing to check"
            )
    for m in selected:
        try:
            assert_admitted_under(m.headers(), version)
        except VersionMismatchError as exc:
            raise VersionMismatchError(f"{topic}[{m.partition()}]@{m.offset()}: {exc}") from None
    return f"{len(selected)} admitted record(s) of {layer} checked: all admitted under {version}"


class MigrationExporter:
    """The worker's export of the migration view (DESIGN.md section 7).

    Observable gauges over the latest view, refreshed every ``interval_s`` by a daemon
    thread (admin API + consumers topic):

    * ``gis_consumer_contract_version{consumer="unattributed:<group>", layer, version} = 1``
      for every unattributed group (``version``: the oldest active revision of the layer);
    * ``gis.contract.consumers{layer, version, oldest}``: declared + unattributed
      consumers per active major (``version`` is the major, e.g. ``v1``).

    A failed refresh keeps the previous view and is logged.
    """

    def __init__(
        self,
        settings: Settings,
        registry: Registry,
        *,
        meter: metrics.Meter | None = None,
        interval_s: float = 60.0,
        stale_after: timedelta = DEFAULT_STALE_AFTER,
    ) -> None:
        self.settings = settings
        self.registry = registry
        self.interval_s = interval_s
        self.stale_after = stale_after
        self.view = MigrationView()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        meter = meter or metrics.get_meter("spatial-contract-gate.migration")
        meter.create_observable_gauge(
            GAUGE_NAME,
            callbacks=[self._unattributed],
            description="1 for the contract version a consumer reads against; the worker's "
            "rows are unattributed groups, counted against the oldest active version",
        )
        meter.create_observable_gauge(
            "gis.contract.consumers",
            callbacks=[self._counts],
            unit="{consumer}",
            description="Declared + unattributed consumers per layer and active major version",
        )

    def refresh(self) -> MigrationView:
        """Recompute the view now (also called by the thread)."""
        self.view = migration_view(
            self.settings, registry=self.registry, stale_after=self.stale_after
        )
        return self.view

    def _unattributed(self, options: Any) -> Iterable[Any]:
        from opentelemetry.metrics import Observation

        for lv in self.view.layers.values():
            for v in lv.versions:
                for ref in v.unattributed:
                    yield Observation(
                        1,
                        {"consumer": ref.label, "layer": v.layer, "version": v.revisions[0]},
                    )

    def _counts(self, options: Any) -> Iterable[Any]:
        from opentelemetry.metrics import Observation

        for lv in self.view.layers.values():
            for v in lv.versions:
                if v.active:
                    attrs = {
                        "layer": v.layer,
                        "version": v.version,
                        "oldest": str(v.oldest).lower(),
                    }
                    yield Observation(v.count, attrs)

    def start(self) -> MigrationExporter:
        self._thread = threading.Thread(target=self._loop, name="migration-view", daemon=True)
        self._thread.start()
        return self

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                self.refresh()
            except ContractGateError as exc:
                log.warning("migration view not refreshed: %s", exc)
            except Exception:  # never let the thread die silently with frozen gauges
                log.exception("migration view not refreshed (unexpected error)")
            self._stop.wait(self.interval_s)

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
