"""librdkafka's repeated lines are rate-limited, with the count of those dropped."""

from __future__ import annotations

import logging

import pytest

from worker.kafka.logfilter import RepeatFilter


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_repeats_of_a_kind_are_dropped_then_counted(caplog: pytest.LogCaptureFixture) -> None:
    clock = Clock()
    logger = logging.getLogger("test.librdkafka.repeat")
    logger.addFilter(RepeatFilter(every_s=30, clock=clock))
    with caplog.at_level(logging.ERROR, logger="test.librdkafka.repeat"):
        for i in range(196):  # as many as a refused SASL handshake gave in 40 s
            logger.error("FAIL [thrd:%d]: SASL handshake failed (after %d ms)", i, i * 3)
            clock.now += 0.25
        logger.error("another kind of line")
        clock.now += 1
        logger.error("FAIL [thrd:1]: SASL handshake failed (after 9 ms)")
    lines = [r.getMessage() for r in caplog.records]
    assert lines[0] == "FAIL [thrd:0]: SASL handshake failed (after 0 ms)"
    assert lines[1] == (
        "FAIL [thrd:120]: SASL handshake failed (after 360 ms) (119 similar lines dropped)"
    )
    assert "another kind of line" in lines
    assert len(lines) == 3  # 198 lines logged, 3 shown
