"""Shapefile (``.shp`` or zipped), GeoPackage and FlatGeobuf files through GDAL/OGR, read
with pyogrio (https://pyogrio.readthedocs.io, a vectorized GDAL binding with wheels) into
:class:`~worker.io.formats.base.FeatureData`.

pyogrio is an optional extra (``pip install 'spatial-contract-gate[formats]'``); without it
these formats are a :class:`~worker.core.errors.PayloadError` naming the extra. A batch is
one layer: a file of several layers (a GeoPackage) is refused, naming them. Geometries are
GDAL's ISO WKB as stored, never repaired; coordinates are read in the file's own axis
order as GDAL presents it (x = longitude/easting, ``east_north``); the CRS is the file's
(the ``.prj`` of a shapefile), as WKT or ``AUTHORITY:CODE`` text.
"""

from __future__ import annotations

import zipfile
from pathlib import Path
from typing import Any

import pyarrow as pa

from worker.core.errors import PayloadError
from worker.io.formats.base import FeatureData, _fail

__all__ = [
    "OGR_FORMATS",
    "OGR_SUFFIXES",
    "SHAPEFILE_SIDECARS",
    "ogr_format",
    "ogr_sidecars",
    "read_ogr",
]

#: What this module reads, for messages: name and how it is recognised.
OGR_FORMATS = "Shapefile (.shp, or a .zip holding one), GeoPackage (.gpkg), FlatGeobuf (.fgb)"
#: File name suffixes read through OGR.
OGR_SUFFIXES = (".shp", ".zip", ".gpkg", ".fgb")

#: Files GDAL's shapefile driver reads beside the ``.shp`` (index, attributes, CRS, code
#: page; ESRI Shapefile Technical Description, 1998, and GDAL's shapefile driver page), in
#: the case of the ``.shp`` suffix or the other.
SHAPEFILE_SIDECARS = (".shx", ".dbf", ".prj", ".cpg")

_SHP_MAGIC = b"\x00\x00\x27\x0a"  # ESRI Shapefile Technical Description (1998): file code 9994
_ZIP_MAGIC = b"PK\x03\x04"
_SQLITE_MAGIC = b"SQLite format 3\x00"  # GeoPackage is an SQLite 3 database (OGC 12-128r18)
_FGB_MAGIC = b"fgb\x03"  # FlatGeobuf: "fgb", spec major version 3


def ogr_format(path: Path, head: bytes) -> str | None:
    """The OGR format of a file from its first 16 bytes (or its suffix when they do not
    tell): ``"ESRI Shapefile"``, ``"zip"``, ``"GPKG"``, ``"FlatGeobuf"``; None otherwise."""
    if head.startswith(_SHP_MAGIC):
        return "ESRI Shapefile"
    if head.startswith(_ZIP_MAGIC):
        return "zip"
    if head.startswith(_SQLITE_MAGIC):
        return "GPKG"
    if head.startswith(_FGB_MAGIC):
        return "FlatGeobuf"
    return {
        ".shp": "ESRI Shapefile",
        ".zip": "zip",
        ".gpkg": "GPKG",
        ".fgb": "FlatGeobuf",
    }.get(path.suffix.lower())


def ogr_sidecars(path: Path, fmt: str) -> tuple[str, ...]:
    """Names of the files read beside ``path`` in format ``fmt``: a shapefile's
    :data:`SHAPEFILE_SIDECARS` (same stem, either case); none for the single-file formats
    (a zip, a GeoPackage, a FlatGeobuf)."""
    if fmt != "ESRI Shapefile":
        return ()
    return tuple(path.stem + s for ext in SHAPEFILE_SIDECARS for s in (ext, ext.upper()))


def _pyogrio(path: Path, what: str) -> Any:
    try:
        import pyogrio
    except ImportError:
        raise _fail(
            path,
            f"reading {what} needs the optional pyogrio package: pip install "
            "'spatial-contract-gate[formats]' (from a clone: pip install -e '.[formats]'; "
            "GeoJSON and GeoParquet need nothing more)",
        ) from None
    return pyogrio


def _zip_target(path: Path) -> str:
    """The GDAL path of the vector file inside a zip: ``/vsizip/...`` of its only .shp
    (or .gpkg / .fgb)."""
    try:
        with zipfile.ZipFile(path) as z:
            names = [n for n in z.namelist() if not n.startswith("__MACOSX/")]
    except (zipfile.BadZipFile, OSError) as exc:
        raise _fail(path, f"not a readable zip file ({exc})") from None
    found = [n for n in names if n.lower().endswith((".shp", ".gpkg", ".fgb"))]
    if not found:
        raise _fail(
            path,
            f"the zip holds no .shp, .gpkg or .fgb file ({len(names)} entries); zip a "
            "shapefile's .shp, .shx, .dbf and .prj together",
        )
    if len(found) > 1:
        raise _fail(
            path,
            f"the zip holds {len(found)} vector files ({', '.join(found[:5])}); "
            "zip one layer per batch",
        )
    return f"/vsizip/{path.resolve()}/{found[0]}"


def read_ogr(path: Path, fmt: str, *, shown: Path | None = None) -> FeatureData:
    """Read a Shapefile, zipped Shapefile, GeoPackage or FlatGeobuf file.

    ``shown`` is the name messages give the file when ``path`` is a private copy of it
    (:func:`worker.io.payloads.beneath.verified_copies`); default ``path``.

    Raises
    ------
    PayloadError
        pyogrio missing (naming the extra), a zip without exactly one vector file, or
        anything GDAL cannot read (with GDAL's message).
    """
    what = {"zip": "a zipped shapefile", "GPKG": "GeoPackage", "FlatGeobuf": "FlatGeobuf"}.get(
        fmt, "a shapefile"
    )
    if shown is not None and shown != path:
        try:
            return read_ogr(path, fmt)
        except PayloadError as exc:  # the copy's name is no use to the reader of a message
            raise type(exc)(str(exc).replace(str(path.parent), str(shown.parent))) from None
    pyogrio = _pyogrio(path, what)
    target = _zip_target(path) if fmt == "zip" else str(path)
    try:
        layers = pyogrio.list_layers(target)
    except Exception as exc:  # pyogrio.errors.DataSourceError, DataLayerError, GDAL errors
        raise _fail(path, f"GDAL cannot read {what}: {exc}") from None
    if len(layers) > 1:
        # which one would be judged? not the reader's guess (found by a new-user session:
        # the first was read without a word)
        names = ", ".join(repr(str(n)) for n in layers[:10, 0]) + (
            ", ..." if len(layers) > 10 else ""
        )
        raise _fail(
            path,
            f"{what} holds {len(layers)} layers ({names}); a batch is one layer: write the "
            "one to check or publish to a file of its own (e.g. `ogr2ogr out.gpkg in.gpkg "
            "LAYER`)",
        )
    try:
        meta, table = pyogrio.read_arrow(target, layer=0)
    except Exception as exc:  # pyogrio.errors.DataSourceError, DataLayerError, GDAL errors
        raise _fail(path, f"GDAL cannot read {what}: {exc}") from None
    geom_name = meta.get("geometry_name") or "wkb_geometry"
    if geom_name not in table.column_names:
        raise _fail(path, f"{what} has no geometry column (layer {layers[0][0]!r})")
    wkb = table.column(geom_name).to_pylist()
    attributes = pa.table(table.drop_columns([geom_name]))
    crs = meta.get("crs")
    return FeatureData(
        tuple(None if g is None else bytes(g) for g in wkb),
        attributes,
        str(crs) if crs else None,
    )
