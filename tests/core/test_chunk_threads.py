"""Chunks measured on a pool of threads (worker.core.chunks, ``executor``): merged in batch
order, the decision is the one of one thread, value for value (decisions, measured values,
offenders, diagnoses), on every shipped batch file, the every-kind catalogue batch and
generated batches; at most ``in_flight`` chunks are taken and not yet merged."""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
import shapely
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.catalogue import (
    ADMIN_BOUNDARIES,
    BOWTIE,
    DATA_DIR,
    EMPTY_POLYGON,
    NAN_VERTEX_WKB,
    NOW,
    PARIS,
    UNPARSEABLE_WKB,
    VALID_POLYGON,
    active,
    batch_of,
    clause,
    contract_of,
    read_geoparquet,
)
from tests.core.test_chunked import EVERYTHING, split
from tests.core.test_kinds import BATCH, VERSIONS
from worker.core.chunks import ChunkedBatch, evaluate_chunked, in_order
from worker.core.clauses import CLAUSE_KINDS, base, diagnose_readings
from worker.core.clauses.tally import Union
from worker.core.evaluate import evaluate
from worker.core.model import ActiveVersion, Decision
from worker.core.offenders import Offender
from worker.io.payloads import read_batch_file_chunked

REPO = Path(__file__).resolve().parents[2]
SHIPPED = sorted(DATA_DIR.glob("*.parquet")) + sorted(
    (REPO / "tests" / "data" / "geoparquet").glob("*.parquet")
)
POOL = ThreadPoolExecutor(max_workers=3, thread_name_prefix="test-eval")


def _both(source: ChunkedBatch, versions: list[ActiveVersion], threads: int) -> Decision:
    """The decision on ``source`` with ``threads`` threads, asserted equal to one thread's."""
    one = evaluate_chunked(source, versions, now=NOW)
    many = evaluate_chunked(source, versions, now=NOW, executor=POOL, in_flight=threads)
    assert many == one
    return one


def test_the_catalogue_contracts_hold_every_kind() -> None:
    kinds = {c.kind for v in VERSIONS for c in v.contract.clauses}
    assert kinds == set(CLAUSE_KINDS)


@pytest.mark.parametrize("rows", [1, 7, 25])
@pytest.mark.parametrize("threads", [2, 3])
def test_every_kind_on_threads_equals_one_thread(rows: int, threads: int) -> None:
    decision = _both(split(BATCH, rows), VERSIONS, threads)
    broke = {r.kind for v in decision.verdicts for r in v.clauses if r.broke}
    # real breaks, offenders and diagnoses are compared, not a batch that passes
    assert {"extent", "validity", "geometry_type", "feature_count"} <= broke
    assert any(r.offenders for v in decision.verdicts for r in v.clauses)


@pytest.mark.parametrize("known", [False, True], ids=["read-again", "kept"])
@pytest.mark.parametrize("rows", [1, 13])
def test_a_diagnosed_extent_on_threads_equals_one_thread(
    rows: int, known: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The second pass (the extent's diagnosis on the evenly spaced sample) on threads:
    over the batch read again, or over the rows the first pass kept (the feature count
    known before reading); a sample of 50 of the 177 features, so rows are chosen."""
    monkeypatch.setattr(diagnose_readings, "DIAGNOSIS_SAMPLE", 50)
    _, table, wkb = read_geoparquet(ADMIN_BOUNDARIES)
    batch = dataclasses.replace(batch_of(wkb, attributes=table), axis_order="north_east")
    c = contract_of(
        clause("ext", "extent", region=[-10.0, 35.0, 40.0, 70.0], min_fraction_inside=0.15),
        clause("dom", "domain", column="continent", values=["Europe"]),
    )
    source = dataclasses.replace(split(batch, rows), rows=len(wkb) if known else None)
    decision = _both(source, [active(c)], 2)
    assert decision.diagnoses[0].startswith("axis order looks swapped")
    assert decision.diagnoses[0].endswith(
        f"(from an evenly spaced sample of 45 of {len(wkb)} features)"
    )


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.name)
def test_every_shipped_batch_file_on_threads_equals_one_thread(path: Path) -> None:
    loaded = read_batch_file_chunked(path, layer="parcels", chunk_rows=2)
    if not isinstance(loaded, ChunkedBatch):  # read whole: one chunk
        loaded = split(loaded, 2)
    versions = [*VERSIONS, active(EVERYTHING, mode="observing")]
    decision = _both(loaded, versions, 2)
    assert len(decision.verdicts) == len(versions)


_GEOMS = st.sampled_from(
    [VALID_POLYGON, BOWTIE, None, UNPARSEABLE_WKB, EMPTY_POLYGON, NAN_VERTEX_WKB, PARIS]
) | st.builds(
    shapely.box,
    st.floats(-20, 120, allow_nan=False),
    st.floats(-20, 60, allow_nan=False),
    st.floats(121, 130, allow_nan=False),
    st.floats(61, 70, allow_nan=False),
)


@settings(max_examples=40, deadline=None)
@given(
    geoms=st.lists(_GEOMS, min_size=0, max_size=40),
    codes=st.data(),
    rows=st.integers(1, 9),
    threads=st.integers(2, 3),
)
def test_generated_batches_on_threads_equal_one_thread(
    geoms: list[Any], codes: st.DataObject, rows: int, threads: int
) -> None:
    values = codes.draw(
        st.lists(st.sampled_from(["a", "b", "z", None]), min_size=len(geoms), max_size=len(geoms))
    )
    table = pa.table(
        {"code": pa.array(values, pa.string()), "fid": [f"f{i}" for i in range(len(geoms))]}
    )
    batch = dataclasses.replace(batch_of(geoms, attributes=table), id_column="fid")
    _both(split(batch, rows), [active(EVERYTHING), *VERSIONS], threads)


def test_subnormal_coordinates_merge_without_a_floating_point_warning() -> None:
    # found by the generated test above: GEOS's overlay of boxes with subnormal corners
    # sets the divide-by-zero flag, which shapely raised as a RuntimeWarning in the
    # coverage merge of two chunks' unions (an error under the suite's warnings-as-errors)
    a, b = shapely.box(1e-313, 0, 121, 61), shapely.box(0, 1e-313, 122, 62)
    c = shapely.box(5e-324, 5e-324, 125, 65)
    merged = Union(shapely.union_all([a, b])) | Union(c)
    assert merged.geom is not None
    assert merged.geom.area == shapely.union_all([a, b, c]).area == 125 * 65


@pytest.mark.parametrize("rows", [7, 25])
def test_offenders_past_the_named_ones_are_not_computed_and_the_decision_is_unchanged(
    rows: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    # 600 features, most of them offending four clauses: the first 100 offenders of each
    # are named after a few chunks; later chunks count theirs and name none (issue 27)
    cycle = [BOWTIE, PARIS, VALID_POLYGON, shapely.box(100.0, 0.0, 101.0, 1.0), BOWTIE]
    geoms = [cycle[i % len(cycle)] for i in range(600)]
    table = pa.table({"code": ["z" if i % 3 else "a" for i in range(600)],
                      "fid": [f"f{i}" for i in range(600)]})  # fmt: skip
    batch = dataclasses.replace(batch_of(geoms, attributes=table), id_column="fid")
    versions = [active(EVERYTHING), active(EVERYTHING, mode="observing")]
    made: list[int] = []

    class Counted(base.Offender):
        def __init__(self, *args: Any) -> None:
            made.append(1)
            super().__init__(*args)

    monkeypatch.setattr(base, "Offender", Counted)
    counted = evaluate_chunked(split(batch, rows), versions, now=NOW)
    monkeypatch.setattr(base, "Offender", Offender)
    one = evaluate_chunked(split(batch, rows), versions, now=NOW)
    named = [r.offenders for v in counted.verdicts for r in v.clauses if r.offenders]
    assert {len(o.features) for o in named} == {100}
    assert {"ext", "types", "valid", "dom"} <= {
        r.name for r in one.verdicts[0].clauses if r.offenders and r.offenders.total > 100
    }
    # one thread: each chunk names exactly what the merge keeps of it
    assert len(made) == sum(len(o.features) for o in named)
    assert _both(split(batch, rows), versions, 3) == one
    assert evaluate(batch, versions, now=NOW) == one


def test_in_order_keeps_the_order_and_at_most_in_flight_items() -> None:
    taken: list[int] = []
    done: list[int] = []
    lock = threading.Lock()
    most = [0]

    def items() -> Iterator[int]:
        for i in range(30):
            with lock:
                taken.append(i)
                most[0] = max(most[0], len(taken) - len(done))
            yield i

    def slow(i: int) -> int:
        time.sleep(0.002 * (i % 3))  # later items may finish first
        return i * i

    for i, got in enumerate(in_order(slow, items(), POOL, 3)):
        assert got == i * i
        with lock:
            done.append(i)
    assert taken == list(range(30)) and most[0] == 3


def test_in_order_waits_for_running_work_when_the_items_raise() -> None:
    running = threading.Event()
    finished: list[int] = []

    def items() -> Iterator[int]:
        yield 1
        running.wait(5)
        raise ValueError("row group 2 cannot be decoded")

    def work(i: int) -> int:
        running.set()
        time.sleep(0.05)
        finished.append(i)
        return i

    with pytest.raises(ValueError, match="row group 2"):
        list(in_order(work, items(), POOL, 2))
    assert finished == [1]  # waited for, not left running past the error
