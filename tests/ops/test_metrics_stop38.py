"""Stop 38: GateMetrics.record_decisions (series built once per clause result object)
against one record_decision per batch, on generated runs: result objects shared between
batches, versions, modes and layers, gate errors, and decisions made one at a time by a
generator and dropped after use (freed objects whose addresses the next ones may take)."""

from __future__ import annotations

import gc
from collections.abc import Iterator

from hypothesis import given, settings
from hypothesis import strategies as st
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader

from tests.ops.test_metrics import points
from worker.core.model import ClauseResult, Decision, VersionVerdict
from worker.ops.metrics import GateMetrics

#: (name, result, gate error) of a clause result
_CLAUSE = st.tuples(
    st.sampled_from(["a", "b", "c"]),
    st.sampled_from(["pass", "break"]),
    st.sampled_from([None, "ValueError: boom"]),
)
#: per batch: its layer and, per verdict, (version, mode, indices into a shared pool)
_RUN = st.lists(
    st.tuples(
        st.sampled_from(["L1", "L2"]),
        st.lists(
            st.tuples(
                st.sampled_from(["v1", "v2"]),
                st.sampled_from(["enforcing", "observing"]),
                st.lists(st.integers(0, 5), max_size=4),
            ),
            max_size=3,
        ),
        st.booleans(),  # fresh objects (True) or the shared pool's
    ),
    max_size=12,
)


def _result(spec: tuple[str, str, str | None]) -> ClauseResult:
    name, result, error = spec
    return ClauseResult(name, "domain", result, "halt", None, None, "m", gate_error=error)  # type: ignore[arg-type]


def _canonical(reader: InMemoryMetricReader) -> dict[str, list[tuple[list, float]]]:
    return {
        name: sorted((sorted(a.items()), v) for a, v in pts) for name, pts in points(reader).items()
    }


@given(st.lists(_CLAUSE, min_size=6, max_size=6), _RUN)
@settings(max_examples=400, deadline=None)
def test_one_call_per_run_counts_as_one_call_per_batch(
    pool_specs: list[tuple[str, str, str | None]],
    run: list[tuple[str, list[tuple[str, str, list[int]]], bool]],
) -> None:
    pool = [_result(s) for s in pool_specs]

    def decisions() -> Iterator[tuple[str, Decision, float, None]]:
        for layer, verdicts, fresh in run:
            made = tuple(
                VersionVerdict(layer, version, mode, True,  # type: ignore[arg-type]
                               tuple(_result(pool_specs[i]) if fresh else pool[i] for i in at))
                for version, mode, at in verdicts
            )  # fmt: skip
            yield layer, Decision("admitted", made), 0.001, None
            del made
            gc.collect(0)  # the batch's fresh results freed: their addresses free again

    readers = [InMemoryMetricReader(), InMemoryMetricReader()]
    one, summed = (GateMetrics(MeterProvider(metric_readers=[r]).get_meter("t")) for r in readers)
    for report in decisions():
        one.record_decision(*report)
    summed.record_decisions(decisions())
    assert _canonical(readers[1]) == _canonical(readers[0])
