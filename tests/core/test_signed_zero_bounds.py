"""A zero bound is ``0.0`` in every path (stop 43): features at x = -0.0 and x = 0.0 gave
an extent whose echoed bounds were ``-0.0`` read whole (numpy's reduction keeps the first
zero it meets) and ``0.0`` read in chunks (``np.fmin`` keeps the second), so a batch's
record depended on how it was read. The rule now: :class:`Bounds` never holds ``-0.0``;
every constructor is checked, and every read path gives the same decision text."""

from __future__ import annotations

import math
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta

import numpy as np
import pyarrow as pa
import pytest
import shapely

from tests.catalogue import NOW, active, batch_of, clause, contract_of
from tests.core.test_chunked import split
from tests.core.test_diagnose import FRANCE
from worker.core.chunks import evaluate_chunked
from worker.core.clauses.tally import Bounds
from worker.core.evaluate import evaluate
from worker.core.evaluate_group import evaluate_group

_NEG = -0.0


def _canonical(bounds: Bounds) -> bool:
    """No bound of ``bounds`` is a negative zero."""
    return bounds.box is None or all(v != 0.0 or math.copysign(1.0, v) > 0 for v in bounds.box)


_ZERO_BOXES = [
    (_NEG, _NEG, _NEG, _NEG),
    (_NEG, 0.0, 0.0, _NEG),
    (0.0, _NEG, 1.0, 2.0),
]  # each holds (0, 0)


@pytest.mark.parametrize("box", _ZERO_BOXES)
@pytest.mark.parametrize(
    "build",
    [
        lambda b: Bounds.of_box(b),
        lambda b: Bounds.of(np.array([shapely.box(*b)])),
        lambda b: Bounds.of_rows(np.array([b, b])),
        lambda b: Bounds.of_rows(np.array([b, [np.nan] * 4])),
        lambda b: Bounds.of_shown(np.array([b]), np.array([True])),
        lambda b: Bounds.of_shown(np.array([b, b]), np.array([True, False])),
        lambda b: Bounds.of_row(list(b)),
        lambda b: Bounds.of_box(b) | Bounds.of_box((0.0, 0.0, 0.0, 0.0)),
        lambda b: Bounds.of_box((0.0, 0.0, 0.0, 0.0)) | Bounds.of_box(b),
        lambda b: Bounds((b[0], b[1], b[2], b[3])) | Bounds((0.0, 0.0, 0.0, 0.0)),
        lambda b: Bounds((0.0, 0.0, 0.0, 0.0)) | Bounds((b[0], b[1], b[2], b[3])),
    ],
    ids=[
        "of_box",
        "of",
        "of_rows",
        "of_rows_nan",
        "of_shown_one",
        "of_shown_some",
        "of_row",
        "or_left",
        "or_right",
        "or_raw_left",
        "or_raw_right",
    ],
)
def test_every_bounds_constructor_makes_a_zero_bound_positive(build, box) -> None:  # type: ignore[no-untyped-def]
    made = build(box)
    assert made is not None and made.box is not None
    assert _canonical(made), made.box
    assert made.box == box  # the same numbers (-0.0 == 0.0): only the sign of zero changed


#: Points and a box on the meridian, written with x = -0.0 or 0.0, inside FRANCE.
_ZEROS = [shapely.Point(_NEG, 45.0), shapely.Point(0.0, 46.0), shapely.box(_NEG, 44.0, 1.0, 44.5),
          shapely.Point(0.0, 47.0), shapely.Point(_NEG, 48.0)]  # fmt: skip


def _extent(decision) -> tuple[str, str]:  # type: ignore[no-untyped-def]
    (ext,) = [r for r in decision.verdicts[0].clauses if r.name == "ext"]
    return repr(ext.measured), ext.message


@pytest.mark.parametrize("order", [(0, 1, 2, 3, 4), (1, 0, 3, 4, 2), (4, 3, 2, 1, 0)])
@pytest.mark.parametrize("inside", [1.0, 0.5])
def test_a_batch_on_the_meridian_echoes_the_same_bounds_whole_in_chunks_and_grouped(
    order: tuple[int, ...], inside: float
) -> None:
    features = [_ZEROS[i] for i in order]
    if inside < 1.0:  # and one far outside: the extent breaks (its measured bounds too)
        features.append(shapely.Point(120.0, -30.0))
    wkb = [shapely.to_wkb(f) for f in features]
    n = len(wkb)
    batch = batch_of(wkb, attributes=pa.table({"code": [f"c{i}" for i in range(n)]}))
    versions = [active(contract_of(clause("ext", "extent", region=FRANCE,
                                          min_fraction_inside=inside)))]  # fmt: skip
    whole = evaluate(batch, versions, now=NOW)
    measured, message = _extent(whole)
    assert "-0.0" not in measured and "-0 " not in message and "-0," not in message
    assert "0.0" in measured  # the meridian is the west bound
    for rows in (1, 2, 3):
        with ThreadPoolExecutor(2) as pool:
            chunked = evaluate_chunked(split(batch, rows), versions, now=NOW, executor=pool,
                                       in_flight=2)  # fmt: skip
        assert _extent(chunked) == (measured, message), rows
    # one-feature batches evaluated as a group (the worker's small events) and alone
    singles = [
        batch_of([w], attributes=pa.table({"code": ["c"]}), data_time=NOW - timedelta(minutes=5))
        for w in wkb
    ]
    grouped = evaluate_group(singles, versions, now=NOW)
    alone = [evaluate(b, versions, now=NOW) for b in singles]
    assert [repr(d) for d in grouped] == [repr(d) for d in alone]
    for d in grouped:
        assert "-0.0" not in _extent(d)[0]


def test_an_offending_feature_shows_its_own_bounds_signed_zeros_kept() -> None:
    """One feature's bounds are its own coordinates, not an envelope of several, and read
    the same on every path (tests/cli/test_check_polygon_signs.py): they keep the sign."""
    wkb = [shapely.to_wkb(f) for f in _ZEROS]
    batch = batch_of(wkb, attributes=pa.table({"code": [f"c{i}" for i in range(len(wkb))]}))
    east = [0.5, 42.0, 8.0, 51.0]  # the meridian lies west of it: every feature offends
    versions = [active(contract_of(clause("ext", "extent", region=east)))]
    (ext,) = evaluate(batch, versions, now=NOW).verdicts[0].clauses
    assert ext.broke and ext.offenders is not None
    values = [o.value for o in ext.offenders.features]
    assert [math.copysign(1.0, row[0]) for row in values] == [-1.0, 1.0, -1.0, 1.0, -1.0]
    assert values[2] == [0.0, 44.0, 1.0, 44.5]
    assert "-0.0" not in repr(ext.measured)  # the envelope of all five: 0.0
