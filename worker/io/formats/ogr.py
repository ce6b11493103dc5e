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

import logging
import warnings
import zipfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from worker.core.errors import PayloadCorrupt, PayloadError
from worker.io.formats.as_stored import as_stored
from worker.io.formats.base import FeatureData, Source, _fail, canonical_table
from worker.io.formats.gpkg_blobs import BlobFindings, blob_findings
from worker.io.formats.shapefile_prj import unread_prj

if TYPE_CHECKING:
    from worker.io.formats.dbf_encoding import TextEncoding

__all__ = ["READER", "SHAPEFILE_SIDECARS", "ogr_format", "ogr_sidecars", "read_ogr"]

log = logging.getLogger(__name__)

#: Schema metadata key of the attributes: how the text was decoded and why (shapefiles).
TEXT_ENCODING_KEY = b"text_encoding"

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
        # which one would be judged? not the reader's guess (the first was read without
        # a word)
        names = ", ".join(repr(str(n)) for n in layers[:10, 0]) + (
            ", ..." if len(layers) > 10 else ""
        )
        raise _fail(
            path,
            f"{what} holds {len(layers)} layers ({names}); a batch is one layer: write the "
            "one to check or publish to a file of its own (e.g. `ogr2ogr out.gpkg in.gpkg "
            "LAYER`)",
        )
    encoding = _text_encoding(path, fmt, target)
    options = {"encoding": encoding.encoding} if encoding is not None else {}
    blobs = fmt == "GPKG"  # its blob headers are read beside GDAL (gpkg_blobs)
    try:
        with warnings.catch_warnings():  # said by as_stored, with the value as written
            warnings.filterwarnings("ignore", r"Value .* parsed incompletely", RuntimeWarning)
            meta, table = pyogrio.read_arrow(target, layer=0, return_fids=blobs, **options)
    except pyogrio.errors.CRSError as exc:  # GDAL began a CRS and failed (truncated WKT)
        source = _CRS_SOURCES.get(fmt, "CRS")
        fix = (
            "write the layer's CRS there as WKT, or remove the .prj when the CRS is unknown"
            if source == ".prj"
            else f"fix its {source}"
        )
        raise _fail(path, f"its {source} is not a CRS GDAL reads ({exc}): {fix}") from None
    except Exception as exc:  # pyogrio.errors.DataSourceError, DataLayerError, GDAL errors
        raise _fail(path, f"GDAL cannot read {what}: {exc}") from None
    geom_name = meta.get("geometry_name") or "wkb_geometry"
    if geom_name not in table.column_names:
        raise _fail(path, f"{what} has no geometry column (layer {layers[0][0]!r})")
    wkb = table.column(geom_name).to_pylist()
    table, found = _blob_findings(path, meta, table, geom_name, wkb) if blobs else (table, None)
    attributes = canonical_table(
        pa.table(table.drop_columns([geom_name])), path, _text_fix(fmt, encoding)
    )
    # a value of another type than its column, as the file holds it
    where = str(layers[0][0]) if fmt == "GPKG" else target
    attributes = as_stored(path, fmt, where, encoding, attributes)
    if encoding is not None:
        attributes = attributes.replace_schema_metadata(
            {
                **(attributes.schema.metadata or {}),
                TEXT_ENCODING_KEY: f"{encoding.encoding}: {encoding.rule}".encode(),
            }
        )
        note = encoding.note(str(path))
        if note:
            log.warning("%s", note)
    # GDAL gives no CRS where the format says it is unknown (a shapefile without .prj, a
    # GeoPackage SRS id 0 or -1: "undefined geographic/cartesian SRS", GeoPackage 1.3
    # section 1.1.2.1.1); any other is the file's own statement
    crs = meta.get("crs") or unread_prj(path, fmt, target)
    return FeatureData(
        tuple(None if g is None else bytes(g) for g in wkb),
        attributes,
        str(crs) if crs else None,
        crs_stated=bool(crs),
        crs_source=_CRS_SOURCES.get(fmt, "CRS") if crs else "",
        geometry_errors=found.errors if found is not None else {},
        covering_bbox=found.envelopes if found is not None else None,
        covering_name="GeoPackage geometry header envelope",
    )


def _blob_findings(
    path: Path, meta: dict[str, Any], table: pa.Table, geom_name: str, wkb: list[Any]
) -> tuple[pa.Table, BlobFindings | None]:
    """``table`` without its fid column, and what a GeoPackage's geometry blob headers
    state (:mod:`.gpkg_blobs`); the rows of ``wkb`` it finds unreadable are set to None
    (their reasons are in the findings)."""
    fid_name = meta.get("fid_column") or "fid"
    found = blob_findings(
        path, table.column(fid_name).to_numpy(), table.column(geom_name).combine_chunks()
    )
    for row in found.errors if found is not None else ():
        wkb[row] = None
    return table.drop_columns([fid_name]), found


#: Where each format read through GDAL states its CRS.
_CRS_SOURCES = {
    "GPKG": "GeoPackage SRS (gpkg_spatial_ref_sys)",
    "FlatGeobuf": "FlatGeobuf header CRS",
    "zip": ".prj",
    "ESRI Shapefile": ".prj",
}


def _text_encoding(path: Path, fmt: str, target: str) -> TextEncoding | None:
    """How a shapefile's DBF text is decoded (:mod:`.dbf_encoding`); None for the other
    formats (GeoPackage and FlatGeobuf text is UTF-8 by their specifications)."""
    from worker.io.formats.dbf_encoding import dbf_encoding  # a shapefile's only

    if fmt == "zip" and target.lower().endswith(".shp"):
        prefix = f"/vsizip/{path.resolve()}/"
        return dbf_encoding(path, target[len(prefix) :])
    if fmt == "ESRI Shapefile":
        return dbf_encoding(path)
    return None


def _text_fix(fmt: str, encoding: TextEncoding | None) -> str:
    if encoding is None:
        return "the format stores UTF-8 text: rewrite the file from a UTF-8 source"
    return (
        f"the text was decoded as {encoding.encoding} ({encoding.rule}): write the "
        "encoding the text is in (e.g. ISO-8859-1, 1252, UTF-8) into the .cpg file"
    )


class OgrReader:
    """The registry entry (:class:`~worker.io.formats.base.Reader`) of the formats read
    through GDAL: an operator's local file only (GDAL opens it by path), read whole."""

    name = "ogr"
    title = "Shapefile, GeoPackage or FlatGeobuf"
    described: tuple[str, ...] = (
        "Shapefile (.shp, or a .zip holding one)",
        "GeoPackage (.gpkg)",
        "FlatGeobuf (.fgb)",
    )
    magic = (
        "a shapefile starts with the file code 9994, a zip with PK, a GeoPackage with "
        "'SQLite format 3', a FlatGeobuf with 'fgb'"
    )
    suffixes: tuple[str, ...] = (".shp", ".zip", ".gpkg", ".fgb")
    default_limit_bytes = 2 * 1024**3
    by_reference = False
    chunked = False

    def sniff(self, head: bytes, tail: bytes, name: str) -> bool:
        return ogr_format(Path(name), head[:16]) is not None

    def read(self, src: Source) -> FeatureData:
        if src.path is None:
            raise PayloadCorrupt(
                f"{src.uri}: {', '.join(self.described)} files are read from a local path "
                "only (GDAL opens them by name): copy the file here first"
            )
        src.file.seek(0)
        path = Path(src.path)
        fmt = ogr_format(Path(src.uri), bytes(src.file.read(16))) or "ESRI Shapefile"
        shown = None if "://" in src.uri else Path(src.uri)  # a private copy's real name
        return read_ogr(path, fmt, shown=shown)

    def sidecars(self, path: Path) -> tuple[str, ...]:
        """The files GDAL opens beside ``path`` (a shapefile's; none for the one-file
        formats), copied with it from their verified descriptors by the loader."""
        fmt = "ESRI Shapefile" if path.suffix.lower() == ".shp" else ""
        return ogr_sidecars(path, fmt)

    def chunks(self, src: Source, count_nulls: bool = True) -> None:
        return None


READER = OgrReader()
