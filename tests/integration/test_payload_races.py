"""Issue 31 against a real worker process: 300 by-reference batches per kind while a
swapper process exchanges a directory of the named path for a link out of the payload
root, and points links in and out (:mod:`tests.faults.payload_race`). No admitted,
quarantine or evaluation record, nor the worker's log, may hold the outside file's value;
every batch is decided once and the worker stays up. Before the descriptor-relative open,
the GeoJSON race put the outside value into 2 quarantine and 4 evaluation records of 300
batches here."""

from __future__ import annotations

import pytest

from tests.faults.payload_race import KINDS, race_kind
from tests.faults.suite import lab, render
from worker.kafka.broker_route import RunningBroker

#: Batches per kind (each race about 25-40 s here, with the worker's start).
BATCHES = 300


@pytest.mark.integration
@pytest.mark.parametrize("kind", KINDS)
def test_no_record_holds_a_value_of_the_outside_file(kind: str, broker: RunningBroker) -> None:
    if kind != "geojson":
        pytest.importorskip("pyogrio", reason="pyogrio (extra 'formats') writes the files")
    with lab(broker.bootstrap_servers) as running:
        result = race_kind(running, kind, BATCHES)
    print("\n" + render([result.row]))
    assert not result.leaks, result.row.note
    assert result.row.ok, render([result.row])
    assert sum(result.outcomes.values()) == BATCHES
    # the race met both sides: refused while the path led out, read or judged otherwise
    assert result.outcomes["payload_not_allowed"] > 0, result.outcomes
    assert sum(n for k, n in result.outcomes.items() if k != "payload_not_allowed") > 0
    if kind == "geojson":  # the benign file was read and evaluated
        assert result.outcomes["contract_break"] + result.outcomes["admitted"] > 0
    else:  # GDAL is never handed a producer's file: refused before any sidecar is opened
        assert set(result.outcomes) <= {"payload_not_allowed", "payload_corrupt"}
