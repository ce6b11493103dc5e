"""A processing deadline per poll batch: route events in order until it passes.

A poll batch of by-reference events can take long (each payload is downloaded and read):
past ``max.poll.interval.ms`` the consumer would leave its group and its transaction be
fenced. :func:`route_within` routes the events of one poll batch in order and stops once
``deadline_s`` has passed since it started, after at least one event, so every step
decides something. The decided prefix is committed; :func:`rewind_offsets` gives, per
partition, the first offset of the undecided rest, where the consumer seeks back so the
rest is consumed again in the next step (nothing lost, nothing decided twice). ``progress``
is called after every decided event: the pipeline marks its loop alive there, so
``/healthz`` stays 200 while events are being decided and turns 503 only when one
event takes longer than ``max.poll.interval.ms``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

__all__ = ["DEFAULT_BATCH_DEADLINE_S", "rewind_offsets", "route_within"]

#: Default processing deadline of one poll batch, in seconds: a fifth of librdkafka's
#: default ``max.poll.interval.ms`` (300000), leaving room for one slow payload (the S3
#: client's 30 s request timeout, 3 attempts) and the commit.
DEFAULT_BATCH_DEADLINE_S = 60.0

E = TypeVar("E")
O = TypeVar("O")  # noqa: E741 - an outcome


def route_within(
    events: Sequence[E],
    route: Callable[[E], O],
    deadline_s: float,
    *,
    clock: Callable[[], float] = time.monotonic,
    progress: Callable[[], None] | None = None,
) -> tuple[list[O], list[E]]:
    """Route ``events`` in order until ``deadline_s`` (seconds, measured with ``clock``
    from the call) has passed; the first event is always routed.

    Returns
    -------
    (outcomes, rest)
        The outcomes of the routed prefix, in order, and the events not routed.
    """
    started = clock()
    outcomes: list[O] = []
    for i, event in enumerate(events):
        if i > 0 and clock() - started >= deadline_s:
            return outcomes, list(events[i:])
        outcomes.append(route(event))
        if progress is not None:
            progress()
    return outcomes, []


def rewind_offsets(rest: Sequence[Any]) -> dict[tuple[str, int], int]:
    """``(topic, partition) -> offset`` of the first undecided event of each partition
    (consumed records: ``topic()``, ``partition()``, ``offset()``)."""
    out: dict[tuple[str, int], int] = {}
    for m in rest:
        tp = (m.topic(), m.partition())
        out[tp] = min(out.get(tp, m.offset()), m.offset())
    return out
