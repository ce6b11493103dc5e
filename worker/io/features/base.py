"""What every reader returns (:class:`FeatureData`) and the logical schema of attribute columns."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import shapely

from worker.core.errors import PayloadError
from worker.core.model import FieldSpec

__all__ = ["FeatureData", "derive_schema"]


#: The CRS of RFC 7946 GeoJSON (WGS 84 longitude, latitude).
RFC7946_CRS = "OGC:CRS84"


@dataclass(frozen=True)
class FeatureData:
    """The content of a batch file: geometries, attributes and the file's own CRS claim.

    ``edges``, ``orientation`` and ``covering_bbox`` are the GeoParquet geometry column
    metadata carried to :class:`worker.core.model.Batch` (see there); GeoJSON has the
    defaults (RFC 7946: planar edges, no orientation assertion, no covering column).
    """

    geometries_wkb: tuple[bytes | None, ...]
    attributes: pa.Table
    declared_crs: str | None
    axis_order: str = "east_north"
    edges: str = "planar"
    orientation: str | None = None
    covering_bbox: tuple[tuple[float, float, float, float] | None, ...] | None = None


def derive_schema(table: pa.Table) -> tuple[FieldSpec, ...]:
    """Logical schema of an attribute table (:data:`worker.core.model.FIELD_TYPES`).

    Integer types of any width -> ``integer``; floating -> ``double``; string and
    large_string -> ``string``; bool -> ``boolean``; timestamp -> ``timestamp``; date32/64
    -> ``date``; binary types -> ``binary``; dictionary types map by their value type; an
    all-null column (arrow type ``null``) -> ``string``. ``nullable`` is True when the column
    holds a null.

    Raises
    ------
    ValueError
        A column has a type with no logical equivalent (struct, list, map, decimal...).
    """
    out = []
    for f, col in zip(table.schema, table.columns, strict=True):
        t = f.type.value_type if pa.types.is_dictionary(f.type) else f.type
        out.append(FieldSpec(f.name, _logical(f.name, t), col.null_count > 0))
    return tuple(out)


def _logical(name: str, t: pa.DataType) -> str:
    checks = [
        (pa.types.is_boolean, "boolean"),
        (pa.types.is_integer, "integer"),
        (pa.types.is_floating, "double"),
        (lambda x: pa.types.is_string(x) or pa.types.is_large_string(x), "string"),
        (pa.types.is_timestamp, "timestamp"),
        (pa.types.is_date, "date"),
        (lambda x: pa.types.is_binary(x) or pa.types.is_large_binary(x), "binary"),
        (pa.types.is_null, "string"),
    ]
    for check, logical in checks:
        if check(t):
            return logical
    raise ValueError(f"column {name!r} has arrow type {t}, which has no logical field type")


def _fail(path: Path | str, what: str) -> PayloadError:
    return PayloadError(f"{path}: {what}")


def _to_wkb(geoms: Any) -> tuple[bytes | None, ...]:
    return tuple(shapely.to_wkb(np.asarray(geoms, dtype=object)).tolist()) if len(geoms) else ()
