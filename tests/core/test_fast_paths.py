"""Identity-keyed caches (worker.core._util.memo) and the fast paths of the evaluation:
each shortcut is checked against the exact computation on real data."""

from __future__ import annotations

import datetime
import struct

import numpy as np
import shapely
from hypothesis import given, settings
from hypothesis import strategies as st
from pyproj import CRS

from worker.cli.scenario import data_file
from worker.core._util.memo import identity_memo
from worker.core.facts.wkb_check import wkb_problem
from worker.core.facts.wkb_header import may_nest
from worker.core.model import Clause
from worker.core.spatial.crs import (
    _coordinates_outside,
    area_of_use,
    outside_area_of_use,
    resolve_crs,
)
from worker.core.spatial.regions import covered_mask
from worker.io.payloads import read_batch_file

WORLD = read_batch_file(data_file("admin_boundaries.parquet"), layer="w", crs="EPSG:4326")
GEOMS = shapely.from_wkb(np.array(WORLD.geometries_wkb, dtype=object))


def test_identity_memo_hits_by_identity_and_misses_for_equal_objects() -> None:
    calls: list[object] = []

    @identity_memo(maxsize=2)
    def label(crs: CRS) -> str:
        calls.append(crs)
        return str(crs.name)

    a = resolve_crs("EPSG:4326")
    twin = CRS.from_user_input("EPSG:4326")  # equal, another object
    assert label(a) == label(a) == "WGS 84"
    assert len(calls) == 1
    assert label(twin) == "WGS 84"  # a miss, never a wrong answer
    assert len(calls) == 2
    label(resolve_crs("EPSG:3857"))  # the third entry clears the full cache
    label(a)
    assert len(calls) == 4


def test_a_per_thread_memo_never_hands_one_threads_value_to_another() -> None:
    """Prepared regions are built per thread: GEOS mutates a prepared geometry's index in
    every predicate (libgeos/geos#825), and a review crashed the process (double free)
    with two routing threads sharing one on shapely 2.1."""
    import threading

    from worker.core.clauses.extent import _extent_region

    @identity_memo(maxsize=4, per_thread=True)
    def region(key: object) -> object:
        return object()

    key = object()
    mine = region(key)
    assert region(key) is mine  # cached within the thread
    seen: list[object] = []
    other = threading.Thread(target=lambda: seen.extend([region(key), region(key)]))
    other.start()
    other.join(5)
    assert seen[0] is seen[1] and seen[0] is not mine
    region.cache_clear()  # type: ignore[attr-defined]
    assert region(key) is not mine
    # the extent clause's prepared region is one of them
    c = Clause("ext", "extent", params={"region": "POLYGON ((0 0, 9 0, 0 9, 0 0))"})
    crs = resolve_crs("EPSG:4326")
    here = _extent_region(c, crs)
    there: list[object] = []
    t = threading.Thread(target=lambda: there.append(_extent_region(c, crs)))
    t.start()
    t.join(5)
    assert there[0] is not here and shapely.equals(there[0], here)


def test_box_region_fast_path_agrees_with_covered_by_on_countries() -> None:
    usable = np.ones(len(GEOMS), dtype=bool)
    for box in ((-180, -90, 180, 90), (-20, -40, 55, 40), (-10, 35, 40, 72)):
        region = shapely.box(*box)
        exact = np.asarray(shapely.covered_by(GEOMS, region), dtype=bool)
        fast = covered_mask(GEOMS, usable, region)
        assert (fast == exact).all()
    # a mitred buffer of a box is still a box; a round one is not (exact GEOS path)
    buffered = shapely.box(-20, -40, 55, 40).buffer(0.5, join_style="mitre")
    rounded = shapely.box(-20, -40, 55, 40).buffer(5.0)
    for region in (buffered, rounded):
        exact = np.asarray(shapely.covered_by(GEOMS, region), dtype=bool)
        assert (covered_mask(GEOMS, usable, region) == exact).all()
    # Africa is covered by the -20..55 x -40..40 box, Russia is not
    names = WORLD.attributes.column("name").to_pylist()
    inside = covered_mask(GEOMS, usable, shapely.box(-20, -40, 55, 40))
    assert inside[names.index("Kenya")] and not inside[names.index("Russia")]


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.floats(-400, 400, allow_nan=False),
            st.floats(-200, 200, allow_nan=False),
            st.floats(0, 50, allow_nan=False),
        ),
        min_size=1,
        max_size=20,
    )
)
def test_geographic_area_of_use_fast_path_equals_the_coordinate_test(
    boxes: list[tuple[float, float, float]],
) -> None:
    geoms = np.array([shapely.box(x, y, x + w, y + w) for x, y, w in boxes], dtype=object)
    crs = resolve_crs("EPSG:4326")
    aou = area_of_use(crs)
    assert aou is not None
    assert (outside_area_of_use(geoms, crs) == _coordinates_outside(geoms, aou, crs)).all()


def test_geographic_area_of_use_on_countries_and_one_moved_beyond() -> None:
    crs = resolve_crs("EPSG:4326")
    moved = GEOMS.copy()
    moved[3] = shapely.affinity.translate(GEOMS[3], xoff=400)
    out = outside_area_of_use(moved, crs)
    assert out.tolist() == [i == 3 for i in range(len(GEOMS))]


def test_only_single_geometries_skip_the_walk() -> None:
    polygon = shapely.to_wkb(shapely.box(0, 0, 1, 1))
    multi = shapely.to_wkb(shapely.MultiPolygon([shapely.box(0, 0, 1, 1)]))
    point_z = shapely.to_wkb(shapely.Point(1, 2, 3), flavor="iso")
    assert not may_nest(polygon) and not may_nest(point_z)
    assert may_nest(multi)
    assert may_nest(b"\x02" + polygon[1:])  # invalid byte order: walked, then refused
    assert wkb_problem(b"\x02" + polygon[1:]) is not None
    # too short for a header: read as zero-padded, left to GEOS, which refuses it; the
    # walk then names why (BatchFacts._refused)
    for short in (polygon[:3], multi[:4], b"\x01", b""):
        assert shapely.from_wkb(short, on_invalid="ignore") is None
        assert wkb_problem(short) is not None
    assert not may_nest(polygon[:3])


@settings(max_examples=80, deadline=None)
@given(st.lists(st.one_of(st.none(), st.binary(max_size=12)), max_size=30))
def test_vectorized_header_screen_equals_the_per_value_one(values: list[bytes | None]) -> None:
    from worker.core.facts.wkb_header import may_nest_many

    wkb = [shapely.to_wkb(g) for g in GEOMS[:5]] + [
        shapely.to_wkb(shapely.Point(1, 2, 3), flavor="iso"),
        shapely.to_wkb(shapely.Point(1, 2), byte_order=0),
        shapely.to_wkb(shapely.Point(1, 2), include_srid=True, flavor="extended"),
    ]
    mixed = values + wkb
    expected = [v is not None and may_nest(v) for v in mixed]
    assert may_nest_many(mixed).tolist() == expected


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.one_of(st.none(), st.sampled_from(["a", "b", "Zürich", "x", ""])), max_size=40),
    st.lists(st.one_of(st.none(), st.integers(-3, 3)), max_size=40),
)
def test_small_column_domain_path_equals_the_arrow_path(
    texts: list[str | None], ints: list[int | None]
) -> None:
    import pyarrow as pa

    from worker.core.clauses.domain_values import _unknown_arrow, _unknown_small

    for col, codes in (
        (pa.array(texts, pa.string()), {"a": "A", "b": "B", 1: "one"}),
        (pa.array(ints, pa.int32()), {1: "one", -2: "minus two", "1": "text", 2.5: "float"}),
    ):
        family = "str" if pa.types.is_string(col.type) else "int"
        keys = frozenset(k for k in codes if type(k) is {"str": str, "int": int}[family])
        small_mask, small_unknown = _unknown_small(col, keys)
        arrow_mask, arrow_unknown = _unknown_arrow(col, codes, family)
        assert small_mask.tolist() == arrow_mask.tolist()
        assert small_unknown == arrow_unknown


def _python_path(text: str) -> object:
    """``text`` read by PyYAML's Python composer and the contract constructors (the slow path)."""
    from worker.core.contracts.yaml_doc import _UniqueKeyLoader

    loader = _UniqueKeyLoader(text)
    try:
        return loader.construct_document(loader.get_single_node())
    finally:
        loader.dispose()


def test_libyaml_and_python_composers_read_every_shipped_contract_alike() -> None:
    from worker.core.contracts.parse import parse_contract  # registers the mapping constructor
    from worker.core.contracts.yaml_doc import _NOT_FAST, _load_with_libyaml

    assert parse_contract  # the import's side effect is what this test needs
    for path in sorted(data_file("contracts").iterdir()):
        text = path.read_text("utf-8")
        fast = _load_with_libyaml(text, path.name)
        assert fast is not _NOT_FAST
        slow = _python_path(text)
        assert fast == slow and fast["layer"] in ("admin_boundaries", "nyc_boroughs")


def test_libyaml_path_leaves_anchors_depth_and_errors_to_the_python_path() -> None:
    import pytest

    from worker.core.contracts.yaml_doc import _NOT_FAST, _load_with_libyaml
    from worker.core.errors import ContractError

    deep = "layer: x\nclauses: " + "[" * 40 + "]" * 40 + "\n"
    for text in ("a: &x 1\nb: *x\n", deep, "layer: x\nlayer: y\n", "layer: [unclosed\n"):
        assert _load_with_libyaml(text, "t") is _NOT_FAST
    with pytest.raises(ContractError, match="nested deeper than 32"):
        parse_contract_text(deep)
    with pytest.raises(ContractError, match="duplicate key 'layer'"):
        parse_contract_text("layer: x\nlayer: y\n")


def _typed(value: object) -> object:
    """``value`` with every scalar tagged by its type (1, 1.0 and True differ)."""
    if isinstance(value, dict):
        return {(type(k).__name__, k): _typed(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_typed(v) for v in value]
    return (type(value).__name__, value)


def test_the_libyaml_path_builds_the_same_values_and_types_as_pyyaml() -> None:
    # issue 27: the fast path resolves short scalars through a cache and builds strings,
    # lists and mappings itself; every other tag is PyYAML's constructor
    from worker.core.contracts.parse import parse_contract  # registers the mapping constructor
    from worker.core.contracts.yaml_doc import _NOT_FAST, _load_with_libyaml

    assert parse_contract
    text = (  # numbers YAML 1.1 retypes (010, 1_000, 0x1A, 1:30) are refused: see below
        "a: 1\nb: 1.5\nc: true\nd: ~\ne: '010'\nf: '0x1A'\ng: 2026-12-03\nh: +10\ni: yes\n"
        "j: [1, '1', 1.0, [x, {k: v}], {}]\nk: {1: one, '1': text, 1.5: f, null: n}\n"
        "l: -0\nm: 1.e+3\nn: é ü\no: .inf\np: -.5e+3\nq: ''\nr: |\n  block\n  text\n"
    )
    for doc in (text, text * 1 + "s: " + "x" * 200 + "\n", "[a, b]\n", "plain\n", "7\n"):
        fast = _load_with_libyaml(doc, "t")
        assert fast is not _NOT_FAST
        slow = _python_path(doc)
        assert _typed(fast) == _typed(slow)
    # refused alike: a duplicate key, an unhashable key, a merge key (no constructor)
    for doc in ("a: 1\nb: {x: 1, x: 2}\n", "? [a]\n: 1\n", "a: {<<: {b: 1}}\n"):
        assert _load_with_libyaml(doc, "t") is _NOT_FAST
    # refused by both with the same message: a number YAML 1.1 retypes
    import pytest

    from worker.core.contracts.yaml_doc import load_document
    from worker.core.errors import ContractError

    for doc in ("f: 010\n", "h: [1, 1_000]\n", "l: {x: 0x1A}\n", "m: 1:30\n"):
        with pytest.raises(ContractError) as fast_error:
            _load_with_libyaml(doc, "t")
        with pytest.raises(ContractError) as slow_error:
            load_document(doc + "#&\n", "t")  # '&': the Python path
        assert str(fast_error.value) == str(slow_error.value)
        assert "is written unquoted and YAML 1.1 reads it as an integer" in str(fast_error.value)


def parse_contract_text(text: str) -> object:
    from worker.core.contracts.parse import parse_contract

    return parse_contract(text, source="t.yaml")


def test_a_polygon_with_an_empty_ring_never_reaches_a_geos_predicate() -> None:
    from dataclasses import replace

    from worker.core.facts.batch import BatchFacts
    from worker.core.facts.wkb_header import empty_ring_polygons

    crashing = shapely.from_wkt("POLYGON ((0 0, 4 0, 4 4, 0 4, 0 0), EMPTY)")
    holed = shapely.from_wkt("POLYGON ((0 0, 4 0, 4 4, 0 4, 0 0), (1 1, 2 1, 2 2, 1 1))")
    geoms = np.array([GEOMS[0], crashing, holed, None], dtype=object)
    assert empty_ring_polygons(geoms).tolist() == [1]
    assert not may_nest(shapely.to_wkb(crashing))  # a single polygon: not walked first
    batch = replace(
        WORLD,
        geometries_wkb=(
            WORLD.geometries_wkb[0],
            shapely.to_wkb(crashing),
            shapely.to_wkb(holed),
        ),
        attributes=WORLD.attributes.slice(0, 3),
        feature_count=3,
    )
    facts = BatchFacts(batch)
    assert facts.geometries[1] is None and facts.geometries[2] is not None
    assert facts.unparseable.tolist() == [False, True, False]
    assert "ring 1 of a polygon with 2 rings has no points" in facts.parse_error(1)
    region = shapely.from_wkt("POLYGON ((-10 -10, 10 -10, 0 10, -10 -10))")  # not a box
    covered_mask(facts.geometries, facts.usable, region)  # would end the process before


def test_a_fact_is_computed_once_per_instance_and_can_be_primed() -> None:
    from worker.core._util.memo import fact

    calls: list[int] = []

    class Facts:
        def __init__(self, n: int) -> None:
            self.n = n

        @fact
        def square(self) -> int:
            """n squared."""
            calls.append(self.n)
            return self.n * self.n

    a, b = Facts(3), Facts(4)
    assert (a.square, a.square, b.square) == (9, 9, 16)
    assert calls == [3, 4]  # once per instance, instances apart
    primed = Facts(5)
    primed.__dict__["square"] = -1  # as BatchFacts primes edges_problem
    assert primed.square == -1 and calls == [3, 4]
    assert isinstance(Facts.square, fact) and Facts.square.__doc__ == "n squared."


@settings(max_examples=80, deadline=None)
@given(
    st.lists(
        st.one_of(
            st.none(),
            st.binary(max_size=12),
            st.binary(max_size=8).map(lambda b: b"N" + b),  # numpy writes None as b"None"
            st.just(b"None"),
            st.builds(
                lambda flag, code, rest: bytes([flag]) + struct.pack("<I", code) + rest,
                st.integers(0, 2),
                st.sampled_from(
                    [
                        1,
                        2,
                        3,
                        6,
                        7,
                        17,
                        1003,
                        2001,
                        3002,
                        4001,
                        0x80000003,
                        0x60000001,
                        0xE0000011,
                        0x20000007,
                    ]
                ),
                st.binary(max_size=4),
            ),
        ),
        min_size=33,
        max_size=80,
    )
)
def test_vectorized_headers_equal_the_per_value_reads(values: list[bytes | None]) -> None:
    """Above 32 values the headers are read with numpy; each equals ``_header``."""
    from worker.core.facts.wkb_header import _header, wkb_headers

    cols = [column.tolist() for column in wkb_headers(values)]
    got = list(zip(*cols, strict=True))
    assert got == [_header(v) for v in values]


def test_vectorized_headers_take_bytearray_and_memoryview_values() -> None:
    # a new-user finding: above 32 values they raised ValueError from numpy
    from worker.core.facts.wkb_header import _header, wkb_headers

    point, point_z = shapely.to_wkb(shapely.Point(1, 2)), shapely.to_wkb(shapely.Point(1, 2, 3))
    values = [bytearray(point)] * 40 + [memoryview(point_z), None]
    cols = [c.tolist() for c in wkb_headers(values)]
    assert list(zip(*cols, strict=True)) == [_header(v) for v in values]
    assert cols[2].count(True) == 1


def test_top_level_schema_check_field_by_field_agrees_with_the_whole_validator() -> None:
    # issue 27: the top level is checked field by field with valid scalars remembered;
    # every verdict must be the whole-document validator's, cached or not
    from worker.core.contracts.schema import _split_validators, _top_valid

    top = _split_validators()[0]
    base = {"layer": "roads", "version": "v1.2", "cadence": "PT6H", "objective": 0.99,
            "owner": "team", "changelog": "first", "clauses": [{}]}  # fmt: skip
    edits: list[dict[str, object]] = [
        {}, {"layer": "bad layer"}, {"layer": 7}, {"version": "v01"}, {"version": "v1.2"},
        {"cadence": "6 hours"}, {"objective": 0}, {"objective": True}, {"objective": "0.9"},
        {"objective": 1}, {"objective": 1.5}, {"owner": ""}, {"changelog": " "},
        {"changelog": "x" * 300}, {"changelog": "y" * 300 + " "}, {"clauses": []},
        {"clauses": "all"}, {"change": "major"}, {"change": "huge"}, {"mode": "observing"},
        {"read_paths": "per_major"}, {"read_paths": None}, {"id_column": ""},
        {"evidence": ["a"]}, {"typo": 1},
    ]  # fmt: skip
    docs: list[object] = [{**base, **e} for e in edits]
    docs += [{k: v for k, v in base.items() if k != "owner"}, ["layer"], "layer: x", None]
    verdicts = [top.is_valid(d) for d in docs]
    assert sum(verdicts) == 8  # the base, 2 versions, objective 1, long changelog, 3 enums
    for _ in range(2):  # cold, then with the valid scalars remembered
        assert [_top_valid(top, d) for d in docs] == verdicts


_TOP_BASE = {"layer": "roads", "version": "v1.2", "cadence": "PT6H", "objective": 0.99,
             "owner": "team", "changelog": "first", "clauses": [{}]}  # fmt: skip
_TOP_FIELDS = [
    "cadence", "change", "changelog", "clauses", "evidence", "id_column", "layer", "mode",
    "objective", "owner", "read_paths", "version", "typo",
]  # fmt: skip
_TOP_VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 3),
    st.floats(),
    st.sampled_from(["", " ", "v1.2", "v01", "PT6H", "roads", "x" * 300, "major", "é", "a\n"]),
    st.sampled_from(["observing", "per_major", "P1D"]),
    st.just(datetime.date(2026, 1, 1)),
    st.lists(st.sampled_from(["a", 1, None]), max_size=2),
    st.dictionaries(st.just("a"), st.integers(), max_size=1),
)


@settings(max_examples=300, deadline=None, derandomize=True, database=None)
@given(
    st.dictionaries(st.sampled_from(_TOP_FIELDS), _TOP_VALUES, max_size=4),
    st.lists(st.sampled_from(list(_TOP_BASE)), max_size=2),
)
def test_the_field_by_field_top_level_check_agrees_on_any_document(
    edits: dict[str, object], dropped: list[str]
) -> None:
    # stop 35: generated top-level documents (types JSON has and has not, NaN, dates,
    # unknown and missing fields), cold and with valid scalars remembered
    from worker.core.contracts.schema import _split_validators, _top_valid

    top = _split_validators()[0]
    doc = {**{k: v for k, v in _TOP_BASE.items() if k not in dropped}, **edits}
    want = top.is_valid(doc)
    assert _top_valid(top, doc) == want
    assert _top_valid(top, doc) == want
