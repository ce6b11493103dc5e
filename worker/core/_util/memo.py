"""Caches keyed by object identity, for arguments that are costly to hash (pure).

``functools.lru_cache`` hashes its arguments. A :class:`pyproj.CRS` hashes by rendering
its WKT (about 20 us a call) and a contract clause holds unhashable parameters (dicts,
lists), so on the per-event path a cache hit cost more than the spatial work of a
one-feature batch. The objects reaching these caches are long-lived and shared (CRS objects
come from :func:`worker.core.spatial.resolve_crs`, itself cached; clauses belong to the
registry's contract versions), so keying by ``id`` finds the same entries for a fraction of
the cost. Each entry holds a reference to its arguments, so an id is never reused while it
is cached; a different but equal object is a cache miss, never a wrong answer.
"""

from __future__ import annotations

import functools
import threading
import weakref
from collections.abc import Callable
from typing import Any, Generic, TypeVar, overload

__all__ = ["fact", "identity_memo"]

F = TypeVar("F", bound=Callable[..., Any])


class _Cache:
    """One cache of :func:`identity_memo`: its ``entries`` (an object that can be weakly
    referenced, and hashed by identity)."""

    __slots__ = ("__weakref__", "entries")

    def __init__(self) -> None:
        self.entries: dict[int | tuple[int, ...], tuple[tuple[Any, ...], Any]] = {}


def identity_memo(maxsize: int, *, per_thread: bool = False) -> Callable[[F], F]:
    """Decorator: cache a function of positional arguments by the arguments' identity.

    Parameters
    ----------
    maxsize : int
        Entries kept; the cache is cleared when it is full (entries are cheap to rebuild
        and the working set, the active contract versions' CRSs and clauses, is small).
    per_thread : bool
        One cache per thread, for values that must not be shared between threads: a
        prepared GEOS geometry mutates its index on every predicate call, and GEOS does not
        make that safe across threads (libgeos/geos#825; the worker routes large events on
        two threads, :class:`worker.gate.route_group.RouteAhead`). ``maxsize`` then bounds each
        thread's.

    The decorated function gains ``cache_clear()`` (every thread's cache). Exceptions are
    not cached.
    """

    def wrap(fn: F) -> F:
        shared = _Cache()
        local = threading.local()
        # every live thread's cache, for cache_clear (a thread's goes with the thread)
        caches: weakref.WeakSet[_Cache] = weakref.WeakSet([shared])
        lock = threading.Lock()

        def this_thread() -> _Cache:
            mine = getattr(local, "cache", None)
            if mine is None:
                mine = local.cache = _Cache()
                with lock:
                    caches.add(mine)
            return mine

        def clear() -> None:
            with lock:
                for c in list(caches):
                    c.entries.clear()

        @functools.wraps(fn)
        def cached(*args: Any) -> Any:
            cache = (this_thread() if per_thread else shared).entries
            # one argument (most callers: a clause result, a CRS) keyed by its id alone
            key = id(args[0]) if len(args) == 1 else tuple(map(id, args))
            hit = cache.get(key)
            # an entry holds its arguments alive, so equal ids are the same objects: no
            # identity test per hit (it was a third of the cost of a hit, several hits a
            # clause on the per-event path)
            if hit is not None:
                return hit[1]
            value = fn(*args)
            if len(cache) >= maxsize:
                cache.clear()
            cache[key] = (args, value)
            return value

        cached.cache_clear = clear  # type: ignore[attr-defined]
        return cached  # type: ignore[return-value]

    return wrap


T = TypeVar("T")


class fact(Generic[T]):
    """A lazily computed attribute, stored in the instance's ``__dict__`` on first access.

    :func:`functools.cached_property` without its per-class lock: on Python 3.11 every
    first access acquires an ``RLock`` (about 2 us), and a one-feature batch's facts take
    some thirty first accesses. CPython removed that lock in 3.12 (gh-87634) because it
    serialised unrelated instances; facts are built and read by one thread, so a race
    could at worst compute a value twice, never return a wrong one. As a non-data
    descriptor, it is bypassed once the value is in ``__dict__`` (priming ``__dict__``
    directly works as with ``cached_property``).
    """

    def __init__(self, func: Callable[[Any], T]) -> None:
        self.func = func
        self.attrname: str | None = None
        self.__doc__ = func.__doc__

    def __set_name__(self, owner: type, name: str) -> None:
        self.attrname = name

    @overload
    def __get__(self, instance: None, owner: type | None = None) -> fact[T]: ...

    @overload
    def __get__(self, instance: object, owner: type | None = None) -> T: ...

    def __get__(self, instance: object | None, owner: type | None = None) -> T | fact[T]:
        if instance is None:
            return self
        value = self.func(instance)
        instance.__dict__[self.attrname] = value  # type: ignore[index]
        return value
