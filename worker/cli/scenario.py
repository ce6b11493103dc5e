"""The demo scenario: real batches from the shipped data and faulty ones derived from them.

Layers: ``admin_boundaries`` (Natural Earth 1:110m countries, EPSG:4326, 177 features) and
``nyc_boroughs`` (NYC DCP borough boundaries 16A, EPSG:2263, 5 high-vertex
MultiPolygons). Each faulty batch changes one thing of a real batch, so its quarantine
reason is the one the label names. Used by ``contract-gate demo`` and the integration
tests.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from importlib import resources
from pathlib import Path

import numpy as np
import pyarrow as pa
import shapely

from worker.core.errors import ContractGateError
from worker.core.model import Batch
from worker.core.spatial import cached_transformer
from worker.io.codec import encode_batch
from worker.io.formats import batch_files
from worker.io.payloads import read_batch_file

__all__ = ["DemoEvent", "contract_files", "data_file", "demo_events"]

#: Contract files of the demo and the mode each is published in.
CONTRACTS: tuple[tuple[str, str], ...] = (
    ("admin_boundaries.v1.yaml", "enforcing"),
    ("admin_boundaries.v1.1.yaml", "observing"),
    ("nyc_boroughs.v1.yaml", "enforcing"),
)


@dataclass(frozen=True)
class DemoEvent:
    """One event of the scenario: a label, the record key and the encoded value."""

    label: str
    key: str
    value: bytes
    batch_id: str | None
    description: str


def data_file(name: str) -> Path:
    """Path of a file shipped in ``worker/data``."""
    return Path(str(resources.files("worker.data").joinpath(name)))


def shipped_batch(layer: str) -> Path:
    """The batch file shipped in ``worker/data`` for ``layer``: the one named after it in
    a format of the reader registry (:func:`worker.io.formats.batch_files`).

    Raises
    ------
    ContractGateError
        No such file is shipped (the package data is incomplete).
    """
    found = batch_files(data_file(""), layer)
    if not found:
        raise ContractGateError(
            f"no batch file for layer {layer!r} is shipped in worker/data",
            field="layer",
            fix="give a layer whose batch file is shipped in worker/data",
        )
    return found[0]


def contract_files() -> list[tuple[Path, str]]:
    """``(path, mode)`` of each demo contract, in publication order."""
    return [(data_file(f"contracts/{name}"), mode) for name, mode in CONTRACTS]


def _with_geometries(batch: Batch, geoms: np.ndarray, **changes: object) -> Batch:
    wkb = tuple(None if g is None else bytes(g) for g in shapely.to_wkb(geoms))
    return replace(batch, geometries_wkb=wkb, **changes)  # type: ignore[arg-type]


def _subset(batch: Batch, mask: np.ndarray) -> Batch:
    idx = np.flatnonzero(mask)
    wkb = tuple(batch.geometries_wkb[i] for i in idx.tolist())
    return replace(
        batch,
        geometries_wkb=wkb,
        attributes=batch.attributes.take(pa.array(idx)),
        feature_count=len(idx),
    )


def _bowtie_at(batch: Batch, index: int) -> Batch:
    geoms = shapely.from_wkb(np.array(batch.geometries_wkb, dtype=object))
    minx, miny, maxx, maxy = shapely.bounds(geoms[index])
    # A self-intersecting ring over the feature's own bounding box: (minx miny, maxx maxy,
    # maxx miny, minx maxy) crosses itself in the middle.
    geoms[index] = shapely.Polygon([(minx, miny), (maxx, maxy), (maxx, miny), (minx, maxy)])
    return _with_geometries(batch, geoms)


def _set_value(batch: Batch, column: str, index: int, value: str) -> Batch:
    table = batch.attributes
    values = table.column(column).to_pylist()
    values[index] = value
    i = table.schema.get_field_index(column)
    return replace(batch, attributes=table.set_column(i, column, pa.array(values, pa.string())))


def _rename(batch: Batch, old: str, new: str) -> Batch:
    names = [new if n == old else n for n in batch.attributes.column_names]
    fields = tuple(replace(f, name=new) if f.name == old else f for f in batch.schema_fields)
    return replace(batch, attributes=batch.attributes.rename_columns(names), schema_fields=fields)


def demo_events(now: datetime) -> list[DemoEvent]:
    """The scenario's events, in publication order, with data times relative to ``now``."""
    fresh = now - timedelta(hours=1)
    world = read_batch_file(
        shipped_batch("admin_boundaries"),
        layer="admin_boundaries",
        crs="EPSG:4326",
        axis_order="east_north",
        data_time=fresh,
        batch_id="ab-real",
        producer="natural-earth-sync",
    )
    nyc = read_batch_file(
        shipped_batch("nyc_boroughs"),
        layer="nyc_boroughs",
        crs="EPSG:2263",
        axis_order="east_north",
        data_time=fresh,
        batch_id="nyc-real",
        producer="dcp-boroughs",
    )
    continents = np.array(world.attributes.column("continent").to_pylist(), dtype=object)
    europe = _subset(world, np.isin(continents, ["Europe"]))
    ea_geoms = shapely.from_wkb(np.array(europe.geometries_wkb, dtype=object))

    swapped = shapely.transform(ea_geoms, lambda xy: xy[:, ::-1])
    to_3857 = cached_transformer("EPSG:4326", "EPSG:3857")
    mercator = shapely.transform(
        ea_geoms, lambda xy: np.column_stack(to_3857.transform(xy[:, 0], xy[:, 1]))
    )

    batches: list[tuple[str, Batch, str]] = [
        ("ab-real", world, "all 177 Natural Earth countries, as published"),
        (
            "ab-axis-swapped",
            _with_geometries(europe, swapped, batch_id="ab-axis-swapped"),
            "Europe stored latitude-first, declared east_north",
        ),
        (
            "ab-web-mercator",
            _with_geometries(europe, mercator, batch_id="ab-web-mercator"),
            "Europe reprojected to EPSG:3857 metres, still declared EPSG:4326",
        ),
        (
            "ab-self-intersecting",
            replace(_bowtie_at(world, 0), batch_id="ab-self-intersecting"),
            "one country's ring replaced by a self-intersecting (bowtie) ring",
        ),
        (
            "ab-unknown-continent",
            replace(_set_value(world, "continent", 0, "Atlantis"), batch_id="ab-unknown-continent"),
            "one continent code replaced by 'Atlantis'",
        ),
        (
            "ab-stale",
            replace(world, batch_id="ab-stale", data_time=now - timedelta(days=2)),
            "real data with a data time two days old",
        ),
        (
            "ab-renamed-column",
            replace(_rename(world, "continent", "continent_name"), batch_id="ab-renamed-column"),
            "column 'continent' renamed to 'continent_name'",
        ),
        ("nyc-real", nyc, "the 5 NYC boroughs (high-vertex MultiPolygons, US survey feet)"),
        (
            "roads-unknown-layer",
            replace(nyc, layer="road_network", batch_id="roads-unknown-layer"),
            "a layer with no contract",
        ),
    ]
    events = [
        DemoEvent(label, b.layer, encode_batch(replace(b, produced_at=now)), b.batch_id, text)
        for label, b, text in batches
    ]
    events.insert(
        len(events) - 1,
        DemoEvent(
            "undecodable",
            "admin_boundaries",
            b"\x00not-avro\xff" * 8,
            None,
            "bytes that are not a BatchArrival record",
        ),
    )
    return events
