"""GeoJSON streamed in bounded pieces (issue 27): the same features, findings, attributes,
ids and CRS as the whole read, piece by piece, and the same decisions through ``check``;
what the stream cannot vouch for goes to the whole read (its messages)."""

from __future__ import annotations

import contextlib
import io
import json
import re
import tempfile
from datetime import datetime, timezone
from pathlib import Path

import pyarrow as pa
import pytest
import shapely
from hypothesis import given, settings
from hypothesis import strategies as st

from worker.cli.main import main
from worker.core.errors import PayloadCorrupt
from worker.core.evaluate import evaluate
from worker.core.model import VALUE_KINDS_KEY, ActiveVersion
from worker.io.contract_files import load_contract
from worker.io.formats import FORMATS, geojson_split, geojson_stream
from worker.io.payloads import read_batch_file
from worker.io.payloads.base import OpenedPayload
from worker.io.payloads.open import open_payload
from worker.io.payloads.policy import UNRESTRICTED
from worker.io.reports.text import decision_to_json

CASES = Path(__file__).resolve().parents[1] / "cases"
SHIPPED = sorted(CASES.glob("*/batch.geojson"))

SQUARE = [[0, 0], [1, 0], [1, 1], [0, 1], [0, 0]]
BOWTIE = [[0, 0], [1, 1], [1, 0], [0, 1], [0, 0]]
GEOMETRIES = [
    {"type": "Polygon", "coordinates": [SQUARE]},
    {"type": "Polygon", "coordinates": [BOWTIE]},  # invalid: kept as written
    {"type": "Polygon", "coordinates": [SQUARE[:-1]]},  # open ring: literal WKB
    {"type": "Polygon", "coordinates": []},  # empty
    {"type": "Polygon", "coordinates": [[[0, 0, 5], [1, 0], [1, 1, 5], [0, 0, 5]]]},  # mixed
    {"type": "MultiPolygon", "coordinates": [[SQUARE], [[[5, 5], [6, 5], [6, 6], [5, 5]]]]},
    {"type": "Point", "coordinates": [3, 4]},
    {"type": "Point", "coordinates": [3, True]},  # not a number
    {"type": "LineString", "coordinates": [[0, 0], [2, 2]]},
    {"type": "GeometryCollection", "geometries": [{"type": "Point", "coordinates": [1, 1]}]},
    {"type": "Polygon", "coordinates": [[[[0, 0]], [[1, 0]], [[1, 1]], [[0, 0]]]]},  # nesting
    {"type": "Polygon", "coordinates": [[7, [[1, 2, 3]], [1, 1], [7, 7]]]},
    {"type": "Triangle", "coordinates": [1]},  # not a geometry: a finding
    None,
]


def _features(n: int, z: bool = False) -> list[dict]:
    out = []
    for i in range(n):
        g = GEOMETRIES[i % len(GEOMETRIES)]
        if z and g is not None and g["type"] == "Point":
            g = {"type": "Point", "coordinates": [3, 4, 9]}
        props: dict = {"n": i, "code": "a},{b" if i % 3 else None}
        if i >= n // 2:
            props["n"] = i + 0.5  # integers in the first pieces, doubles later
            props["late"] = {"k": [i]}
        out.append(
            {"type": "Feature", "id": i if i % 4 else None, "properties": props, "geometry": g}
        )
    return out


def _typed_by_piece() -> list[dict]:
    """Features whose property values type differently in pieces of a few features: a
    big integer and a float (text: 2**53 + 1 is no double), an integer beyond int64 and
    a small one (text), structs with other members and lists of structs or of nothing
    (one wider type), nested too; the first value of each comes first."""
    big = 2**53 + 1
    columns = {
        "big_then_float": [big, None, None, None, 1.5],
        "float_then_big": [1.5, None, None, None, big],
        "u64_then_int": [2**63, None, None, None, 1],
        "structs": [{"x": 1}, None, None, None, {"y": "a"}],
        "list_of_structs": [[{}], None, None, None, []],
        "lists": [[], None, None, None, [1]],
        "nested_big": [[[big]], None, None, None, [[1.5]]],
        "struct_big_apart": [{"x": big, "y": 1.5}, None, None, None, {"y": 1}],
        "int_then_float": [1, None, None, None, 2.5],
        "float_then_bool": [1.5, None, None, None, True],
        "bool_in_a_struct": [{"z": 0.5}, None, None, None, {"z": False}],
    }
    rows = len(next(iter(columns.values())))
    return [
        {
            "type": "Feature",
            "properties": {name: values[i] for name, values in columns.items()},
            "geometry": None,
        }
        for i in range(rows)
    ]


def _write(path: Path, features: list[dict], **members: object) -> Path:
    doc = {"type": "FeatureCollection", **members, "features": features}
    path.write_text(json.dumps(doc, indent=1 if len(features) % 2 else None))
    return path


def _text(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


GENERATED = {
    "edge cases": lambda p: _write(p, _features(60)),
    "heights": lambda p: _write(p, _features(30, z=True)),
    "legacy crs": lambda p: _write(
        p, _features(5), crs={"type": "name", "properties": {"name": "EPSG:3857"}}
    ),
    "members after": lambda p: _text(
        p,
        '{"type": "FeatureCollection", "features": '
        + json.dumps(_features(9))
        + ', "bbox": [[0, 0], [1, 1]], "crs": {"type": "name", "properties": '
        + '{"name": "EPSG:4326"}}}',
    ),
    "empty": lambda p: _write(p, []),
    # property types that differ between pieces (each feature ~100 bytes, pieces of 300):
    # arrow's inference over the whole column is what the merged type must be
    "types by piece": lambda p: _write(p, _typed_by_piece()),
    "no properties": lambda p: _write(
        p, [{"type": "Feature", "properties": None, "geometry": g} for g in GEOMETRIES]
    ),
}


def _meta(field: pa.Field) -> dict:
    """Field metadata less the per-row JSON kinds (compared over the chunks)."""
    return {k: v for k, v in (field.metadata or {}).items() if k != VALUE_KINDS_KEY}


def _whole(path: Path):
    with open_payload(str(path), UNRESTRICTED) as src:
        return FORMATS[src.format].read(src)


def _streamed(path: Path, rows: int):
    with open_payload(str(path), UNRESTRICTED) as src:
        opened = FORMATS[src.format].chunks(src)
    assert opened is not None
    return opened, list(opened.chunks(rows))


@pytest.mark.parametrize(
    "source", [*(str(p) for p in SHIPPED), *GENERATED], ids=lambda s: Path(s).parent.name or s
)
def test_streamed_read_equals_the_whole_read(
    source: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # pieces of about 300 bytes: many cuts, some inside features (refused, moved back)
    monkeypatch.setattr(geojson_split, "PIECE_BYTES", 300)
    monkeypatch.setattr(geojson_stream, "PARSE_ROWS", 4)
    path = GENERATED[source](tmp_path / "b.geojson") if source in GENERATED else Path(source)
    if "NaN" in path.read_text():
        pytest.skip("not strict JSON: tested below")
    whole = _whole(path)
    opened, chunks = _streamed(path, rows=3)
    assert opened.rows == len(whole.geometries_wkb)
    assert [len(c.geometries_wkb) for c in chunks] == [
        min(3, opened.rows - i) for i in range(0, opened.rows, 3)
    ]
    assert sum((c.geometries_wkb for c in chunks), ()) == whole.geometries_wkb
    errors = {i + 3 * n: e for n, c in enumerate(chunks) for i, e in c.geometry_errors.items()}
    assert errors == dict(whole.geometry_errors)
    assert (opened.declared_crs, opened.crs_stated) == (whole.declared_crs, whole.crs_stated)
    ids = None if whole.feature_ids is None else sum((c.feature_ids for c in chunks), ())
    assert ids == whole.feature_ids
    assert opened.attributes.schema.names == whole.attributes.schema.names
    for name in whole.attributes.column_names:
        want = whole.attributes.schema.field(name)
        assert _meta(opened.attributes.schema.field(name)) == _meta(want)
        assert opened.attributes.schema.field(name).type == want.type
        parts = [part for c in chunks for part in c.attributes.column(name).chunks]
        got = pa.chunked_array(parts, want.type)
        assert got.to_pylist() == whole.attributes.column(name).to_pylist()
        kinds = b"".join(
            (c.attributes.schema.field(name).metadata or {}).get(VALUE_KINDS_KEY, b"")
            for c in chunks
        )
        assert kinds == (want.metadata or {}).get(VALUE_KINDS_KEY, b"")
    nulls = {n: whole.attributes.column(n).null_count for n in whole.attributes.column_names}
    assert opened.null_counts == nulls


def test_the_edge_cases_keep_their_findings(tmp_path: Path) -> None:
    path = _write(tmp_path / "b.geojson", _features(14))
    opened, chunks = _streamed(path, rows=100)
    (chunk,) = chunks
    wkb = chunk.geometries_wkb
    assert wkb[1] == shapely.Polygon(BOWTIE).wkb and not shapely.is_valid(shapely.from_wkb(wkb[1]))
    assert wkb[2] is not None and 2 not in chunk.geometry_errors  # open ring, literal WKB
    assert set(chunk.geometry_errors) == {4, 7, 10, 11, 12}
    assert wkb[13] is None and 13 not in chunk.geometry_errors  # a null geometry
    assert opened.attributes.column_names == ["n", "code", "late"]
    assert opened.null_counts == {"n": 0, "code": 5, "late": 7}


def test_check_decides_as_on_the_whole_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    contract = tmp_path / "c.yaml"
    contract.write_text(
        "layer: l\nversion: v1\ncadence: P1D\nobjective: 0.99\nowner: qa\nchangelog: t\n"
        "clauses:\n  - {name: extent, kind: extent, region: [0, 0, 4, 4]}\n"
        "  - {name: types, kind: geometry_type, allowed: [Polygon]}\n"
        "  - {name: valid, kind: validity, max_invalid_fraction: 0.0}\n"
    )
    path = _write(tmp_path / "b.geojson", _features(40))
    times = ["--data-time", "2026-11-29T06:00:00Z", "--now", "2026-11-29T07:00:00Z"]
    code = main(["check", str(path), "--contract", str(contract), "--format", "json", *times])
    doc = json.loads(capsys.readouterr().out)
    versions = [ActiveVersion(load_contract(contract), "enforcing")]
    whole = read_batch_file(
        path, layer="l", data_time=datetime(2026, 11, 29, 6, tzinfo=timezone.utc)
    )
    decision = evaluate(whole, versions, now=datetime(2026, 11, 29, 7, tzinfo=timezone.utc))
    expected = json.loads(json.dumps(decision_to_json(decision), default=str))
    assert code == 1
    assert doc["versions"] == expected["versions"] and doc["decision"] == expected["decision"]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            '{"type": "Feature", "type": "Feature", "properties": {}, "geometry": null}',
            r"features\[1\]: the member name 'type' appears more than once",
        ),
        (
            '{"type": "Feature", "properties": {"a": {"b": 1, "b": 2}}, "geometry": null}',
            r"features\[1\]\.properties\.a: the member name 'b'",
        ),
        (
            '{"type": "Feature", "properties": {"a": NaN}, "geometry": null}',
            r"features\[1\]\.properties\.a: NaN is not a JSON number",
        ),
        (
            '{"type": "Feature", "properties": {"a": "\\ud800"}, "geometry": null}',
            r"features\[1\]\.properties\.a: a lone UTF-16 surrogate",
        ),
        (
            '{"type": "Feature", "properties": {"a": 1e400}, "geometry": null}',
            r"features\[1\]\.properties\.a: 1e400 is beyond double precision",
        ),
        (
            '{"type": "Feature", "properties": {}, "geometry": {"type": "Point", '
            '"coordinates": [1, 2], "coordinates": [3, 4]}}',
            r"features\[1\]\.geometry: the member name 'coordinates'",
        ),
    ],
)
def test_what_the_stream_cannot_vouch_for_is_refused_as_the_whole_read_refuses_it(
    tmp_path: Path, text: str, message: str
) -> None:
    ok = '{"type": "Feature", "properties": {}, "geometry": null}'
    path = tmp_path / "b.geojson"
    path.write_text(f'{{"type": "FeatureCollection", "features": [{ok}, {text}]}}')
    with open_payload(str(path), UNRESTRICTED) as src:
        assert FORMATS[src.format].chunks(src) is None  # read whole instead
    with pytest.raises(PayloadCorrupt, match=message):
        read_batch_file(path, layer="l")


def test_a_feature_collection_split_in_the_wrong_place_is_read_whole(tmp_path: Path) -> None:
    """A '"features": [' inside a string before the real array: the split is only taken
    when both ends read as strict JSON, so the real array is found."""
    path = tmp_path / "b.geojson"
    path.write_text(
        '{"name": "x\\"features\\": [", "type": "FeatureCollection", "features": '
        + json.dumps(_features(3))
        + "}"
    )
    opened, chunks = _streamed(path, rows=10)
    assert (
        opened.rows == 3
        and len(chunks[0].geometries_wkb) == 3
        and re.fullmatch("OGC:CRS84", opened.declared_crs or "")
    )


def test_a_refused_piece_stops_growing_and_the_file_is_read_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """NaN in the 4th of 60 features: no cut parses, the piece grows to MAX_PIECE_BYTES
    and the file goes to the whole read, which names the value."""
    monkeypatch.setattr(geojson_split, "PIECE_BYTES", 300)
    monkeypatch.setattr(geojson_split, "MAX_PIECE_BYTES", 1200)
    path = _write(tmp_path / "b.geojson", _features(60))
    path.write_text(path.read_text().replace('"n": 3,', '"n": NaN,', 1))
    with open_payload(str(path), UNRESTRICTED) as src:
        assert FORMATS[src.format].chunks(src) is None
    with pytest.raises(PayloadCorrupt, match=r"features\[3\]\.properties\.n: NaN"):
        read_batch_file(path, layer="l")


def _read_by(path: Path, how: str) -> list:
    """The file's chunks, read whole or streamed (read whole when the stream gives it
    back, as ``check`` does)."""
    with open_payload(str(path), UNRESTRICTED) as src:
        reader = FORMATS[src.format]
        opened = reader.chunks(src) if how == "streamed" else None
        return [reader.read(src)] if opened is None else list(opened.chunks(100))


@pytest.mark.parametrize("how", ["whole", "streamed"])
@pytest.mark.parametrize(
    ("value", "depth"), [("[" * 33 + "]" * 33, 33), ("[" * 700 + "]" * 700, 700)], ids=["33", "700"]
)
def test_a_property_nested_deeper_than_the_limit_is_refused_not_a_recursion_error(
    tmp_path: Path, how: str, value: str, depth: int
) -> None:
    """Lists 700 deep in one property passed the JSON readers and raised RecursionError in
    the attribute checks (a traceback from ``check``, stop 35): the nesting is bounded
    where a reader's attributes become the batch, and the stream gives such a file to
    the whole read."""
    path = tmp_path / "b.geojson"
    ok = '{"type": "Feature", "properties": {"a": null}, "geometry": null}'
    deep = f'{{"type": "Feature", "properties": {{"a": {value}}}, "geometry": null}}'
    path.write_text(f'{{"type": "FeatureCollection", "features": [{ok}, {deep}]}}')
    with pytest.raises(PayloadCorrupt, match=rf"attribute 'a' nests lists and objects {depth} "):
        _read_by(path, how)


@pytest.mark.parametrize("how", ["whole", "streamed"])
def test_a_property_nested_to_the_limit_is_read(tmp_path: Path, how: str) -> None:
    path = tmp_path / "b.geojson"
    value = "[" * 32 + "1" + "]" * 32
    feature = f'{{"type": "Feature", "properties": {{"a": {value}}}, "geometry": null}}'
    path.write_text(f'{{"type": "FeatureCollection", "features": [{feature}]}}')
    (chunk,) = _read_by(path, how)
    assert chunk.attributes.column("a").to_pylist() == [json.loads(value)]


@pytest.mark.parametrize("how", ["whole", "streamed"])
@pytest.mark.parametrize(
    ("values", "want"),
    [
        ([1.5, True], ["1.5", "true"]),
        ([{"z": 0.5}, {"z": False}], ['{"z": 0.5}', '{"z": false}']),
        ([[2.5, False]], ["[2.5, false]"]),
    ],
    ids=["flat", "struct", "list"],
)
def test_a_boolean_among_numbers_is_text_not_a_number(
    tmp_path: Path, how: str, values: list, want: list
) -> None:
    """Arrow's inference types [1.5, true] as double [1.5, 1.0] (but [1, true] not at all):
    a JSON boolean became the number 1.0 in both reads (stop 35). Values of two JSON types
    are text with their kinds recorded, as 42 and "see survey" are."""
    path = _write(
        tmp_path / "b.geojson",
        [{"type": "Feature", "properties": {"v": v}, "geometry": None} for v in values],
    )
    (chunk,) = _read_by(path, how)
    assert chunk.attributes.schema.field("v").type == pa.string()
    assert chunk.attributes.column("v").to_pylist() == want


def test_a_trailing_member_of_many_arrays_does_not_stall_the_split(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every ``]`` before ``, "`` or ``}`` in the last MiB is a candidate end of the
    features array, each tried by parsing the text around it: 4,000 arrays in a member
    after the features cost 12 s, 64,000 (1 MiB) about an hour (stop 35). The candidates
    tried are bounded; a file whose end is not among them is read whole."""
    calls: list[int] = []
    real = geojson_split.loads_strict

    def counted(text: bytes) -> object:
        calls.append(len(text))
        return real(text)

    monkeypatch.setattr(geojson_split, "loads_strict", counted)
    extra = ", ".join(f'"k{i}": [{i}]' for i in range(20_000))
    path = tmp_path / "b.geojson"
    path.write_text(
        '{"type": "FeatureCollection", "features": '
        + json.dumps(_features(3))
        + f', "extra": {{{extra}}}}}'
    )
    with open_payload(str(path), UNRESTRICTED) as src:
        assert FORMATS[src.format].chunks(src) is None  # read whole instead
    assert len(calls) <= geojson_split.MAX_END_TRIES
    assert len(read_batch_file(path, layer="l").geometries_wkb) == 3


_SQUARE_OPEN = SQUARE[:-1]
_FUZZ_GEOMETRIES = [
    *GEOMETRIES,
    {"type": "Point", "coordinates": [1.5, -2, 3]},
    {"type": "Point", "coordinates": [1, 2, 3, 4]},
    {"type": "Point", "coordinates": []},
    {"type": "Polygon", "coordinates": [SQUARE, []]},
    {"type": "MultiPolygon", "coordinates": [[SQUARE], [_SQUARE_OPEN]]},
    {"type": "MultiPolygon", "coordinates": [[]]},
    {"type": "MultiPoint", "coordinates": []},
    {"type": "FeatureCollection", "features": []},
    {"type": "Point", "coordinates": [18446744073709551615, 9223372036854775807]},
    {"type": "Point", "coordinates": [1, 2], "bbox": [1, 2, 1, 2]},
    "POINT (1 2)",
    [1, 2],
]
_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**64), 2**64),
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from(["", "a},{b", "\u00e9", "\U0001f600", "2020-01-01"]),
)
_VALUES = st.recursive(
    _SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.sampled_from("xyz"), inner, max_size=2)
    ),
    max_leaves=6,
)
_FEATURE = st.builds(
    lambda g, p, fid, has_id: {
        "type": "Feature",
        **({"id": fid} if has_id else {}),
        "properties": p,
        "geometry": g,
    },
    st.sampled_from(_FUZZ_GEOMETRIES),
    st.one_of(st.none(), st.dictionaries(st.sampled_from(["a", "b", ""]), _VALUES, max_size=3)),
    st.one_of(st.none(), st.integers(-(2**64), 2**64), st.floats(-1e9, 1e9), st.text(max_size=3)),
    st.booleans(),
)


@settings(max_examples=60, deadline=None, derandomize=True, database=None)
@given(
    st.lists(_FEATURE, max_size=16),
    st.integers(40, 400),
    st.integers(1, 5),
    st.integers(1, 7),
    st.sampled_from([None, 1]),
    st.booleans(),
)
def test_any_generated_collection_streams_as_the_whole_read_reads_it(
    features: list[dict],
    piece_bytes: int,
    parse_rows: int,
    rows: int,
    indent: int | None,
    crlf: bool,
) -> None:
    """Hypothesis over geometries, property values of every JSON type (numbers past int64
    and 2**53, booleans, nested lists and objects), ids, piece sizes and CRLF/BOM text: the
    stream gives the whole read's features, findings, ids and attributes, or gives the
    file to the whole read (stop 35 found the typing of properties by piece this way)."""
    text = json.dumps({"type": "FeatureCollection", "features": features}, indent=indent)
    data = ("\ufeff" + text.replace("\n", "\r\n") if crlf else text).encode()
    with tempfile.TemporaryDirectory() as tmp, pytest.MonkeyPatch.context() as mp:
        mp.setattr(geojson_split, "PIECE_BYTES", piece_bytes)
        mp.setattr(geojson_stream, "PARSE_ROWS", parse_rows)
        path = Path(tmp) / "b.geojson"
        path.write_bytes(data)
        whole = _whole(path)
        with open_payload(str(path), UNRESTRICTED) as src:
            opened = FORMATS[src.format].chunks(src)
        if opened is None:
            return  # given to the whole read: the same by construction
        chunks = list(opened.chunks(rows))
    assert sum((c.geometries_wkb for c in chunks), ()) == whole.geometries_wkb
    errors = {i + rows * n: e for n, c in enumerate(chunks) for i, e in c.geometry_errors.items()}
    assert errors == dict(whole.geometry_errors)
    ids = None if whole.feature_ids is None else sum((c.feature_ids for c in chunks), ())
    assert ids == whole.feature_ids and opened.declared_crs == whole.declared_crs
    assert opened.attributes.schema.names == whole.attributes.schema.names
    for name in whole.attributes.column_names:
        want = whole.attributes.schema.field(name)
        assert opened.attributes.schema.field(name).type == want.type, name
        got = [v for c in chunks for v in c.attributes.column(name).to_pylist()]
        assert got == whole.attributes.column(name).to_pylist(), name
    nulls = {n: whole.attributes.column(n).null_count for n in whole.attributes.column_names}
    assert opened.null_counts == nulls


@pytest.mark.parametrize(
    ("escape", "split_at"),
    [("\\ud83d\\ude00", 3), ("\\ud83d\\ude00", 8), ("\\ud800", 2), ("\\uDBFF", 5)],
    ids=["pair-in-first", "pair-in-second", "lone", "lone-upper"],
)
def test_a_surrogate_escape_across_the_first_piece_boundary_is_read_as_the_whole_read_does(
    tmp_path: Path, escape: str, split_at: int
) -> None:
    """The 2 MiB block boundary falls inside a ``\\u`` escape of a surrogate (``split_at``
    bytes of it before the boundary): the stream sees it across the two blocks and gives
    the file to the whole read, which reads a pair and refuses a lone one by its path."""
    head = '{"type": "FeatureCollection", "features": ['
    first = '{"type": "Feature", "properties": {"n": 1}, "geometry": null}, '
    pad_start = len(head) + len(first) + len('{"type": "Feature", "properties": {"s": "')
    boundary = len(head) + geojson_split.PIECE_BYTES  # the '[' is the last byte of head
    pad = "x" * (boundary - split_at - pad_start)
    text = (
        head + first + '{"type": "Feature", "properties": {"s": "' + pad + escape + '"}, '
        '"geometry": null}]}'
    )
    assert text[boundary - split_at : boundary - split_at + 2] == "\\u"
    path = tmp_path / "b.geojson"
    path.write_text(text)
    with open_payload(str(path), UNRESTRICTED) as src:
        assert FORMATS[src.format].chunks(src) is None  # read whole instead
    if escape.count("\\u") == 2:
        batch = read_batch_file(path, layer="l")
        assert batch.attributes.column("s").to_pylist() == [None, pad + "\U0001f600"]
    else:
        with pytest.raises(PayloadCorrupt, match=r"features\[1\]\.properties\.s: a lone"):
            read_batch_file(path, layer="l")


@pytest.mark.parametrize(
    "values",
    [[False, []], [1, "x", None, 2.5], ["2020-01-01", {"k": 1}]],
    ids=["boolean-list", "number-string", "string-object"],
)
def test_a_column_of_several_json_types_is_described_as_when_read_whole(
    tmp_path: Path,
    values: list,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The streamed file's empty attribute table carried one JSON kind per exemplar, not
    per row (it has none), so the domain clause measured on it found no mixed column and
    its message said "column 'a' (string)" where the whole read says "(mixed: boolean,
    list)" (stop 35, `check` against `check --offenders`, which reads whole)."""
    monkeypatch.setattr(geojson_split, "PIECE_BYTES", 40)  # a piece per feature
    contract = tmp_path / "c.yaml"
    contract.write_text(
        "layer: l\nversion: v1\ncadence: P1D\nobjective: 0.99\nowner: qa\nchangelog: t\n"
        "clauses:\n  - {name: dom, kind: domain, column: a, values: {x: ex}, allow_null: true}\n"
    )
    path = _write(
        tmp_path / "b.geojson",
        [{"type": "Feature", "properties": {"a": v}, "geometry": None} for v in values],
    )
    args = ["check", str(path), "--contract", str(contract), "--format", "json"]
    docs = []
    for extra in ([], ["--offenders", str(tmp_path / "offenders.json")]):
        main([*args, *extra])
        docs.append(json.loads(capsys.readouterr().out)["versions"])
    streamed, whole = docs
    assert "(mixed: " in whole[0]["clauses"][0]["message"]
    assert streamed == whole


_E2E_CONTRACT = (
    "layer: l\nversion: v1\ncadence: P1D\nobjective: 0.99\nowner: qa\nchangelog: t\nclauses:\n"
    "  - {name: extent, kind: extent, region: [-180, -90, 180, 90]}\n"
    "  - {name: types, kind: geometry_type, allowed: [Polygon, Point]}\n"
    "  - {name: valid, kind: validity, max_invalid_fraction: 0.0}\n"
    "  - {name: dom, kind: domain, column: a, values: {x: ex, '2020-01-01': d}, allow_null: true}\n"
    "  - {name: sch, kind: schema, fields: [{name: a, type: string}, {name: b, type: double}], "
    "allow_extra: true}\n"
)


@settings(max_examples=15, deadline=None, derandomize=True, database=None)
@given(st.lists(_FEATURE, max_size=12), st.integers(40, 400))
def test_check_streamed_decides_any_generated_collection_as_check_read_whole(
    features: list[dict], piece_bytes: int
) -> None:
    """`check` (streamed) against `check --offenders` (read whole) on the same generated
    file: the exit status and every version's clause results, messages and offenders."""
    outcomes = []
    with tempfile.TemporaryDirectory() as tmp, pytest.MonkeyPatch.context() as mp:
        mp.setattr(geojson_split, "PIECE_BYTES", piece_bytes)
        path = _write(Path(tmp) / "b.geojson", features)
        contract = Path(tmp) / "c.yaml"
        contract.write_text(_E2E_CONTRACT)
        args = ["check", str(path), "--contract", str(contract), "--format", "json"]
        for extra in ([], ["--offenders", str(Path(tmp) / "offenders.json")]):
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                code = main([*args, *extra])
            outcomes.append((code, json.loads(out.getvalue()).get("versions")))
    assert outcomes[0] == outcomes[1]


@pytest.mark.parametrize("mtime", [None, datetime(2026, 12, 3, tzinfo=timezone.utc)])
def test_an_object_rewritten_at_the_same_size_is_never_served_from_the_first_spool(
    mtime: datetime | None,
) -> None:
    """Spools are reused by (name, size, modification time) while the first lives; an
    object store may give no modification time, and then two objects of one name and size
    (rewritten between two events) are two reads, each with its own values."""

    def opened(code: str) -> OpenedPayload:
        doc = {
            "type": "FeatureCollection",
            "features": [
                {
                    "type": "Feature",
                    "properties": {"code": code},
                    "geometry": {"type": "Point", "coordinates": [1.0, 2.0]},
                }
            ],
        }
        data = json.dumps(doc).encode()
        return OpenedPayload("s3://b/x.geojson", "geojson", len(data), mtime, pa.BufferReader(data))

    first = FORMATS["geojson"].chunks(opened("AAA"))
    second = FORMATS["geojson"].chunks(opened("BBB"))
    assert first is not None and second is not None
    chunks = [*first.chunks(10), *second.chunks(10)]
    codes = [c.attributes.column("code").to_pylist() for c in chunks]
    if mtime is None:
        assert second is not first and codes == [["AAA"], ["BBB"]]
    else:  # the same name, size and time: the same object, by what the store says
        assert second is first and codes == [["AAA"], ["AAA"]]
