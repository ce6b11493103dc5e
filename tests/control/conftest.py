"""Fixtures of the control tests."""

from __future__ import annotations

import pytest


@pytest.fixture
def no_broker_probe(monkeypatch: pytest.MonkeyPatch) -> None:
    """The CLI's broker probe (:func:`worker.kafka.reach.require_broker`, run by every Kafka
    command before its work) as a no-op: for tests that run a command in-process with its
    Kafka calls replaced by fakes and no broker at the address."""
    monkeypatch.setattr("worker.kafka.reach.require_broker", lambda *a, **k: None)
