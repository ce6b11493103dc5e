"""The demo scenario through a real broker and a real worker: every decision and reason."""

from __future__ import annotations

import io
from typing import Any

from worker.cli.demo import (
    collect_results,
    expected_evaluations,
    publish_demo_contracts,
    publish_demo_events,
)
from worker.kafka.settings import Settings

# label -> (decision, {(version, clause) or reason code}, diagnosis fragment or None)
EXPECTED: dict[str, tuple[str, set[Any], str | None]] = {
    "ab-real": ("admitted", set(), None),
    "ab-axis-swapped": ("quarantined", {("v1.0", "extent")}, "axis order looks swapped"),
    "ab-web-mercator": ("quarantined", {("v1.0", "extent")}, "EPSG:3857"),
    "ab-self-intersecting": ("quarantined", {("v1.0", "valid")}, None),
    "ab-unknown-continent": ("quarantined", {("v1.0", "continent")}, None),
    "ab-stale": ("quarantined", {("v1.0", "fresh")}, None),
    "ab-renamed-column": ("quarantined", {("v1.0", "schema"), ("v1.0", "continent")}, None),
    "nyc-real": ("admitted", set(), None),
    "undecodable": ("quarantined", {"decode_error"}, None),
    "roads-unknown-layer": ("quarantined", {"no_active_contract"}, None),
}


def test_demo_scenario_decisions_and_reasons(settings: Settings, start_worker: Any) -> None:
    out = io.StringIO()
    publish_demo_contracts(settings, out=out)
    worker = start_worker(settings)
    assert [v.contract.version for v in worker.pipeline.registry.active("admin_boundaries")] == [
        "v1.0",
        "v1.1",
    ]
    placed = publish_demo_events(settings, out=out)
    assert sorted(e.label for e, _ in placed) == sorted(EXPECTED)
    n_eval = expected_evaluations(placed, {"admin_boundaries": 2, "nyc_boroughs": 1})
    result = collect_results(settings, len(placed), n_eval, timeout_s=60)

    for event, coord in placed:
        decision, reasons, diagnosis = EXPECTED[event.label]
        assert result.decisions.get(coord) == decision, event.label
        if decision == "quarantined":
            q = result.quarantine[coord]
            got = {
                (r["version"], r["clause"]) if r["code"] == "contract_break" else r["code"]
                for r in q["reasons"]
            }
            assert got == reasons, event.label
            assert q["source_offset"] == coord[1]
            assert q["original"] == event.value
            if diagnosis:
                assert any(diagnosis in d for d in q["diagnoses"]), (event.label, q["diagnoses"])
        else:
            h = result.admitted_headers[coord]
            assert h["batch-id"] == event.batch_id
    # admitted real world batch: v1 enforced, v1.1 observed and broken by the real data
    real = next(c for e, c in placed if e.label == "ab-real")
    assert result.admitted_headers[real]["contract-versions-enforced"] == "v1.0"
    assert result.admitted_headers[real]["contract-versions-observing"] == "v1.1=break"

    # evaluation records: one per (batch, active version); the observing v1.1 breaks only
    # its continent clause on the real batch
    assert len(result.evaluations) == n_eval
    by_key = {(ev["batch_id"], ev["version"]): ev for ev in result.evaluations}
    v11 = by_key[("ab-real", "v1.1")]
    assert v11["mode"] == "observing" and not v11["passed"]
    assert [c["name"] for c in v11["clauses"] if c["result"] == "break"] == ["continent"]
    assert by_key[("ab-real", "v1.0")]["passed"]
    assert by_key[("nyc-real", "v1.0")]["passed"]
