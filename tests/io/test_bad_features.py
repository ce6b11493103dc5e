"""One bad feature or column never makes a file bad input, and no reader repairs a geometry
before validity sees it (issue 9 sections 1 and 2; field cases S10a, S10c, N04a, N05b).

Every input is built here: GeoJSON text, GeoParquet with WKB written by hand (struct.pack)
and GeoParquet with GeoArrow native columns, each carrying the same defects.
"""

from __future__ import annotations

import json
import struct
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import shapely

from tests.catalogue import active, clause, contract_of, polygon_wkb
from worker.core.evaluate import evaluate
from worker.core.facts.batch import BatchFacts
from worker.io.formats.strict_json import NotStrictJson
from worker.io.formats.wkb_writer import geojson_to_wkb, ragged_to_wkb
from worker.io.payloads import derive_schema, read_batch_file, read_features

T = datetime(2026, 11, 29, 6, tzinfo=timezone.utc)
OPEN = [[0.0, 0.0], [10.0, 0.0], [10.0, 10.0], [0.0, 10.0]]  # first != last
CLOSED = [[20.0, 20.0], [21.0, 20.0], [21.0, 21.0], [20.0, 20.0]]
NOT_CLOSED = "Points of LinearRing do not form a closed linestring"
CONTRACT = contract_of(
    clause("srid", "crs", expect="OGC:CRS84"),
    clause("extent", "extent", region=[-180, -90, 180, 90], min_fraction_inside=1.0),
    clause("types", "geometry_type", allowed=["Polygon", "MultiPolygon"]),
    clause("valid", "validity", max_invalid_fraction=0.0),
)


def _geojson(tmp_path: Path, features: list[dict[str, Any]]) -> Path:
    path = tmp_path / "batch.geojson"
    path.write_text(json.dumps({"type": "FeatureCollection", "features": features}))
    return path


def _feature(geometry: Any, **props: Any) -> dict[str, Any]:
    return {"type": "Feature", "geometry": geometry, "properties": props}


def _geo_meta(encoding: str, **extra: Any) -> dict[bytes, bytes]:
    meta = {"encoding": encoding, "geometry_types": ["Polygon"], **extra}
    geo = {"version": "1.1.0", "primary_column": "geometry", "columns": {"geometry": meta}}
    return {b"geo": json.dumps(geo).encode()}


def _wkb_parquet(tmp_path: Path, wkb: list[bytes | None], **cols: list[Any]) -> Path:
    path = tmp_path / "wkb.parquet"
    table = pa.table({"geometry": pa.array(wkb, pa.binary()), **cols})
    pq.write_table(table.replace_schema_metadata(_geo_meta("WKB")), path)
    return path


def _native_polygons(tmp_path: Path, rings: list[list[list[float]] | None]) -> Path:
    """GeoArrow ``polygon`` (interleaved xy) of one-ring polygons; None = null geometry."""
    coord = pa.list_(pa.field("xy", pa.float64()), 2)
    typ = pa.list_(pa.field("rings", pa.list_(pa.field("vertices", coord))))
    arr = pa.array([None if r is None else [r] for r in rings], typ)
    path = tmp_path / "native.parquet"
    pq.write_table(pa.table({"geometry": arr}).replace_schema_metadata(_geo_meta("polygon")), path)
    return path


def _decide(path: Path) -> tuple[str, list[str], str]:
    batch = read_batch_file(path, layer="parcels", data_time=T)
    decision = evaluate(batch, [active(CONTRACT)], now=T)
    broken = [c for v in decision.verdicts for c in v.broken]
    return decision.decision, sorted(c.name for c in broken), " ".join(c.message for c in broken)


# -- section 2: no repair before validation ---------------------------------------------


def test_geojson_open_ring_is_carried_as_literal_wkb(tmp_path: Path) -> None:
    path = _geojson(tmp_path, [_feature({"type": "Polygon", "coordinates": [OPEN]})])
    data = read_features(path)
    wkb = data.geometries_wkb[0]
    assert wkb is not None and data.geometry_errors == {}
    assert struct.unpack("<BIII", wkb[:13]) == (1, 3, 1, 4)  # 1 ring of 4 points, not 5
    with pytest.raises(shapely.errors.GEOSException, match=NOT_CLOSED):
        shapely.from_wkb(wkb)


def test_native_open_ring_is_not_closed_by_the_reader(tmp_path: Path) -> None:
    data = read_features(_native_polygons(tmp_path, [OPEN, CLOSED, None]))
    assert data.geometries_wkb[2] is None
    with pytest.raises(shapely.errors.GEOSException, match=NOT_CLOSED):
        shapely.from_wkb(data.geometries_wkb[0])
    closed = shapely.Polygon(CLOSED)
    assert data.geometries_wkb[1] == shapely.to_wkb(closed)  # same bytes as GEOS writes


@pytest.mark.parametrize("encoding", ["geojson", "wkb", "native"])
def test_open_ring_gets_one_verdict_in_every_encoding(tmp_path: Path, encoding: str) -> None:
    if encoding == "geojson":
        polys = [{"type": "Polygon", "coordinates": [r]} for r in (OPEN, CLOSED)]
        path = _geojson(tmp_path, [_feature(p) for p in polys])
    elif encoding == "wkb":
        path = _wkb_parquet(tmp_path, [polygon_wkb([tuple(p) for p in r]) for r in (OPEN, CLOSED)])
    else:
        path = _native_polygons(tmp_path, [OPEN, CLOSED])
    decision, broken, message = _decide(path)
    # validity alone breaks: extent and geometry_type locate and type the ring as written
    assert (decision, broken) == ("quarantined", ["valid"])
    assert (
        f"feature 0: GEOS cannot read the geometry: IllegalArgumentException: {NOT_CLOSED}"
        in message
    )


def test_three_point_ring_is_invalid_not_padded(tmp_path: Path) -> None:
    tri = [[0.0, 0.0], [1.0, 1.0], [0.0, 0.0]]
    path = _geojson(tmp_path, [_feature({"type": "Polygon", "coordinates": [tri]})])
    decision, broken, message = _decide(path)
    assert (decision, broken) == ("quarantined", ["valid"])
    assert "feature 0: Too few points" in message
    native = _decide(_native_polygons(tmp_path, [tri]))
    assert native[:2] == ("quarantined", ["valid"]) and "Too few points" in native[2]


def test_native_dimensions_follow_the_coordinate_field_names(tmp_path: Path) -> None:
    coord = pa.struct([("x", pa.float64()), ("y", pa.float64()), ("m", pa.float64())])
    arr = pa.array([{"x": 1.0, "y": 2.0, "m": 7.0}], coord)
    path = tmp_path / "pm.parquet"
    pq.write_table(pa.table({"geometry": arr}).replace_schema_metadata(_geo_meta("point")), path)
    geom = shapely.from_wkb(read_features(path).geometries_wkb[0])
    assert shapely.has_m(geom) and not shapely.has_z(geom)
    assert shapely.get_coordinates(geom, include_m=True).tolist() == [[1.0, 2.0, 7.0]]


def test_ragged_writer_keeps_duplicates_and_orientation() -> None:
    import numpy as np

    cw = np.array([[0, 0], [0, 1], [0, 1], [1, 1], [1, 0], [0, 0]], dtype=float)  # clockwise
    wkb = ragged_to_wkb("Polygon", cw, [np.array([0, 1]), np.array([0, 6])], "xy")[0]
    assert shapely.get_coordinates(shapely.from_wkb(wkb)).tolist() == cw.tolist()


# -- section 1: one bad feature or column never sinks the file ----------------------------


@pytest.mark.parametrize(
    ("geometry", "reason"),
    [
        ({"type": "Pointy", "coordinates": [1, 2]}, "Unknown geometry type"),
        ({"type": "Polygon", "coordinates": "x"}, "type must be array"),
        ({"type": "LineString", "coordinates": [[1, 2], [3]]}, "not a position"),
        ("POINT (1 2)", "not an object"),
    ],
)
def test_geometry_that_is_no_geometry_is_one_invalid_feature(
    tmp_path: Path, geometry: Any, reason: str
) -> None:
    square = {"type": "Polygon", "coordinates": [CLOSED]}
    path = _geojson(tmp_path, [_feature(square), _feature(geometry)])
    batch = read_batch_file(path, layer="parcels", data_time=T)
    assert batch.feature_count == 2 and batch.geometries_wkb[1] is None
    assert reason in batch.geometry_errors[1]
    facts = BatchFacts(batch)
    assert facts.is_valid.tolist() == [True, False] and not facts.missing[1]
    ((index, text),) = facts.invalid_reasons
    assert index == 1 and text.startswith("unreadable geometry: ") and reason in text


def test_mixed_2d_and_3d_positions_are_refused_not_padded_with_nan(tmp_path: Path) -> None:
    # GEOS's GeoJSON reader pads a 2D position among 3D ones with a NaN Z: the feature was
    # reported as a "LineString Z" with a "non-finite coordinate" (a fresh-user finding)
    mixed = {"type": "LineString", "coordinates": [[0, 0], [1, 1, 5]]}
    line_z = {"type": "LineString", "coordinates": [[0, 0, 1], [1, 1, 5]]}
    path = _geojson(tmp_path, [_feature(line_z), _feature(mixed)])
    batch = read_batch_file(path, layer="roads", data_time=T)
    assert batch.geometries_wkb[1] is None
    assert batch.geometry_errors == {1: "positions of [2, 3] numbers mixed in one LineString"}
    assert shapely.from_wkb(batch.geometries_wkb[0]).equals(
        shapely.from_geojson(json.dumps(line_z))
    )
    facts = BatchFacts(batch)
    assert facts.is_valid.tolist() == [True, False]
    assert facts.invalid_reasons == (
        (1, "unreadable geometry: positions of [2, 3] numbers mixed in one LineString"),
    )


def test_a_nan_z_written_in_the_json_is_not_json(tmp_path: Path) -> None:
    # RFC 8259 section 6: NaN is not a JSON number; the file is bad input, the path named
    path = tmp_path / "nan.geojson"
    path.write_text(
        '{"type": "FeatureCollection", "features": [{"type": "Feature", "properties": {}, '
        '"geometry": {"type": "Point", "coordinates": [1, 2, NaN]}}]}'
    )
    with pytest.raises(
        NotStrictJson, match=r"at features\[0\]\.geometry\.coordinates\[2\]: NaN is not"
    ):
        read_batch_file(path, layer="wells", data_time=T)


def test_geojson_to_wkb_refuses_what_wkb_cannot_hold() -> None:
    with pytest.raises(ValueError, match="mixed in one LineString"):
        geojson_to_wkb({"type": "LineString", "coordinates": [[0, 0], [1, 1, 1]]})
    point_z = geojson_to_wkb({"type": "Point", "coordinates": [1, 2, 3]})
    assert shapely.from_wkb(point_z).equals(shapely.Point(1, 2, 3))
    empty = shapely.from_wkb(geojson_to_wkb({"type": "Point", "coordinates": []}))
    assert empty.is_empty


def test_mixed_property_is_read_as_text_with_the_mix_recorded(tmp_path: Path) -> None:
    pts = [_feature({"type": "Point", "coordinates": [i, i]}, note=v) for i, v in enumerate(
        [42, "see survey", None, True])]  # fmt: skip
    batch = read_batch_file(_geojson(tmp_path, pts), layer="parcels", data_time=T)
    assert batch.attributes.column("note").to_pylist() == ["42", "see survey", None, "true"]
    assert [(f.name, f.type, f.nullable) for f in batch.schema_fields] == [("note", "mixed", True)]
    ungoverned = contract_of(clause("valid", "validity"))
    assert evaluate(batch, [active(ungoverned)], now=T).decision == "admitted"
    governed = contract_of(
        clause("schema", "schema", fields=[{"name": "note", "type": "string", "nullable": True}])
    )
    decision = evaluate(batch, [active(governed)], now=T)
    (result,) = decision.verdicts[0].broken
    assert decision.decision == "quarantined" and result.name == "schema"
    assert "field 'note' mixes value types (boolean, integer, string), read as text" in (
        result.message
    )


def _gpkg_with(tmp_path: Path, values: pa.Array, stored: object) -> Path:
    """A GeoPackage whose column ``note`` (typed from ``values``) has row 2 given the value
    ``stored`` as SQLite stores it (dynamic typing: a column's declared type does not bind
    the value's storage class; GeoPackage 1.3 section 1.1.1.1.3 requires that it match)."""
    import sqlite3

    pyogrio = pytest.importorskip("pyogrio")
    points = [shapely.Point(i, i).wkb for i in range(len(values))]
    path = tmp_path / "mixed.gpkg"
    table = pa.table({"code": ["A"] * len(values), "note": values, "geometry": points})
    pyogrio.write_arrow(table, path, driver="GPKG", geometry_name="geometry", layer="b",
                        geometry_type="Point", crs="OGC:CRS84",
                        layer_options={"SPATIAL_INDEX": "NO"})  # fmt: skip
    with sqlite3.connect(path) as con:
        con.execute("UPDATE b SET note = ? WHERE fid = 2", (stored,))
    return path


@pytest.mark.parametrize(
    ("values", "stored", "as_text", "kinds"),
    [
        (pa.array([1, 2, 3]), "seven", ["1", "seven", "3"], "integer, string"),
        (pa.array([1, 2, 3]), 2.5, ["1", "2.5", "3"], "double, integer"),
        (pa.array([1.5, 2.5, 3.5]), "n/a", ["1.5", "n/a", "3.5"], "double, string"),
        (pa.array([True, False, True]), "maybe", ["true", "maybe", "true"], "boolean, string"),
        (pa.array([1, 2, 3]), b"\x07", ["1", "X'07'", "3"], "blob, integer"),
        (pa.array(["a", "b", "c"]), b"\x07", ["a", "X'07'", "c"], "blob, string"),
    ],
    ids=["int-text", "int-real", "real-text", "bool-text", "int-blob", "text-blob"],
)
def test_a_geopackage_value_of_another_type_than_its_column_is_read_as_mixed(
    tmp_path: Path, values: pa.Array, stored: object, as_text: list[str], kinds: str
) -> None:
    """N05 kind through the GeoPackage reader: GDAL coerces a value whose storage class
    differs from its column's type ('seven' in an INTEGER column reads as 0, 2.5 as 2), so
    a clause judged a value the file does not hold. The column is read as text with the mix
    recorded, as a GeoJSON property mixing types is: ungoverned it passes, governed the
    schema clause names the mix."""
    batch = read_batch_file(_gpkg_with(tmp_path, values, stored), layer="parcels", data_time=T)
    assert batch.attributes.column("note").to_pylist() == as_text
    assert batch.attributes.column("code").to_pylist() == ["A", "A", "A"]  # the others stay
    ungoverned = contract_of(clause("valid", "validity"))
    assert evaluate(batch, [active(ungoverned)], now=T).decision == "admitted"
    want = {"int64": "integer", "double": "double", "bool": "boolean", "string": "string"}
    field = [{"name": "note", "type": want[str(values.type)]}]
    decision = evaluate(batch, [active(contract_of(clause("schema", "schema", fields=field,
                                                          allow_extra=True)))], now=T)  # fmt: skip
    (result,) = decision.verdicts[0].broken
    assert f"field 'note' mixes value types ({kinds}), read as text" in result.message


def _shapefile_with(tmp_path: Path, values: pa.Array, stored: bytes) -> Path:
    """A shapefile whose numeric DBF field ``note`` (typed from ``values``) has row 1's
    bytes replaced by ``stored`` (right-aligned, as a producer's tool may leave them)."""
    pyogrio = pytest.importorskip("pyogrio")
    path = tmp_path / "mixed.shp"
    table = pa.table({"note": values, "geometry": [shapely.Point(i, i).wkb for i in range(3)]})
    pyogrio.write_arrow(table, path, driver="ESRI Shapefile", geometry_name="geometry",
                        geometry_type="Point", crs="OGC:CRS84")  # fmt: skip
    dbf = bytearray(path.with_suffix(".dbf").read_bytes())
    start, size = int.from_bytes(dbf[8:10], "little"), int.from_bytes(dbf[10:12], "little")
    at = start + size + 1  # row 1, after its deletion flag
    dbf[at : at + size - 1] = stored.rjust(size - 1)
    path.with_suffix(".dbf").write_bytes(bytes(dbf))
    return path


@pytest.mark.parametrize(
    ("values", "stored", "as_text", "kinds", "field_type"),
    [
        (pa.array([111, 222, 333]), b"sev", ["111", "sev", "333"], "integer, string", "integer"),
        (pa.array([1.5, 2.5, 3.5]), b"n/a", ["1.5", "n/a", "3.5"], "double, string", "double"),
    ],
    ids=["int-text", "real-text"],
)
def test_a_dbf_number_field_holding_text_is_read_as_mixed(
    tmp_path: Path, values: pa.Array, stored: bytes, as_text: list[str], kinds: str,
    field_type: str,
) -> None:  # fmt: skip
    """N05 kind through the shapefile reader: GDAL reads text in a numeric DBF field as 0
    (and passed a non-nullable number field); it is read as text, the mix recorded."""
    batch = read_batch_file(_shapefile_with(tmp_path, values, stored), layer="p", data_time=T)
    assert batch.attributes.column("note").to_pylist() == as_text
    assert evaluate(batch, [active(contract_of(clause("v", "validity")))], now=T).admitted
    field = [{"name": "note", "type": field_type}]
    governed = contract_of(clause("schema", "schema", fields=field, allow_extra=True))
    (result,) = evaluate(batch, [active(governed)], now=T).verdicts[0].broken
    assert f"field 'note' mixes value types ({kinds}), read as text" in result.message
    blank = read_batch_file(_shapefile_with(tmp_path, values, b""), layer="p", data_time=T)
    assert blank.attributes.column("note").null_count == 1  # blank is null, as GDAL reads it


def test_struct_bbox_column_of_a_geoparquet_1_0_file_is_an_extra_field(tmp_path: Path) -> None:
    bbox = pa.array(
        [{"xmin": 10.0, "ymin": 50.0, "xmax": 10.0, "ymax": 50.0}],
        pa.struct([(k, pa.float64()) for k in ("xmin", "ymin", "xmax", "ymax")]),
    )
    path = tmp_path / "v10.parquet"
    meta = {"version": "1.0.0", "primary_column": "geometry",
            "columns": {"geometry": {"encoding": "WKB", "geometry_types": ["Point"]}}}  # fmt: skip
    table = pa.table({"geometry": [shapely.to_wkb(shapely.Point(10, 50))], "name": ["a"],
                      "bbox": bbox, "tags": pa.array([["x", "y"]])})  # fmt: skip
    pq.write_table(table.replace_schema_metadata({b"geo": json.dumps(meta).encode()}), path)
    batch = read_batch_file(path, layer="parcels", data_time=T)
    assert [(f.name, f.type) for f in batch.schema_fields] == [
        ("name", "string"),
        ("bbox", "struct"),
        ("tags", "list"),
    ]
    fields = [{"name": "name", "type": "string"}]
    extra = contract_of(clause("schema", "schema", fields=fields, allow_extra=True))
    assert evaluate(batch, [active(extra)], now=T).decision == "admitted"
    named = [*fields, {"name": "bbox", "type": "struct"}, {"name": "tags", "type": "list"}]
    exact = contract_of(clause("schema", "schema", fields=named))
    assert evaluate(batch, [active(exact)], now=T).decision == "admitted"
    strict = contract_of(clause("schema", "schema", fields=fields))
    (broken,) = evaluate(batch, [active(strict)], now=T).verdicts[0].broken
    assert broken.measured["problems"] == ["extra field 'bbox'", "extra field 'tags'"]


def test_derive_schema_names_every_arrow_type() -> None:
    from decimal import Decimal

    table = pa.table(
        {
            "dec": pa.array([Decimal("1.50")], pa.decimal128(5, 2)),
            "t": pa.array([3600], pa.time32("s")),
            "dur": pa.array([5], pa.duration("s")),
            "m": pa.array([[("k", 1)]], pa.map_(pa.string(), pa.int64())),
            "fsl": pa.array([[1, 2]], pa.list_(pa.int64(), 2)),
            "u": pa.UnionArray.from_sparse(
                pa.array([0], pa.int8()), [pa.array([1]), pa.array(["a"])]
            ),
        }
    )
    assert [f.type for f in derive_schema(table)] == [
        "decimal",
        "time",
        "duration",
        "map",
        "list",
        "other",
    ]


NAN = float("nan")


@pytest.mark.parametrize(
    ("geometry", "where"),
    [
        ({"type": "Point", "coordinates": [NAN, NAN]}, "coordinates[0]"),
        ({"type": "Point", "coordinates": [NAN, NAN, NAN]}, "coordinates[0]"),
        ({"type": "MultiPoint", "coordinates": [[1.0, 2.0], [NAN, NAN]]}, "coordinates[1][0]"),
        (
            {
                "type": "GeometryCollection",
                "geometries": [{"type": "Point", "coordinates": [NAN, NAN]}],
            },
            "geometries[0].coordinates[0]",
        ),
        ({"type": "LineString", "coordinates": [[NAN, NAN], [1.0, 1.0]]}, "coordinates[0][0]"),
    ],
    ids=["point", "point-z", "multipoint", "in-a-collection", "line-vertex"],
)
def test_a_nan_in_a_geojson_position_makes_the_file_bad_input(
    tmp_path: Path, geometry: dict[str, Any], where: str
) -> None:
    # WKB writes POINT EMPTY as NaN coordinates: [NaN, NaN] became an empty point, valid,
    # admitted under allow_empty (a fresh-user finding); JSON has no NaN (RFC 8259
    # section 6), so the file is refused with the first NaN's path
    path = _geojson(
        tmp_path, [_feature({"type": "Point", "coordinates": [1.0, 2.0]}), _feature(geometry)]
    )
    with pytest.raises(NotStrictJson) as info:
        read_batch_file(path, layer="parcels")
    assert f"at features[1].geometry.{where}: NaN is not a JSON number" in str(info.value)


def test_an_empty_geojson_point_stays_empty(tmp_path: Path) -> None:
    empty = {"type": "Point", "coordinates": []}
    line = {"type": "LineString", "coordinates": [[0.0, 0.0], [1.0, 1.0]]}
    batch = read_batch_file(_geojson(tmp_path, [_feature(line), _feature(empty)]), layer="parcels")
    assert batch.geometry_errors == {}
    facts = BatchFacts(batch)
    assert facts.invalid_reasons == ()
    assert facts.is_empty.tolist() == [False, True]


@pytest.mark.parametrize(
    "geometry",
    [
        {"type": "Point", "coordinates": [1.5, -2.0]},
        {"type": "Point", "coordinates": []},
        {"type": "Point", "coordinates": [1.0, 2.0, 3.0]},
        {"type": "LineString", "coordinates": [[0.0, 0.0], [1.0, 1.0]]},
        {"type": "Polygon", "coordinates": [OPEN, CLOSED]},
        {"type": "Polygon", "coordinates": [[[0.0, 0.0], [1.0, 1.0], [0.0, 0.0]]]},
        {"type": "MultiPoint", "coordinates": [[1.0, 2.0], [3.0, 4.0]]},
        {"type": "MultiPolygon", "coordinates": [[OPEN], [CLOSED]]},
        {
            "type": "GeometryCollection",
            "geometries": [{"type": "Point", "coordinates": [1.0, 2.0]}],
        },
    ],
    ids=lambda g: g["type"],
)
def test_wkb_read_back_literally_gives_the_geojson_written(geometry: dict[str, Any]) -> None:
    from worker.io.formats.wkb_writer import wkb_to_geojson

    assert wkb_to_geojson(geojson_to_wkb(geometry)) == geometry


def test_wkb_read_back_takes_ewkb_big_endian_and_m_and_refuses_what_it_cannot_write() -> None:
    from worker.io.formats.wkb_writer import wkb_to_geojson

    square = shapely.box(0, 0, 1, 1)
    want = json.loads(shapely.to_geojson(square))
    want["coordinates"] = [[list(map(float, p)) for p in ring] for ring in want["coordinates"]]
    ewkb = shapely.to_wkb(shapely.set_srid(square, 3857), include_srid=True, byte_order=0)
    assert wkb_to_geojson(ewkb) == want
    xym = shapely.to_wkb(shapely.from_wkt("POINT M (1 2 3)"), flavor="iso")
    assert wkb_to_geojson(xym) == {"type": "Point", "coordinates": [1.0, 2.0]}  # no M
    nan_vertex = polygon_wkb([(0.0, 0.0), (1.0, float("nan")), (1.0, 0.0), (0.0, 0.0)])
    nested = struct.pack("<BII", 1, 7, 1) * 40 + struct.pack("<BII", 1, 7, 0)
    curve = struct.pack("<BII", 1, 8, 0)  # CircularString
    count_past = struct.pack("<BII", 1, 2, 1_000_000) + b"\x00" * 16
    for bad in (nan_vertex, nested, curve, count_past, geojson_to_wkb(CLOSED_POLY) + b"\x00"):
        assert wkb_to_geojson(bad) is None


CLOSED_POLY = {"type": "Polygon", "coordinates": [CLOSED]}
