"""`contract-gate contract init` (issue 29 part 1): the draft of every shipped sample and of
generated batches is a valid contract that `check` of the same samples admits, and its
clauses carry the figures the samples hold."""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import shapely
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyproj import CRS

from worker.cli.main import main
from worker.io.contract_files import load_contract

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = sorted(
    str(p.relative_to(ROOT))
    for pattern in ("worker/data/*.parquet", "tests/data/**/*.parquet", "tests/data/**/*.geojson")
    for p in ROOT.glob(pattern)
)
RECENT = ["--data-time", "2026-11-29T06:00:00Z", "--now", "2026-11-29T07:00:00Z"]
#: Codes a YAML 1.1 reader would retype if they were written plain.
HOSTILE = [
    "NO",
    "no",
    "yes",
    "on",
    "off",
    "010",
    "0x1F",
    "1e3",
    "1_000",
    "~",
    "null",
    "12:30",
    "",
    " x",
    "#x",
    "- a",
    "true",
    ".inf",
    "2026-01-01",
    "é",
]


def _geoparquet(path: Path, geoms: list[Any], crs: str | None = "EPSG:4326", **cols: Any) -> str:
    """A GeoParquet 1.1 file of ``geoms`` (shapely) stating ``crs`` (PROJJSON; None: the
    file states ``crs: null``, no CRS), with attribute columns ``cols``."""
    column: dict[str, Any] = {"encoding": "WKB", "geometry_types": []}
    column["crs"] = CRS.from_user_input(crs).to_json_dict() if crs else None
    geo = {"version": "1.1.0", "primary_column": "geometry", "columns": {"geometry": column}}
    wkb = [None if g is None else shapely.to_wkb(g, flavor="iso") for g in geoms]
    table = pa.table({"geometry": pa.array(wkb, type=pa.binary()), **cols})
    pq.write_table(table.replace_schema_metadata({"geo": json.dumps(geo)}), path)
    return str(path)


def _init(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["contract", "init", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def _draft(tmp: Path, capsys: pytest.CaptureFixture[str], *samples: str, extra: tuple = ()) -> Path:
    out = tmp / "draft.yaml"
    code, _, err = _init(capsys, *samples, "--layer", "t", "-o", str(out), *extra)
    assert code == 0, err
    load_contract(out)  # the parse and validation of publish and check
    return out


def _admits(capsys: pytest.CaptureFixture[str], sample: str, draft: Path) -> dict:
    code = main(["check", sample, "--contract", str(draft), "--format", "json", *RECENT])
    doc = json.loads(capsys.readouterr().out)
    broken = [c["name"] for c in doc["versions"][0]["clauses"] if c["result"] != "pass"]
    assert code == 0 and doc["decision"] == "admitted", broken
    return doc


def _clause(draft: Path, name: str) -> dict:
    doc = yaml.safe_load(draft.read_text())
    found = [c for c in doc["clauses"] if c["name"] == name]
    return found[0] if found else {}


@pytest.mark.parametrize("sample", SHIPPED)
def test_every_shipped_sample_drafts_a_contract_check_admits(
    sample: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    draft = _draft(tmp_path, capsys, str(ROOT / sample))
    _admits(capsys, str(ROOT / sample), draft)
    assert "# observed" in draft.read_text()


def test_the_countries_draft_carries_the_observed_figures(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sample = str(ROOT / "worker/data/admin_boundaries.parquet")
    draft = _draft(tmp_path, capsys, sample)
    text = draft.read_text()
    assert _clause(draft, "srid")["expect"] == "EPSG:4326"
    assert _clause(draft, "extent")["region"] == [-180.0, -90.0, 180.0, 90.0]
    assert _clause(draft, "geometry_types")["allowed"] == ["MultiPolygon", "Polygon"]
    assert "observed: MultiPolygon: 29, Polygon: 148" in text
    assert "observed bounds (minx miny maxx maxy): -180 -90 180 83.64513" in text
    assert _clause(draft, "size") == {
        "name": "size",
        "kind": "feature_count",
        "min": 88,
        "max": 354,
    }
    assert list(_clause(draft, "domain_continent")["values"])[:2] == ["Africa", "Antarctica"]
    fields = _clause(draft, "schema")["fields"]
    assert [f["name"] for f in fields] == ["pop_est", "continent", "name", "iso_a3", "gdp_md_est"]


def test_the_nyc_draft_is_in_us_survey_feet_clipped_to_the_area_of_use(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    draft = _draft(tmp_path, capsys, str(ROOT / "worker/data/nyc_boroughs.parquet"))
    assert _clause(draft, "srid")["expect"] == "EPSG:2263"
    # bounds x 913175.109..1067382.5084 padded by 5 % (7710.37 ft) on each side; the west
    # side stops at EPSG:2263's area of use (909114.78), the others are padded only
    assert _clause(draft, "extent")["region"] == [909114.78, 112485.76, 1075092.88, 280480.42]
    assert list(_clause(draft, "domain_BoroCode")["values"]) == [1, 2, 3, 4, 5]
    assert "clipped to the CRS's area of use (west)" in draft.read_text()


def test_fiji_like_polygons_get_the_shortest_cover_across_the_antimeridian(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fiji = shapely.MultiPolygon(
        [shapely.box(177.0, -19.0, 180.0, -16.0), shapely.box(-180.0, -18.0, -179.0, -16.5)]
    )
    chukotka = shapely.MultiPolygon(
        [shapely.box(170.0, 64.0, 180.0, 70.0), shapely.box(-180.0, 65.0, -172.0, 68.0)]
    )
    sample = _geoparquet(
        tmp_path / "s.parquet", [fiji, chukotka], name=pa.array(["Fiji", "Chukotka"])
    )
    draft = _draft(tmp_path, capsys, sample)
    region = _clause(draft, "extent")["region"]
    # cover 170 -> -172 (18 degrees), padded by 5 % of 18 = 0.9 on each side; y -19..70
    assert region == [169.1, -23.45, -171.1, 74.45]
    assert "cross the antimeridian" in draft.read_text()
    _admits(capsys, sample, draft)


def test_an_rfc_7946_geojson_sample_names_its_crs_as_the_format_default(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    features = [
        {
            "type": "Feature",
            "geometry": {"type": "Point", "coordinates": [x, -17.0]},
            "properties": {"kind": kind, "rank": rank},
        }
        for x, kind, rank in [(178.5, "NO", 1), (-179.5, "010", 2), (179.9, None, 2)]
    ]
    sample = tmp_path / "p.geojson"
    sample.write_text(json.dumps({"type": "FeatureCollection", "features": features}))
    draft = _draft(tmp_path, capsys, str(sample))
    assert _clause(draft, "srid")["expect"] == "OGC:CRS84"
    assert "the format's default (the file writes none): confirm it" in draft.read_text()
    assert _clause(draft, "extent")["region"] == [178.4, -17.001, -179.4, -16.999]
    assert _clause(draft, "domain_kind")["values"] == {
        "010": "FILL IN: what 010 means",
        "NO": "FILL IN: what NO means",
    }
    assert list(_clause(draft, "domain_rank")["values"]) == [1, 2]
    _admits(capsys, str(sample), draft)


def test_odd_column_names_are_quoted_or_named_in_a_comment(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    props = {"": "a", "NO": "b", "line\nbreak": "c", "# hash": 1}
    features = [
        {
            "type": "Feature",
            "geometry": {"type": "Point", "coordinates": [1, 2]},
            "properties": props,
        }
    ]
    sample = tmp_path / "odd.geojson"
    sample.write_text(json.dumps({"type": "FeatureCollection", "features": features}))
    draft = _draft(tmp_path, capsys, str(sample))
    schema = _clause(draft, "schema")
    assert [f["name"] for f in schema["fields"]] == ["NO", "line\nbreak", "# hash"]
    assert schema["allow_extra"] is True and " (an empty name)" in draft.read_text()
    assert _clause(draft, "domain_line\nbreak")["column"] == "line\nbreak"
    _admits(capsys, str(sample), draft)


def test_a_projected_sample_is_clipped_to_the_area_of_use(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    points = [shapely.Point(300000 + 1000 * i, 5200000 + 5000 * i) for i in range(50)]
    sample = _geoparquet(tmp_path / "utm.parquet", points, crs="EPSG:25832", h=pa.array(range(50)))
    draft = _draft(tmp_path, capsys, sample, extra=("--margin", "400"))
    assert _clause(draft, "srid")["expect"] == "EPSG:25832"
    x0, y0, x1, y1 = _clause(draft, "extent")["region"]
    # padded by 400 % the region would start at x 104000: clipped to the west bound of
    # EPSG:25832's area of use (6 degrees east, less the area-of-use margin) instead
    assert x0 == 230471.52 and y1 == 5445000 + 4 * 245000
    assert x0 <= 300000 and y0 <= 5200000 and x1 >= 349000 and y1 >= 5445000
    assert "clipped to the CRS's area of use (west)" in draft.read_text()
    _admits(capsys, sample, draft)


def test_3d_data_lists_types_with_dimensions(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    polys = [
        shapely.Polygon([(0, 0, 1), (1, 0, 2), (1, 1, 3), (0, 0, 1)]),
        shapely.Point(0.5, 0.5, 9),
    ]
    sample = _geoparquet(tmp_path / "z.parquet", polys)
    draft = _draft(tmp_path, capsys, sample)
    assert _clause(draft, "geometry_types")["allowed"] == ["Point Z", "Polygon Z"]
    _admits(capsys, sample, draft)


def test_codes_yaml_would_retype_stay_strings_and_many_codes_get_no_domain(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    n = len(HOSTILE)
    points = [shapely.Point(i, i) for i in range(n)]
    cols = {
        "code": pa.array(HOSTILE),
        "many": pa.array([f"c{i}" for i in range(n)]),
        "level": pa.array([i % 3 for i in range(n)], type=pa.int32()),
        "maybe": pa.array([None if i % 2 else "a" for i in range(n)]),
    }
    sample = _geoparquet(tmp_path / "codes.parquet", points, **cols)
    draft = _draft(tmp_path, capsys, sample, extra=("--max-codes", str(n)))
    contract = load_contract(draft)
    codes = contract.clause("domain_code").params["values"]  # type: ignore[union-attr]
    assert sorted(codes) == sorted(HOSTILE)
    assert list(contract.clause("domain_level").params["values"]) == [0, 1, 2]  # type: ignore[union-attr]
    maybe = contract.clause("domain_maybe").params  # type: ignore[union-attr]
    assert maybe["allow_null"] is True and list(maybe["values"]) == ["a"]
    fields = {f["name"]: f for f in _clause(draft, "schema")["fields"]}
    assert fields["maybe"]["nullable"] is True and fields["code"]["nullable"] is False
    _admits(capsys, sample, draft)
    fewer = _draft(tmp_path, capsys, sample, extra=("--max-codes", str(n - 1)))
    assert _clause(fewer, "domain_many") == {} and _clause(fewer, "domain_code") == {}
    assert f"many (more than {n - 1} distinct values)" in fewer.read_text()


def test_a_sample_stating_no_crs_leaves_crs_and_axis_order_out(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sample = _geoparquet(tmp_path / "nocrs.parquet", [shapely.Point(5, 5)], crs=None)
    draft = _draft(tmp_path, capsys, sample)
    assert _clause(draft, "srid") == {} and _clause(draft, "axis_order") == {}
    assert "the sample states a CRS (nothing is guessed)" in draft.read_text()
    _admits(capsys, sample, draft)


def test_invalid_and_missing_geometries_warn_with_their_counts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bowtie = shapely.Polygon([(0, 0), (1, 1), (1, 0), (0, 1), (0, 0)])
    sample = _geoparquet(tmp_path / "bad.parquet", [bowtie, shapely.box(0, 0, 1, 1), None])
    draft = _draft(tmp_path, capsys, sample)
    valid = _clause(draft, "valid")
    assert valid["max_invalid_fraction"] == 0.0 and valid["on_break"] == "warn"
    assert "observed: 2 of 3 features invalid" in draft.read_text()
    assert _clause(draft, "geometry_types")["on_break"] == "warn"
    _admits(capsys, sample, draft)


def test_metres_labelled_as_degrees_get_no_extent_and_a_question(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    metres = [shapely.Point(500000.0, 5400000.0), shapely.Point(510000.0, 5410000.0)]
    sample = _geoparquet(tmp_path / "m.parquet", metres, crs="EPSG:4326")
    draft = _draft(tmp_path, capsys, sample)
    assert _clause(draft, "extent") == {}
    assert "(2 beyond the CRS's area of use: is the CRS right?)" in draft.read_text()
    _admits(capsys, sample, draft)


def test_several_samples_merge(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a = _geoparquet(tmp_path / "a.parquet", [shapely.Point(1, 1)] * 4, k=pa.array(["x"] * 4))
    b = _geoparquet(tmp_path / "b.parquet", [shapely.Point(3, 2)] * 10, k=pa.array(["y"] * 10))
    draft = _draft(tmp_path, capsys, a, b)
    assert _clause(draft, "size") == {"name": "size", "kind": "feature_count", "min": 2, "max": 20}
    assert list(_clause(draft, "domain_k")["values"]) == ["x", "y"]
    for sample in (a, b):
        _admits(capsys, sample, draft)


def test_samples_with_different_columns_list_the_common_ones(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a = _geoparquet(
        tmp_path / "a.parquet",
        [shapely.Point(1, 1)] * 3,
        k=pa.array(["x"] * 3),
        v=pa.array([1, 2, 3]),
    )
    b = _geoparquet(tmp_path / "b.parquet", [shapely.Point(2, 2)] * 3, v=pa.array([0.5, 1.0, 2.5]))
    draft = _draft(tmp_path, capsys, a, b)
    schema = _clause(draft, "schema")
    assert schema["allow_extra"] is True
    assert schema["fields"] == [{"name": "v", "type": "double", "nullable": False}]
    assert "fields not listed, so allow_extra is true: k (in 1 of 2 samples)" in draft.read_text()
    assert _clause(draft, "domain_k") == {} and "k (in 1 of 2 samples only)" in draft.read_text()
    for sample in (a, b):
        _admits(capsys, sample, draft)


@pytest.mark.parametrize(
    ("case", "needle"),
    [
        ("empty", "holds no features"),
        ("mixed", "give samples of one CRS"),
        ("unreadable", "cannot read sample"),
        ("layer", "--layer 'a b' is not a layer name"),
        ("badcrs", "states a CRS that does not resolve"),
    ],
)
def test_errors_are_one_line_naming_the_sample(
    case: str, needle: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a = _geoparquet(tmp_path / "a.parquet", [shapely.Point(1, 1)])
    samples = {
        "empty": [_geoparquet(tmp_path / "empty.parquet", [])],
        "mixed": [a, _geoparquet(tmp_path / "m.parquet", [shapely.Point(1, 1)], crs="EPSG:3857")],
        "unreadable": [str(tmp_path / "junk.parquet")],
        "layer": [a],
        "badcrs": [str(tmp_path / "badcrs.geojson")],
    }[case]
    (tmp_path / "badcrs.geojson").write_text(
        json.dumps(
            {
                "type": "FeatureCollection",
                "crs": {"type": "name", "properties": {"name": "urn:ogc:def:crs:EPSG::999999"}},
                "features": [
                    {
                        "type": "Feature",
                        "geometry": {"type": "Point", "coordinates": [1, 2]},
                        "properties": {},
                    }
                ],
            }
        )
    )
    (tmp_path / "junk.parquet").write_bytes(b"not a batch")
    code, out, err = _init(capsys, *samples, "--layer", "a b" if case == "layer" else "t")
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and needle in err, err
    named = {
        "empty": "empty.parquet",
        "mixed": "m.parquet",
        "unreadable": "junk.parquet",
        "badcrs": "badcrs.geojson",
    }
    assert named.get(case, "--layer") in err


@settings(
    max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    lons=st.lists(st.floats(-180, 180, allow_nan=False), min_size=1, max_size=20),
    lat=st.floats(-89, 89, allow_nan=False),
    codes=st.lists(st.sampled_from(HOSTILE) | st.text(max_size=12), min_size=1, max_size=20),
)
def test_generated_point_batches_are_admitted_by_their_draft(
    lons: list[float], lat: float, codes: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        points = [shapely.Point(x, lat) for x in lons]
        column = pa.array([codes[i % len(codes)] for i in range(len(points))])
        sample = _geoparquet(Path(tmp) / "p.parquet", points, code=column)
        draft = _draft(Path(tmp), capsys, sample)
        _admits(capsys, sample, draft)


def test_the_guide_shows_the_real_output_on_the_countries_file(
    capsys: pytest.CaptureFixture[str],
) -> None:
    guide = (ROOT / "docs" / "guides-first-contract.md").read_text(encoding="utf-8")
    shown = guide.split("writes (real output):\n\n```yaml\n", 1)[1].split("```", 1)[0]
    sample = "worker/data/admin_boundaries.parquet"
    code, out, _ = _init(
        capsys, sample, "--layer", "admin_boundaries", "--owner", "boundaries-team"
    )
    assert code == 0 and out == shown


def test_progress_is_shown_on_a_terminal_only(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    sample = str(ROOT / "worker/data/nyc_boroughs.parquet")
    code, _, err = _init(capsys, sample, "--layer", "t")
    assert code == 0 and "profiled" not in err
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    code, _, err = _init(capsys, sample, "--layer", "t")
    assert code == 0 and f"\r{sample}: 5 features profiled\n" in err
