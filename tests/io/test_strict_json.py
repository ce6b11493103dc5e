"""Strict JSON at the GeoJSON reader (issue 26, T07 kind): NaN, Infinity, -Infinity,
numbers beyond double precision, repeated member names and lone surrogates anywhere make
the file bad input with the JSON path named (RFC 8259 sections 4 and 6, RFC 7493)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from worker.core.errors import PayloadCorrupt
from worker.io.formats.strict_json import NotStrictJson, loads_strict
from worker.io.payloads import read_batch_file, read_features

POINT = '{"type": "Point", "coordinates": [10.0, 50.0]}'


def _doc(props: str = '{"code": "A"}', geometry: str = POINT, top: str = "") -> str:
    feature = f'{{"type": "Feature", "properties": {props}, "geometry": {geometry}}}'
    ok = f'{{"type": "Feature", "properties": {{"code": "B"}}, "geometry": {POINT}}}'
    return f'{{"type": "FeatureCollection"{top}, "features": [{ok}, {feature}]}}'


def _refused(tmp_path: Path, text: str) -> str:
    path = tmp_path / "batch.geojson"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(NotStrictJson) as info:
        read_features(path)
    assert isinstance(info.value, PayloadCorrupt)  # payload_corrupt: exit 2, quarantined
    return str(info.value)


@pytest.mark.parametrize(
    ("text", "where", "why"),
    [
        (_doc('{"depth_m": NaN}'), "features[1].properties.depth_m", "NaN is not a JSON number"),
        (_doc('{"d": Infinity}'), "features[1].properties.d", "Infinity is not a JSON number"),
        (_doc('{"d": [1, -Infinity]}'), "features[1].properties.d[1]", "-Infinity is not"),
        (_doc('{"d": {"e": NaN}}'), "features[1].properties.d.e", "NaN is not"),
        (_doc('{"d": 1e400}'), "features[1].properties.d", "1e400 is beyond double"),
        (
            _doc(geometry='{"type": "Point", "coordinates": [Infinity, 50.0]}'),
            "features[1].geometry.coordinates[0]",
            "Infinity is not",
        ),
        (_doc('{"a b": NaN}'), 'features[1].properties["a b"]', "NaN is not"),
    ],
)
def test_non_finite_numbers_anywhere_are_refused_with_their_path(
    tmp_path: Path, text: str, where: str, why: str
) -> None:
    message = _refused(tmp_path, text)
    assert f"at {where}: {why}" in message and "batch.geojson: not strict JSON" in message


@pytest.mark.parametrize(
    ("text", "where", "name"),
    [
        (_doc(top=', "type": "Feature"'), "the document", "type"),
        (_doc(top=', "features": []'), "the document", "features"),
        (_doc('{"code": "A", "code": "X"}'), "features[1].properties", "code"),
        (_doc('{"m": {"k": 1, "k": 2}}'), "features[1].properties.m", "k"),
        (_doc('{"m": [{"k": 1, "k": 2}]}'), "features[1].properties.m[0]", "k"),
        (
            _doc(geometry='{"type": "Point", "coordinates": [1, 2], "coordinates": [3, 4]}'),
            "features[1].geometry",
            "coordinates",
        ),
        (
            _doc(top=', "crs": {"type": "name", "properties": {"name": "a", "name": "b"}}'),
            "crs.properties",
            "name",
        ),
    ],
)
def test_a_member_name_repeated_at_any_level_is_refused(
    tmp_path: Path, text: str, where: str, name: str
) -> None:
    message = _refused(tmp_path, text)
    assert f"at {where}: the member name {name!r} appears more than once" in message


def test_a_feature_with_two_properties_members_is_refused(tmp_path: Path) -> None:
    feature = (
        '{"type": "Feature", "properties": {"a": 1}, "properties": {"a": 2}, "geometry": null}'
    )
    text = f'{{"type": "FeatureCollection", "features": [{feature}]}}'
    assert "at features[0]: the member name 'properties'" in _refused(tmp_path, text)


def test_a_lone_surrogate_is_refused_and_a_pair_is_read(tmp_path: Path) -> None:
    message = _refused(tmp_path, _doc('{"name": "x\\ud800y"}'))
    assert "at features[1].properties.name: a lone UTF-16 surrogate \\ud800" in message
    path = tmp_path / "pair.geojson"
    path.write_text(_doc('{"name": "\\ud83d\\ude00", "big": 1e300, "n": null}'))
    data = read_features(path)
    assert data.attributes.column("name").to_pylist() == [None, "\U0001f600"]
    assert data.attributes.column("big").to_pylist() == [None, 1e300]


def test_strict_reading_keeps_what_json_loads_reads() -> None:
    doc: dict[str, Any] = {"a": [1, 2.5, -0.0, 1e308, "é", None, True], "b": {"c": {}}}
    assert loads_strict(json.dumps(doc).encode()) == doc


def test_the_t07_case_is_bad_input(tmp_path: Path) -> None:
    case = Path(__file__).resolve().parents[1] / "cases" / "T07" / "batch.geojson"
    with pytest.raises(NotStrictJson, match=r"at features\[1\]\.properties\.depth_m: NaN"):
        read_batch_file(case, layer="soundings")


def _read_by(path: Path, how: str) -> Any:
    """The file read whole, or streamed (:mod:`worker.io.formats.geojson_stream`), read
    whole when the stream gives it back, as ``check`` does."""
    from worker.io.formats import FORMATS
    from worker.io.payloads.open import open_payload
    from worker.io.payloads.policy import UNRESTRICTED

    with open_payload(str(path), UNRESTRICTED) as src:
        reader = FORMATS[src.format]
        opened = reader.chunks(src) if how == "streamed" else None
        return reader.read(src) if opened is None else list(opened.chunks(100))


@pytest.mark.parametrize("how", ["whole", "streamed"])
@pytest.mark.parametrize(
    ("raw", "where"),
    [
        (b'{"name": "x\xed\xa0\x80y"}', "features[1].properties.name"),
        (b'{"n\xed\xbf\xbf": 1}', 'features[1].properties["n\\udfff"]'),
        (b'{"a": ["ok", "\xed\xb0\x80"]}', "features[1].properties.a[1]"),
    ],
)
def test_a_surrogate_written_as_utf8_bytes_is_refused_as_an_escaped_one(
    tmp_path: Path, how: str, raw: bytes, where: str
) -> None:
    """Python's JSON reader decodes bytes with 'surrogatepass': a surrogate encoded in the
    file's UTF-8 (ED A0 80, not valid UTF-8) reached the attributes as a lone surrogate and
    `check` failed with "UnicodeEncodeError: surrogates not allowed" (stop 35)."""
    path = tmp_path / "b.geojson"
    path.write_bytes(_doc("@").encode().replace(b"@", raw))
    with pytest.raises(NotStrictJson) as info:
        _read_by(path, how)
    assert f"at {where}: a lone UTF-16 surrogate \\u" in str(info.value)
