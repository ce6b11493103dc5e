"""Per-major read paths on a cluster: the topics the layers that opt in need.

A layer opts in with ``read_paths: per_major`` in an active version's document
(:mod:`worker.core.lifecycle.read_paths`). ``contract-gate topics create`` learns the layers from
the
config topic: after the six topics it creates ``gis.batches.admitted.<layer>.v<major>``
(:attr:`worker.kafka.settings.Topics.admitted_per_major`) for every active major of every
layer that opts in. Run it again after publishing a new major of such a layer; until its
topic exists the worker leaves that path out and logs an ERROR naming the topic. Topics of
retired majors are no longer written and never deleted automatically.
"""

from __future__ import annotations

from worker.core.lifecycle.read_paths import per_major_majors
from worker.core.lifecycle.registry import Registry
from worker.kafka.admin import create_topics
from worker.kafka.settings import Settings, Topics

__all__ = ["create_per_major_topics", "per_major_topics"]


def per_major_topics(registry: Registry, topics: Topics) -> dict[str, tuple[str, int]]:
    """``{topic: (layer, major)}`` for every active major of every layer that opts in."""
    out: dict[str, tuple[str, int]] = {}
    for layer in registry.layers():
        for major in per_major_majors(registry.active(layer)):
            out[topics.admitted_for(layer, major)] = (layer, major)
    return out


def create_per_major_topics(
    settings: Settings, *, partitions: int = 3, replication_factor: int = 1
) -> dict[str, str]:
    """Create the per-major admitted topics the config topic asks for (existing ones are
    left alone); returns ``{topic: "created" | "exists"}``, empty when no layer opts in.

    Raises
    ------
    BrokerError
        The config topic cannot be read, or a topic cannot be created (e.g. a layer name
        with characters Kafka refuses in a topic name: the message names it).
    """
    from worker.control.publish import read_registry

    names = per_major_topics(read_registry(settings), settings.topics)
    if not names:
        return {}
    return create_topics(
        settings,
        partitions=partitions,
        replication_factor=replication_factor,
        names=sorted(names),
    )
