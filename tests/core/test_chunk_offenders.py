"""Offenders named once enough (worker.core.chunks, :func:`worker.core.offenders.none_named`):
once the chunks merged so far name 100 offenders of a clause, later chunks count that
clause's offenders without naming them; the decision is still the whole batch's, value for
value (totals, the first 100 offenders with their ids and reasons, diagnoses), on one thread
and on a pool, and equal to the same chunks with every offender named, on batches with
hundreds of invalid polygons, empties, missing, unparseable and non-finite geometries,
points among polygons and codes outside the domain."""

from __future__ import annotations

import dataclasses
from concurrent.futures import ThreadPoolExecutor
from typing import Any
from unittest import mock

import pyarrow as pa
import pytest
import shapely
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.catalogue import (
    BOWTIE,
    EMPTY_POLYGON,
    NAN_VERTEX_WKB,
    NOW,
    UNPARSEABLE_WKB,
    VALID_POLYGON,
    active,
    batch_of,
)
from tests.core.test_chunked import EVERYTHING, split
from tests.core.test_kinds import VERSIONS
from worker.core import chunks
from worker.core.chunks import evaluate_chunked
from worker.core.clauses import base
from worker.core.evaluate import evaluate
from worker.core.model import Batch
from worker.core.offenders import MAX_OFFENDERS, Offender, every_offender

POOL = ThreadPoolExecutor(max_workers=3, thread_name_prefix="test-offenders")

#: Ten features: three bowties, an empty polygon, a point, a missing and an unparseable
#: geometry, a NaN vertex, a polygon far outside the extent and a valid one.
PATTERN: list[Any] = [
    BOWTIE,
    VALID_POLYGON,
    BOWTIE,
    EMPTY_POLYGON,
    shapely.Point(1.0, 1.0),
    None,
    UNPARSEABLE_WKB,
    NAN_VERTEX_WKB,
    shapely.box(100.0, 0.0, 101.0, 1.0),
    BOWTIE,
]


def _batch(repeats: int) -> Batch:
    geoms = PATTERN * repeats
    codes = (["a", "z", "b", None, "y"] * (2 * repeats))[: len(geoms)]
    table = pa.table({"code": codes, "fid": [f"f{i}" for i in range(len(geoms))]})
    return dataclasses.replace(batch_of(geoms, attributes=table), id_column="fid")


def _counting(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts the offenders the clauses build (``base.Offender``)."""
    built = [0]

    def offender(*args: Any) -> Offender:
        built[0] += 1
        return Offender(*args)

    monkeypatch.setattr(base, "Offender", offender)
    return built


@pytest.mark.parametrize("threads", [1, 2, 3])
@pytest.mark.parametrize("rows", [7, 64])
def test_hundreds_of_offenders_in_chunks_equal_the_whole_batch(
    threads: int, rows: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    batch = _batch(60)  # 600 features: 180 bowties, 360 codes outside the domain
    versions = [active(EVERYTHING), active(EVERYTHING, mode="observing"), *VERSIONS]
    whole = evaluate(batch, versions, now=NOW)
    built = _counting(monkeypatch)
    pool = POOL if threads > 1 else None
    chunked = evaluate_chunked(
        split(batch, rows), versions, now=NOW, executor=pool, in_flight=threads
    )
    assert chunked == whole
    results = {r.name: r for r in whole.verdicts[0].clauses}
    valid, dom = results["valid"].offenders, results["dom"].offenders
    assert valid is not None and dom is not None
    assert valid.total == 360 and len(valid.features) == MAX_OFFENDERS  # 6 of every 10
    assert dom.total == 360 and len(dom.features) == MAX_OFFENDERS  # z, y and null
    assert valid.features[0].value.startswith("Self-intersection")
    assert (valid.features[-1].index, valid.features[-1].id) == (166, "f166")
    named = sum(
        r.offenders.total for v in whole.verdicts for r in v.clauses if r.offenders is not None
    )
    # without the short cut every offender of every chunk was built (``named``); now at
    # most the first 100 of each clause, the chunk that reached them and those in flight
    with_offenders = sum(1 for v in whole.verdicts for r in v.clauses if r.offenders is not None)
    assert built[0] <= with_offenders * (MAX_OFFENDERS + rows * (threads + 1))
    if rows == 7:  # 86 chunks: most of them measured after the first 100 were named
        assert built[0] < named // 2


def test_every_offender_names_them_all_in_chunks() -> None:
    batch = _batch(30)
    versions = [active(EVERYTHING)]
    with every_offender():
        whole = evaluate(batch, versions, now=NOW)
        chunked = evaluate_chunked(split(batch, 7), versions, now=NOW)
    assert chunked == whole
    valid = {r.name: r for r in whole.verdicts[0].clauses}["valid"].offenders
    assert valid is not None and len(valid.features) == valid.total == 180


_GEOMS = st.sampled_from(PATTERN) | st.builds(
    shapely.box,
    st.floats(-20, 120, allow_nan=False),
    st.floats(-20, 60, allow_nan=False),
    st.floats(121, 130, allow_nan=False),
    st.floats(61, 70, allow_nan=False),
)


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    geoms=st.lists(_GEOMS, min_size=100, max_size=200),
    data=st.data(),
    rows=st.integers(3, 40),
    threads=st.integers(1, 3),
)
def test_generated_batches_with_many_offenders_equal_the_whole_batch(
    geoms: list[Any], data: st.DataObject, rows: int, threads: int
) -> None:
    values = data.draw(
        st.lists(st.sampled_from(["a", "b", "z", None]), min_size=len(geoms), max_size=len(geoms))
    )
    table = pa.table(
        {"code": pa.array(values, pa.string()), "fid": [f"f{i}" for i in range(len(geoms))]}
    )
    batch = dataclasses.replace(batch_of(geoms, attributes=table), id_column="fid")
    versions = [active(EVERYTHING)]
    # the same chunks with every offender of every chunk named (the short cut off): the
    # whole batch's coverage differs from the chunks' in the last bits of the union's area
    with mock.patch.object(chunks, "names_enough", lambda tally: False):
        reference = evaluate_chunked(split(batch, rows), versions, now=NOW)
    pool = POOL if threads > 1 else None
    chunked = evaluate_chunked(
        split(batch, rows), versions, now=NOW, executor=pool, in_flight=threads
    )
    assert chunked == reference
