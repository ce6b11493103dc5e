"""Text rendering of decisions: every measured figure with its unit (worker.io.reports.text)."""

from __future__ import annotations

from datetime import timedelta

import pyarrow as pa

from tests.catalogue import NOW, PARIS, VALID_POLYGON, active, batch_of, clause, contract_of
from worker.core.evaluate import evaluate
from worker.io.reports.text import render_decision, with_units


def test_text_output_gives_units_of_seconds_fractions_and_areas() -> None:
    contract = contract_of(
        clause("fresh", "freshness", max_age="PT1H"),
        clause("valid", "validity", max_invalid_fraction=0.25),
        clause("cover", "coverage", region=[0, 0, 1, 1], min_fraction=0.5, crs="EPSG:4326"),
        clause("size", "feature_count", min=1),
    )
    batch = batch_of([VALID_POLYGON, PARIS], data_time=NOW - timedelta(hours=2))
    text = render_decision(evaluate(batch, [active(contract)], now=NOW))
    assert (
        "BREAK fresh  data time 2024-06-01T10:00:00+00:00 is 2.0 h old (7200 s; expected age <="
        in (text)
    )
    assert "pass  valid  0 of 2 geometries invalid (0.0%, expected <= 25.0%)" in text
    assert "m²,\n               EPSG:4326; expected >= 50.0%)" in text
    assert "pass  size   2 features (expected 1 .. unbounded)" in text
    assert text.endswith("decision: quarantined (enforcing v1.0 fresh)")


def test_text_wraps_long_messages_without_cutting_them() -> None:
    codes = {f"code-{i:03d}": "meaning" for i in range(40)}
    contract = contract_of(clause("use", "domain", column="code", values=codes))
    table = pa.table({"code": ["nope " * 30]})
    text = render_decision(
        evaluate(batch_of([VALID_POLYGON], attributes=table), [active(contract)], now=NOW)
    )
    assert all(len(line) <= 100 for line in text.splitlines())
    assert "'code-009', ... (40 codes)" in text
    assert "1 offending feature" in text and "#0: 'nope nope" in text


def test_with_units_areas_in_projected_units_and_future_ages() -> None:
    measured = {"fraction": 0.5, "covered_area": 2.0, "region_area": 4.0, "unit": "CRS units²"}
    assert with_units("coverage", measured) == (
        "{fraction=0.5 (fraction, 50.0%), covered_area=2 CRS units², region_area=4 CRS units²}"
    )
    assert with_units("freshness", -90.0) == "90 s in the future"
    assert with_units("extent", {"tolerance": 0.5}) == "{tolerance=0.5 CRS units}"


def test_brief_counts_one_null_in_the_singular() -> None:
    from worker.io.reports.text import brief

    assert brief("domain", {"null_count": 1}) == "1 null"
    assert brief("domain", {"null_count": 3}) == "3 nulls"
