"""A GeoPackage geometry blob's header is the file's statement about one feature, read
beside GDAL (``worker/io/formats/gpkg_blobs.py``; GeoPackage 1.3, 2.1.3.1.1): EWKB after
the header, an SRS id other than the layer's, an empty flag on a shape and a blob that is
not a GeoPackage geometry make that feature unreadable with the reason; an envelope that
does not bound its geometry is reported by the extent clause without breaking it (as a
GeoParquet bbox covering column is). Every variant of the header is read: both byte
orders, envelope kinds 0-4, the empty flag. GDAL read all of them silently before."""

from __future__ import annotations

import contextlib
import io
import json
import math
import sqlite3
import struct
from pathlib import Path

import pyarrow as pa
import pytest
import shapely

from worker.cli.main import main

pyogrio = pytest.importorskip("pyogrio")

CONTRACT = """layer: parcels
version: v1
cadence: P1D
objective: 0.99
owner: tests
changelog: GeoPackage blobs
clauses:
  - {name: srid, kind: crs, expect: "EPSG:4326"}
  - {name: types, kind: geometry_type, allowed: [Point, Polygon], allow_empty: true}
  - {name: ext, kind: extent, region: [-180, -90, 180, 90], min_fraction_inside: 1.0}
  - {name: valid, kind: validity, max_invalid_fraction: 0.0}
"""
AT = 2  # the row whose blob is written by the test, among GDAL's
SHAPE = shapely.Polygon([(10, 20), (11, 20), (11, 22), (10, 20)])
KINDS = [0, 1, 2, 3, 4]  # envelope contents indicator: none, XY, XYZ, XYM, XYZM


def _blob(
    wkb: bytes,
    *,
    kind: int,
    little: bool,
    srs_id: int = 4326,
    empty: bool = False,
    box: tuple[float, float, float, float] | None = None,  # (xmin, xmax, ymin, ymax)
) -> bytes:
    order = "<" if little else ">"
    flags = (0x10 if empty else 0) | kind << 1 | int(little)
    if box is None:
        x0, y0, x1, y1 = shapely.bounds(shapely.from_wkb(wkb)).tolist()
        box = (x0, x1, y0, y1)
    extra = {0: (), 1: (), 2: (0.0, 0.0), 3: (0.0, 0.0), 4: (0.0, 0.0, 0.0, 0.0)}[kind]
    envelope = (*box, *extra) if kind else ()
    return (
        b"GP\x00"
        + bytes([flags])
        + struct.pack(f"{order}i{len(envelope)}d", srs_id, *envelope)
        + wkb
    )


def _gpkg(tmp: Path, blob: bytes) -> Path:
    geoms = [shapely.Point(i, i / 2) for i in range(5)]
    path = tmp / "batch.gpkg"
    pyogrio.write_arrow(
        pa.table({"name": [f"f{i}" for i in range(5)],
                  "geom": pa.array(shapely.to_wkb(geoms).tolist(), pa.binary())}),
        path, driver="GPKG", geometry_name="geom", geometry_type="Unknown", crs="EPSG:4326",
        layer="batch", layer_options={"SPATIAL_INDEX": "NO"},
    )  # fmt: skip
    with sqlite3.connect(path) as con:
        con.execute("UPDATE batch SET geom = ? WHERE name = ?", (blob, f"f{AT}"))
    return path


def _check(tmp: Path, blob: bytes) -> dict:  # type: ignore[type-arg]
    contract = tmp / "contract.yaml"
    contract.write_text(CONTRACT)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        main(["check", str(_gpkg(tmp, blob)), "--contract", str(contract), "--format",
              "json", "--id-column", "name", "--now", "2024-06-01T12:00:00Z"])  # fmt: skip
    doc: dict = json.loads(out.getvalue())  # type: ignore[type-arg]
    return doc


def _verdict(doc: dict) -> tuple[str, set[str], list[tuple[int, str, str]]]:  # type: ignore[type-arg]
    clauses = {c["name"]: c for c in doc["versions"][0]["clauses"]}
    offenders = clauses["valid"].get("offenders", {}).get("features", [])
    return (
        doc["decision"],
        {n for n, c in clauses.items() if c["result"] == "break"},
        [(o["index"], o["id"], o["value"]) for o in offenders],
    )


def _ext(doc: dict) -> dict:  # type: ignore[type-arg]
    return {c["name"]: c for c in doc["versions"][0]["clauses"]}["ext"]  # type: ignore[no-any-return]


@pytest.mark.parametrize("little", [True, False], ids=["le", "be"])
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("wkb_order", [1, 0], ids=["ndr", "xdr"])
def test_a_sound_blob_of_every_variant_is_read_as_written(
    kind: int, little: bool, wkb_order: int, tmp_path: Path
) -> None:
    doc = _check(tmp_path, _blob(shapely.to_wkb(SHAPE, byte_order=wkb_order), kind=kind,
                                 little=little))  # fmt: skip
    assert _verdict(doc) == ("admitted", set(), [])
    assert "covering_bbox_disagrees" not in _ext(doc)["measured"]
    assert _ext(doc)["measured"]["bounds"] == [0.0, 0.0, 11.0, 22.0]  # the shape was read


@pytest.mark.parametrize("little", [True, False], ids=["le", "be"])
@pytest.mark.parametrize("kind", KINDS)
def test_an_empty_geometry_flagged_empty_is_read_as_written(
    kind: int, little: bool, tmp_path: Path
) -> None:
    """GeoPackage writes an empty geometry's envelope as NaN (GDAL: kind 0 or 1)."""
    nan = (math.nan,) * 4
    blob = _blob(shapely.to_wkb(shapely.Polygon()), kind=kind, little=little, empty=True,
                 box=nan)  # fmt: skip
    doc = _check(tmp_path, blob)
    assert _verdict(doc) == ("admitted", set(), [])
    assert "covering_bbox_disagrees" not in _ext(doc)["measured"]


def _ewkb(flags: int, srid: bool) -> bytes:
    """SHAPE as big-endian PostGIS EWKB with ``flags`` (Z 0x80000000, M 0x40000000) set
    on its type code and, with ``srid``, the SRID flag and 4326 after it."""
    dims = 2 + bool(flags & 0x80000000) + bool(flags & 0x40000000)
    coords = [c for x, y in SHAPE.exterior.coords for c in (x, y, *[0.0] * (dims - 2))]
    code = 3 | flags | (0x20000000 if srid else 0)
    head = struct.pack(">BI", 0, code) + (struct.pack(">I", 4326) if srid else b"")
    return head + struct.pack(f">II{len(coords)}d", 1, len(coords) // dims, *coords)


_FAULTS: dict[str, tuple[dict, str]] = {  # type: ignore[type-arg]
    "ewkb-srid": (
        {"wkb": _ewkb(0, srid=True)},
        "the GeoPackage blob holds EWKB (type code 0x20000003, the EWKB SRID flag): "
        "GeoPackage stores ISO WKB after its header (type code 3)",
    ),
    "ewkb-z-srid": (
        {"wkb": _ewkb(0x80000000, srid=True)},
        "the GeoPackage blob holds EWKB (type code 0xa0000003, the EWKB SRID and Z flags): "
        "GeoPackage stores ISO WKB after its header (type code 1003)",
    ),
    "ewkb-m": (
        {"wkb": _ewkb(0x40000000, srid=False)},
        "the GeoPackage blob holds EWKB (type code 0x40000003, the EWKB M flag): "
        "GeoPackage stores ISO WKB after its header (type code 2003)",
    ),
    "ewkb-zm-srid": (
        {"wkb": _ewkb(0xC0000000, srid=True)},
        "the GeoPackage blob holds EWKB (type code 0xe0000003, the EWKB SRID and M and Z "
        "flags): GeoPackage stores ISO WKB after its header (type code 3003)",
    ),
    "srs-of-another-crs": (
        {"srs_id": 4267},
        "its GeoPackage blob header states SRS id 4267 in a layer of SRS id 4326 "
        "(gpkg_geometry_columns): the layer's CRS does not locate it",
    ),
    "srs-undefined": (
        {"srs_id": 0},
        "its GeoPackage blob header states SRS id 0 in a layer of SRS id 4326 "
        "(gpkg_geometry_columns): the layer's CRS does not locate it",
    ),
    "empty-flag-on-a-shape": (
        {"empty": True},
        "its GeoPackage blob header flags it empty but its WKB has coordinates (a reader "
        "trusting the flag sees nothing)",
    ),
}


@pytest.mark.parametrize("little", [True, False], ids=["le", "be"])
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("fault", list(_FAULTS))
def test_a_blob_stating_what_the_layer_cannot_read_is_that_features_finding(
    fault: str, kind: int, little: bool, tmp_path: Path
) -> None:
    given, reason = dict(_FAULTS[fault][0]), _FAULTS[fault][1]
    wkb = given.pop("wkb", shapely.to_wkb(SHAPE))
    box = (10.0, 11.0, 20.0, 22.0)
    blob = _blob(wkb, kind=kind, little=little, box=box, **given)
    # unreadable as the file states it: untyped and unlocated too (as a WKB value refused
    # before parsing), the rest of the layer judged as usual
    assert _verdict(_check(tmp_path, blob)) == (
        "quarantined",
        {"valid", "types", "ext"},
        [(AT, f"f{AT}", f"unreadable geometry: {reason}")],
    )


@pytest.mark.parametrize("little", [True, False], ids=["le", "be"])
@pytest.mark.parametrize("kind", KINDS)
def test_the_2_5d_z_flag_alone_is_read_as_z(kind: int, little: bool, tmp_path: Path) -> None:
    """``0x80000000`` is EWKB's Z flag and the pre-ISO 2.5D code every reader reads (and
    shapely 2's default): the Polygon Z is read, and only its type is out of contract."""
    doc = _check(tmp_path, _blob(_ewkb(0x80000000, srid=False), kind=kind, little=little))
    clauses = {c["name"]: c for c in doc["versions"][0]["clauses"]}
    assert _verdict(doc) == ("quarantined", {"types"}, [])
    assert clauses["types"]["offenders"]["features"] == [
        {"index": AT, "id": f"f{AT}", "value": "Polygon Z"}
    ]


@pytest.mark.parametrize("little", [True, False], ids=["le", "be"])
@pytest.mark.parametrize("kind", KINDS[1:])
@pytest.mark.parametrize(
    "box",
    [(50.0, 60.0, 50.0, 60.0), (10.0, 11.0, 20.0, 21.0), (10.5, 11.0, 20.0, 22.0)],
    ids=["elsewhere", "short-in-y", "short-in-x"],
)
def test_an_envelope_that_does_not_bound_its_geometry_is_reported_not_broken(
    box: tuple[float, float, float, float], kind: int, little: bool, tmp_path: Path
) -> None:
    doc = _check(tmp_path, _blob(shapely.to_wkb(SHAPE), kind=kind, little=little, box=box))
    assert _verdict(doc) == ("admitted", set(), [])
    ext = _ext(doc)
    assert ext["measured"]["covering_bbox_disagrees"] == 1
    assert ext["message"].endswith(
        "; warning: the GeoPackage geometry header envelope does not bound 1 feature "
        f"(index {AT}): readers filtering by it would skip them"
    )


@pytest.mark.parametrize(
    ("blob", "reason"),
    [
        (
            b"XY" + _blob(shapely.to_wkb(SHAPE), kind=1, little=True)[2:],
            "not a GeoPackage geometry blob (it does not start with 'GP')",
        ),
        (
            _blob(shapely.to_wkb(SHAPE), kind=1, little=True)[:30],
            "GeoPackage geometry blob of 30 bytes: its header (envelope kind 1) and a WKB "
            "header need 45",
        ),
    ],
    ids=["no-magic", "short"],
)
def test_a_blob_that_is_no_geopackage_geometry_says_so(
    blob: bytes, reason: str, tmp_path: Path
) -> None:
    """GDAL reads it as null ("missing geometry" before)."""
    assert _verdict(_check(tmp_path, blob)) == (
        "quarantined",
        {"valid", "types", "ext"},
        [(AT, f"f{AT}", f"unreadable geometry: {reason}")],
    )


def test_the_other_features_keep_their_rows(tmp_path: Path) -> None:
    """The findings are aligned by fid, not by position: a layer whose rows were deleted
    and inserted out of order still names the right feature."""
    path = _gpkg(tmp_path, _blob(shapely.to_wkb(SHAPE), kind=1, little=True, srs_id=4267))
    with sqlite3.connect(path) as con:
        con.execute("DELETE FROM batch WHERE name = 'f0'")
        row = con.execute("SELECT name, geom FROM batch WHERE name = 'f1'").fetchone()
        con.execute("DELETE FROM batch WHERE name = 'f1'")
        con.execute("INSERT INTO batch (fid, name, geom) VALUES (99, ?, ?)", row)
    from worker.io.formats.ogr import read_ogr

    data = read_ogr(path, "GPKG")
    names = data.attributes.column("name").to_pylist()
    assert "fid" not in data.attributes.column_names
    bad = names.index(f"f{AT}")
    assert list(data.geometry_errors) == [bad]
    assert [g is None for g in data.geometries_wkb] == [i == bad for i in range(len(names))]
    # a point's blob states no envelope (GDAL writes none): its bounds stand for it
    assert data.covering_bbox[names.index("f1")] == (1.0, 0.5, 1.0, 0.5)  # type: ignore[index]
    assert data.covering_bbox[bad] is None  # type: ignore[index]


@pytest.mark.parametrize("least", [16, 10**9], ids=["polygons-path", "general-path"])
def test_an_envelope_among_many_polygons_is_compared_on_either_path(
    least: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The facts' bounds of the plain polygons' path (no GEOS) and GEOS's agree: one
    envelope that does not bound its box, among 30 that GDAL wrote, is found by both."""
    from worker.core.facts import polygons_mixed

    monkeypatch.setattr(polygons_mixed, "POLYGONS_WITHOUT_GEOMETRIES_MIN", least)
    boxes = [shapely.box(i, 0, i + 0.5, 1) for i in range(30)]
    path = tmp_path / "boxes.gpkg"
    pyogrio.write_arrow(
        pa.table({"name": [f"f{i}" for i in range(30)],
                  "geom": pa.array(shapely.to_wkb(boxes).tolist(), pa.binary())}),
        path, driver="GPKG", geometry_name="geom", geometry_type="Polygon", crs="EPSG:4326",
        layer="batch", layer_options={"SPATIAL_INDEX": "NO"},
    )  # fmt: skip
    with sqlite3.connect(path) as con:
        con.execute("UPDATE batch SET geom = ? WHERE name = 'f7'",
                    (_blob(shapely.to_wkb(boxes[7]), kind=1, little=True,
                           box=(7.0, 7.25, 0.0, 1.0)),))  # fmt: skip
    contract = tmp_path / "contract.yaml"
    contract.write_text(CONTRACT)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        main(["check", str(path), "--contract", str(contract), "--format", "json",
              "--now", "2024-06-01T12:00:00Z"])  # fmt: skip
    ext = _ext(json.loads(out.getvalue()))
    assert ext["measured"]["covering_bbox_disagrees"] == 1
    assert "does not bound 1 feature (index 7)" in ext["message"]
