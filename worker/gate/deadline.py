"""A processing deadline per poll batch: route events in order until it passes.

A poll batch of by-reference events can take long (each payload is downloaded and read):
past ``max.poll.interval.ms`` the consumer would leave its group and its transaction be
fenced. :func:`worker.gate.runs.route_in_runs` routes the events of one poll batch in
order and stops once the deadline has passed since it started, after at least one event,
so every step decides something. The decided prefix is committed; :func:`rewind_offsets`
gives, per partition, the first offset of the undecided rest (or of the events of an
aborted transaction and those after it), where the consumer seeks back so the rest is
consumed again in the next step (nothing lost, nothing decided twice). ``progress`` is
called after every decided event: the pipeline marks its loop alive there, so
``/healthz`` stays 200 while events are being decided and turns 503 only when one
event takes longer than ``max.poll.interval.ms``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

__all__ = ["DEFAULT_BATCH_DEADLINE_S", "rewind_offsets"]

#: Default processing deadline of one poll batch, in seconds: a fifth of librdkafka's
#: default ``max.poll.interval.ms`` (300000), leaving room for one slow payload (the S3
#: client's 30 s request timeout, 3 attempts) and the commit.
DEFAULT_BATCH_DEADLINE_S = 60.0


def rewind_offsets(rest: Sequence[Any]) -> dict[tuple[str, int], int]:
    """``(topic, partition) -> offset`` of the first undecided event of each partition
    (consumed records: ``topic()``, ``partition()``, ``offset()``)."""
    out: dict[tuple[str, int], int] = {}
    for m in rest:
        tp = (m.topic(), m.partition())
        out[tp] = min(out.get(tp, m.offset()), m.offset())
    return out
