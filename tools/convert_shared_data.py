"""Convert the shared real data (ESRI shapefiles) once into the package's demo GeoParquet.

Usage::

    python tools/convert_shared_data.py [--shared /work/shared/data] [--out worker/data]

Writes GeoParquet 1.1 files with a WKB ``geometry`` column and ``geo`` metadata (PROJJSON
``crs`` from pyproj, ``bbox``, ``geometry_types``):

* ``admin_boundaries.parquet``: Natural Earth 1:110m countries (EPSG:4326, lon/lat), with
  pop_est (int64, rounded: the source stores floats), continent, name, iso_a3, gdp_md_est (int64).
* ``nyc_boroughs.parquet``: NYC DCP Borough Boundaries 16A (EPSG:2263, US survey feet),
  with BoroCode (int64), BoroName, Shape_Leng, Shape_Area.

Polygons come from pyshp's ``__geo_interface__`` (which sorts shapefile rings into
outer rings and holes). Geometries are not repaired: the script reports how many are
invalid and why. Facts worth knowing for contracts (continents, bounds) are printed.
"""

from __future__ import annotations

import argparse
import collections
import io
import json
import zipfile
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import shapefile
import shapely
import shapely.geometry
from pyproj import CRS

ROOT = Path(__file__).resolve().parents[1]


def _reader_from_zip(path: Path, stem: str) -> shapefile.Reader:
    z = zipfile.ZipFile(path)
    parts = {ext: io.BytesIO(z.read(f"{stem}.{ext}")) for ext in ("shp", "shx", "dbf")}
    return shapefile.Reader(**parts)


def _prj_from_zip(path: Path, stem: str) -> str:
    return zipfile.ZipFile(path).read(f"{stem}.prj").decode("utf-8")


def _geometries(reader: shapefile.Reader) -> list[shapely.Geometry]:
    return [shapely.geometry.shape(s.__geo_interface__) for s in reader.shapes()]


def _check_crs(prj_wkt: str, epsg: int) -> None:
    found = CRS.from_wkt(prj_wkt).to_epsg(min_confidence=70)
    if found != epsg:
        raise SystemExit(f"the .prj resolves to EPSG:{found}, expected EPSG:{epsg}")


def _report_validity(name: str, geoms: list[shapely.Geometry], labels: list[str]) -> None:
    invalid = [(labels[i], shapely.is_valid_reason(g)) for i, g in enumerate(geoms)]
    invalid = [x for x in invalid if x[1] != "Valid Geometry"]
    types = collections.Counter(g.geom_type for g in geoms)
    print(f"{name}: {len(geoms)} features, types {dict(types)}, {len(invalid)} invalid")
    for label, reason in invalid:
        print(f"  invalid: {label}: {reason}")


def write_geoparquet(path: Path, columns: dict[str, Any], geoms: list[Any], epsg: int) -> None:
    """Write a GeoParquet 1.1 file: attributes, a WKB ``geometry`` column, ``geo`` metadata."""
    arr = shapely.from_wkb(shapely.to_wkb(geoms))  # normalise to a numpy array of geometries
    bbox = [float(v) for v in shapely.total_bounds(arr)]
    geo = {
        "version": "1.1.0",
        "primary_column": "geometry",
        "columns": {
            "geometry": {
                "encoding": "WKB",
                "geometry_types": sorted({g.geom_type for g in arr}),
                "crs": CRS.from_epsg(epsg).to_json_dict(),
                "bbox": bbox,
            }
        },
    }
    table = pa.table({**columns, "geometry": pa.array(shapely.to_wkb(arr).tolist(), pa.binary())})
    table = table.replace_schema_metadata({b"geo": json.dumps(geo).encode("utf-8")})
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, path, compression="zstd")
    print(f"wrote {path} ({path.stat().st_size} bytes), bbox {bbox}")


def convert_admin_boundaries(shared: Path, out: Path) -> None:
    base = shared / "naturalearth_lowres" / "naturalearth_lowres"
    _check_crs(base.with_suffix(".prj").read_text("utf-8"), 4326)
    reader = shapefile.Reader(str(base))
    recs = [r.as_dict() for r in reader.records()]
    geoms = _geometries(reader)
    pops = [r["pop_est"] for r in recs]
    for r in recs:  # Natural Earth stores pop_est as a float; one value is fractional
        if r["pop_est"] != int(r["pop_est"]):
            print(f"  pop_est of {r['name']} is {r['pop_est']}; rounded to {round(r['pop_est'])}")
    columns = {
        "pop_est": pa.array([round(p) for p in pops], pa.int64()),
        "continent": pa.array([r["continent"] for r in recs], pa.string()),
        "name": pa.array([r["name"] for r in recs], pa.string()),
        "iso_a3": pa.array([r["iso_a3"] for r in recs], pa.string()),
        "gdp_md_est": pa.array([int(r["gdp_md_est"]) for r in recs], pa.int64()),
    }
    _report_validity("admin_boundaries", geoms, [r["name"] for r in recs])
    print("continents:", dict(collections.Counter(r["continent"] for r in recs)))
    write_geoparquet(out / "admin_boundaries.parquet", columns, geoms, 4326)


def convert_nyc_boroughs(shared: Path, out: Path) -> None:
    zpath = shared / "nybb_16a.zip"
    _check_crs(_prj_from_zip(zpath, "nybb"), 2263)
    reader = _reader_from_zip(zpath, "nybb")
    recs = [r.as_dict() for r in reader.records()]
    geoms = _geometries(reader)
    columns = {
        "BoroCode": pa.array([int(r["BoroCode"]) for r in recs], pa.int64()),
        "BoroName": pa.array([r["BoroName"] for r in recs], pa.string()),
        "Shape_Leng": pa.array([float(r["Shape_Leng"]) for r in recs], pa.float64()),
        "Shape_Area": pa.array([float(r["Shape_Area"]) for r in recs], pa.float64()),
    }
    _report_validity("nyc_boroughs", geoms, [r["BoroName"] for r in recs])
    print("boroughs:", {r["BoroCode"]: r["BoroName"] for r in recs})
    write_geoparquet(out / "nyc_boroughs.parquet", columns, geoms, 2263)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shared", type=Path, default=ROOT.parent / "shared" / "data")
    parser.add_argument("--out", type=Path, default=ROOT / "worker" / "data")
    args = parser.parse_args()
    convert_admin_boundaries(args.shared, args.out)
    convert_nyc_boroughs(args.shared, args.out)


if __name__ == "__main__":
    main()
