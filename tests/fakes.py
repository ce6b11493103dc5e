"""A consumed Kafka record for unit tests that need no broker (integration tests use one)."""

from __future__ import annotations

from collections.abc import Sequence


class FakeRecord:
    """A record as ``confluent_kafka.Message`` presents it, with the accessors the worker
    calls: ``topic()``, ``partition()``, ``offset()``, ``key()`` (bytes; a str key is
    encoded as UTF-8), ``value()``, ``headers()`` and ``error()`` (always None)."""

    def __init__(
        self,
        topic: str = "t",
        partition: int = 0,
        offset: int = 0,
        *,
        key: str | bytes | None = None,
        value: bytes | None = None,
        headers: Sequence[tuple[str, bytes | None]] = (),
    ) -> None:
        self._topic, self._partition, self._offset = topic, partition, offset
        self._key = key.encode() if isinstance(key, str) else key
        self._value, self._headers = value, list(headers)

    def topic(self) -> str:
        return self._topic

    def partition(self) -> int:
        return self._partition

    def offset(self) -> int:
        return self._offset

    def key(self) -> bytes | None:
        return self._key

    def value(self) -> bytes | None:
        return self._value

    def headers(self) -> list[tuple[str, bytes | None]]:
        return self._headers

    def error(self) -> None:
        return None
