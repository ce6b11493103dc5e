"""Diagnoses of a broken extent (core.diagnose, core.sample): a batch larger than the
sample is diagnosed from an evenly spaced sample that names itself, with the diagnosis of
the full set in a clear case; chunked, the sample is the same features as whole."""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
import shapely
from pyproj import Transformer

from tests.catalogue import NOW, active, batch_of, clause, contract_of
from tests.core.test_chunked import split
from worker.core import chunk_sample
from worker.core.chunks import ChunkedBatch, evaluate_chunked
from worker.core.clauses import diagnose_readings, extent
from worker.core.clauses.diagnose import SWAPPED_OR_REGION, diagnoses_of
from worker.core.clauses.diagnose_readings import diagnose_tally
from worker.core.clauses.sample import sample_rows, sample_stride, take_features
from worker.core.evaluate import evaluate
from worker.core.facts.batch import BatchFacts
from worker.core.model import Batch
from worker.core.spatial import resolve_crs

FRANCE = [-5.0, 42.0, 8.0, 51.0]  # lon/lat box


def _lonlat_boxes(n: int) -> list[shapely.Geometry]:
    """``n`` small boxes spread inside :data:`FRANCE` (lon/lat), seeded."""
    rng = np.random.default_rng(27)
    x = rng.uniform(-4.0, 7.0, n)
    y = rng.uniform(43.0, 50.0, n)
    return list(shapely.box(x, y, x + 0.01, y + 0.01))


def _swapped_batch(n: int) -> Batch:
    """``n`` features written latitude first in a batch declaring east_north."""
    geoms = [shapely.transform(g, lambda c: c[:, ::-1]) for g in _lonlat_boxes(n)]
    return batch_of(geoms, attributes=pa.table({"code": [f"c{i}" for i in range(n)]}))


def test_sample_rows_of_the_chunks_are_the_sample_of_the_whole() -> None:
    total, size = 103, 10
    stride = sample_stride(total, size)
    assert stride == 11
    whole = sample_rows(0, total, total, size)
    assert whole.tolist() == list(range(0, 103, 11))
    assert len(whole) <= size
    for rows in (1, 7, 11, 50):
        parts = [
            start + sample_rows(start, min(rows, total - start), total, size)
            for start in range(0, total, rows)
        ]
        assert np.concatenate(parts).tolist() == whole.tolist()


def test_a_batch_no_larger_than_the_sample_is_read_whole() -> None:
    assert sample_stride(10, 10) == 1
    assert sample_rows(0, 10, 10, 10).tolist() == list(range(10))
    assert sample_stride(0, 10) == 1
    with pytest.raises(ValueError, match="at least one feature"):
        sample_stride(10, 0)


def test_take_features_keeps_rows_errors_and_ids() -> None:
    batch = dataclasses.replace(
        batch_of([shapely.Point(i, i) for i in range(6)]),
        geometry_errors={3: "bad ring", 4: "worse"},
        feature_ids=tuple(f"f{i}" for i in range(6)),
        coordinate_bounds=(0.0, 0.0, 5.0, 5.0),
    )
    part = take_features(batch, np.array([1, 3, 5]))
    assert [shapely.from_wkb(w).x for w in part.geometries_wkb] == [1.0, 3.0, 5.0]
    assert part.attributes.column("id").to_pylist() == [1, 3, 5]
    assert part.geometry_errors == {1: "bad ring"}
    assert part.feature_ids == ("f1", "f3", "f5")
    assert part.coordinate_bounds is None
    assert part.declared_crs == batch.declared_crs


def test_swapped_axes_diagnosed_from_a_sample_name_it() -> None:
    batch = _swapped_batch(50)
    facts = BatchFacts(batch)
    region, crs = shapely.box(*FRANCE), resolve_crs("EPSG:4326")
    full = diagnose_tally(facts, region, crs)
    assert (full["count"], full["of"], full["swapped"]) == (50, 50, 50)
    sampled = diagnose_tally(facts, region, crs, sample_size=7)
    # stride ceil(50 / 7) = 8: features 0, 8, ..., 48
    assert (sampled["count"], sampled["of"], sampled["swapped"]) == (7, 50, 7)
    assert diagnoses_of(full, facts, region, crs, "EPSG:4326", 1.0) == [SWAPPED_OR_REGION]
    assert diagnoses_of(sampled, facts, region, crs, "EPSG:4326", 1.0) == [
        f"{SWAPPED_OR_REGION} (from an evenly spaced sample of 7 of 50 features)"
    ]


def test_evaluate_diagnoses_a_sample_of_a_larger_batch(monkeypatch: pytest.MonkeyPatch) -> None:
    batch = _swapped_batch(40)
    c = contract_of(clause("ext", "extent", region=FRANCE))
    whole = evaluate(batch, [active(c)], now=NOW)
    assert whole.diagnoses == (SWAPPED_OR_REGION,)
    monkeypatch.setattr(diagnose_readings, "DIAGNOSIS_SAMPLE", 5)
    sampled = evaluate(batch, [active(c)], now=NOW)
    assert sampled.diagnoses == (
        f"{SWAPPED_OR_REGION} (from an evenly spaced sample of 5 of 40 features)",
    )
    # the rest of the decision is measured on every feature, as before
    assert sampled.decision == whole.decision == "quarantined"
    result, before = sampled.verdicts[0].clauses[0], whole.verdicts[0].clauses[0]
    assert result.measured == before.measured == result.measured | {"outside": 40}
    assert result.offenders == before.offenders


def test_a_candidate_crs_from_a_sample_equals_the_full_diagnosis(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Web Mercator metres declared as degrees: every feature fits once reprojected."""
    to_3857 = Transformer.from_crs("EPSG:4326", "EPSG:3857", always_xy=True)

    def metres(c: np.ndarray) -> np.ndarray:
        return np.column_stack(to_3857.transform(c[:, 0], c[:, 1]))

    geoms = [shapely.transform(g, metres) for g in _lonlat_boxes(30)]
    batch = batch_of(geoms, crs="EPSG:4326")
    c = contract_of(clause("ext", "extent", region=FRANCE))
    full = evaluate(batch, [active(c)], now=NOW).diagnoses
    assert len(full) == 1 and full[0].startswith("coordinates look like EPSG:3857")
    monkeypatch.setattr(diagnose_readings, "DIAGNOSIS_SAMPLE", 4)
    sampled = evaluate(batch, [active(c)], now=NOW).diagnoses
    assert sampled == (f"{full[0]} (from an evenly spaced sample of 4 of 30 features)",)


@pytest.mark.parametrize("rows", [1, 6, 13, 100])
def test_chunked_diagnosis_of_a_sample_equals_whole(
    rows: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every feature swapped but those at 3, 10, ..., 59 (51 of 60, short of 0.9); the
    sample (stride 7: 0, 7, ..., 56) holds only swapped ones: chunked or whole, the same
    features are read, so the decision (diagnoses included) is equal."""
    swapped = _swapped_batch(60).geometries_wkb
    right = batch_of(_lonlat_boxes(60)).geometries_wkb
    wkb = [r if i % 7 == 3 else s for i, (s, r) in enumerate(zip(swapped, right, strict=True))]
    batch = batch_of(wkb)
    c = contract_of(clause("ext", "extent", region=FRANCE, min_fraction_inside=0.9))
    assert evaluate(batch, [active(c)], now=NOW).diagnoses == ()  # 51 / 60 swapped
    monkeypatch.setattr(diagnose_readings, "DIAGNOSIS_SAMPLE", 9)
    whole = evaluate(batch, [active(c)], now=NOW)
    assert whole.diagnoses == (
        f"{SWAPPED_OR_REGION} (from an evenly spaced sample of 9 of 60 features)",
    )
    assert evaluate_chunked(split(batch, rows), [active(c)], now=NOW) == whole


def _counted(source: ChunkedBatch, rows: int | None) -> tuple[ChunkedBatch, list[int]]:
    """``source`` with ``rows`` (the count known before reading, or None) and the
    features every pass over its chunks read, one entry per pass."""
    passes: list[int] = []
    chunks = source.chunks

    def counting() -> Iterator[Batch]:
        passes.append(0)
        for chunk in chunks():
            passes[-1] += len(chunk.geometries_wkb)
            yield chunk

    return dataclasses.replace(source, chunks=counting, rows=rows), passes


@pytest.mark.parametrize("rows", [1, 6, 13, 100])
def test_a_sample_kept_by_the_first_pass_equals_a_second_read(
    rows: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The feature count known before reading (a file's footer): the first pass keeps the
    sampled rows of each chunk and the diagnosis reads them, not the batch again; the
    decision is the whole batch's, the sample and its diagnosis included."""
    swapped = _swapped_batch(60).geometries_wkb
    right = batch_of(_lonlat_boxes(60)).geometries_wkb
    wkb = [r if i % 7 == 3 else s for i, (s, r) in enumerate(zip(swapped, right, strict=True))]
    table = pa.table({"code": [f"c{i}" for i in range(60)]})
    batch = batch_of(wkb, attributes=table)
    c = contract_of(clause("ext", "extent", region=FRANCE, min_fraction_inside=0.9))
    monkeypatch.setattr(diagnose_readings, "DIAGNOSIS_SAMPLE", 9)
    whole = evaluate(batch, [active(c)], now=NOW)
    assert whole.diagnoses == (
        f"{SWAPPED_OR_REGION} (from an evenly spaced sample of 9 of 60 features)",
    )
    kept, passes = _counted(split(batch, rows), 60)
    assert evaluate_chunked(kept, [active(c)], now=NOW) == whole
    assert passes == [60]  # one pass: the diagnosis read the kept sample
    again, passes = _counted(split(batch, rows), None)
    assert evaluate_chunked(again, [active(c)], now=NOW) == whole
    assert passes == [60, 60]  # the count unknown before reading: the batch read again


@pytest.mark.parametrize("limit", [2 * 1024 * 1024, 0], ids=["caller", "pool"])
def test_a_small_kept_sample_is_diagnosed_on_the_callers_thread(
    limit: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Kept rows of at most CALLER_SAMPLE_BYTES (9 points here) are diagnosed at once on
    the caller's thread, not chunk by chunk on the pool's, whose threads would each build
    their own pyproj transformers first; larger ones (the limit at 0) on the pool. The
    decision is the whole batch's either way, one row kept of each of the 9 chunks."""
    monkeypatch.setattr(diagnose_readings, "DIAGNOSIS_SAMPLE", 9)
    monkeypatch.setattr(chunk_sample, "CALLER_SAMPLE_BYTES", limit)
    lonlat = [g.centroid for g in _lonlat_boxes(60)]
    batch = batch_of([shapely.Point(p.y, p.x) for p in lonlat])  # latitude first
    c = contract_of(clause("ext", "extent", region=FRANCE, min_fraction_inside=0.9))
    whole = evaluate(batch, [active(c)], now=NOW)
    assert whole.diagnoses == (
        f"{SWAPPED_OR_REGION} (from an evenly spaced sample of 9 of 60 features)",
    )
    threads: list[threading.Thread] = []
    measured = extent.sampled_tally

    def recording(facts: BatchFacts, *args: Any, **kwargs: Any) -> Any:
        if facts.count:  # not the tally of no features the merge starts from
            threads.append(threading.current_thread())
        return measured(facts, *args, **kwargs)

    monkeypatch.setattr(extent, "sampled_tally", recording)
    kept, passes = _counted(split(batch, 7), 60)
    with ThreadPoolExecutor(2) as pool:
        assert evaluate_chunked(kept, [active(c)], now=NOW, executor=pool, in_flight=2) == whole
    assert passes == [60]  # the kept rows were diagnosed, the batch not read again
    caller = threading.current_thread()
    # few: the 9 chunks' kept rows measured as one on the caller's thread; else one by one
    assert threads == [caller] if limit else len(threads) == 9 and caller not in threads


def test_a_sample_too_large_to_keep_is_read_again(monkeypatch: pytest.MonkeyPatch) -> None:
    """Kept rows beyond KEEP_SAMPLE_BYTES are dropped and the batch is read again; a
    footer count that the pass contradicts (a file changed) reads it again too."""
    batch = _swapped_batch(40)
    c = contract_of(clause("ext", "extent", region=FRANCE))
    whole = evaluate(batch, [active(c)], now=NOW)
    assert whole.diagnoses == (SWAPPED_OR_REGION,)
    monkeypatch.setattr(chunk_sample, "KEEP_SAMPLE_BYTES", 1_000)  # 93 bytes of WKB a feature
    large, passes = _counted(split(batch, 4), 40)
    assert evaluate_chunked(large, [active(c)], now=NOW) == whole
    assert passes == [40, 40]
    monkeypatch.setattr(chunk_sample, "KEEP_SAMPLE_BYTES", 64 * 1024 * 1024)
    wrong, passes = _counted(split(batch, 4), 41)
    assert evaluate_chunked(wrong, [active(c)], now=NOW) == whole
    assert passes == [40, 40]


def test_kept_rows_of_several_chunks_joined_are_their_rows() -> None:
    """Kept.joined: the kept parts one after the other (geometries, attribute rows, reader
    errors re-indexed, bbox coverings, ids), the first part's batch index and the features
    of all their chunks; parts whose tables differ in schema stay apart."""
    wkb = [shapely.Point(i, i).wkb for i in range(5)]
    batch = dataclasses.replace(
        batch_of(wkb, attributes=pa.table({"code": ["a", "b", "c", "d", "e"]})),
        geometry_errors={1: "bad one", 4: "bad four"},
        covering_bbox=tuple((float(i), float(i), float(i), float(i)) for i in range(5)),
        feature_ids=("f0", "f1", "f2", "f3", "f4"),
    )
    first, second = take_features(batch, np.arange(2)), take_features(batch, np.arange(2, 5))
    kept = chunk_sample.Kept()
    kept.add((first, 0, 10))
    kept.add((second, 10, 12))
    assert kept.joined() == [(take_features(batch, np.arange(5)), 0, 22)]
    odd = dataclasses.replace(second, attributes=pa.table({"code": [1, 2, 3]}))
    apart = chunk_sample.Kept()
    apart.add((first, 0, 10))
    apart.add((odd, 10, 12))
    assert apart.joined() == apart.items and len(apart.items or []) == 2
    whole = chunk_sample.Kept()  # a whole chunk (no count of the chunk it came from)
    whole.add((first, 0, None))
    whole.add((second, 2, 3))
    assert whole.joined() == whole.items and len(whole.items or []) == 2
