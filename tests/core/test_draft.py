"""The pure core of `contract init`: longitude covers, mergeable profiles, YAML scalars."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import shapely
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from worker.core.contracts.draft_yaml import scalar
from worker.core.contracts.lon_cover import lon_cover_of
from worker.core.contracts.profile import profile_batch
from worker.io.payloads import read_batch_file, read_batch_file_chunked

ROOT = Path(__file__).resolve().parents[2]


def _cover(*boxes: tuple[float, float]) -> tuple[float, float] | None:
    bounds = np.array([[w, 0.0, e, 1.0] for w, e in boxes])
    return lon_cover_of(bounds).cover()


def test_cover_of_data_away_from_the_antimeridian_is_their_span() -> None:
    assert _cover((10.5, 12.25), (-3.0, 1.0)) == (-3.0, 12.25)


def test_cover_crosses_the_antimeridian_when_that_is_shorter() -> None:
    # Fiji: 177..180 and -180..-179.2; a gap of 356 degrees the other way
    assert _cover((177.0, 180.0), (-180.0, -179.2)) == (177.0, -179.2)


def test_a_wide_polygon_with_few_vertices_occupies_every_degree_it_spans() -> None:
    # a box from -170 to 170 has vertices at +-170 only: the cover is its span, not the
    # 20 degrees across the antimeridian
    assert _cover((-170.0, 170.0)) == (-170.0, 170.0)


def test_cover_of_the_whole_world_and_of_nothing() -> None:
    assert _cover((-180.0, 180.0)) == (-180.0, 180.0)
    assert lon_cover_of(np.empty((0, 4))).cover() is None


@given(st.lists(st.floats(-180, 180, allow_nan=False), min_size=1, max_size=30))
def test_cover_holds_every_point_and_is_never_wider_than_the_plain_span(lons: list[float]) -> None:
    west, east = _cover(*[(x, x) for x in lons])  # type: ignore[misc]
    width = (east - west) % 360.0 if west > east else east - west
    assert width <= max(lons) - min(lons) + 1e-9
    for x in lons:
        inside = west <= x <= east if west <= east else (x >= west or x <= east)
        assert inside


@pytest.mark.parametrize(
    "name", ["worker/data/admin_boundaries.parquet", "worker/data/nyc_boroughs.parquet"]
)
def test_profile_chunk_by_chunk_equals_the_whole_sample(name: str) -> None:
    whole = profile_batch(read_batch_file(ROOT / name, layer="t"), max_codes=50)
    seen: list[int] = []
    chunked = profile_batch(
        read_batch_file_chunked(ROOT / name, layer="t", chunk_rows=2),
        max_codes=50,
        on_chunk=seen.append,
    )
    assert len(seen) > 1 and seen[-1] == whole.features  # several chunks, progress counted
    assert chunked.counts == whole.counts and chunked.types == whole.types
    assert chunked.bounds == whole.bounds and chunked.invalid == whole.invalid
    assert chunked.columns == whole.columns
    assert chunked.lon is not None or whole.lon is None
    if whole.lon is not None and chunked.lon is not None:
        assert chunked.lon.cover() == whole.lon.cover()


@pytest.mark.parametrize("text", ["NO", "010", "1e3", "on", "~", "", "a: b", "x\u2028y", "\x07"])
def test_every_string_scalar_reads_back_as_the_same_string(text: str) -> None:
    assert yaml.safe_load(f"k: {scalar(text)}") == {"k": text}


def test_numbers_are_never_written_in_exponent_form() -> None:
    assert scalar(1e-06) == "0.000001" and scalar(1e20) == "100000000000000000000.0"
    assert yaml.safe_load(scalar(1e-06)) == 1e-06
    assert scalar(True) == "true" and scalar(7) == "7"


def test_a_multipolygon_across_the_antimeridian_is_profiled_by_its_parts() -> None:
    fiji = shapely.MultiPolygon(
        [shapely.box(177, -19, 180, -16), shapely.box(-180, -18, -179, -16)]
    )
    bounds = np.asarray(shapely.bounds(shapely.get_parts(np.array([fiji]))))
    assert lon_cover_of(bounds).cover() == (177.0, -179.0)


@settings(max_examples=300)
@given(st.text(max_size=30))
def test_any_text_written_as_a_code_is_read_back_by_the_contract_loader(text: str) -> None:
    from worker.core.contracts.yaml_doc import load_document

    doc = load_document(f"values:\n  {scalar(text)}: {scalar(text)}\n", "t")
    assert doc == {"values": {text: text}}


@given(st.floats(allow_nan=False, allow_infinity=False))
def test_any_finite_number_reads_back_as_itself_in_yaml_1_1(value: float) -> None:
    text = scalar(value)
    assert "e" not in text.lower() and yaml.safe_load(text) == value
