"""What the worker knows of its broker and of its own blocking calls.

* :class:`BrokerHealth` is fed by librdkafka's ``error_cb`` and ``stats_cb`` (both called
  from ``poll``/``consume`` on the worker's thread). ``_ALL_BROKERS_DOWN`` marks the
  broker unreachable; a statistics report with a broker in state ``UP``, or a committed
  transaction, marks it reachable again. Errors are logged at WARNING at most once per
  ``log_every_s`` per error code (librdkafka repeats them on every reconnect attempt),
  with a count of those suppressed.
* :class:`Watchdog` bounds blocking client calls: the pipeline names each call and its
  deadline (:meth:`Watchdog.call`); a daemon thread calls ``on_stuck`` with a clear
  message when a call outlives its deadline by ``grace_s``. ``contract-gate run`` exits
  the process non-zero there: a restart with the same instance id fences the stuck
  transaction and resumes from the committed offsets, so nothing is lost.
"""

from __future__ import annotations

import contextlib
import json
import logging
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

from worker.core._util.text import clip

__all__ = ["BrokerHealth", "Watchdog"]

log = logging.getLogger(__name__)

#: librdkafka error names that mean the broker cannot be reached.
UNREACHABLE = frozenset({"_ALL_BROKERS_DOWN"})


class BrokerHealth:
    """Reachability of the broker as the worker's clients see it.

    ``unreachable_since`` is a ``time.monotonic()`` value, or None while reachable.
    """

    def __init__(
        self, log_every_s: float = 30.0, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.unreachable_since: float | None = None
        self.last_error: str | None = None
        self.log_every_s = log_every_s
        self._clock = clock
        self._logged_at: dict[str, float] = {}
        self._suppressed: dict[str, int] = {}

    def on_error(self, err: Any) -> None:
        """librdkafka ``error_cb``: ``err`` is a ``confluent_kafka.KafkaError``."""
        name = str(err.name()) if hasattr(err, "name") else "error"
        text = clip(str(err.str()) if hasattr(err, "str") else str(err), 500)
        self.last_error = f"{name}: {text}"
        now = self._clock()
        if name in UNREACHABLE and self.unreachable_since is None:
            self.unreachable_since = now
        if now - self._logged_at.get(name, -1e18) >= self.log_every_s:
            suppressed = self._suppressed.pop(name, 0)
            log.warning(
                "Kafka client error %s%s",
                self.last_error,
                f" ({suppressed} more since the last line)" if suppressed else "",
            )
            self._logged_at[name] = now
        else:
            self._suppressed[name] = self._suppressed.get(name, 0) + 1

    def on_stats(self, stats_json: str) -> None:
        """librdkafka ``stats_cb``: reachable again once any real broker is ``UP``."""
        try:
            brokers = json.loads(stats_json).get("brokers", {})
        except (ValueError, AttributeError):
            return
        if any(
            isinstance(b, dict) and b.get("state") == "UP" and int(b.get("nodeid", -1)) >= 0
            for b in brokers.values()
        ):
            self.reachable()

    def reachable(self) -> None:
        """Something reached the broker (a committed transaction, an UP broker)."""
        if self.unreachable_since is not None:
            log.warning(
                "Kafka broker reachable again after %.0f s",
                self._clock() - self.unreachable_since,
            )
        self.unreachable_since = None

    def client_config(self) -> dict[str, Any]:
        """librdkafka properties that feed this object (statistics every 5 s)."""
        return {
            "error_cb": self.on_error,
            "stats_cb": self.on_stats,
            "statistics.interval.ms": 5000,
        }


class Watchdog:
    """Deadlines on blocking calls, enforced from a daemon thread.

    Parameters
    ----------
    on_stuck : callable
        Called once with a message when a call outlives its deadline by ``grace_s``
        (``contract-gate run`` logs it and exits with status 75).
    grace_s : float
        Slack beyond the call's own timeout before it counts as stuck, in seconds.
    """

    def __init__(
        self,
        on_stuck: Callable[[str], None],
        *,
        grace_s: float = 15.0,
        check_every_s: float = 1.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.on_stuck = on_stuck
        self.grace_s = grace_s
        self.check_every_s = check_every_s
        self._clock = clock
        self._current: tuple[str, float, float] | None = None  # name, started, deadline_s
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._fired = False

    @contextlib.contextmanager
    def call(self, name: str, deadline_s: float) -> Iterator[None]:
        """Mark a blocking call (``deadline_s`` is its own timeout, in seconds)."""
        self._current = (name, self._clock(), deadline_s)
        try:
            yield
        finally:
            self._current = None

    def check(self) -> str | None:
        """The stuck call's message, or None (called by the thread; testable directly)."""
        current = self._current
        if current is None or self._fired:
            return None
        name, started, deadline_s = current
        waited = self._clock() - started
        if waited <= deadline_s + self.grace_s:
            return None
        self._fired = True
        return (
            f"{name} has blocked for {waited:.0f} s (its timeout is {deadline_s:.0f} s): the "
            "Kafka client is stuck, the broker is unreachable or the transaction state is "
            "broken; stopping so a restart with the same instance id fences the open "
            "transaction and resumes from the committed offsets"
        )

    def start(self) -> None:
        def loop() -> None:
            while not self._stop.wait(self.check_every_s):
                message = self.check()
                if message is not None:
                    self.on_stuck(message)

        self._thread = threading.Thread(target=loop, name="contract-gate-watchdog", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
