"""Start of a worker: checks, restored state, and the one place its Kafka clients are built.

In order (:meth:`worker.gate.processor.Processor.start`): a WARNING per local payload root
that is not a directory (:func:`warn_missing_roots`); the config topic read to its end;
the Schema Registry subjects registered (:func:`register_schemas`); the replay ledger
(:func:`worker.gate.replays.restore_ledger`) and the SLO windows (:func:`restore_slo`)
refilled from the tails of the admitted and evaluations topics; then the clients
(:func:`make_clients`): the transactional producer, the topics it must find, the consumer
subscribed to the batches topic; last, what start-up built is kept out of the cyclic
collector's full passes (:func:`freeze_heap`).
"""

from __future__ import annotations

import gc
import logging
import os
from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING, Any

from worker.core.errors import BrokerError, ContractGateError
from worker.core.lifecycle.registry import RecordingRegistry
from worker.core.lifecycle.slo import DEFAULT_MAX_VERDICTS
from worker.gate.config import GateConfig
from worker.gate.housekeeping import Instruments, NullInstruments
from worker.gate.topics import require_topics
from worker.kafka.clients import make_consumer, make_transactional_producer, map_kafka_errors
from worker.kafka.evaluations import read_recent_evaluations
from worker.kafka.health import BrokerHealth
from worker.kafka.protocols import ConsumerLike, TransactionalProducerLike
from worker.kafka.settings import Settings

if TYPE_CHECKING:
    from worker.kafka.wire import RegistryCodec

__all__ = [
    "active_summary",
    "freeze_heap",
    "make_clients",
    "new_producer",
    "register_schemas",
    "restore_slo",
    "thaw_heap",
    "warn_missing_roots",
]

log = logging.getLogger(__name__)

#: ``on_assign`` / ``on_revoke`` of the consumer: ``(consumer, partitions)``.
Rebalance = Callable[[Any, list[Any]], None]


def warn_missing_roots(settings: Settings) -> None:
    """A WARNING per local payload root that is not a directory (yet): a volume may be
    mounted later, so the worker starts, but a typo would otherwise show only as every
    event by reference quarantined ``payload_unavailable``."""
    for root in settings.payload.roots or ():
        if root.scheme == "file" and not os.path.isdir(root.location):
            log.warning(
                "payload root %s is not a directory on this host: events whose payload_uri "
                "lies under it are quarantined payload_unavailable until it exists "
                "(check --payload-root / CONTRACT_GATE_PAYLOAD_ROOTS, or the volume mount)",
                root,
            )


def register_schemas(wire: RegistryCodec | None, framed: dict[str, str]) -> None:
    """With a Schema Registry: register the schemas of the framed output topics now, so
    producing needs no lookup later (the client caches the ids).

    Raises
    ------
    BrokerError
        The registry refuses a schema or cannot be reached (the message names the
        subject; the worker does not start).
    """
    if wire is None:
        return
    for topic, kind in framed.items():
        try:
            wire.register(topic, kind)
        except ContractGateError as exc:
            raise BrokerError(f"schema registry: {exc}") from None


def restore_slo(
    metrics: Instruments,
    registry: RecordingRegistry,
    settings: Settings,
    config: GateConfig,
    now: datetime,
) -> int:
    """Refill the SLO windows from the tail of the evaluations topic (bounded: at most
    the window's verdicts per active version per partition, at most
    ``config.slo_restore_max_per_partition``); a failed read is logged, never fatal (the
    windows then start empty).

    Returns
    -------
    int
        Evaluation records taken into the windows.
    """
    if isinstance(metrics, NullInstruments):
        return 0
    objectives = {
        (v.contract.layer, v.contract.version): v.contract.objective
        for layer in registry.layers()
        for v in registry.active(layer)
    }
    if not objectives:
        return 0
    tail = min(config.slo_restore_max_per_partition, DEFAULT_MAX_VERDICTS * len(objectives))
    try:
        records = read_recent_evaluations(settings, tail, timeout_s=config.restore_timeout_s)
    except BrokerError as exc:
        log.warning("SLO windows start empty: the evaluations topic was not read (%s)", exc)
        return 0
    return metrics.restore_slo(records, objectives, now)


#: Layers the start-up line names one by one; the rest are counted ("and 990 more layers").
SUMMARY_LAYERS = 10


def active_summary(registry: RecordingRegistry, most: int = SUMMARY_LAYERS) -> str:
    """``layer: version/mode ...`` of the first ``most`` layers with active versions (in the
    registry's sorted order), then ``and N more layers``; ``none`` when no layer has one.
    A config topic with 1,000 layers made a start-up line of 1,000 entries."""
    active = [(layer, found) for layer in registry.layers() if (found := registry.active(layer))]
    named = ", ".join(
        f"{layer}: " + " ".join(f"{v.contract.version}/{v.mode}" for v in versions)
        for layer, versions in active[:most]
    )
    rest = len(active) - most
    return (named + (f" and {rest} more layers" if rest > 0 else "")) or "none"


def new_producer(settings: Settings, health: BrokerHealth) -> TransactionalProducerLike:
    """The worker's transactional producer, not initialised yet (:func:`make_clients` does).

    Made before the config topic is read, it finds the broker and the transaction
    coordinator meanwhile: ``init_transactions`` then took 3 ms instead of 0.5 s (the
    embedded broker, issue 27). Nothing is fenced before ``init_transactions``.

    It reports failed deliveries only (librdkafka's ``delivery.report.only.error``): a
    transaction's records all land or none do (``commit_transaction`` fails when one
    failed), so only a failure's error code is read (:mod:`worker.gate.checkpoint`); a
    report per record was a Python callback each, on the committer's thread, taking the
    GIL from the loop (stop 39).
    """
    conf: dict[str, Any] = {**health.client_config(), "delivery.report.only.error": True}
    return make_transactional_producer(settings, **conf)


def make_clients(
    settings: Settings,
    config: GateConfig,
    health: BrokerHealth,
    rebalance: tuple[Rebalance, Rebalance],
    producer: TransactionalProducerLike | None = None,
) -> tuple[ConsumerLike, TransactionalProducerLike]:
    """The worker's real Kafka clients, built here only.

    The transactional producer (``producer`` when given, from :func:`new_producer`, else
    a new one) initialised (``init_transactions``, which fences an older producer of the
    same ``transactional.id``), the topics it must find (:func:`require_topics`), then
    the consumer, subscribed to the batches topic with the rebalance callbacks
    (``rebalance``: ``on_assign``, ``on_revoke``).

    Returns
    -------
    tuple of (ConsumerLike, TransactionalProducerLike)

    Raises
    ------
    BrokerError
        Transactions cannot be initialised within ``config.init_transactions_timeout_s``,
        or a topic is missing.
    """
    producer = producer or new_producer(settings, health)
    with map_kafka_errors("cannot initialise transactions"):
        producer.init_transactions(config.init_transactions_timeout_s)
    require_topics(producer, settings)
    consumer = make_consumer(settings, **health.client_config())
    on_assign, on_revoke = rebalance
    consumer.subscribe([settings.topics.batches], on_assign=on_assign, on_revoke=on_revoke)
    return consumer, producer


#: The collector's young-generation threshold while a worker runs (CPython's default is
#: 700): about one poll batch of one-feature events' allocations (some 50 tracked objects
#: an event, 500 events), so the outcomes of a poll batch, alive until its commit, are
#: mostly freed before a young pass walks them (see :func:`freeze_heap`).
YOUNG_THRESHOLD = 25_000

#: The collector's thresholds before :func:`freeze_heap` raised them (None: not raised).
_thresholds: tuple[int, int, int] | None = None


def freeze_heap() -> None:
    """Collect the garbage start-up left, then move every object alive to the collector's
    permanent generation (:func:`gc.freeze`), where its passes never look; and raise the
    young generation's threshold to :data:`YOUNG_THRESHOLD` (when lower).

    A started worker holds a few hundred thousand tracked objects that live as long as it
    does: the modules imported (pyarrow, shapely, pyproj, confluent-kafka), the contracts
    and the registry. CPython's full collection walks all of them each time; measured on
    the in-memory broker, one-feature events, that was 4 full passes per 6,000 events of
    40 to 80 ms each, about 45 us an event (the loop's whole cost is about 0.5 ms an event).
    Frozen, a full pass walks only what was built since. An object frozen here that becomes
    garbage later is freed by reference counting as before; only a reference cycle among
    such objects would stay until :func:`thaw_heap` (the worker's close).

    The young threshold: a poll batch's outcomes (decisions, records) live until its
    commit. With CPython's 700, a young pass ran every 14 one-feature events or so and
    walked them, the middle generation again, and every tenth middle pass a full one:
    15-45 us an event on the in-memory broker (docs/performance.md, "small events, third
    round"). At 25,000 most of them are freed by reference counting before any pass."""
    global _thresholds
    gc.collect()
    gc.freeze()
    now = gc.get_threshold()
    if now[0] < YOUNG_THRESHOLD and _thresholds is None:
        _thresholds = now
        gc.set_threshold(YOUNG_THRESHOLD, *now[1:])


def thaw_heap() -> None:
    """Give the objects :func:`freeze_heap` froze back to the collector (a process that
    starts and closes many workers, a test suite, then frees their reference cycles), and
    the collector's thresholds as they were before it."""
    global _thresholds
    gc.unfreeze()
    if _thresholds is not None:
        gc.set_threshold(*_thresholds)
        _thresholds = None
