"""JSON text without NaN/Infinity tokens (worker.core._util.jsonsafe)."""

from __future__ import annotations

import json
from datetime import datetime, timezone

import numpy as np

from worker.core._util.jsonsafe import dumps_json, finite_json


def _strict(text: str) -> object:
    def refuse(token: str) -> float:
        raise AssertionError(f"non-JSON token {token} in {text}")

    return json.loads(text, parse_constant=refuse)


def test_non_finite_numbers_become_strings_everywhere() -> None:
    value = {
        "inf": float("inf"),
        "neg": -float("inf"),
        "nan": float("nan"),
        "nested": [1.5, (np.float64("nan"), np.float32("inf")), {"x": np.array([1.0, np.inf])}],
        "ok": [0, 2.5, True, None, "nan", np.int64(7)],
    }
    assert finite_json(value) == {
        "inf": "inf",
        "neg": "-inf",
        "nan": "nan",
        "nested": [1.5, ["nan", "inf"], {"x": [1.0, "inf"]}],
        "ok": [0, 2.5, True, None, "nan", 7],
    }
    text = dumps_json(value, sort_keys=True)
    assert "NaN" not in text and "Infinity" not in text
    assert _strict(text) == finite_json(value)


def test_default_results_are_made_finite_too() -> None:
    class Odd:
        pass

    when = datetime(2026, 1, 1, tzinfo=timezone.utc)
    text = dumps_json({"t": when, "o": Odd()}, default=lambda v: float("-inf"))
    assert _strict(text) == {"t": "-inf", "o": "-inf"}
    assert _strict(dumps_json({"t": when}, default=str)) == {"t": "2026-01-01 00:00:00+00:00"}
