"""Is the broker there at all? One bounded metadata request before a command's work.

Every Kafka command of the CLI asks this first (:func:`require_broker`), so a broker that
is down is one line naming the bootstrap servers and where they came from, within
:data:`REACH_TIMEOUT_S` seconds, whatever the command would have done next (a produce
that retries for ``message.timeout.ms``, a read that waits per topic).
"""

from __future__ import annotations

import threading
import time
from typing import Any

from worker.core.errors import BrokerError, BrokerUnavailable
from worker.kafka.clients import ALL_BROKERS_DOWN, make_admin, map_kafka_errors
from worker.kafka.settings import Settings

__all__ = ["REACH_TIMEOUT_S", "REFUSED_AFTER_S", "require_broker"]

#: Seconds the metadata request may take before the broker counts as unreachable.
REACH_TIMEOUT_S = 6.0
#: Seconds after which "all brokers down" (every bootstrap server refused the connection:
#: nothing listens there) ends the wait early, rather than at :data:`REACH_TIMEOUT_S`; a
#: server that drops packets still takes the full timeout.
REFUSED_AFTER_S = 1.0
#: Slice of one metadata request while waiting, seconds.
_SLICE_S = 0.25


def require_broker(
    settings: Settings, *, source: str = "", timeout_s: float = REACH_TIMEOUT_S
) -> None:
    """Return when the cluster of ``settings`` answers a metadata request.

    Parameters
    ----------
    settings : Settings
        The client settings (bootstrap servers, security properties from ``extra``).
    source : str
        Where the bootstrap servers came from (``"KAFKA_BOOTSTRAP_SERVERS"``,
        ``"--bootstrap-servers"``), named in the error line.
    timeout_s : float
        Bound of the request, seconds.

    Raises
    ------
    BrokerUnavailable
        No broker answered within ``timeout_s``: the message names the servers, their
        source and librdkafka's reason.
    BrokerConfigError
        A client setting was refused (e.g. an unknown ``--kafka-property``).
    """
    servers = settings.bootstrap_servers
    where = f"{servers} (from {source})" if source else f"{servers} (the default)"
    fix = (
        f"check that a broker is up there, or point {source} at one"
        if source
        else "check that a broker is up there, or set --bootstrap-servers or "
        "KAFKA_BOOTSTRAP_SERVERS"
    )
    down = threading.Event()  # librdkafka's error callback: every broker refused

    def on_error(err: Any) -> None:
        if err.code() == ALL_BROKERS_DOWN:
            down.set()

    admin = make_admin({**settings.base(), "error_cb": on_error})
    started = time.monotonic()
    while True:
        left_s = timeout_s - (time.monotonic() - started)
        try:
            with map_kafka_errors():
                admin.list_topics(timeout=max(0.01, min(_SLICE_S, left_s)))
            return
        except BrokerError as exc:
            admin.poll(0)  # serves the error callback
            waited_s = time.monotonic() - started
            refused = down.is_set() and waited_s >= min(REFUSED_AFTER_S, timeout_s)
            if refused or waited_s >= timeout_s:
                why = (
                    "every server refused the connection"
                    if refused
                    else f"no answer within {timeout_s:g} s ({exc.detail or exc})"
                )
                raise BrokerUnavailable(
                    f"cannot reach Kafka at {where}: {why}; {fix}",
                    code=exc.code,
                    detail=exc.detail,
                ) from None
