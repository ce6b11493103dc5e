"""A fraction that breaks its bound never reads as the bound (a fresh-user finding)."""

from __future__ import annotations

import shapely
from hypothesis import given
from hypothesis import strategies as st

from tests.catalogue import BOWTIE, NOW, active, batch_of, clause, contract_of
from worker.core.clauses.base import percents
from worker.core.evaluate import evaluate


def test_one_decimal_while_it_tells_value_and_bound_apart() -> None:
    assert percents(0.25, 0.5) == ("25.0%", "50.0%")
    assert percents(1.0, 1.0) == ("100.0%", "100.0%")
    assert percents(0.0, 0.0) == ("0.0%", "0.0%")


def test_more_decimals_when_the_value_would_read_as_its_bound() -> None:
    assert percents(1 / 3000, 0.0) == ("0.03%", "0.00%")
    assert percents(299_999 / 300_000, 1.0) == ("99.9997%", "100.0000%")
    assert percents(0.0504, 0.05) == ("5.04%", "5.00%")


@given(st.floats(0, 1), st.floats(0, 1))
def test_different_fractions_read_different_down_to_a_millionth_of_a_percent(
    value: float, bound: float
) -> None:
    shown, limit = percents(value, bound)
    if abs(value - bound) >= 1e-8:
        assert shown != limit
    if value == bound:
        assert shown == limit


def test_validity_one_invalid_feature_in_3000_reads_above_its_bound_of_zero() -> None:
    geoms = [shapely.box(i, 0, i + 1, 1) for i in range(2999)] + [BOWTIE]
    c = contract_of(clause("valid", "validity", max_invalid_fraction=0.0))
    (reason,) = evaluate(batch_of(geoms, crs=None), [active(c)], now=NOW).reasons
    assert reason.message.startswith("1 of 3000 geometries invalid (0.03%, expected <= 0.00%)")


def test_extent_one_feature_outside_among_300000_reads_below_its_bound() -> None:
    geoms = [shapely.Point(0.5, 0.5)] * 299_999 + [shapely.Point(5.0, 5.0)]
    c = contract_of(clause("extent", "extent", region=[0, 0, 1, 1]))
    (reason,) = evaluate(batch_of(geoms), [active(c)], now=NOW).reasons
    assert reason.message.startswith(
        "99.9997% of 300000 features inside the extent in EPSG:4326, 1 outside "
        "(expected >= 100.0000%)"
    )
