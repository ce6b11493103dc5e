"""What every reader returns (:class:`FeatureData`) and the text columns of attributes.

The logical schema of attribute columns is :func:`worker.core.columns.derive_schema`
(re-exported here and by :mod:`worker.io.payloads`).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import pyarrow as pa
import shapely

from worker.core._util.text import clip
from worker.core.columns import derive_schema
from worker.core.errors import PayloadError
from worker.core.model import LOGICAL_TYPE_KEY, VALUE_KINDS_KEY, VALUE_TYPES_KEY
from worker.io.formats.canonical import UndecodableText, canonical_table, canonical_type

__all__ = [
    "ChunkedFile",
    "FeatureData",
    "Reader",
    "Source",
    "UndecodableText",
    "canonical_table",
    "canonical_type",
    "derive_schema",
    "text_column",
]


#: The CRS of RFC 7946 GeoJSON (WGS 84 longitude, latitude), also the default of the
#: GeoParquet ``crs`` and of the Parquet GEOMETRY/GEOGRAPHY ``crs`` parameter.
RFC7946_CRS = "OGC:CRS84"
#: The CRS of RFC 7946 GeoJSON whose positions have a third element (section 3.1.1: the
#: height above the WGS 84 ellipsoid): OGC CRS84h, EPSG:4979 ignoring axis order.
RFC7946_CRS_3D = "OGC:CRS84h"


@dataclass(frozen=True)
class FeatureData:
    """The content of a batch file: geometries, attributes and the file's own CRS claim.

    ``geometry_errors`` maps a feature index whose geometry could not be written as WKB
    (its entry in ``geometries_wkb`` is None) to the parser's reason.
    ``edges``, ``orientation`` and ``covering_bbox`` are the GeoParquet geometry column
    metadata carried to :class:`worker.core.model.Batch` (see there); GeoJSON has the
    defaults (RFC 7946: planar edges, no orientation assertion, no covering column).
    ``feature_ids`` are the ids the file gives its features (the GeoJSON ``id`` member,
    RFC 7946 section 3.2: a string or number, None where absent), None when it gives none.
    ``coordinate_bounds`` is the envelope of a GeoArrow native column's coordinate arrays
    (see :class:`worker.core.model.Batch`), None for WKB and GeoJSON.
    """

    geometries_wkb: Sequence[bytes | None]
    attributes: pa.Table
    declared_crs: str | None
    axis_order: str = "east_north"
    geometry_errors: Mapping[int, str] = field(default_factory=dict)
    edges: str = "planar"
    orientation: str | None = None
    covering_bbox: tuple[tuple[float, float, float, float] | None, ...] | None = None
    feature_ids: tuple[str | int | float | None, ...] | None = None
    coordinate_bounds: tuple[float, float, float, float] | None = None
    #: the file states ``declared_crs`` itself (GeoParquet ``geo`` metadata with a non-null
    #: ``crs``, a Parquet GEOMETRY ``crs`` parameter, the legacy GeoJSON ``crs`` member, a
    #: ``.prj``, a GeoPackage SRS), rather than it being a format default (RFC 7946
    #: GeoJSON, a GeoParquet or Parquet GEOMETRY without one)
    crs_stated: bool = False
    #: where the file states it, for messages ("legacy GeoJSON 'crs' member", "GeoParquet
    #: metadata", "Parquet GEOMETRY logical type", ".prj", "GeoPackage SRS"); "" when not
    crs_source: str = ""
    #: the file's metadata claims about its geometries (see ``Batch.file_claims``)
    file_claims: Mapping[str, Any] = field(default_factory=dict)
    #: how messages name the metadata ``edges``, ``orientation``, the covering column and
    #: ``file_claims`` come from (see ``Batch.metadata_name``); "" when the file has none
    metadata_name: str = ""
    #: what the file calls ``covering_bbox`` (see ``Batch.covering_name``)
    covering_name: str = ""


class Source(Protocol):
    """An opened file as a reader sees it (:class:`worker.io.payloads.base.OpenedPayload`):
    its name for messages, its local path (None in S3), and its bytes."""

    uri: str
    path: str | None
    file: pa.NativeFile

    def read_all(self) -> bytes:
        """The whole file, at most the size checked against the limit."""
        ...


class ChunkedFile(Protocol):
    """A file opened for reading in chunks: what its footer says, and its chunks."""

    @property
    def path(self) -> str:
        """The file's name in messages."""
        ...

    @property
    def attributes(self) -> pa.Table:
        """The attribute columns, no rows (canonical types)."""
        ...

    @property
    def rows(self) -> int:
        """Rows of the whole file."""
        ...

    @property
    def null_counts(self) -> dict[str, int]:
        """Nulls of each attribute column in the whole file (empty when not counted)."""
        ...

    @property
    def declared_crs(self) -> str | None:
        """The file's CRS claim (as :attr:`FeatureData.declared_crs`)."""
        ...

    @property
    def crs_stated(self) -> bool:
        """The file states its CRS itself (as :attr:`FeatureData.crs_stated`)."""
        ...

    @property
    def crs_source(self) -> str:
        """Where the file states its CRS (as :attr:`FeatureData.crs_source`)."""
        ...

    @property
    def edges(self) -> str:
        """``planar`` or ``spherical``."""
        ...

    @property
    def orientation(self) -> str | None:
        """``counterclockwise`` or None."""
        ...

    @property
    def file_claims(self) -> Mapping[str, Any]:
        """The file's metadata claims about its geometries."""
        ...

    @property
    def metadata_name(self) -> str:
        """How messages name the file's metadata (as :attr:`FeatureData.metadata_name`)."""
        ...

    def chunk_rows(self, rows: int, max_bytes: int) -> int:
        """Rows per chunk: at most ``rows``, fewer when they exceed ``max_bytes``."""
        ...

    def chunks(self, rows: int, start_row: int = 0) -> Iterator[FeatureData]:
        """The features, at most ``rows`` at a time, from row ``start_row``."""
        ...


class Reader(Protocol):
    """One input format: how it is recognised, how large it may be, how it is read.

    An entry of :data:`worker.io.formats.FORMATS`; dispatch, size limits,
    ``--max-payload-bytes``, help texts and "the formats read are ..." messages read
    these attributes, so a new format is one module exposing a ``READER`` and one line
    there. Every reader returns attributes of :func:`canonical_table`.
    """

    #: key of the format: in ``--max-payload-bytes NAME=SIZE`` and ``OpenedPayload.format``
    name: str
    #: what a size message calls it ("limit of ... bytes for Parquet")
    title: str
    #: how the format(s) are named in "the formats read are ..." messages
    described: tuple[str, ...]
    #: how its first bytes look, for the message when no reader recognises a file
    magic: str
    #: the file name suffixes of the format (lower case, with the dot), e.g. for finding
    #: a shipped batch file by its stem
    suffixes: tuple[str, ...]
    default_limit_bytes: int
    #: read as an event's by-reference payload (else only as an operator's local file)
    by_reference: bool
    #: :meth:`chunks` opens its files for reading in chunks (else they are read whole)
    chunked: bool

    def sniff(self, head: bytes, tail: bytes, name: str) -> bool:
        """Whether a file of first bytes ``head`` (up to 4096), last 4 bytes ``tail``
        and name ``name`` is of this format; may raise
        :class:`~worker.core.errors.PayloadCorrupt` for a truncated one."""
        ...

    def read(self, src: Source) -> FeatureData:
        """The whole file."""
        ...

    def chunks(self, src: Source, count_nulls: bool = True) -> ChunkedFile | None:
        """The file opened for reading in chunks, or None when it is read whole."""
        ...


_SECRET_ENV = ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN")


def scrub(exc: BaseException) -> str:
    """An error text, clipped, with the environment's AWS credentials masked."""
    text = " ".join(str(exc).split())
    for var in _SECRET_ENV:
        secret = os.environ.get(var)
        if secret and len(secret) >= 4:
            text = text.replace(secret, "***")
    return clip(text, 300)


_JSON_TYPES = {bool: "boolean", int: "integer", float: "double", str: "string"}
_JSON_TYPES.update({list: "list", dict: "struct", bytes: "blob"})
#: The letter of each JSON type in :data:`~worker.core.model.VALUE_KINDS_KEY`.
_KIND_LETTERS = {bool: "b", int: "i", float: "d", str: "s", list: "l", dict: "o"}


def _text(value: Any) -> str:
    """A value of :func:`text_column` that is not a string: JSON, a blob (a GeoPackage
    value) as its SQL literal ``X'07'``."""
    if isinstance(value, bytes):
        return f"X'{value.hex().upper()}'"
    return json.dumps(value, ensure_ascii=False)


def text_column(name: str, values: Sequence[Any], reason: str = "") -> tuple[pa.Field, pa.Array]:
    """A column arrow cannot type, read as text: strings as they are, other values as JSON.

    Parameters
    ----------
    name : str
        Column name.
    values : sequence
        Decoded JSON values (or SQLite values: bytes for a blob), one per feature
        (None = null).
    reason : str
        Why arrow refused the values (kept in the field metadata under ``reason``).

    Returns
    -------
    (pyarrow.Field, pyarrow.Array)
        A ``string`` field tagged with :data:`~worker.core.model.LOGICAL_TYPE_KEY`
        ``mixed`` (values of several JSON types, e.g. ``42`` and ``"see survey"``) or
        ``other`` (one type arrow still cannot hold, e.g. an integer beyond int64), and
        :data:`~worker.core.model.VALUE_TYPES_KEY` the JSON types found, e.g.
        ``integer,string``, and :data:`~worker.core.model.VALUE_KINDS_KEY` the JSON type
        of every row (the text ``"1"`` may be the string or the number).
    """
    kinds = sorted({_JSON_TYPES.get(type(v), type(v).__name__) for v in values if v is not None})
    text = [None if v is None else v if isinstance(v, str) else _text(v) for v in values]
    letters = "".join("n" if v is None else _KIND_LETTERS.get(type(v), "x") for v in values)
    meta = {
        LOGICAL_TYPE_KEY: b"mixed" if len(kinds) > 1 else b"other",
        VALUE_TYPES_KEY: ",".join(kinds).encode(),
        VALUE_KINDS_KEY: letters.encode(),
        b"reason": reason.encode(),
    }
    return pa.field(name, pa.string(), metadata=meta), pa.array(text, pa.string())


def _fail(path: Path | str, what: str) -> PayloadError:
    return PayloadError(f"{path}: {what}")


def _to_wkb(geoms: Any) -> tuple[bytes | None, ...]:
    return tuple(shapely.to_wkb(np.asarray(geoms, dtype=object)).tolist()) if len(geoms) else ()
