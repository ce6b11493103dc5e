"""``GateConfig.eval_threads`` (``run --eval-threads``): the worker's router measures a
by-reference payload's chunks on a pool of that many threads, shut down with the
processor; 1 keeps them on the routing thread (issue 27)."""

from __future__ import annotations

import threading

import pytest

from worker.gate.config import GateConfig
from worker.gate.processor import Processor
from worker.gate.route import Router
from worker.kafka.settings import Settings


def test_eval_threads_below_one_are_refused() -> None:
    with pytest.raises(ValueError, match="eval_threads must be 1 or more, got 0"):
        GateConfig(eval_threads=0)
    assert GateConfig().eval_threads == 3


@pytest.mark.parametrize("threads", [1, 3])
def test_the_router_measures_chunks_on_the_configured_threads(threads: int) -> None:
    p = Processor(GateConfig(eval_threads=threads), Settings(instance_id="pod-0"))
    try:
        assert isinstance(p.route, Router)
        pool, in_flight = p.route.chunk_pool
        assert in_flight == threads
        if threads == 1:
            assert pool is None
        else:
            assert pool is not None
            names = set(pool.map(lambda _: threading.current_thread().name, range(12)))
            assert names and all(n.startswith("gate-eval") for n in names)
    finally:
        p.close()
    if pool is not None:
        with pytest.raises(RuntimeError, match="shutdown"):
            pool.submit(int)
