"""Stop 39: GateMetrics.record_decisions counts a run's clause results per result object in
C (``Counter.update`` over ids) and reuses each SLO series key. Against one
record_decision per batch, on a real group's decisions (shared result objects, two modes,
objectives given): every counter, the histogram, the SLO gauges and what the SLO windows
hold after their oldest verdicts expired (a clock that counts its calls: each verdict's
time is its read), are the same."""

from __future__ import annotations

import itertools
from collections.abc import Callable

from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader

from tests.catalogue import NOW as AT
from tests.catalogue import active, clause, contract_of
from tests.core.test_shared_facts import EVERYTHING, _small_batches
from tests.ops.test_metrics import points
from worker.core.evaluate_group import evaluate_group
from worker.core.lifecycle.slo import SeriesKey, Window
from worker.ops.metrics import GateMetrics

#: The SLO window's age bound: the clock's calls are seconds, so the oldest verdicts expire.
AGE_S = 9


def _counting() -> Callable[[], float]:
    """A monotonic clock that moves one second per call (each SLO record its own time)."""
    ticks = itertools.count()
    return lambda: float(next(ticks))


def _windows(metrics: GateMetrics) -> dict[SeriesKey, tuple[float, int, int]]:
    """Each SLO series' objective, verdicts and passes in its window."""
    return {s.key: (s.objective, s.evaluated, s.passed) for s in metrics.slo.snapshot()}


def test_a_groups_decisions_in_one_call_give_every_value_of_one_call_per_batch() -> None:
    batches = _small_batches()
    domain = contract_of(clause("dom", "domain", column="code", values=["a", "b"]), version="v2.0")
    versions = [active(domain), active(EVERYTHING, mode="observing")]
    decisions = evaluate_group(batches, versions, now=AT)
    assert {d.decision for d in decisions} == {"admitted", "quarantined"}  # both kinds
    shared = decisions[1].verdicts[1].clauses, decisions[2].verdicts[1].clauses
    assert any(a is b for a, b in zip(*shared, strict=True))  # shared result objects
    objectives = {"v1.0": 0.9, "v2.0": 0.95}
    reports = [
        (("L", "other")[n % 2], d, 0.001 * (n + 1), objectives if n != 3 else None)
        for n, d in enumerate(decisions)
    ]
    readers = [InMemoryMetricReader(), InMemoryMetricReader()]
    one, summed = (
        GateMetrics(
            MeterProvider(metric_readers=[r]).get_meter("t"),
            slo_window=Window(max_age_s=AGE_S),
            monotonic=_counting(),
        )
        for r in readers
    )
    for report in reports:
        one.record_decision(*report)
    summed.record_decisions(iter(reports))

    def canonical(reader: InMemoryMetricReader) -> dict[str, list[tuple[list, float]]]:
        return {
            name: sorted((sorted(a.items()), v) for a, v in pts)
            for name, pts in points(reader).items()
        }

    by_one = canonical(readers[0])
    assert canonical(readers[1]) == by_one
    assert _windows(summed) == _windows(one)
    # the values themselves, from the decisions
    clause_total = sum(v for _, v in by_one["gis.contract.clause_evaluations_total"])
    assert clause_total == len(decisions) * (1 + len(EVERYTHING.clauses))
    # every verdict with objectives recorded at its own clock read (0, 1, ...; the gauges'
    # collection reads it too): the oldest have left the window, alike on both sides
    recorded = (len(decisions) - 1) * 2
    windows = _windows(summed)
    assert windows == _windows(one)
    assert 0 < sum(n for _, n, _ in windows.values()) < recorded  # some expired
    assert {key.version: objective for key, (objective, _, _) in windows.items()} == objectives
