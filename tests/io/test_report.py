"""Text rendering of decisions: every measured figure with its unit (worker.io.report)."""

from __future__ import annotations

from datetime import timedelta

from tests.catalogue import NOW, PARIS, VALID_POLYGON, active, batch_of, clause, contract_of
from worker.core.evaluate import evaluate
from worker.io.report import render_decision, with_units


def test_text_output_gives_units_of_seconds_fractions_and_areas() -> None:
    contract = contract_of(
        clause("fresh", "freshness", max_age="PT1H"),
        clause("valid", "validity", max_invalid_fraction=0.25),
        clause("cover", "coverage", region=[0, 0, 1, 1], min_fraction=0.5, crs="EPSG:4326"),
        clause("size", "feature_count", min=1),
    )
    batch = batch_of([VALID_POLYGON, PARIS], data_time=NOW - timedelta(hours=2))
    text = render_decision(evaluate(batch, [active(contract)], now=NOW))
    assert "measured=7200 s old  expected={max_age=PT1H (3600 s), max_clock_skew=PT5M (300 s)}" in (
        text
    )
    assert "expected={max_invalid_fraction=0.25 (fraction, 25.0%)}" in text
    assert "invalid_fraction=0 (fraction, 0.0%)" in text
    assert "region_area=1.23" in text and " m²" in text
    assert "measured=2 features" in text


def test_with_units_areas_in_projected_units_and_future_ages() -> None:
    measured = {"fraction": 0.5, "covered_area": 2.0, "region_area": 4.0, "unit": "CRS units²"}
    assert with_units("coverage", measured) == (
        "{fraction=0.5 (fraction, 50.0%), covered_area=2 CRS units², region_area=4 CRS units²}"
    )
    assert with_units("freshness", -90.0) == "90 s in the future"
    assert with_units("extent", {"tolerance": 0.5}) == "{tolerance=0.5 CRS units}"
