"""The ``replay-of`` values already on the admitted topic, read at worker start."""

from __future__ import annotations

from worker.gate.route import REPLAY_OF
from worker.kafka.admin import read_topic
from worker.kafka.settings import Settings

__all__ = ["read_admitted_replays"]


def read_admitted_replays(
    settings: Settings, tail_per_partition: int, timeout_s: float = 30.0
) -> list[str]:
    """``replay-of`` header values of the last ``tail_per_partition`` admitted records of
    each partition, oldest first (bounded however long the topic is).

    Raises
    ------
    BrokerError
        The topic is missing or EOF is not reached within ``timeout_s``.
    """
    found: list[str] = []
    for msg in read_topic(
        settings, settings.topics.admitted, tail=tail_per_partition, timeout_s=timeout_s
    ):
        for key, value in msg.headers() or ():
            if key == REPLAY_OF and value:
                found.append(value.decode("utf-8", "replace"))
    return found
