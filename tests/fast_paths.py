"""The general path of the batch facts, for tests that compare a coordinate fast path with it.

The points and star-polygons paths (:mod:`worker.core.facts.points_mixed`,
:mod:`worker.core.facts.polygons_mixed`) start at a feature count read at call time;
:func:`general_path` raises both out of reach, so the same batch is judged by GEOS alone.
"""

from __future__ import annotations

import numpy as np
import pytest

from worker.core.facts import parse as facts_module
from worker.core.facts import polygons_mixed as polygons_module
from worker.core.facts.batch import BatchFacts

__all__ = ["FACTS", "assert_same_facts", "general_facts", "general_path"]

#: The per-batch facts a fast path must give exactly as the general path does.
FACTS = (
    "missing", "unparseable", "parsed", "bounds", "type_ids", "has_z", "has_m", "type_names",
    "is_empty", "has_nonfinite", "usable", "is_valid", "invalid_count", "invalid_reasons",
    "outside_area_of_use", "lonlat_fits", "edges_problem", "orientation_contradicted",
)  # fmt: skip


def general_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """Turn every coordinate fast path off for the rest of the test (or ``monkeypatch``'s
    context)."""
    monkeypatch.setattr(facts_module, "POINTS_WITHOUT_GEOMETRIES_MIN", 10**9)
    monkeypatch.setattr(polygons_module, "POLYGONS_WITHOUT_GEOMETRIES_MIN", 10**9)


def general_facts(batch: object, names: tuple[str, ...] = FACTS) -> BatchFacts:
    """The facts ``names`` of ``batch`` computed by the general path (then cached)."""
    with pytest.MonkeyPatch.context() as mp:
        general_path(mp)
        facts = BatchFacts(batch)  # type: ignore[arg-type]
        for name in names:
            getattr(facts, name)
    return facts


def assert_same_facts(
    fast: BatchFacts, general: BatchFacts, names: tuple[str, ...] = FACTS
) -> None:
    """Each fact of ``names`` equal in both, floats to the bit: NaN where NaN and the same
    sign of zero (the decision JSON prints -0.0 and 0.0 apart; ``==`` does not tell)."""
    for name in names:
        a, b = getattr(fast, name), getattr(general, name)
        if isinstance(a, np.ndarray):
            assert np.array_equal(a, b, equal_nan=a.dtype.kind == "f"), name
            assert a.dtype.kind != "f" or np.array_equal(np.signbit(a), np.signbit(b)), name
        else:
            assert a == b, name
