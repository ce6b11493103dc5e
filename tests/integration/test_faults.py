"""The short subset of the fault suite against the session broker (``python -m tests.faults``
runs all of it and prints the figures table)."""

from __future__ import annotations

import pytest

from tests.faults.suite import render, scenarios
from worker.kafka.broker_route import RunningBroker


@pytest.mark.integration
@pytest.mark.parametrize("key", [key for key, _ in scenarios(quick=True)])
def test_fault_scenario(key: str, broker: RunningBroker) -> None:
    run = dict(scenarios(quick=True))[key]
    row = run(broker.bootstrap_servers)
    print("\n" + render([row]))
    assert row.ok, render([row])
