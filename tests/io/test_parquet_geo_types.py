"""The Parquet format's GEOMETRY and GEOGRAPHY logical types (Parquet format 2.11,
LogicalTypes.md "Geospatial Types"; GeoParquet 2.0) state the CRS and the edge model
(issue 26, T02 kind): ``crs`` absent is OGC:CRS84, ``srid:N``, ``projjson:KEY`` and a CRS
text are read; GEOGRAPHY is spherical by default and an algorithm the gate has no kernel
for is refused, never judged planar."""

from __future__ import annotations

import json
import struct
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import shapely

from tests.catalogue import NOW, active, clause, contract_of
from worker.core.errors import PayloadError
from worker.core.evaluate import evaluate
from worker.io.payloads import load_payload, read_batch_file, read_features
from worker.io.payloads.chunks import read_batch_file_chunked
from worker.io.payloads.policy import PayloadPolicy

T02 = Path(__file__).resolve().parents[1] / "cases" / "T02" / "batch.parquet"
#: a band whose planar reading fits latitude 50..62 and whose great-circle edges reach 73.9
BAND = shapely.Polygon([(-60, 50), (60, 50), (60, 60), (-60, 60), (-60, 50)])
POINT = shapely.Point(10, 50)


class _Wkb(pa.ExtensionType):
    """GeoArrow ``geoarrow.wkb``: pyarrow writes a Parquet GEOMETRY/GEOGRAPHY logical
    type for it (the only way pyarrow 26 writes one)."""

    def __init__(self, meta: bytes = b"") -> None:
        self._meta = meta
        super().__init__(pa.binary(), "geoarrow.wkb")

    def __arrow_ext_serialize__(self) -> bytes:
        return self._meta

    @classmethod
    def __arrow_ext_deserialize__(cls, storage_type: pa.DataType, serialized: bytes) -> _Wkb:
        return cls(serialized)


@pytest.fixture(autouse=True)
def _geoarrow_registered() -> Iterator[None]:
    pa.register_extension_type(_Wkb())
    yield
    pa.unregister_extension_type("geoarrow.wkb")


def _typed(tmp: Path, geoms: list, meta: dict, kv: dict | None = None, name: str = "t") -> Path:
    arr = pa.ExtensionArray.from_storage(
        _Wkb(json.dumps(meta).encode()), pa.array(shapely.to_wkb(geoms).tolist())
    )
    table = pa.table({"geom": arr, "n": list(range(len(geoms)))})
    if kv:
        table = table.replace_schema_metadata(kv)
    path = tmp / f"{name}.parquet"
    pq.write_table(table, path)
    return path


def _algorithm(path: Path, code: int) -> Path:
    """``path`` (a GEOGRAPHY column without crs) with the footer's GeographyType given
    ``algorithm`` ``code`` (thrift field 2, EdgeInterpolationAlgorithm), which pyarrow 26
    does not write: compact protocol, field delta 2, i32, zigzag varint."""
    data = path.read_bytes()
    n = struct.unpack("<i", data[-8:-4])[0]
    footer = data[-8 - n : -8]
    empty_geography = b"\x0c\x24\x00\x00"  # LogicalType field 18, empty struct, stops
    assert footer.count(empty_geography) == 1
    patched = footer.replace(empty_geography, b"\x0c\x24\x25" + bytes([2 * code]) + b"\x00\x00")
    out = path.with_name(f"{path.stem}_alg{code}.parquet")
    out.write_bytes(data[: -8 - n] + patched + struct.pack("<i", len(patched)) + b"PAR1")
    return out


def test_t02_geometry_without_crs_is_crs84() -> None:
    assert str(pq.ParquetFile(T02).schema.column(0).logical_type) == "Geometry(crs=)"
    data = read_features(T02)
    assert (data.declared_crs, data.crs_stated, data.edges) == ("OGC:CRS84", False, "planar")
    assert data.attributes.column_names == ["name"]


@pytest.mark.parametrize(
    ("crs", "declared"),
    [
        ("EPSG:4267", "EPSG:4267"),
        ("srid:4269", "EPSG:4269"),
        ({"id": {"authority": "EPSG", "code": 3857}}, '{"id":{"authority":"EPSG","code":3857}}'),
    ],
)
def test_geometry_crs_parameter_is_the_files_statement(
    tmp_path: Path, crs: object, declared: str
) -> None:
    data = read_features(_typed(tmp_path, [POINT], {"crs": crs}))
    assert (data.declared_crs, data.crs_stated) == (declared, True)


def test_projjson_key_is_read_from_the_file_metadata(tmp_path: Path) -> None:
    projjson = json.dumps({"id": {"authority": "EPSG", "code": 2263}})
    path = _typed(tmp_path, [POINT], {"crs": "projjson:crs_a"}, kv={"crs_a": projjson})
    assert read_features(path).declared_crs == projjson
    missing = _typed(tmp_path, [POINT], {"crs": "projjson:nowhere"}, name="m")
    with pytest.raises(PayloadError, match="'nowhere', which the file does not hold"):
        read_features(missing)


def test_geography_is_spherical_by_default_and_judged_so(tmp_path: Path) -> None:
    path = _typed(tmp_path, [BAND], {"edges": "spherical"})
    assert str(pq.ParquetFile(path).schema.column(0).logical_type) == (
        "Geography(crs=, algorithm=spherical)"
    )
    batch = read_batch_file(path, layer="x")
    assert (batch.declared_crs, batch.edges) == ("OGC:CRS84", "spherical")
    contract = contract_of(clause("extent", "extent", region=[-70, 50, 70, 62]))
    decision = evaluate(batch, [active(contract)], now=NOW)
    (reason,) = decision.reasons
    assert reason.clause == "extent" and reason.measured["bounds"][3] == pytest.approx(73.9, 0.01)
    chunked = read_batch_file_chunked(path, layer="x")
    assert chunked.batch.edges == "spherical"  # type: ignore[union-attr]


def test_geography_spherical_algorithm_written_explicitly(tmp_path: Path) -> None:
    path = _algorithm(_typed(tmp_path, [BAND], {"edges": "spherical"}), 0)
    assert read_features(path).edges == "spherical"


@pytest.mark.parametrize(
    ("code", "name"), [(1, "VINCENTY"), (2, "THOMAS"), (3, "ANDOYER"), (4, "KARNEY")]
)
def test_ellipsoidal_geography_algorithms_are_refused(tmp_path: Path, code: int, name: str) -> None:
    path = _algorithm(_typed(tmp_path, [BAND], {"edges": "spherical"}), code)
    assert f"algorithm={name.lower()}" in str(pq.ParquetFile(path).schema.column(0).logical_type)
    with pytest.raises(PayloadError, match=f"unsupported edge algorithm: .* {name} "):
        read_features(path)
    with pytest.raises(PayloadError, match="unsupported edge algorithm"):
        load_payload(
            path.as_uri(), layer="x", policy=PayloadPolicy.from_strings([tmp_path.as_uri()])
        )


def test_geo_metadata_contradicting_the_logical_type_is_refused(tmp_path: Path) -> None:
    path = _typed(tmp_path, [BAND], {"edges": "spherical"})
    table = pq.read_table(path)
    geo = {
        "version": "1.1.0",
        "primary_column": "geom",
        "columns": {"geom": {"encoding": "WKB", "edges": "planar"}},
    }
    bad = tmp_path / "bad.parquet"
    pq.write_table(table.replace_schema_metadata({"geo": json.dumps(geo)}), bad)
    with pytest.raises(PayloadError, match="says edges 'planar' but its Parquet logical type"):
        read_features(bad)


def test_geo_metadata_crs_wins_and_logical_crs_fills_it(tmp_path: Path) -> None:
    path = _typed(tmp_path, [POINT], {"crs": "EPSG:4267"})
    table = pq.read_table(path)
    geo = {"version": "1.1.0", "primary_column": "geom", "columns": {"geom": {"encoding": "WKB"}}}
    silent = tmp_path / "silent.parquet"
    pq.write_table(table.replace_schema_metadata({"geo": json.dumps(geo)}), silent)
    assert read_features(silent).declared_crs == "EPSG:4267"
    geo["columns"]["geom"]["crs"] = None  # type: ignore[index]
    unknown = tmp_path / "unknown.parquet"
    pq.write_table(table.replace_schema_metadata({"geo": json.dumps(geo)}), unknown)
    assert read_features(unknown).declared_crs is None  # the geo key says unknown


def test_logical_type_crs_contradicting_the_declaration_breaks_it(tmp_path: Path) -> None:
    path = _typed(tmp_path, [POINT], {"crs": "srid:4267"})
    conflict = read_batch_file(path, layer="x", crs="EPSG:4326").crs_conflict
    assert conflict == (
        "the file's Parquet GEOMETRY logical type states EPSG:4267, not the EPSG:4326 "
        "declared (--crs): fix --crs or the file's CRS"
    )
    assert read_batch_file(T02, layer="x", crs="EPSG:4326").crs_conflict is None  # default
