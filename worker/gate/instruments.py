"""What the pipeline reports to telemetry, as a protocol (the implementation is in ops).

:class:`worker.ops.metrics.GateMetrics` implements :class:`Instruments` with OpenTelemetry
instruments; the pipeline depends only on this protocol, so the Kafka layer never imports
the operator layer. :class:`NullInstruments` records nothing (a pipeline without telemetry).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any, Protocol

from worker.core.lifecycle.policy import Published
from worker.core.model import Decision

__all__ = ["Instruments", "NullInstruments"]


class Instruments(Protocol):
    """The telemetry calls of :class:`worker.gate.pipeline.Pipeline` (docs/design.md section 7)."""

    def record_decision(
        self,
        layer: str,
        decision: Decision,
        duration_s: float,
        objectives: Mapping[str, float] | None = None,
    ) -> None:
        """One routed batch: its decision, verdicts, clause results; ``duration_s`` in s."""

    def record_config_rejection(
        self, layer: str | None, reason: str, known_layers: Collection[str]
    ) -> None:
        """One config record the registry rejected, with the rejection reason; ``layer``
        (from the untrusted record) is a label only when in ``known_layers``."""

    def record_config_tombstone(self, layer: str | None, known_layers: Collection[str]) -> None:
        """One tombstone applied from the config topic (``layer`` bounded as above)."""

    def set_lifecycle(
        self, published: Sequence[Published], now: Callable[[], datetime] | None = None
    ) -> None:
        """The versions now on the config topic (any state)."""

    def set_consumer_lag(self, lag: Mapping[tuple[str, int], int]) -> None:
        """Records behind the high watermark per assigned ``(topic, partition)``."""

    def set_config_bootstrap(self, records: int, bootstrapped: bool) -> None:
        """Config records read so far and whether the bootstrap reached partition EOF."""

    def set_history_breaks(
        self, breaks: Mapping[str, tuple[str, ...]], known_layers: Collection[str]
    ) -> None:
        """Layer -> breaks of its contract history (issue 30); ``layer`` bounded as above."""

    def restore_slo(
        self,
        records: Iterable[Mapping[str, Any]],
        objectives: Mapping[tuple[str, str], float],
        now: datetime,
    ) -> int:
        """Refill SLO windows from decoded evaluation records at start; returns how many
        verdicts were restored (``objectives``: ``(layer, version) -> objective`` of the
        active versions; records of other versions are ignored)."""
        ...


class NullInstruments:
    """:class:`Instruments` that record nothing."""

    def record_decision(
        self,
        layer: str,
        decision: Decision,
        duration_s: float,
        objectives: Mapping[str, float] | None = None,
    ) -> None:
        return None

    def record_config_rejection(
        self, layer: str | None, reason: str, known_layers: Collection[str]
    ) -> None:
        return None

    def record_config_tombstone(self, layer: str | None, known_layers: Collection[str]) -> None:
        return None

    def set_history_breaks(
        self, breaks: Mapping[str, tuple[str, ...]], known_layers: Collection[str]
    ) -> None:
        return None

    def set_lifecycle(
        self, published: Sequence[Published], now: Callable[[], datetime] | None = None
    ) -> None:
        return None

    def set_consumer_lag(self, lag: Mapping[tuple[str, int], int]) -> None:
        return None

    def set_config_bootstrap(self, records: int, bootstrapped: bool) -> None:
        return None

    def restore_slo(
        self,
        records: Iterable[Mapping[str, Any]],
        objectives: Mapping[tuple[str, str], float],
        now: datetime,
    ) -> int:
        return 0
