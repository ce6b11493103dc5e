"""A WKB value with bytes after the end of its geometry is invalid, in every way WKB reaches
a batch and on every path that turns it into facts (``worker/core/facts/wkb_end.py``).

GEOS's reader stops where the geometry ends (``POINT (1 2)`` + ``b"junk"`` reads as
``POINT (1 2)``); PostGIS, GDAL and DuckDB refuse such a value. Each such feature breaks
the validity clause with its own reason; its valid neighbours pass; the file is never
refused as a whole. The other clauses still see the geometry GEOS read (it is typed and
located: the geometry_type and extent clauses here pass).
"""

from __future__ import annotations

import dataclasses
import json
import sqlite3
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import shapely
import shapely.affinity
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.catalogue import NOW, active, batch_of, clause, contract_of
from worker.core.chunks import evaluate_chunked
from worker.core.evaluate import evaluate
from worker.core.evaluate_group import evaluate_group
from worker.core.facts import polygons_mixed
from worker.core.facts.batch import BatchFacts
from worker.core.facts.points_mixed import MixedPoints
from worker.core.facts.polygons_mixed import MixedPolygons
from worker.core.facts.wkb_check import wkb_problem, wkb_survey
from worker.core.facts.wkb_end import size_suspects, wkb_lengths
from worker.core.facts.wkb_header import wkb_headers
from worker.core.model import Batch, Decision

KINDS = {
    "point": shapely.Point(1.0, 2.0),
    "linestring": shapely.LineString([(0, 0), (1, 1), (2, 0)]),
    "polygon": shapely.Polygon(
        [(0, 0), (10, 0), (10, 10), (0, 10), (0, 0)], [[(2, 2), (2, 4), (4, 4), (4, 2), (2, 2)]]
    ),
    "multipolygon": shapely.MultiPolygon([shapely.box(0, 0, 1, 1), shapely.box(2, 2, 3, 3)]),
    "collection": shapely.GeometryCollection(
        [shapely.Point(5, 5), shapely.LineString([(0, 0), (1, 1)]), shapely.box(0, 0, 1, 1)]
    ),
}
ALLOWED = ["Point", "LineString", "Polygon", "MultiPolygon", "GeometryCollection"]
CONTRACT = contract_of(
    clause("types", "geometry_type", allowed=ALLOWED),
    clause("ext", "extent", region=[-180.0, -90.0, 180.0, 90.0], min_fraction_inside=1.0),
    clause("valid", "validity", max_invalid_fraction=0.0),
)
CONTRACT_YAML = """layer: parcels
version: v1
cadence: P1D
objective: 0.99
owner: tests
changelog: trailing bytes
clauses:
  - {name: types, kind: geometry_type, allowed: [ALLOWED]}
  - {name: ext, kind: extent, region: [-180, -90, 180, 90], min_fraction_inside: 1.0}
  - {name: valid, kind: validity, max_invalid_fraction: 0.0}
""".replace("ALLOWED", ", ".join(ALLOWED))
#: Where the bad feature sits among its valid neighbours.
AT = 2


def _wkb(geom: shapely.Geometry, encoding: str) -> bytes:
    if encoding == "ewkb":  # PostGIS extended WKB, big-endian, SRID 4326 after the type
        return bytes(
            shapely.to_wkb(
                shapely.set_srid(geom, 4326), byte_order=0, flavor="extended", include_srid=True
            )
        )
    return bytes(shapely.to_wkb(geom, byte_order=1 if encoding == "ndr" else 0))


def _reason(size: int, extra: int) -> str:
    unit = "byte" if extra == 1 else "bytes"
    end = f"(it ends at byte {size} of {size + extra})"
    return f"{extra} {unit} after the end of the WKB geometry {end}"


def _neighbours(n: int) -> list[bytes]:
    """``n`` valid values: every kind, both byte orders, in turn."""
    pool = [_wkb(g, e) for e in ("ndr", "xdr", "ewkb") for g in KINDS.values()]
    return [pool[i % len(pool)] for i in range(n)]


def _values(bad: bytes, path: str) -> list[bytes]:
    if path == "points-path":  # plain 2D points around it: the points path's batch
        plain = [_wkb(shapely.Point(i, i / 2), "ndr") for i in range(70)]
        return [*plain[:AT], bad, *plain[AT:]]
    if path == "polygons-path":  # star-shaped one-ring polygons around it
        boxes = [_wkb(shapely.box(i, 0, i + 1, 1), "ndr") for i in range(20)]
        return [*boxes[:AT], bad, *boxes[AT:]]
    return [*_neighbours(AT), bad, *_neighbours(4)]


def _batch(values: list[bytes]) -> Batch:
    names = pa.table({"name": [f"f{i}" for i in range(len(values))]})
    return dataclasses.replace(batch_of(values, attributes=names), id_column="name")  # type: ignore[arg-type]


def _check(tmp: Path, path: Path, *extra: str) -> dict[str, object]:
    from worker.cli.main import main

    contract = tmp / "contract.yaml"
    contract.write_text(CONTRACT_YAML)
    import contextlib
    import io

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        main(["check", str(path), "--contract", str(contract), "--format", "json",
              "--id-column", "name", "--now", "2024-06-01T12:00:00Z", *extra])  # fmt: skip
    return json.loads(out.getvalue())


def _geoparquet(tmp: Path, values: list[bytes], row_group: int | None = None) -> Path:
    geo = {"version": "1.1.0", "primary_column": "geometry",
           "columns": {"geometry": {"encoding": "WKB", "geometry_types": []}}}  # fmt: skip
    table = pa.table({
        "name": [f"f{i}" for i in range(len(values))],
        "geometry": pa.array(values, pa.binary()),
    }).replace_schema_metadata({"geo": json.dumps(geo)})  # fmt: skip
    path = tmp / "batch.parquet"
    pq.write_table(table, path, row_group_size=row_group)
    return path


def _gpkg(tmp: Path, values: list[bytes]) -> Path:
    """A GeoPackage of ``values``, written valid by GDAL, then the bad one's blob given its
    bytes (GeoPackage header, then the WKB) as a producer's tool would leave them."""
    from pyogrio.raw import write

    # the bad row is written as its first neighbour, then given its bytes (GDAL may refuse
    # or warn about the bad value itself: a collection of mixed dimensions)
    good = [v if len(v) == len(shapely.to_wkb(shapely.from_wkb(v))) else shapely.from_wkb(v).wkb
            for v in [*values[:AT], values[0], *values[AT + 1 :]]]  # fmt: skip
    path = tmp / "batch.gpkg"
    write(path, geometry=np.array(good, dtype=object), field_data=[np.array(
        [f"f{i}" for i in range(len(values))], dtype=object)], fields=["name"],
        geometry_type="Unknown", crs="EPSG:4326", driver="GPKG", layer="batch",
        layer_options={"SPATIAL_INDEX": "NO"})  # fmt: skip
    with sqlite3.connect(path) as con:
        fid, blob = con.execute(
            "SELECT fid, geom FROM batch WHERE name = ?", (f"f{AT}",)
        ).fetchone()
        flags = blob[3]
        header = 8 + {0: 0, 1: 32, 2: 48, 3: 48, 4: 64}[(flags >> 1) & 7]
        con.execute("UPDATE batch SET geom = ? WHERE fid = ?", (blob[:header] + values[AT], fid))
    return path


def _from_decision(d: Decision) -> tuple[str, set[str], list[tuple[int, object, object]]]:
    clauses = d.verdicts[0].clauses
    valid = {c.name: c for c in clauses}["valid"]
    offenders = valid.offenders.features if valid.offenders else ()
    return (
        d.decision,
        {c.name for c in clauses if c.broke},
        [(o.index, o.id, o.value) for o in offenders],
    )


def _from_json(doc: dict) -> tuple[str, set[str], list[tuple[int, object, object]]]:
    clauses = doc["versions"][0]["clauses"]
    valid = {c["name"]: c for c in clauses}["valid"]
    offenders = valid.get("offenders", {}).get("features", [])
    return (
        doc["decision"],
        {c["name"] for c in clauses if c["result"] == "break"},
        [(o["index"], o["id"], o["value"]) for o in offenders],
    )


def _general(values: list[bytes], tmp: Path, mp: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    return _from_decision(evaluate(_batch(values), [active(CONTRACT)], now=NOW))


def _points(values: list[bytes], tmp: Path, mp: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    facts = BatchFacts(_batch(values))
    if any(len(v) != 21 for v in values):  # the plain points judged without GEOS
        assert isinstance(facts.mixed, MixedPoints)
    return _from_decision(evaluate(facts.batch, [active(CONTRACT)], now=NOW, facts=facts))


def _polygons(values: list[bytes], tmp: Path, mp: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    mp.setattr(polygons_mixed, "POLYGONS_WITHOUT_GEOMETRIES_MIN", 16)
    facts = BatchFacts(_batch(values))
    assert isinstance(facts.mixed, MixedPolygons)  # the star-shaped rings judged without GEOS
    return _from_decision(evaluate(facts.batch, [active(CONTRACT)], now=NOW, facts=facts))


def _events(values: list[bytes], tmp: Path, mp: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    """One-feature events, their facts computed once for the group (SharedFacts)."""
    batches = [_batch([v]) for v in values]
    decisions = evaluate_group(batches, [active(CONTRACT)], now=NOW)
    assert [d.decision for i, d in enumerate(decisions) if i != AT] == ["admitted"] * (
        len(values) - 1
    )
    decision, broken, offenders = _from_decision(decisions[AT])
    return decision, broken, [(AT, f"f{AT}", v) for i, _, v in offenders if i == 0]


def _avro(values: list[bytes], tmp: Path, mp: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    from worker.io.codec.event_writer import encode_batch
    from worker.io.codec.events import batch_from_event, decode_event

    batch = batch_from_event(decode_event(encode_batch(_batch(values))))
    assert batch.geometries_wkb == tuple(values)  # the event carries the bytes as given
    batch = dataclasses.replace(batch, id_column="name")
    return _from_decision(evaluate(batch, [active(CONTRACT)], now=NOW))


def _parquet_check(values: list[bytes], tmp: Path, mp: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    return _from_json(_check(tmp, _geoparquet(tmp, values)))  # streamed, one chunk


def _parquet_whole(values: list[bytes], tmp: Path, mp: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    return _from_json(_check(tmp, _geoparquet(tmp, values), "--offenders", str(tmp / "o.json")))


def _parquet_chunks(values: list[bytes], tmp: Path, mp: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    from worker.io.payloads import read_batch_file_chunked

    path = _geoparquet(tmp, values, row_group=2)
    loaded = read_batch_file_chunked(path, layer="parcels", crs="EPSG:4326", chunk_rows=2)
    decision, broken, offenders = _from_decision(
        evaluate_chunked(loaded, [active(CONTRACT)], now=NOW)  # type: ignore[arg-type]
    )
    return decision, broken, [(i, f"f{i}", v) for i, _, v in offenders]  # no id column asked


def _geopackage(values: list[bytes], tmp: Path, mp: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    return _from_json(_check(tmp, _gpkg(tmp, values)))


PATHS: dict[str, Callable[..., tuple[str, set[str], list[tuple[int, object, object]]]]] = {
    "general": _general, "points-path": _points, "polygons-path": _polygons,
    "one-feature-events": _events, "avro-event": _avro, "geoparquet-check": _parquet_check,
    "geoparquet-whole": _parquet_whole, "geoparquet-chunks": _parquet_chunks,
    "geopackage": _geopackage,
}  # fmt: skip


@pytest.mark.parametrize("extra", [1, 7])
@pytest.mark.parametrize("encoding", ["ndr", "xdr", "ewkb"])
@pytest.mark.parametrize("kind", list(KINDS))
@pytest.mark.parametrize("path", list(PATHS))
def test_bytes_after_the_geometry_break_validity_for_that_feature_only(
    path: str, kind: str, encoding: str, extra: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if path == "geopackage" and encoding == "ewkb":
        pytest.skip("a GeoPackage blob holds ISO WKB after its own header (its SRID is there)")
    good = _wkb(KINDS[kind], encoding)
    bad = good + b"JUNKJUNK"[:extra]
    values = _values(bad, path)
    decision, broken, offenders = PATHS[path](values, tmp_path, monkeypatch)
    assert decision == "quarantined"
    assert broken == {"valid"}  # typed and located as GEOS read it: those clauses pass
    assert offenders == [(AT, f"f{AT}", _reason(len(good), extra))]
    # the same batch without the bytes after the geometry passes
    values[AT] = good
    assert PATHS[path](values, tmp_path, monkeypatch)[:2] == ("admitted", set())


def test_facts_see_the_geometry_geos_read_and_validity_the_fault() -> None:
    point = shapely.Point(1, 2)
    facts = BatchFacts(batch_of([point, point.wkb + b"junk"]))
    assert facts.is_valid.tolist() == [True, False]
    assert facts.unparseable.tolist() == [False, True]  # coverage leaves it out
    assert facts.parsed.tolist() == [True, True]  # typed and located
    assert facts.type_names.tolist() == ["Point", "Point"]
    assert facts.bounds[1].tolist() == [1.0, 2.0, 1.0, 2.0]
    assert facts.invalid_reasons == ((1, _reason(21, 4)),)
    assert wkb_problem(point.wkb + b"junk") == _reason(21, 4)
    assert wkb_survey(point.wkb + b"junk") == (None, _reason(21, 4))


def _screened(values: list[bytes]) -> list[int]:
    geoms = np.asarray(shapely.from_wkb(np.array(values, dtype=object), on_invalid="ignore"))
    return size_suspects(wkb_lengths(values), geoms, wkb_headers(values)).tolist()


def test_the_screen_may_name_a_sound_value_and_the_walk_decides() -> None:
    import struct

    # a Polygon of one empty ring: GEOS reads POLYGON EMPTY (no ring), 4 bytes fewer
    lone_empty_ring = struct.pack("<BIII", 1, 3, 1, 0)
    values = [lone_empty_ring, shapely.Point(0, 0).wkb]
    assert _screened(values) == [0]
    facts = BatchFacts(batch_of(values))
    assert facts.is_valid.tolist() == [True, True]
    assert wkb_survey(lone_empty_ring) == (None, None)


_COORD = st.floats(-1e6, 1e6, allow_nan=False)
_XY = st.tuples(_COORD, _COORD)


def _measured_text(geom: shapely.Geometry, tag: str) -> str:
    """WKT of ``geom`` with ``tag`` "ZM" (Z 7, M 9 on every coordinate) or "M" (M 9):
    shapely writes no M itself."""
    name = geom.geom_type.upper()
    if shapely.is_empty(geom):
        return f"{name} {tag} EMPTY"
    extra = "7 9" if tag == "ZM" else "9"

    def run(coords: object) -> str:
        xy = np.asarray(coords)[:, :2].tolist()
        return "(" + ", ".join(f"{x!r} {y!r} {extra}" for x, y in xy) + ")"

    if name in ("POINT", "LINESTRING"):
        return f"{name} {tag} {run(geom.coords)}"
    if name == "POLYGON":
        rings = [geom.exterior, *geom.interiors]
        return f"POLYGON {tag} (" + ", ".join(run(r.coords) for r in rings) + ")"
    if name == "GEOMETRYCOLLECTION":
        inner = ", ".join(_measured_text(p, tag) for p in geom.geoms)
        return f"GEOMETRYCOLLECTION {tag} ({inner})"
    parts = ", ".join(_measured_text(p, tag).split(f" {tag} ", 1)[1] for p in geom.geoms)
    return f"{name} {tag} ({parts})"


@st.composite
def _geometries(draw: st.DrawFn) -> shapely.Geometry:
    kind = draw(st.sampled_from(["point", "empty point", "line", "polygon", "multi", "collection"]))
    if kind == "point":
        return shapely.Point(draw(_XY))
    if kind == "empty point":
        return shapely.from_wkt("POINT EMPTY")
    if kind == "line":
        return shapely.LineString(draw(st.lists(_XY, min_size=2, max_size=6)))
    x, y = draw(_XY)
    boxes = [
        shapely.box(x + 3 * i, y, x + 3 * i + 1, y + 1) for i in range(draw(st.integers(1, 3)))
    ]
    if kind == "polygon":  # with a hole or not
        holes = (
            []
            if draw(st.booleans())
            else [shapely.box(x + 0.25, y + 0.25, x + 0.5, y + 0.5).exterior]
        )
        return shapely.Polygon(boxes[0].exterior, holes)
    if kind == "multi":
        return shapely.MultiPolygon(boxes)
    return shapely.GeometryCollection([shapely.Point(x, y), *boxes])


@given(
    st.lists(
        st.tuples(
            _geometries(),
            st.sampled_from([0, 1]),
            st.sampled_from(["", "z", "m", "zm"]),
            st.booleans(),
            st.integers(0, 9),
        ),
        min_size=1,
        max_size=40,
    )
)
@settings(max_examples=150, deadline=None)
def test_the_screen_misses_no_bytes_after_any_valid_geometry(
    drawn: list[tuple[shapely.Geometry, int, str, bool, int]],
) -> None:
    """For any valid geometry's WKB (shapely writes it: either byte order, Z, M, ZM, EWKB
    with an SRID, empty points as NaN), the gate finds no fault; with ``k`` >= 1 bytes
    appended it names ``k``, whether the screen or the walk found them."""
    values, extras = [], []
    for geom, order, dims, srid, extra in drawn:
        if dims == "z":  # a Z of 7 on every coordinate
            geom = shapely.force_3d(geom, 7.0)
        elif dims:
            geom = shapely.from_wkt(_measured_text(geom, dims.upper()))
        kw = {"flavor": "extended", "include_srid": True} if srid else {"flavor": "iso"}
        if srid:
            geom = shapely.set_srid(geom, 2263)
        values.append(bytes(shapely.to_wkb(geom, byte_order=order, **kw)) + b"\x07" * extra)
        extras.append(extra)
    facts = BatchFacts(batch_of(values))
    pairs = enumerate(zip(values, extras, strict=True))
    want = {i: _reason(len(v) - k, k) for i, (v, k) in pairs if k}
    assert dict(facts.trailing) == want
    single = {
        i
        for i, (g, *_rest) in enumerate(drawn)
        if g.geom_type in ("Point", "LineString", "Polygon")
    }
    assert {i for i in want if i in single} <= set(_screened(values))  # the screen alone
    sound = [v[: len(v) - k] for v, k in zip(values, extras, strict=True)]
    clean = BatchFacts(batch_of(sound))
    assert clean.trailing == {}
    assert all(wkb_survey(sound[i]) == (None, None) for i in _screened(sound))
    assert facts.is_valid.tolist() == (clean.is_valid & (np.array(extras) == 0)).tolist()


def _part(geom: shapely.Geometry, order: int, srid: bool) -> bytes:
    kw = {"flavor": "extended", "include_srid": True} if srid else {"flavor": "iso"}
    return bytes(shapely.to_wkb(shapely.set_srid(geom, 4326), byte_order=order, **kw))


@pytest.mark.parametrize("extra", [0, 1, 7])
def test_nested_parts_with_srids_and_either_byte_order_end_where_the_walk_says(extra: int) -> None:
    """A collection (not screened: walked) whose parts carry EWKB SRIDs, big- and
    little-endian, then ``extra`` bytes (empty points, Z and M: the hypothesis test)."""
    import struct

    parts = [
        _part(shapely.Point(1, 2), 0, True),
        _part(shapely.Point(3, 4), 1, False),
        _part(shapely.box(0, 0, 1, 1), 0, True),
        _part(shapely.LineString([(0, 0), (3, 4)]), 1, True),
    ]
    body = b"".join(parts)
    value = struct.pack("<BII", 1, 0x20000007, 4326) + struct.pack("<I", len(parts)) + body
    facts = BatchFacts(batch_of([value + b"\x01" * extra, shapely.Point(0, 0).wkb]))
    assert wkb_survey(value) == (None, None)
    if extra:
        assert facts.trailing == {0: _reason(len(value), extra)}
        assert facts.invalid_reasons == ((0, _reason(len(value), extra)),)
    else:
        assert facts.trailing == {}
    assert facts.is_valid.tolist() == [extra == 0, True]
    assert facts.type_names.tolist() == ["GeometryCollection", "Point"]


def _write_native(path: Path, geoms: list[shapely.Geometry]) -> None:
    """GeoParquet 1.1 with the GeoArrow native encoding of ``geoms`` (one type, interleaved
    xy), built from shapely's ragged arrays: offsets innermost first, as GeoArrow nests."""
    kind, coords, offsets = shapely.to_ragged_array(geoms)
    xy = pa.list_(pa.field("xy", pa.float64()), 2)
    column: pa.Array = pa.FixedSizeListArray.from_arrays(pa.array(coords.ravel()), type=xy)
    for off in offsets:
        column = pa.ListArray.from_arrays(pa.array(off, pa.int32()), column)
    name = shapely.GeometryType(kind).name.lower()
    meta = {"encoding": name, "geometry_types": sorted({g.geom_type for g in geoms})}
    geo = {"version": "1.1.0", "primary_column": "geometry", "columns": {"geometry": meta}}
    table = pa.table({"name": [f"f{i}" for i in range(len(geoms))], "geometry": column})
    pq.write_table(table.replace_schema_metadata({b"geo": json.dumps(geo).encode()}), path)


@pytest.mark.parametrize("kind", [*KINDS, "all"])
@pytest.mark.parametrize("encoding", ["geojson", "geoarrow"])
def test_geometries_the_gate_writes_as_wkb_itself_still_pass(
    encoding: str, kind: str, tmp_path: Path
) -> None:
    """GeoJSON and GeoArrow native columns reach the facts as WKB the gate's own writer
    wrote (``wkb_writer``): no bytes after their end, so their valid geometries pass."""
    geoms = list(KINDS.values()) if kind == "all" else [KINDS[kind]]
    geoms = [shapely.affinity.translate(g, i, i) for i in range(3) for g in geoms]
    if encoding == "geojson":
        path = tmp_path / "batch.geojson"
        features = [
            {"type": "Feature", "properties": {"name": f"f{i}"},
             "geometry": json.loads(shapely.to_geojson(g))}
            for i, g in enumerate(geoms)
        ]  # fmt: skip
        path.write_text(json.dumps({"type": "FeatureCollection", "features": features}))
    else:
        if kind in ("collection", "all"):
            pytest.skip("GeoArrow has no native GeometryCollection nor mixed-type column")
        path = tmp_path / "batch.parquet"
        _write_native(path, geoms)
    decision, broken, offenders = _from_json(_check(tmp_path, path))
    assert (decision, broken, offenders) == ("admitted", set(), [])
