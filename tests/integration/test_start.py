"""Worker start-up against a broker missing the topics it consumes or writes."""

from __future__ import annotations

from dataclasses import replace

import pytest

from worker.core.errors import BrokerError
from worker.gate.pipeline import Pipeline
from worker.kafka.settings import Settings


@pytest.mark.integration
@pytest.mark.parametrize("role", ["batches", "quarantine"])
def test_a_missing_topic_stops_start_up_naming_the_fix(settings: Settings, role: str) -> None:
    # found by a new-user session: a missing batches topic was a consumer WARNING repeated
    # forever while /readyz said ready
    absent = f"{getattr(settings.topics, role)}.absent"
    wrong = replace(settings, topics=replace(settings.topics, **{role: absent}))
    pipeline = Pipeline(wrong)
    try:
        with pytest.raises(BrokerError) as caught:
            pipeline.start()
    finally:
        pipeline.close()
    message = str(caught.value)
    assert f"topic(s) {absent} do not exist" in message
    assert "contract-gate topics create" in message
    # the topics that exist are not named
    assert settings.topics.admitted not in message.replace(absent, "")


@pytest.mark.integration
def test_producing_to_a_missing_topic_names_the_fix_at_once(settings: Settings) -> None:
    # a fresh-user session: `batch publish` and `consumers declare` to a missing topic
    # waited 30 s for the delivery, then printed the broker's error without the fix
    import time

    from worker.kafka.admin import produce_one

    absent = f"{settings.topics.batches}.absent"
    started = time.monotonic()
    with pytest.raises(BrokerError, match=rf"^topic {absent} does not exist; create it with"):
        produce_one(settings, absent, "k", b"v")
    assert time.monotonic() - started < 10
    assert produce_one(settings, settings.topics.batches, "k", b"v")[1] >= 0  # one that exists
