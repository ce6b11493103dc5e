"""Which layers an undeclared group read: a bounded look at the admitted topic.

An undeclared group with committed offsets on the shared admitted topic is counted against
every layer (:mod:`worker.core.lifecycle.migration`, the conservative rule): the offsets alone do
not say which layers' records it read. The records just *before* its committed offsets
do: each admitted record carries its layer (header ``layer``, the key as fallback). This
module reads at most :data:`SAMPLE_PER_PARTITION` such records per partition, within
``timeout_s``, and reports the layers seen. It is evidence for the operator, never a
reason to count a group less: older records of another layer may lie before the sample.
"""

from __future__ import annotations

import time
from collections.abc import Mapping

from worker.core._util.text import clip
from worker.kafka.clients import PARTITION_EOF, broker_error, make_consumer, map_kafka_errors
from worker.kafka.protocols import TopicPartition
from worker.kafka.settings import Settings

__all__ = ["MAX_LAYERS_SHOWN", "SAMPLE_PER_PARTITION", "layers_read"]

#: Records read before a group's committed offset, per partition.
SAMPLE_PER_PARTITION = 200
#: Most layers reported per group (the rest are dropped; names clipped to 100 characters).
MAX_LAYERS_SHOWN = 20


def layers_read(
    settings: Settings,
    committed: Mapping[str, Mapping[int, int]],
    *,
    per_partition: int = SAMPLE_PER_PARTITION,
    timeout_s: float = 5.0,
) -> dict[str, tuple[str, ...]]:
    """Per group, the layers of the records before its committed offsets on the admitted topic.

    Parameters
    ----------
    committed : mapping of group to {partition: committed offset}
        Committed offsets of groups on ``settings.topics.admitted`` (the next offset the
        group would read: the records below it are the ones it consumed).
    per_partition : int
        At most this many records before each committed offset are read (one read per
        partition covers every group).
    timeout_s : float
        The read stops at this deadline, with what it has seen by then.

    Returns
    -------
    dict of group to sorted layer names (at most :data:`MAX_LAYERS_SHOWN`); a group whose
    sampled records carry no layer maps to ``()``, a group with nothing to read is absent.

    Raises
    ------
    BrokerError
        The topic cannot be read.
    """
    topic = settings.topics.admitted
    windows: dict[int, list[tuple[str, int, int]]] = {}  # partition -> (group, start, end)
    for group, offsets in committed.items():
        for p, end in offsets.items():
            if end > 0:
                windows.setdefault(p, []).append((group, max(0, end - per_partition), end))
    if not windows:
        return {}
    seen: dict[str, set[str]] = {g: set() for ws in windows.values() for g, _, _ in ws}
    consumer = make_consumer(settings, reader=True)
    try:
        with map_kafka_errors(f"reading {topic} failed"):
            todo: dict[int, int] = {}  # partition -> offset where its read ends
            assignment = []
            for p, ws in sorted(windows.items()):
                low, high = consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)
                start = max(low, min(s for _, s, _ in ws))
                end = min(high, max(e for _, _, e in ws))
                if start < end:
                    assignment.append(TopicPartition(topic, p, start))
                    todo[p] = end
            consumer.assign(assignment)
            deadline = time.monotonic() + timeout_s
            while todo and time.monotonic() < deadline:
                msg = consumer.poll(0.2)
                if msg is None:
                    continue
                err = msg.error()
                if err is not None:
                    if err.code() == PARTITION_EOF:
                        todo.pop(int(msg.partition() or 0), None)
                        continue
                    raise broker_error(err, f"reading {topic} failed")
                p, offset = int(msg.partition() or 0), int(msg.offset() or 0)
                if p not in todo:
                    continue
                if offset >= todo[p]:  # past the window (its last offset was a commit marker)
                    todo.pop(p)
                    continue
                if offset == todo[p] - 1:
                    todo.pop(p)
                layer = _layer(msg)
                for group, start, end in windows[p]:
                    if layer and start <= offset < end:
                        seen[group].add(layer)
    finally:
        consumer.close()
    return {g: tuple(sorted(layers)[:MAX_LAYERS_SHOWN]) for g, layers in seen.items()}


def _layer(msg: object) -> str:
    for name, value in getattr(msg, "headers", lambda: None)() or ():
        if name == "layer" and value:
            return clip(bytes(value).decode("utf-8", "replace"), 100)
    key = getattr(msg, "key", lambda: None)()
    return clip(key.decode("utf-8", "replace"), 100) if key else ""
