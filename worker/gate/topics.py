"""Topics the gate needs: the ones it always writes (checked at start), the per-major ones.

The worker never creates topics (their partitions, retention and compaction are the
operator's choice, as in Kafka Streams, whose missing source topics also stop the
application). A missing consumed or always-written topic fails the start
(:func:`require_topics`); a missing per-major topic only leaves its records out
(:class:`PerMajorTopics`), with an ERROR naming it and the fix.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from worker.core.errors import BrokerError
from worker.gate.records import Outcome
from worker.kafka.clients import map_kafka_errors
from worker.kafka.protocols import ProducerLike
from worker.kafka.settings import Settings

__all__ = ["PerMajorTopics", "require_topics"]

log = logging.getLogger(__name__)


def require_topics(producer: ProducerLike, settings: Settings, timeout_s: float = 10.0) -> None:
    """Fail start-up when a topic the worker consumes or always writes is missing.

    Without it, a missing batches topic was only a consumer WARNING repeated forever
    and a missing output topic an endless abort-and-retry.

    Raises
    ------
    BrokerError
        Naming every missing topic and ``contract-gate topics create``; or the topics
        cannot be listed within ``timeout_s`` seconds.
    """
    t = settings.topics
    wanted = [t.batches, t.admitted, t.quarantine, t.evaluations]
    with map_kafka_errors("cannot list topics"):
        meta = producer.list_topics(timeout=timeout_s)
    missing = [
        name
        for name in wanted
        if (m := meta.topics.get(name)) is None or m.error is not None or not m.partitions
    ]
    if missing:
        raise BrokerError(
            f"topic(s) {', '.join(missing)} do not exist on {settings.bootstrap_servers}"
            "; the worker consumes or writes them and never creates topics: create them "
            "with `contract-gate topics create` (same topic flags/environment), or point "
            "the --*-topic flags at the existing ones"
        )


class PerMajorTopics:
    """Which per-major topics exist, looked up with a metadata request and again every
    ``recheck_s`` seconds while missing (``clock``: monotonic seconds)."""

    def __init__(
        self,
        producer: ProducerLike,
        recheck_s: float,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._producer = producer
        self._recheck_s = recheck_s
        self._clock = clock
        #: per-major topic -> (exists, monotonic time of the check)
        self._known: dict[str, tuple[bool, float]] = {}

    def missing(self, outcomes: list[Outcome]) -> frozenset[str]:
        """Per-major topics of these outcomes that do not exist. A produce to a missing
        topic would fail the transaction again and again, so such records are left out;
        shared topics are never skipped."""
        wanted = {r.topic for o in outcomes for r in o.records if r.per_major}
        now = self._clock()
        for topic in sorted(wanted):
            known = self._known.get(topic)
            if known is None or (not known[0] and now - known[1] > self._recheck_s):
                self._known[topic] = (self._exists(topic, known), now)
        return frozenset(t for t in wanted if not self._known[t][0])

    def _exists(self, topic: str, known: tuple[bool, float] | None) -> bool:
        try:
            with map_kafka_errors():
                meta = self._producer.list_topics(topic, timeout=5).topics.get(topic)
            exists = meta is not None and meta.error is None and bool(meta.partitions)
        except BrokerError:
            exists = known[0] if known else False
        if not exists:
            log.error(
                "per-major topic %s does not exist: batches admitted for it are not "
                "written there; create it with `contract-gate topics create`",
                topic,
            )
        return exists
