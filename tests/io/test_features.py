"""Tests of worker.io.payloads: GeoJSON, GeoParquet (spec files and demo data), schemas."""

from __future__ import annotations

import csv
import json
from datetime import date, datetime, timezone
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import shapely

from worker.core.errors import PayloadCorrupt, PayloadError
from worker.core.model import Batch, FieldSpec
from worker.io.payloads import derive_schema, load_payload, read_batch_file, read_features
from worker.io.payloads.policy import PayloadPolicy

REPO = Path(__file__).resolve().parents[2]
#: The GeoParquet specification's test files (Apache-2.0, see tests/data/README.md).
SPEC = REPO / "tests" / "data" / "geoparquet"
DEMO = REPO / "worker" / "data"
needs_spec = pytest.mark.skipif(
    not SPEC.is_dir(), reason=f"GeoParquet spec files not present at {SPEC}"
)


def _fc(features: list[dict], **extra: object) -> dict:
    return {"type": "FeatureCollection", "features": features, **extra}


def _feature(geometry: dict | None, **props: object) -> dict:
    return {"type": "Feature", "geometry": geometry, "properties": props}


POINT = {"type": "Point", "coordinates": [-73.98, 40.75]}
SQUARE = {"type": "Polygon", "coordinates": [[[0, 0], [1, 0], [1, 1], [0, 1], [0, 0]]]}


def _write(tmp_path: Path, doc: object, name: str = "batch.geojson") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


def test_geojson_rfc7946_defaults(tmp_path: Path) -> None:
    path = _write(tmp_path, _fc([_feature(POINT, id=1, kind="a"), _feature(None, id=2)]))
    b = read_batch_file(path, layer="pts")
    assert (b.declared_crs, b.axis_order, b.layer) == ("OGC:CRS84", "east_north", "pts")
    assert b.feature_count == 2 and b.geometries_wkb[1] is None
    assert shapely.from_wkb(b.geometries_wkb[0]).equals(shapely.Point(-73.98, 40.75))
    assert b.attributes.to_pylist() == [{"id": 1, "kind": "a"}, {"id": 2, "kind": None}]
    assert b.schema_fields == (FieldSpec("id", "integer"), FieldSpec("kind", "string", True))
    assert b.data_time.tzinfo is not None and b.producer == "contract-gate-cli"
    assert len(b.batch_id) == 36


def test_geojson_overrides(tmp_path: Path) -> None:
    path = _write(tmp_path, _fc([_feature(SQUARE)]))
    t = datetime(2024, 5, 1, 12, tzinfo=timezone.utc)
    b = read_batch_file(
        path, layer="x", crs="EPSG:4326", axis_order="north_east", data_time=t, batch_id="b1"
    )
    assert (b.declared_crs, b.axis_order, b.data_time, b.batch_id) == (
        "EPSG:4326",
        "north_east",
        t,
        "b1",
    )
    assert b.attributes.num_rows == 1 and b.attributes.num_columns == 0


def test_geojson_legacy_crs_member_is_honoured(tmp_path: Path) -> None:
    legacy = {"type": "name", "properties": {"name": "urn:ogc:def:crs:EPSG::2263"}}
    b = read_batch_file(_write(tmp_path, _fc([_feature(POINT)], crs=legacy)), layer="x")
    assert b.declared_crs == "urn:ogc:def:crs:EPSG::2263"


def test_empty_feature_collection(tmp_path: Path) -> None:
    b = read_batch_file(_write(tmp_path, _fc([])), layer="x")
    assert b.feature_count == 0 and b.geometries_wkb == () and b.schema_fields == ()


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"{not json", "not a JSON document"),
        (b"\xff\xfe\x00", "not a JSON document"),
        (json.dumps({"type": "Feature", "geometry": POINT}).encode(), "not a GeoJSON Feature"),
        (json.dumps([1, 2]).encode(), "FeatureCollection: the JSON document is an array$"),
        # in GeoJSON's terms, not Python's ("type is None", "type is 'list'"): fresh-user
        (b"{}", 'not a GeoJSON FeatureCollection: the object has no "type" member$'),
        (b'{"type": "Topology"}', "FeatureCollection: its \"type\" is 'Topology'$"),
        (json.dumps({"type": "FeatureCollection"}).encode(), "no 'features' list"),
        (json.dumps(_fc([{"type": "Point"}])).encode(), r"features\[0\] is not a GeoJSON"),
        (json.dumps(_fc([], crs={"type": "name"})).encode(), "bad CRS"),
        (b"PAR1 not really parquet", "not a readable Parquet file"),
    ],
)
def test_bad_files_raise_payload_error_naming_the_file(
    tmp_path: Path, content: bytes, message: str
) -> None:
    path = tmp_path / "bad.geojson"
    path.write_bytes(content)
    with pytest.raises(PayloadError, match=message) as info:
        read_batch_file(path, layer="x")
    assert str(path) in str(info.value)


def test_missing_file_and_bad_axis_order(tmp_path: Path) -> None:
    with pytest.raises(PayloadError, match=r"nope\.geojson: no such file"):
        read_batch_file(tmp_path / "nope.geojson", layer="x")
    path = _write(tmp_path, _fc([]))
    with pytest.raises(PayloadError, match="bad axis order"):
        read_batch_file(path, layer="x", axis_order="lat_lon")
    with pytest.raises(PayloadError, match="timezone-aware"):
        read_batch_file(path, layer="x", data_time=datetime(2024, 1, 1))


def test_parquet_without_geometry_column(tmp_path: Path) -> None:
    path = tmp_path / "plain.parquet"
    pq.write_table(pa.table({"a": [1, 2]}), path)
    with pytest.raises(PayloadError, match="no geometry column"):
        read_features(path)


def test_plain_parquet_with_wkb_geometry_column_has_unknown_crs(tmp_path: Path) -> None:
    path = tmp_path / "plain.parquet"
    wkb = shapely.to_wkb(shapely.points([[1, 2], [3, 4]])).tolist()
    pq.write_table(pa.table({"a": [1, 2], "geometry": pa.array(wkb, pa.binary())}), path)
    data = read_features(path)
    assert data.declared_crs is None and data.attributes.column_names == ["a"]


def _spec_cases() -> list[str]:
    return sorted(p.name for p in SPEC.glob("*.parquet")) if SPEC.is_dir() else ["absent"]


@needs_spec
@pytest.mark.parametrize("name", _spec_cases())
def test_geoparquet_spec_files(name: str) -> None:
    data = read_features(SPEC / name)
    stem = name.split("-encoding_")[0]
    wkt_file = SPEC / f"{stem}-wkt.csv"
    if wkt_file.exists():
        with wkt_file.open(newline="") as fh:
            expected = [row["geometry"] or None for row in csv.DictReader(fh)]
        assert len(expected) == len(data.geometries_wkb)
        for wkb, wkt in zip(data.geometries_wkb, expected, strict=True):
            if wkt is None:
                assert wkb is None
                continue
            got, want = shapely.from_wkb(wkb), shapely.from_wkt(wkt)
            assert got.geom_type == want.geom_type
            assert shapely.normalize(got).wkt == shapely.normalize(want).wkt or got.equals(want)
        assert data.attributes.column_names == ["col"]
    else:
        assert all(g is None or shapely.from_wkb(g) is not None for g in data.geometries_wkb)
    expected_crs = {"data_crs_null.parquet": None}.get(name, "OGC:CRS84")
    if name == "example.parquet":
        assert json.loads(data.declared_crs)["id"] == {"authority": "OGC", "code": "CRS84"}
        assert "bbox" not in data.attributes.column_names  # covering column dropped
    else:
        assert data.declared_crs == expected_crs
    assert data.axis_order == "east_north"


@pytest.mark.parametrize(
    ("name", "count", "epsg", "types"),
    [
        ("admin_boundaries", 177, 4326, {"Polygon", "MultiPolygon"}),
        ("nyc_boroughs", 5, 2263, {"MultiPolygon"}),
    ],
)
def test_shipped_demo_files(name: str, count: int, epsg: int, types: set[str]) -> None:
    from pyproj import CRS

    b = read_batch_file(DEMO / f"{name}.parquet", layer=name)
    assert b.feature_count == count == b.attributes.num_rows
    assert CRS.from_user_input(json.loads(b.declared_crs)).to_epsg() == epsg
    geoms = shapely.from_wkb(list(b.geometries_wkb))
    assert set(shapely.get_type_id(geoms).tolist()) and {g.geom_type for g in geoms} == types
    assert shapely.is_valid(geoms).all()


def test_derive_schema_maps_arrow_types() -> None:
    table = pa.table(
        {
            "i8": pa.array([1, None], pa.int8()),
            "u64": pa.array([1, 2], pa.uint64()),
            "f32": pa.array([1.5, 2.0], pa.float32()),
            "s": pa.array(["a", "b"], pa.large_string()),
            "b": pa.array([True, False]),
            "ts": pa.array([datetime(2024, 1, 1, tzinfo=timezone.utc)] * 2, pa.timestamp("ms")),
            "d": pa.array([date(2024, 1, 1)] * 2, pa.date32()),
            "bin": pa.array([b"x", None], pa.binary()),
            "dict": pa.array(["a", "b"]).dictionary_encode(),
        }
    )
    assert [(f.name, f.type, f.nullable) for f in derive_schema(table)] == [
        ("i8", "integer", True),
        ("u64", "integer", False),
        ("f32", "double", False),
        ("s", "string", False),
        ("b", "boolean", False),
        ("ts", "timestamp", False),
        ("d", "date", False),
        ("bin", "binary", True),
        ("dict", "string", False),
    ]


def _event(**changes: object) -> Batch:
    base = {
        "batch_id": "b1",
        "layer": "nyc_boroughs",
        "producer": "p",
        "data_time": datetime(2024, 1, 1, tzinfo=timezone.utc),
        "produced_at": datetime(2024, 1, 1, tzinfo=timezone.utc),
        "declared_crs": "EPSG:2263",
        "axis_order": "east_north",
        "schema_fields": (),
        "feature_count": 5,
        "geometries_wkb": (),
        "attributes": pa.table({}),
    }
    base.update(changes)
    return Batch(**base)  # type: ignore[arg-type]


#: The shipped demo data as the only payload root.
UNDER_DEMO = PayloadPolicy.from_strings([DEMO.as_uri()])


@pytest.mark.parametrize("as_uri", [True, False])
def test_load_payload_keeps_event_metadata(as_uri: bool) -> None:
    path = DEMO / "nyc_boroughs.parquet"
    uri = path.as_uri() if as_uri else str(path)
    b = load_payload(uri, _event(), policy=UNDER_DEMO)
    assert b.declared_crs == "EPSG:2263" and b.payload_uri == uri
    assert len(b.geometries_wkb) == 5 and b.attributes.num_rows == 5
    assert [f.name for f in b.schema_fields] == ["BoroCode", "BoroName", "Shape_Leng", "Shape_Area"]
    declared = (FieldSpec("BoroCode", "integer"),)
    # the file's schema, not the declaration, is what the schema clause must see
    loaded = load_payload(uri, _event(schema_fields=declared), policy=UNDER_DEMO)
    assert loaded.schema_fields == b.schema_fields


@pytest.mark.parametrize(
    ("uri", "message"),
    [
        ("s3://bucket/key.parquet", "outside every payload root"),
        ("http://host/x.parquet", "unsupported payload URI scheme 'http'"),
        ("file://otherhost/x.parquet", "remote host"),
        ((DEMO / "no_such_file.parquet").as_uri(), "no such file"),
        ("file:///no/such/file.parquet", "outside every payload root"),
    ],
)
def test_load_payload_errors(uri: str, message: str) -> None:
    with pytest.raises(PayloadError, match=message):
        load_payload(uri, _event(), policy=UNDER_DEMO)


def test_load_payload_without_event_reads_like_read_batch_file() -> None:
    uri = (DEMO / "nyc_boroughs.parquet").as_uri()
    b = load_payload(
        uri, layer="nyc_boroughs", crs="EPSG:2263", axis_order="east_north", policy=UNDER_DEMO
    )
    assert (b.layer, b.declared_crs, b.payload_uri, b.feature_count) == (
        "nyc_boroughs",
        "EPSG:2263",
        uri,
        5,
    )
    with pytest.raises(PayloadError, match="needs the decoded event or a layer"):
        load_payload(uri)


# -- GeoParquet metadata that changes meaning: edges, orientation, covering bbox -----------

BAND = shapely.Polygon([(-60, 55), (60, 55), (60, 60), (-60, 60), (-60, 55)])


def _geoparquet(
    tmp_path: Path, geoms: list[shapely.Geometry], bbox: list[dict] | None = None, **column: object
) -> Path:
    """A GeoParquet 1.1 file of WKB ``geoms``; ``column`` adds geometry column metadata and
    ``bbox`` a ``bbox`` struct column declared as the covering."""
    meta: dict[str, object] = {"encoding": "WKB", "geometry_types": ["Polygon"], **column}
    cols: dict[str, object] = {
        "name": [f"f{i}" for i in range(len(geoms))],
        "geometry": pa.array(shapely.to_wkb(geoms).tolist(), pa.binary()),
    }
    if bbox is not None:
        cols["bbox"] = pa.array(
            bbox,
            pa.struct([(k, pa.float32()) for k in ("xmin", "ymin", "xmax", "ymax")]),
        )
        meta["covering"] = {"bbox": {k: ["bbox", k] for k in ("xmin", "ymin", "xmax", "ymax")}}
    geo = {"version": "1.1.0", "primary_column": "geometry", "columns": {"geometry": meta}}
    table = pa.table(cols).replace_schema_metadata({"geo": json.dumps(geo)})
    path = tmp_path / "batch.parquet"
    pq.write_table(table, path)
    return path


def test_geoparquet_edges_and_orientation_ride_on_the_batch(tmp_path: Path) -> None:
    path = _geoparquet(tmp_path, [BAND], edges="spherical", orientation="counterclockwise")
    b = read_batch_file(path, layer="x")
    assert (b.edges, b.orientation, b.covering_bbox) == ("spherical", "counterclockwise", None)
    # the reader keeps the stored vertices: honouring the edges is the core's job
    assert shapely.from_wkb(b.geometries_wkb[0]).equals_exact(BAND, tolerance=0)
    policy = PayloadPolicy.from_strings([tmp_path.as_uri()])
    by_reference = load_payload(path.as_uri(), _event(declared_crs="OGC:CRS84"), policy=policy)
    assert (by_reference.edges, by_reference.orientation) == ("spherical", "counterclockwise")
    plain = read_batch_file(_geoparquet(tmp_path, [BAND]), layer="x")
    assert (plain.edges, plain.orientation) == ("planar", None)


def test_a_spherical_file_is_judged_by_its_great_circle_edges(tmp_path: Path) -> None:
    # field case N01, built here: planar reading fits lat 50..62, the arcs reach 73.9
    from tests.catalogue import NOW, active, clause, contract_of
    from worker.core.evaluate import evaluate

    contract = contract_of(clause("extent", "extent", region=[-70, 50, 70, 62]))
    spherical = read_batch_file(_geoparquet(tmp_path, [BAND], edges="spherical"), layer="x")
    decision = evaluate(spherical, [active(contract)], now=NOW)
    assert decision.decision == "quarantined"
    (reason,) = decision.reasons
    assert reason.clause == "extent" and reason.measured["bounds"][3] == pytest.approx(73.9, 0.01)
    planar = read_batch_file(_geoparquet(tmp_path, [BAND]), layer="x")
    assert evaluate(planar, [active(contract)], now=NOW).admitted


def test_messages_name_the_metadata_by_its_reader(tmp_path: Path) -> None:
    """The core names no format: the reader gives the batch its metadata's name, and the
    messages read as before (issue 26: no format name outside worker/io/formats)."""
    from tests.catalogue import NOW, active, clause, contract_of
    from worker.core.evaluate import evaluate
    from worker.core.facts.batch import BatchFacts

    contract = contract_of(clause("extent", "extent", region=[-70, 50, 70, 62]))
    spherical = read_batch_file(_geoparquet(tmp_path, [BAND], edges="spherical"), layer="x")
    assert spherical.metadata_name == "GeoParquet"
    (reason,) = evaluate(spherical, [active(contract)], now=NOW).reasons
    assert reason.message.endswith("great-circle arcs (GeoParquet edges: spherical)")
    cw = shapely.Polygon(BAND.exterior.coords[::-1])
    path = _geoparquet(tmp_path, [cw], orientation="counterclockwise")
    ((index, why),) = BatchFacts(read_batch_file(path, layer="x")).invalid_reasons
    assert index == 0 and why.startswith(
        "ring orientation contradicts the declared GeoParquet orientation 'counterclockwise'"
    )
    doc = _fc([_feature({"type": "Point", "coordinates": [1.0, 2.0]})])
    assert read_batch_file(_write(tmp_path, doc), layer="x").metadata_name == ""


@pytest.mark.parametrize(
    ("column", "message"),
    [
        ({"edges": "ellipsoidal"}, "unsupported GeoParquet edges 'ellipsoidal'"),
        ({"orientation": "clockwise"}, "unsupported GeoParquet orientation 'clockwise'"),
    ],
)
def test_edge_metadata_the_spec_does_not_define_is_refused(
    tmp_path: Path, column: dict, message: str
) -> None:
    with pytest.raises(PayloadError, match=message):
        read_features(_geoparquet(tmp_path, [BAND], **column))


def test_geoparquet_covering_bbox_is_read_per_row(tmp_path: Path) -> None:
    boxes = [
        {"xmin": -60.0, "ymin": 55.0, "xmax": 60.0, "ymax": 60.0},
        {"xmin": 0.0, "ymin": 0.0, "xmax": 1.0, "ymax": 1.0},  # does not bound row 1
        None,
    ]
    path = _geoparquet(tmp_path, [BAND, BAND, BAND], bbox=boxes)
    b = read_batch_file(path, layer="x")
    assert b.covering_bbox == ((-60.0, 55.0, 60.0, 60.0), (0.0, 0.0, 1.0, 1.0), None)
    assert "bbox" not in b.attributes.column_names  # a covering column is no attribute
    from worker.core.facts.batch import BatchFacts

    assert BatchFacts(b).covering_bbox_disagrees.tolist() == [False, True, True]


def _nested_geojson(tmp_path: Path, depth: int) -> Path:
    geometry = '{"type": "Point", "coordinates": [1, 2]}'
    for _ in range(depth):
        geometry = '{"type": "GeometryCollection", "geometries": [' + geometry + "]}"
    path = tmp_path / f"deep{depth}.geojson"
    path.write_text(
        '{"type": "FeatureCollection", "features": ['
        '{"type": "Feature", "properties": {}, "geometry": ' + geometry + "},"
        '{"type": "Feature", "properties": {}, "geometry": '
        '{"type": "Point", "coordinates": [3, 4]}}]}'
    )
    return path


def test_geojson_collections_nested_too_deep_are_one_invalid_feature(tmp_path: Path) -> None:
    data = read_features(_nested_geojson(tmp_path, 40))
    assert data.geometries_wkb[0] is None and data.geometries_wkb[1] is not None
    assert data.geometry_errors == {0: "GeometryCollection nests deeper than 32 levels"}
    assert read_features(_nested_geojson(tmp_path, 30)).geometry_errors == {}


def test_json_nested_beyond_what_python_reads_is_bad_input_with_a_reason(tmp_path: Path) -> None:
    with pytest.raises(PayloadError, match="JSON nested too deeply to read"):
        read_features(_nested_geojson(tmp_path, 20_000))


def test_a_dictionary_encoded_wkb_column_is_read_as_its_values(tmp_path: Path) -> None:
    # a GeoParquet file written from a pandas categorical stores its geometry column
    # dictionary-encoded; it was refused ("has arrow type dictionary<...>, not binary")
    from worker.cli.scenario import data_file
    from worker.io.formats.geoparquet import open_geoparquet_chunks

    shipped = data_file("admin_boundaries.parquet")
    table = pq.read_table(shipped)
    index = table.schema.get_field_index("geometry")
    encoded = table.set_column(index, "geometry", table.column("geometry").dictionary_encode())
    path = tmp_path / "dictionary.parquet"
    pq.write_table(encoded, path)
    assert pa.types.is_dictionary(pq.read_schema(path).field("geometry").type)

    plain, dictionary = (read_batch_file(p, layer="admin_boundaries") for p in (shipped, path))
    assert dictionary.geometries_wkb == plain.geometries_wkb
    assert len(dictionary.geometries_wkb) == 177
    assert dictionary.declared_crs == plain.declared_crs
    with pa.OSFile(str(path)) as source:
        chunks = open_geoparquet_chunks(path, source)
        rows = [g for chunk in chunks.chunks(50) for g in chunk.geometries_wkb]
    assert tuple(rows) == plain.geometries_wkb


def _cut_cases() -> list[bytes]:
    doc = json.dumps(_fc([_feature(POINT), _feature(POINT)]), ensure_ascii=False)
    doc = doc.replace('"Point"', '"Point", "n": null, "t": true, "f": false, "x": -1.5e-3')
    doc = doc.replace('"properties": {}', '"properties": {"name": "Zürich 東京"}')
    data = doc.encode()
    assert json.loads(data)
    return [data[:k] for k in range(1, len(data))]


def test_a_geojson_file_cut_anywhere_is_said_to_be_truncated(tmp_path: Path) -> None:
    """Stop 38: a GeoJSON file cut short (a copy that stopped early) was "not a JSON document
    (...); the formats read are GeoParquet, GeoJSON, ...", as if of another format. Cut at
    every byte (inside strings, literals, numbers and a UTF-8 character, between tokens), it
    is now said to be truncated; JSON broken elsewhere keeps the first message."""
    path = tmp_path / "cut.geojson"
    for cut in _cut_cases():
        path.write_bytes(cut)
        with pytest.raises(PayloadCorrupt, match=r"cut.geojson: truncated: the file ends inside"):
            read_batch_file(path, layer="x")
    for broken in (b'{"type": 1,}', b'{"a": 1.}', b"{not json", b'{"a": nulL}', b"  \\n"):
        path.write_bytes(broken)
        with pytest.raises(PayloadCorrupt, match=r"not a JSON document"):
            read_batch_file(path, layer="x")
