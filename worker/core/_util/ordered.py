"""Results of work on a pool of threads, in the order the items came (pure).

:func:`in_order` runs a function over items on an executor's threads while the caller's
thread takes the next items, and yields the results in the items' order, with a bound on
the items taken and not yet yielded: what lets :mod:`worker.core.chunks` read the next
chunks of a batch while earlier ones are measured, in bounded memory.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Executor, Future, wait
from typing import Any

__all__ = ["in_order"]


def in_order(
    fn: Callable[[Any], Any],
    items: Iterable[Any],
    executor: Executor | None = None,
    in_flight: int = 1,
) -> Iterator[Any]:
    """``fn(item)`` of every item, yielded in the order of ``items``.

    Without ``executor`` (or with ``in_flight`` <= 1), one item at a time on the
    caller's thread. With one, ``fn`` runs on the executor's threads while the next items
    are taken from ``items`` on the caller's thread, with at most ``in_flight`` items
    taken and not yet yielded (the item being taken counts): what bounds memory when an
    item is a chunk of a batch. When the caller stops early or ``items`` raises, the
    items not started are cancelled and the running ones waited for before the error
    propagates, so no work outlives the call. Raises what ``items`` or ``fn`` raises.
    """
    if executor is None or in_flight <= 1:
        yield from map(fn, items)
        return
    pending: deque[Future[Any]] = deque()
    source = iter(items)
    try:
        while True:
            while len(pending) >= in_flight:
                yield pending.popleft().result()
            item = next(source, _END)
            if item is _END:
                break
            pending.append(executor.submit(fn, item))
            del item
        while pending:
            yield pending.popleft().result()
    finally:
        for f in pending:
            f.cancel()
        wait(pending)


_END = object()
