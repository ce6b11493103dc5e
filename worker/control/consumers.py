"""Consumer side of the gate: declarations and the reader-side check (docs/design.md 2, 5, 7).

Downstream readers of the admitted topic

* declare the contract version they read against with :func:`declare` (a
  ConsumerDeclaration on the compacted ``gis.contract.consumers``, key ``consumer/layer``,
  and the gauge ``gis_consumer_contract_version{consumer,layer,version} = 1``);
* check every record they receive with :func:`assert_admitted_under`, which raises
  :class:`~worker.core.errors.VersionMismatchError` when the record was not admitted under
  (a revision of) the major they were built for.

A consumer is its Kafka consumer group id. Attribution of consumers to versions is in
:mod:`worker.control.attribution`.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from datetime import datetime, timezone
from typing import Any

from opentelemetry import metrics

from worker.core.errors import ContractGateError, PolicyError, VersionMismatchError
from worker.core.lifecycle.registry import Registry
from worker.core.lifecycle.versions import parse_version, version_covers
from worker.io.codec import encode_consumer_declaration
from worker.kafka.admin import produce_one, read_topic
from worker.kafka.config_topic import read_config
from worker.kafka.offsets import watermarks
from worker.kafka.settings import Settings

__all__ = [
    "ENFORCED_HEADER",
    "assert_admitted_under",
    "check_admitted",
    "declare",
    "latest_of_layer",
]

log = logging.getLogger(__name__)

#: Header of admitted records listing the enforcing versions the batch passed.
ENFORCED_HEADER = "contract-versions-enforced"

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
    BrokerError
        The config topic cannot be read, or the declaration was not delivered.
    """
    if not consumer or not layer:
        raise ContractGateError(
            "a declaration needs a consumer (its group id) and a layer",
            field="layer" if consumer else "consumer",
            fix="give the consumer (its group id) and the layer",
        )
    major, minor = parse_version(version)
    version = f"v{major}.{minor}"
    if not force:
        published = read_config(settings, Registry()).versions(layer)
        if not any(v.contract.major == major for v in published):
            listed = ", ".join(f"{v.contract.version} ({v.state})" for v in published)
            raise PolicyError(
                f"{layer} v{major} is not published on {settings.topics.contracts} "
                f"(versions of {layer}: {listed or 'none'}); declare a published version, "
                "or pass --force (force=True) to declare it anyway",
                field="version",
                fix="declare a published version, or pass --force to declare it anyway",
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
            f"record has no {ENFORCED_HEADER} header: it is not a record of the admitted topic",
            field="--partition",
            fix="check records of the admitted topic",
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
            "(contract-gate consumers declare)",
            field="version",
            fix="migrate the reader and declare the new version (contract-gate consumers declare)",
        )
    return enforced


def _key(msg: Any) -> str:
    return (msg.key() or b"").decode("utf-8", "replace")


def latest_of_layer(settings: Settings, layer: str, last: int) -> list[Any]:
    """The latest ``last`` records of ``layer`` (by key) on the admitted topic, oldest first.

    Reads a window before each partition's end and widens it (x4) until it holds ``last``
    records of the layer or starts at the beginning of every partition: the records of
    other layers in between never hide the layer's own.
    """
    topic = settings.topics.admitted
    marks = watermarks(settings, topic)
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
            raise ContractGateError(
                "give --offset with --partition",
                field="--offset",
                fix="give --offset with --partition",
            )
        found = [
            m
            for m in read_topic(settings, topic, start={partition: offset}, tail=0)
            if m.partition() == partition and m.offset() == offset
        ]
        if not found:
            raise ContractGateError(
                f"no admitted record at {topic}[{partition}]@{offset}",
                field="--offset",
                fix="give the coordinates of a record of the admitted topic",
            )
        actual = _key(found[0]) or _header_map(found[0].headers()).get("layer", "")
        if actual != layer:
            raise ContractGateError(
                f"the record at {topic}[{partition}]@{offset} is of layer "
                f"{actual or '(no key)'}, not {layer}: check the layer or the coordinates",
                field="layer",
                fix="check the layer or the coordinates",
            )
        selected = found[:1]
    else:
        if last < 1:
            raise ContractGateError(
                f"--last must be at least 1 (got {last})",
                field="--last",
                fix="give --last 1 or more",
            )
        selected = latest_of_layer(settings, layer, last)
        if not selected:
            raise ContractGateError(
                f"no admitted record of {layer} found on {topic}: nothing to check",
                field="layer",
                fix="check the layer name, or check again once a batch of it is admitted",
            )
    for m in selected:
        try:
            assert_admitted_under(m.headers(), version)
        except VersionMismatchError as exc:
            raise VersionMismatchError(
                f"{topic}[{m.partition()}]@{m.offset()}: {exc}", field=exc.field, fix=exc.fix
            ) from None
    return f"{len(selected)} admitted record(s) of {layer} checked: all admitted under {version}"
