"""The offenders file: offending features as a GeoJSON FeatureCollection (``check
--offenders``, ``quarantine show --geojson``), to open in QGIS or any GIS; registered as
:data:`worker.io.formats.OFFENDERS_FILE`, so no other module names its format.

Each feature that broke at least one clause is written once, with its geometry as the
batch stores it (in ``east_north`` order: x is longitude/easting, whatever the declared
axis order), its attributes, and the clauses it broke as properties:

* ``gate_index`` (row index in the batch), ``gate_id`` (its feature id, or null),
* ``gate_broken``: the broken clauses, comma-separated (``v1.0:extent, v1.1:continent``),
* one property per broken clause, named ``version:clause``, holding the value measured on
  that feature (a GEOS reason, the offending code, bounds as JSON text, ...).

Coordinates stay in the batch's declared CRS: RFC 7946 GeoJSON is OGC:CRS84 only, so for
any other CRS the document carries the GeoJSON 2008 ``crs`` member
(``urn:ogc:def:crs:EPSG::2263``), which GDAL and QGIS read. A feature whose geometry is
missing, cannot be parsed or has a NaN or infinite coordinate (which GeoJSON cannot
write) is written with ``"geometry": null`` and the reason in ``gate_geometry_null``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
import shapely

from worker.core._util.jsonsafe import finite_json
from worker.core.facts.batch import BatchFacts
from worker.core.model import Batch
from worker.core.offenders import left_out
from worker.core.spatial.crs import crs_equivalent, crs_label
from worker.io.formats.wkb_writer import wkb_to_geojson

__all__ = ["AS_SENT", "WRITER", "OffendersFile", "geometry_as_sent", "offenders_collection"]


class ClauseOffenders(Protocol):
    """A broken clause as the writer reads it
    (:class:`worker.io.reports.offenders.BrokenClause`)."""

    @property
    def label(self) -> str: ...
    @property
    def kind(self) -> str: ...
    @property
    def mode(self) -> str: ...
    @property
    def offenders(self) -> Mapping[str, Any]: ...


def _crs_member(batch: Batch, facts: BatchFacts) -> dict[str, Any] | None:
    crs = facts.declared_crs
    if crs is None or crs_equivalent(crs, "OGC:CRS84"):
        return None
    auth = crs.to_authority()
    name = f"urn:ogc:def:crs:{auth[0]}::{auth[1]}" if auth else crs.to_wkt()
    return {"type": "name", "properties": {"name": name}}


def _geometry(geom: Any) -> tuple[Any, str | None]:
    """``(GeoJSON geometry, None)``, or ``(None, why it is null)``: a geometry with a NaN
    or infinite coordinate would be written with ``null`` numbers (not valid GeoJSON)."""
    if geom is None or shapely.is_missing(geom):
        return None, "missing or unparseable geometry"
    # 2D geometries report NaN for the z they do not have: ask for z only when present
    coords = shapely.get_coordinates(geom, include_z=bool(shapely.has_z(geom)))
    if coords.size and not np.isfinite(coords).all():
        return None, "non-finite coordinate (NaN or infinity): not representable in GeoJSON"
    try:
        return json.loads(shapely.to_geojson(geom)), None
    except (shapely.errors.GEOSException, ValueError) as exc:
        return None, f"cannot be written as GeoJSON: {exc}"


#: The ``gate_geometry_as_sent`` property of a feature whose geometry GEOS refuses.
AS_SENT = (
    "GEOS cannot read this geometry (see the validity clause): its coordinates are "
    "written exactly as sent, never repaired"
)


def geometry_as_sent(batch: Batch, index: int) -> dict[str, Any] | None:
    """The geometry of feature ``index`` read literally from its WKB
    (:func:`~worker.io.formats.wkb_writer.wkb_to_geojson`), x first; None when it cannot be."""
    data = batch.geometries_wkb[index]
    geometry = wkb_to_geojson(data) if data is not None else None
    if geometry is not None and batch.axis_order == "north_east":
        geometry = _swapped(geometry)
    return geometry


def _swapped(node: Any) -> Any:
    """A GeoJSON geometry (or coordinates) with x and y exchanged in every position."""
    if isinstance(node, dict):
        return {
            k: _swapped(v) if k in ("coordinates", "geometries") else v for k, v in node.items()
        }
    if node and all(isinstance(v, float) for v in node):
        return [node[1], node[0], *node[2:]]
    return [_swapped(v) for v in node]


def _property(value: Any) -> Any:
    """A property value QGIS can show as one field: scalars as they are, the rest JSON text."""
    if value is None or isinstance(value, bool | int | float | str):
        return finite_json(value)
    return json.dumps(finite_json(value), default=str, ensure_ascii=False)


def offenders_collection(
    batch: Batch, broken: Sequence[ClauseOffenders], *, name: str | None = None
) -> dict[str, Any]:
    """The offending features of ``broken`` as a GeoJSON FeatureCollection (a dict).

    Features are in batch order. A top-level ``contract_gate`` member says, per clause, how
    many features broke it (``total``) and how many are written (``written``: the records
    keep the first 100; then a ``note``, "138 offend, 100 recorded, 38 not written").
    Raises nothing for bad geometries (they are written as null).
    """
    facts = BatchFacts(batch)
    by_index: dict[int, dict[str, Any]] = {}
    for b in broken:
        for f in b.offenders.get("features") or []:
            i = f.get("index")
            if not isinstance(i, int) or not 0 <= i < facts.count:
                continue
            row = by_index.setdefault(i, {"id": f.get("id"), "clauses": {}})
            row["clauses"][b.label] = f.get("value")
    table = batch.attributes
    features = []
    geoms = facts.east_north if facts.count else np.empty(0, dtype=object)
    for i in sorted(by_index):
        row = by_index[i]
        attrs = table.slice(i, 1).to_pylist()[0] if table.num_rows > i else {}
        props = {k: _property(v) for k, v in attrs.items()}
        props["gate_index"] = i
        props["gate_id"] = _property(row["id"])
        props["gate_broken"] = ", ".join(row["clauses"])
        props.update({label: _property(v) for label, v in row["clauses"].items()})
        geometry, why_null = _geometry(geoms[i])
        if facts.unparseable[i] and why_null is None:
            # GEOS refused it: the shape it gave (an open ring closed) is not what was sent
            geometry = geometry_as_sent(batch, i)
            if geometry is None:
                why_null = "GEOS cannot read it, nor can it be written as sent"
            else:
                props["gate_geometry_as_sent"] = AS_SENT
        if why_null is not None:
            props["gate_geometry_null"] = why_null
        feature: dict[str, Any] = {"type": "Feature", "geometry": geometry}
        if isinstance(row["id"], str | int) and not isinstance(row["id"], bool):
            feature["id"] = row["id"]
        feature["properties"] = props
        features.append(feature)
    doc: dict[str, Any] = {"type": "FeatureCollection", "name": name or batch.batch_id}
    crs = _crs_member(batch, facts)
    if crs is not None:
        doc["crs"] = crs
    doc["contract_gate"] = {
        "batch_id": batch.batch_id,
        "layer": batch.layer,
        "declared_crs": crs_label(facts.declared_crs) if facts.declared_crs else None,
        "clauses": [
            {
                "clause": b.label,
                # a QuarantineRecord written before reasons carried their clause kind
                # has none: left out, never ""
                **({"kind": b.kind} if b.kind else {}),
                "mode": b.mode,
                "total": b.offenders.get("total"),
                "written": len(b.offenders.get("features") or []),
                **({"note": note} if (note := _unwritten(b)) else {}),
                "measure": b.offenders.get("measure"),
            }
            for b in broken
        ],
    }
    doc["features"] = features
    return doc


def _unwritten(b: ClauseOffenders) -> str | None:
    total, named = b.offenders.get("total"), len(b.offenders.get("features") or [])
    return left_out(total, named, "not written")


@dataclass(frozen=True)
class OffendersFile:
    """The writer of the offenders file (``check --offenders``, ``quarantine show``): how
    the CLI and reports name it, and the function that builds the document."""

    #: the option of ``quarantine show`` that writes it
    flag: str
    #: the format, in messages ("or write them as ...")
    title: str
    #: what the file holds, in help texts ("write the offending features as a ...")
    described: str
    suffix: str

    def collection(
        self, batch: Batch, broken: Sequence[ClauseOffenders], *, name: str | None = None
    ) -> dict[str, Any]:
        """:func:`offenders_collection`."""
        return offenders_collection(batch, broken, name=name)


WRITER = OffendersFile(
    flag="--geojson",
    title="GeoJSON",
    described="GeoJSON FeatureCollection",
    suffix=".geojson",
)
