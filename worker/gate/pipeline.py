"""``Pipeline``: the :class:`~worker.gate.processor.Processor` built from keyword tuning
values, the constructor ``contract-gate demo`` and the integration tests use."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from worker.gate.config import GateConfig
from worker.gate.housekeeping import Instruments
from worker.gate.processor import Processor, _utcnow
from worker.gate.records import Outcome
from worker.kafka.settings import Settings

__all__ = ["Pipeline"]

_DEFAULTS = GateConfig()


class Pipeline(Processor):
    """A :class:`Processor` whose clients are built by :meth:`start`.

    Parameters
    ----------
    settings : Settings
        Kafka settings.
    metrics, clock, on_outcome
        As :class:`Processor`.
    max_batch_events, max_batch_wait_ms, batch_deadline_s, config_timeout_s, routing_threads
        The :class:`~worker.gate.config.GateConfig` fields of the same names (defaults
        ``GateConfig()``'s).

    Raises
    ------
    ValueError
        ``routing_threads`` or ``max_batch_events`` below 1.
    """

    def __init__(
        self,
        settings: Settings,
        *,
        metrics: Instruments | None = None,
        clock: Callable[[], datetime] = _utcnow,
        max_batch_events: int = _DEFAULTS.max_batch_events,
        max_batch_wait_ms: int = _DEFAULTS.max_batch_wait_ms,
        batch_deadline_s: float = _DEFAULTS.batch_deadline_s,
        config_timeout_s: float = _DEFAULTS.config_timeout_s,
        on_outcome: Callable[[Outcome], None] | None = None,
        routing_threads: int = _DEFAULTS.routing_threads,
    ) -> None:
        config = GateConfig(
            max_batch_events=max_batch_events,
            max_batch_wait_ms=max_batch_wait_ms,
            batch_deadline_s=batch_deadline_s,
            config_timeout_s=config_timeout_s,
            routing_threads=routing_threads,
        )
        super().__init__(config, settings, metrics=metrics, clock=clock, on_outcome=on_outcome)
