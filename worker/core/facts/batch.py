"""Batch facts: everything the clauses measure, derived once and lazily from a Batch.

Every fact is a :class:`worker.core._util.memo.fact` (a lock-free cached property), so evaluating
N contract versions against the same :class:`BatchFacts` parses the WKB once, computes
validity once, and so on.
All array facts are vectorized numpy arrays with one entry per feature, in batch order.

Geometries are normalised to ``east_north`` order (x = longitude/easting) in
:attr:`BatchFacts.geometries`; :attr:`BatchFacts.raw_geometries` keeps the stored order.
Missing (None) and unparseable WKB give a ``None`` geometry and count as invalid (the
reason of an unparseable one is GEOS's, e.g. "Points of LinearRing do not form a closed
linestring"); so does a geometry the reader could not write as WKB (``Batch.geometry_errors``).
Empty geometries are valid here, as in GEOS: the geometry_type clause governs them
(``allow_empty``), so one empty feature is reported once, by one clause.

The facts come in three layers, one module each, which :class:`BatchFacts` stacks:
:mod:`.parse` (WKB to geometries in ``east_north`` order, the declared CRS, envelopes),
:mod:`.geometry` (types, dimensions, empties, non-finite coordinates, validity) and
:mod:`.crs` (reprojection into a clause's CRS, area of use, covering bbox). This module
re-exports the helpers its importers use (:data:`MAX_REASONS`, :func:`edges_problem`,
:func:`nonfinite_mask`).
"""

from __future__ import annotations

import functools
import hashlib
import json
from typing import Any

import numpy as np
from pyproj import CRS

from worker.core._util.memo import fact
from worker.core.facts.crs import CrsFacts
from worker.core.facts.edges import edges_problem
from worker.core.facts.geometry import MAX_REASONS, nonfinite_mask
from worker.core.model import Batch

__all__ = [
    "MAX_REASONS",
    "BatchFacts",
    "edges_problem",
    "nonfinite_mask",
    "schema_fingerprint",
]


def schema_fingerprint(fields: Any) -> str:
    """sha256 (hex) of the canonical JSON list of ``{name, type, nullable}`` sorted by name.

    ``fields`` is an iterable of objects with ``name``, ``type`` and ``nullable``; a tuple
    of :class:`worker.core.model.FieldSpec` (hashable) is computed once per distinct schema.
    """
    if isinstance(fields, tuple) and len(fields) <= _CACHED_SCHEMA_FIELDS:
        try:
            return _cached_fingerprint(fields)
        except TypeError:  # unhashable elements
            pass
    return _fingerprint(fields)


#: Schemas of at most this many fields have their fingerprint cached (the fields come from
#: producers: the cache must stay small whatever they send).
_CACHED_SCHEMA_FIELDS = 64


@functools.lru_cache(maxsize=256)
def _cached_fingerprint(fields: tuple[Any, ...]) -> str:
    return _fingerprint(fields)


def _fingerprint(fields: Any) -> str:
    canon = sorted(
        ({"name": f.name, "nullable": bool(f.nullable), "type": f.type} for f in fields),
        key=lambda d: d["name"],
    )
    text = json.dumps(canon, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class BatchFacts(CrsFacts):
    """Lazily computed, cached facts of one :class:`worker.core.model.Batch`.

    Parameters
    ----------
    batch : worker.core.model.Batch
        The decoded batch. It is not copied and must not be mutated.
    offset : int
        When ``batch`` is one chunk of a larger batch (:mod:`worker.core.chunks`), the
        index of its first feature in the whole batch: feature indices reported to users
        (offenders, invalid reasons) are ``offset`` + the index in the chunk. Default 0.
    edges : (str or None,), optional
        The whole batch's :attr:`edges_problem`, in a 1-tuple, when ``batch`` is a chunk
        (the spherical edges of an undeclared CRS are honoured only when *every*
        coordinate of the batch is longitude/latitude); default: computed from ``batch``.
    """

    def __init__(self, batch: Batch, offset: int = 0, edges: tuple[str | None] | None = None):
        self.batch = batch
        self.offset = offset
        self._reprojected: dict[int, tuple[CRS, np.ndarray, np.ndarray]] = {}
        if edges is not None:
            self.__dict__["edges_problem"] = edges[0]  # primes the cached_property

    def feature_ids(self, column: str | None = None) -> np.ndarray:
        """object (N,): the id naming each feature in reports, None where it has none.

        The values of ``Batch.id_column``, else of ``column`` (the contract's
        ``id_column``), when the batch has that attribute column (non-finite floats and
        nulls give None); else ``Batch.feature_ids`` (the ids the file gives); else all
        None (the row index is then the feature's only name).
        """
        out = np.full(self.count, None, dtype=object)
        name = self.batch.id_column or column
        table = self.batch.attributes
        if name and name in table.column_names and table.num_rows == self.count:
            values = table.column(name).to_pylist()
        elif self.batch.feature_ids is not None and len(self.batch.feature_ids) == self.count:
            values = list(self.batch.feature_ids)
        else:
            return out
        for i, v in enumerate(values):
            if isinstance(v, bool) or v is None:
                out[i] = None if v is None else str(v)
            elif isinstance(v, int | str):
                out[i] = v
            elif isinstance(v, float):
                out[i] = v if np.isfinite(v) else None
            else:
                out[i] = str(v)
        return out

    @fact
    def schema_fingerprint(self) -> str:
        """sha256 hex of the batch's declared schema fields (see :func:`schema_fingerprint`)."""
        return schema_fingerprint(self.batch.schema_fields)
