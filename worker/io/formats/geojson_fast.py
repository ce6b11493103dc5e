"""WKB of GeoJSON geometries parsed by simdjson, vectorized for the common types.

:class:`Geometries` collects the ``geometry`` members of a piece of features (simdjson
``Object`` proxies, :mod:`.geojson_stream`) and gives the WKB that
:func:`~worker.io.formats.geojson_geos.geometries_from_texts` gives for their JSON text,
byte for byte, without turning coordinates into Python numbers (the cost of every
pure-Python reading: 2.2 million floats for 20,000 polygons).

Only geometries that are plainly well formed take the vectorized path: a ``Point``,
``Polygon`` or ``MultiPolygon`` object with exactly the members ``type`` and
``coordinates``, whose positions are all arrays of one length (2 or 3) of JSON numbers
(simdjson's ``as_buffer`` refuses anything else), nested exactly as the type says (the
count of ``[`` in the minified coordinates proves it), with closed rings of at least 4
positions. Their coordinates go into one float64 array per type and dimension, through
:func:`shapely.from_ragged_array` and :func:`shapely.to_wkb`: used as written (no ring
closed, no vertex removed: a bowtie stays a bowtie). Every other geometry (open rings,
empty coordinates, mixed dimensions, other types, collections, wrong nesting) is turned
into Python values and read by the whole read's own function, so its finding (GEOS's
reason, the literal WKB of an open ring) is the same as there.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, cast

import numpy as np
import shapely
import simdjson

from worker.io.formats.base import _to_wkb
from worker.io.formats.geojson_geos import geometries_from_texts, too_deep

__all__ = ["Geometries", "plain"]

_KINDS = {"Point": 0, "Polygon": 1, "MultiPolygon": 2}
_RAGGED = {
    0: shapely.GeometryType.POINT,
    1: shapely.GeometryType.POLYGON,
    2: shapely.GeometryType.MULTIPOLYGON,
}
_NUMBERS = {int, float}


def plain(value: Any) -> Any:
    """A simdjson value as Python values (``dict``, ``list``, scalars)."""
    if isinstance(value, simdjson.Object):
        return value.as_dict()
    if isinstance(value, simdjson.Array):
        return value.as_list()
    return value


@dataclass
class _Group:
    """Geometries of one kind and dimension: their rows, coordinates and counts."""

    rows: list[int] = field(default_factory=list)
    coords: list[np.ndarray] = field(default_factory=list)
    rings: list[int] = field(default_factory=list)  # positions per ring
    polygons: list[int] = field(default_factory=list)  # rings per polygon
    parts: list[int] = field(default_factory=list)  # polygons per multipolygon
    per_row: list[int] = field(default_factory=list)  # rings per geometry
    values: list[Any] = field(default_factory=list)  # the simdjson geometries


@dataclass
class Geometries:
    """The geometries of one piece of features, added in feature order."""

    count: int = 0
    groups: dict[tuple[int, int], _Group] = field(default_factory=dict)
    slow: dict[int, Any] = field(default_factory=dict)

    def add(self, geometry: Any) -> None:
        """Take the next feature's ``geometry`` value (None for null)."""
        row = self.count
        self.count += 1
        if geometry is None:
            return
        if not self._fast(row, geometry):
            self.slow[row] = plain(geometry)

    def _fast(self, row: int, g: Any) -> bool:
        if not isinstance(g, simdjson.Object) or len(g) != 2:
            return False
        kind = _KINDS.get(g.get("type"))  # type: ignore[arg-type]
        coords = g.get("coordinates")
        if kind is None or not isinstance(coords, simdjson.Array) or not len(coords):
            return False
        try:
            if kind == 0:
                return self._point(row, coords)
            return self._polygonal(row, kind, g, coords)
        except (TypeError, ValueError):  # a number where an array belongs, not numbers
            return False

    def _group(self, kind: int, dim: int) -> _Group:
        group = self.groups.get((kind, dim))
        if group is None:
            group = self.groups[kind, dim] = _Group()
        return group

    def _point(self, row: int, coords: Any) -> bool:
        values = coords.as_list()
        if len(values) not in (2, 3) or not set(map(type, values)) <= _NUMBERS:
            return False
        group = self._group(0, len(values))
        group.rows.append(row)
        group.coords.append(np.asarray(values, dtype=np.float64))
        group.values.append(coords)
        return True

    def _polygonal(self, row: int, kind: int, g: Any, coords: Any) -> bool:
        polygons = [coords] if kind == 1 else list(coords)
        rings: list[int] = []
        counts: list[int] = []
        dims: set[int] = set()
        for polygon in polygons:
            if not isinstance(polygon, simdjson.Array) or not len(polygon):
                return False
            for ring in polygon:
                if not isinstance(ring, simdjson.Array) or len(ring) < 4:
                    return False
                dims.update(map(len, cast(Any, ring)))
                rings.append(len(ring))
            counts.append(len(polygon))
        if len(dims) != 1 or not dims <= {2, 3}:
            return False
        dim = dims.pop()
        flat = np.frombuffer(coords.as_buffer(of_type="d"), dtype=np.float64)
        positions = sum(rings)
        brackets = 1 + (len(polygons) if kind == 2 else 0) + len(rings) + positions
        if len(flat) != positions * dim or coords.mini.count(b"[") != brackets:
            return False
        group = self._group(kind, dim)
        group.rows.append(row)
        group.coords.append(flat)
        group.rings.extend(rings)
        group.polygons.extend(counts)
        group.per_row.append(len(rings))
        group.values.append(g)
        if kind == 2:
            group.parts.append(len(polygons))
        return True

    def wkb(self) -> tuple[list[bytes | None], dict[int, str], bool]:
        """WKB per feature (None for null or no WKB), the reason of each geometry without
        WKB (row in the piece), whether any geometry has a third coordinate."""
        out: list[bytes | None] = [None] * self.count
        errors: dict[int, str] = {}
        heights = False
        for (kind, dim), group in self.groups.items():
            coords = np.concatenate(group.coords).reshape(-1, dim)
            open_rows = _open(kind, coords, group)
            for i in open_rows:  # an open ring: the geometry goes the whole read's way
                self.slow[group.rows[i]] = plain(group.values[i])
            if len(open_rows):
                group, coords = _without(group, open_rows, dim)
            if not group.rows:
                continue
            for row, value in zip(group.rows, _built(kind, coords, group), strict=True):
                out[row] = value
            heights = heights or dim == 3
        if self.slow:
            heights = _slow(self.slow, out, errors) or heights
        return out, errors, heights


def _offsets(sizes: list[int]) -> np.ndarray:
    out = np.zeros(len(sizes) + 1, dtype=np.int64)
    np.cumsum(sizes, out=out[1:])
    return out


def _open(kind: int, coords: np.ndarray, group: _Group) -> np.ndarray:
    """Indices (in the group) of the geometries with a ring whose first and last
    positions differ."""
    if kind == 0:
        return np.zeros(0, dtype=np.int64)
    offsets = _offsets(group.rings)
    ring_open = np.any(coords[offsets[:-1]] != coords[offsets[1:] - 1], axis=1)
    if not ring_open.any():
        return np.zeros(0, dtype=np.int64)
    owner = np.repeat(np.arange(len(group.per_row)), group.per_row)
    return np.unique(owner[ring_open])


def _without(group: _Group, drop: np.ndarray, dim: int) -> tuple[_Group, np.ndarray]:
    """``group`` less the geometries at ``drop`` (indices in it), and its coordinates."""
    kept = _Group()
    gone = set(drop.tolist())
    ring_at = _offsets(group.per_row)
    poly_at = 0
    for i, row in enumerate(group.rows):
        n_polys = group.parts[i] if group.parts else 1
        if i not in gone:
            kept.rows.append(row)
            kept.coords.append(group.coords[i])
            kept.values.append(group.values[i])
            kept.rings.extend(group.rings[ring_at[i] : ring_at[i + 1]])
            kept.polygons.extend(group.polygons[poly_at : poly_at + n_polys])
            kept.per_row.append(group.per_row[i])
            if group.parts:
                kept.parts.append(n_polys)
        poly_at += n_polys
    coords = np.concatenate(kept.coords).reshape(-1, dim) if kept.coords else np.zeros((0, dim))
    return kept, coords


def _built(kind: int, coords: np.ndarray, group: _Group) -> list[bytes | None]:
    if kind == 0:
        return list(_to_wkb(shapely.from_ragged_array(_RAGGED[0], coords)))
    ring_offsets = _offsets(group.rings)
    poly_offsets = _offsets(group.polygons)
    offsets: tuple[np.ndarray, ...] = (ring_offsets, poly_offsets)
    if kind == 2:
        offsets = (*offsets, _offsets(group.parts))
    return list(_to_wkb(shapely.from_ragged_array(_RAGGED[kind], coords, offsets)))


def _slow(slow: dict[int, Any], out: list[bytes | None], errors: dict[int, str]) -> bool:
    """The whole read's conversion of the geometries in ``slow`` (row -> Python value)
    into ``out`` and ``errors``; whether one has a third coordinate."""
    rows = sorted(slow)
    texts: list[str | None] = []
    refused: dict[int, str] = {}
    for n, row in enumerate(rows):
        value = slow[row]
        reason = too_deep(value)
        texts.append(None if reason else json.dumps(value))
        if reason:
            refused[n] = reason
    got, errs, heights = geometries_from_texts(texts)
    errs.update(refused)
    for n, row in enumerate(rows):
        out[row] = got[n]
        if n in errs:
            errors[row] = errs[n]
    return heights
