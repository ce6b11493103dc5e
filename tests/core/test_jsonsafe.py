"""JSON text without NaN/Infinity tokens (worker.core._util.jsonsafe)."""

from __future__ import annotations

import json
from collections import OrderedDict, namedtuple
from datetime import datetime, timezone
from types import MappingProxyType

import numpy as np
import pytest

from worker.core._util.jsonsafe import dumps_json, finite_clipped, finite_json
from worker.core._util.text import clip_strings


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


Pair = namedtuple("Pair", "a b")


class Text(str):
    """A str subclass (numpy's str_ is one)."""


@pytest.mark.parametrize(
    "value",
    [
        "x" * 30,
        {"k" * 30: ["v" * 30, 1.5, float("nan"), (float("inf"), "w" * 30)], "n": None},
        OrderedDict(a="y" * 30, b=[{"c": -float("inf")}]),
        MappingProxyType({"m": "z" * 30, "f": float("nan")}),  # a Mapping, not a dict
        [Pair("p" * 30, float("inf")), np.array([1.0, np.nan]), np.str_("q" * 30)],
        (Text("t" * 30), np.float64("inf"), np.int64(3), True, 7, None),
        {("tuple", "key" * 10): 1},
        [[], {}, (), ""],
    ],
)
def test_finite_clipped_is_finite_json_of_clip_strings(value: object) -> None:
    """One walk gives what the two did, types included (a str subclass, a named tuple,
    numpy values and other mappings are converted or clipped exactly as before)."""
    want = finite_json(clip_strings(value, 20))
    got = finite_clipped(value, 20)
    assert got == want or (json.dumps(got, sort_keys=True) == json.dumps(want, sort_keys=True))
    assert repr(got) == repr(want)
