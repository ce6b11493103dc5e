"""Columns GDAL coerced, read as the file holds them (field case N05b's kind: a column
mixing value types), for :mod:`worker.io.formats.ogr`: a GeoPackage column of mixed
storage classes (:mod:`.gpkg_types`), a numeric DBF field holding text (:mod:`.dbf_types`)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow as pa

if TYPE_CHECKING:
    from worker.io.formats.dbf_encoding import TextEncoding

__all__ = ["as_stored"]


def as_stored(
    path: Path, fmt: str, where: str, encoding: TextEncoding | None, attributes: pa.Table
) -> pa.Table:
    """``attributes`` (of the layer ``where``: a GeoPackage's table, GDAL's path of a
    shapefile) with each column holding a value of another type than its own (which
    GDAL coerces) read as text, the mix recorded: a GeoPackage column of mixed storage
    classes (:mod:`.gpkg_types`), a numeric DBF field holding text (:mod:`.dbf_types`)."""
    names = attributes.column_names
    if fmt == "GPKG":
        from worker.io.formats.gpkg_types import mixed_columns

        found = mixed_columns(path, where, names)
    elif encoding is not None:  # a shapefile, or a zip holding one
        from worker.io.formats.dbf_types import mixed_number_fields

        member = where[len(f"/vsizip/{path.resolve()}/") :] if fmt == "zip" else None
        found = mixed_number_fields(path, member, encoding.encoding, names, attributes.num_rows)
    else:
        return attributes
    for name, (fld, values) in found.items():
        attributes = attributes.set_column(names.index(name), fld, values)
    return attributes
