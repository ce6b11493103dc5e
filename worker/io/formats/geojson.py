"""GeoJSON FeatureCollections (RFC 7946) into :class:`~worker.io.formats.base.FeatureData`.

The CRS, from the file (RFC 7946 section 4): ``OGC:CRS84`` (WGS 84 longitude, latitude),
or ``OGC:CRS84h`` when a position has a third element, which RFC 7946 defines as the
height in metres above the WGS 84 ellipsoid (EPSG:4979 ignoring axis order; GDAL exposes
EPSG:4979 for such files since OSGeo/gdal#5557); axis order ``east_north``. A file with the
legacy 2008 ``crs`` member (``{"type": "name", "properties": {"name": ...}}``) states that
CRS itself (``crs_stated``), which is honoured and compared with a producer's declaration.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa

from worker.core._util.text import clip
from worker.core.errors import PayloadCorrupt, PayloadTooLarge
from worker.io.formats.base import (
    RFC7946_CRS,
    RFC7946_CRS_3D,
    ChunkedFile,
    FeatureData,
    Source,
    _fail,
    canonical_table,
    text_column,
)

#: What may be left unread where a document was cut: a literal or a number begun.
_CUT_TOKEN = re.compile(r"t(r(ue?)?)?|f(a(l(se?)?)?)?|n(u(ll?)?)?|[-+.0-9eE]+")


def _not_json(path: Path | str, exc: UnicodeDecodeError | json.JSONDecodeError) -> PayloadCorrupt:
    """The error of a file that is not JSON; one whose JSON document ends before it is
    complete (cut in a string, a literal, a number, or between tokens) is said to be cut
    short, not to be of another format."""
    if isinstance(exc, UnicodeDecodeError):
        cut = exc.reason == "unexpected end of data"
    else:
        rest = exc.doc[exc.pos :].rstrip()
        cut = exc.msg.startswith("Unterminated string") or (
            exc.pos > 0 and (not rest or _CUT_TOKEN.fullmatch(rest) is not None)
        )
    if cut:
        return PayloadCorrupt(
            f"{path}: truncated: the file ends inside its JSON document ({exc})",
            fix="give the whole file (a copy or upload that stopped early?)",
        )
    if isinstance(exc, UnicodeDecodeError):  # JSON text, not UTF-8: say so, as for a column
        from worker.io.formats.canonical import UndecodableText

        around = exc.object[max(0, exc.start - 12) : exc.end + 8]
        return UndecodableText(
            f"{path}: text that is not UTF-8 at byte {exc.start} ({clip(repr(around), 80)}: "
            f"{exc.reason}): the bytes are in another encoding than the format says; "
            "GeoJSON is UTF-8 (RFC 8259 section 8.1)",
            fix="rewrite the file as UTF-8 (e.g. iconv -f ISO-8859-1 -t UTF-8, or ogr2ogr)",
        )
    from worker.io.formats import formats_read

    return PayloadCorrupt(f"{path}: not a JSON document ({exc}); {formats_read()}")


def _read_geojson(path: Path | str, data: bytes | None = None) -> FeatureData:
    """The FeatureCollection in ``data`` (default: the bytes of the file ``path``);
    ``path`` names the file in messages."""
    # imported when a GeoJSON file is read: a batch in another format needs none of them
    from worker.io.formats.geojson_geos import geometries_from_texts, legacy_crs, too_deep
    from worker.io.formats.strict_json import NotStrictJson, loads_strict

    if data is None:
        data = Path(path).read_bytes()
    try:
        doc = loads_strict(data)
    except NotStrictJson as exc:
        raise NotStrictJson(
            f"{path}: not strict JSON, so not GeoJSON (RFC 7946 section 1.4 builds on RFC "
            f"8259): at {exc}; write null for a missing value and one member per name"
        ) from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise _not_json(path, exc) from None
    except RecursionError:
        raise PayloadCorrupt(
            f"{path}: JSON nested too deeply to read (hundreds of levels of arrays or objects)"
        ) from None
    if not isinstance(doc, dict):
        names = {list: "an array", str: "a string", bool: "a boolean", type(None): "null"}
        what = names.get(type(doc), "a number")
        raise _fail(path, f"not a GeoJSON FeatureCollection: the JSON document is {what}")
    if doc.get("type") != "FeatureCollection":
        kind = doc.get("type")
        raise _fail(
            path,
            "not a GeoJSON FeatureCollection: "
            + (
                'the object has no "type" member'
                if kind is None
                else f'its "type" is {clip(str(kind), 80)!r}'
            ),
        )
    features = doc.get("features")
    if not isinstance(features, list):
        raise _fail(path, "the FeatureCollection has no 'features' list")
    geoms: list[str | None] = []
    props: list[dict[str, Any]] = []
    refused_before_geos: dict[int, str] = {}
    ids: list[str | int | float | None] = []
    for i, feat in enumerate(features):
        if not isinstance(feat, dict) or feat.get("type") != "Feature":
            raise _fail(path, f"features[{i}] is not a GeoJSON Feature")
        g, p = feat.get("geometry"), feat.get("properties")
        if p is not None and not isinstance(p, dict):
            raise _fail(path, f"features[{i}].properties is not an object or null")
        refused = too_deep(g)
        geoms.append(json.dumps(g) if g is not None and not refused else None)
        props.append(p or {})
        if refused:
            refused_before_geos[i] = refused
        fid = feat.get("id")
        # RFC 7946 section 3.2: a string or a number; anything else names no feature
        ok_id = isinstance(fid, str | int | float) and not isinstance(fid, bool)
        ids.append(fid if ok_id else None)
    wkb, errors, heights = geometries_from_texts(geoms)
    errors.update(refused_before_geos)
    legacy = legacy_crs(path, doc)
    return FeatureData(
        wkb,
        canonical_table(_properties_table(props), path),
        legacy if legacy is not None else RFC7946_CRS_3D if heights else RFC7946_CRS,
        crs_stated=legacy is not None,
        crs_source="legacy GeoJSON 'crs' member" if legacy is not None else "",
        geometry_errors=errors,
        feature_ids=tuple(ids) if any(i is not None for i in ids) else None,
    )


def _properties_table(props: Sequence[dict[str, Any]]) -> pa.Table:
    """One column per property name (first appearance order), one row per feature.

    A property whose values arrow cannot put in one type (``42`` and ``"see survey"``) is
    read as text with the mix recorded (:func:`~worker.io.formats.base.text_column`): the
    schema clause breaks on it when the contract names the field, and nothing else looks.
    """
    from worker.io.formats.geojson_props import BOOLS_AMONG_NUMBERS, coerced_bools

    names = list(dict.fromkeys(k for p in props for k in p))
    fields, arrays = [], []
    for name in names:
        values = [p.get(name) for p in props]
        try:
            arr = pa.array(values)
            if coerced_bools(values, arr.type):
                raise pa.ArrowTypeError(BOOLS_AMONG_NUMBERS)
            fields.append(pa.field(name, arr.type))
        except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError) as exc:
            fld, arr = text_column(name, values, str(exc))
            fields.append(fld)
        arrays.append(arr)
    if not names:  # no properties at all: a table of len(props) rows and no columns
        return pa.table({"_": pa.nulls(len(props))}).drop_columns(["_"])
    return pa.Table.from_arrays(arrays, schema=pa.schema(fields))


#: Largest GeoJSON read whole (parsed in memory, several times its size): a file the
#: stream gives back (:mod:`.geojson_stream`), or one read for ``--offenders``/``--html``.
WHOLE_READ_BYTES = 256 * 1024**2


class GeoJsonReader:
    """The registry entry (:class:`~worker.io.formats.base.Reader`) of GeoJSON: a JSON
    text starting with ``{`` or ``[`` (after an optional UTF-8 BOM and whitespace),
    parsed whole and strictly (:mod:`.strict_json`), or streamed in bounded pieces for
    chunked evaluation (:mod:`.geojson_stream`)."""

    name = "geojson"
    title = "GeoJSON"
    described: tuple[str, ...] = ("GeoJSON",)
    magic = "GeoJSON is a JSON object starting with '{'"
    suffixes: tuple[str, ...] = (".geojson", ".json")
    #: streamed in bounded memory (issue 27); read whole only up to WHOLE_READ_BYTES
    default_limit_bytes = 2 * 1024**3
    by_reference = True
    chunked = True

    def sniff(self, head: bytes, tail: bytes, name: str) -> bool:
        text = head.removeprefix(b"\xef\xbb\xbf").lstrip(b" \t\r\n")
        return text[:1] in (b"{", b"[") or (not text and len(head) >= 4096)

    def read(self, src: Source) -> FeatureData:
        """The whole file, parsed strictly in memory; refused above
        :data:`WHOLE_READ_BYTES` (raises PayloadTooLarge)."""
        size = src.file.size()
        if size > WHOLE_READ_BYTES:
            raise PayloadTooLarge(
                f"{src.uri}: {size} bytes ({size / 1024**2:.1f} MiB), above the limit of "
                f"{WHOLE_READ_BYTES} bytes ({WHOLE_READ_BYTES / 1024**2:.1f} MiB) for GeoJSON "
                "read whole (a file is read whole when it cannot be streamed: not strict "
                "JSON, or a top level whose features array was not found; and for "
                "--offenders or --html)",
                field="--max-payload-bytes",
                fix="write strict JSON (RFC 8259) or split the batch",
            )
        return _read_geojson(src.uri, src.read_all())

    def chunks(self, src: Source, count_nulls: bool = True) -> ChunkedFile | None:
        from worker.io.formats.geojson_stream import open_geojson_chunks

        return open_geojson_chunks(src, count_nulls)


READER = GeoJsonReader()
