"""The facts of several small batches computed once over their concatenation (pure).

A poll batch of one-feature events paid GEOS's per-call overhead, numpy's dispatch and
the facts' Python once per event for every fact (parse, validity, types, bounds, area of
use, reprojection): about 30% of routing such an event. :class:`SharedFacts` builds one
:class:`~worker.core.facts.batch.BatchFacts` over the features of a group of batches
whose facts may be computed together (:func:`group_key`: the same geometry metadata, no
reader errors, no points fast path), and hands each batch its own ``BatchFacts`` with the
per-feature facts the group computed cut from its arrays on their first read
(:meth:`SharedFacts.prime`, :class:`PrimedFacts`).

Only facts that are one value per feature, computed from that feature and the batch's
shared metadata alone, are cut (:data:`PER_FEATURE`); whole-batch facts (the feature
count, ``lonlat_fits``, ``edges_problem``, ``invalid_reasons``) stay each batch's own and
are computed from its features as before. A fact the group has not computed is not
primed: the batch computes it itself. So every fact a batch reads is the value it would
compute alone (``tests/core/test_shared_facts.py`` compares them fact by fact).
"""

from __future__ import annotations

import inspect
import itertools
from collections.abc import Hashable, Sequence
from dataclasses import replace
from typing import Any

import numpy as np
import pyarrow as pa

from worker.core.event_batches import joined_attributes
from worker.core.facts.batch import BatchFacts
from worker.core.facts.parse import POINTS_WITHOUT_GEOMETRIES_MIN
from worker.core.facts.wkb_header import POINT_WKB_BYTES
from worker.core.model import Batch

__all__ = [
    "PER_FEATURE", "Computed", "PrimedFacts", "SharedFacts", "columns_key", "computed",
    "group_attributes", "group_key",
]  # fmt: skip

#: Facts holding one array entry per feature (first axis), cut per batch.
PER_FEATURE = (
    "_wkb_array", "_unbuilt", "missing", "_read", "_strict", "_strict_missing", "_refused_mask",
    "unparseable", "parsed", "east_north", "geometries", "bounds", "type_ids", "has_z",
    "has_m", "type_name_index", "type_names", "_geos_valid", "is_empty", "has_nonfinite",
    "orientation_contradicted", "usable", "is_valid", "outside_area_of_use",
)  # fmt: skip
#: Facts holding ``{feature index: value}``, re-indexed per batch.
PER_FEATURE_DICTS = ("_refused_before_parse", "_trailing", "_refused", "curve_type_names")
#: Facts of the group's shared metadata, the same object for every batch.
SHARED = ("_crs_resolution",)
#: Per-feature facts cut by :meth:`SharedFacts.prime` on their own (a tuple of arrays; an
#: array that may be the very ``_strict`` array).
_PARSE = ("_headers", "raw_geometries")
#: The empty attribute table of the group's own batch (its facts read no attribute) when
#: its batches' tables cannot be joined (:func:`group_attributes`).
_NO_ATTRIBUTES = pa.table({})
#: Where :func:`group_attributes` is kept (in the group's facts' ``__dict__``).
_ATTRIBUTES = "_group_attributes"
#: Where :func:`columns_key` is kept (in a batch's facts' ``__dict__``).
_COLUMNS = "_columns_key"


def group_key(batch: Batch) -> Hashable | None:
    """What the facts of ``batch`` read besides its features, as a hashable key: batches
    with equal keys may share :class:`SharedFacts`. None for a batch whose facts cannot be
    shared: reader errors, a covering bbox column or coordinate bounds (file readers'),
    spherical edges (their edge model is judged on the whole batch), or as many features
    as the points fast paths take (:data:`POINTS_WITHOUT_GEOMETRIES_MIN`), half of them or
    more the size of a 2D point: the group's facts are computed the general way."""
    if (
        batch.geometry_errors
        or batch.covering_bbox is not None
        or batch.coordinate_bounds is not None
        or batch.edges != "planar"
        or _may_take_points_path(batch.geometries_wkb)
    ):
        return None
    return (batch.declared_crs, batch.axis_order, batch.orientation, batch.metadata_name)


def _may_take_points_path(values: Sequence[bytes | None]) -> bool:
    """Whether a batch of ``values`` may take the points fast paths (its facts then come
    another way: :attr:`~worker.core.facts.parse.ParsedFacts.points_xy`,
    :func:`~worker.core.facts.points_mixed.mixed_points`): as many features as they
    take, and at least half of them 21-byte values (a 2D WKB Point's size)."""
    n = len(values)
    if n < POINTS_WITHOUT_GEOMETRIES_MIN:
        return False
    points = sum(1 for v in values if type(v) is bytes and len(v) == POINT_WKB_BYTES)
    return 2 * points >= n


class SharedFacts:
    """The facts of ``batches`` (two or more, equal non-None :func:`group_key`) computed
    once over all their features.

    Raises
    ------
    ValueError
        Fewer than two batches, or batches whose :func:`group_key` differ or is None.
    """

    def __init__(self, batches: Sequence[Batch]) -> None:
        keys = {group_key(b) for b in batches}
        if len(batches) < 2 or len(keys) != 1 or None in keys:
            raise ValueError("SharedFacts takes two or more batches of one non-None group_key")
        counts = np.fromiter((len(b.geometries_wkb) for b in batches), dtype=np.int64)
        #: int (B + 1,): feature offsets of each batch in the concatenation
        self.starts = np.concatenate(([0], np.cumsum(counts)))
        wkb = tuple(w for b in batches for w in b.geometries_wkb)
        attributes = joined_attributes(batches)
        whole = replace(batches[0], geometries_wkb=wkb, feature_count=len(wkb),
                        attributes=_NO_ATTRIBUTES if attributes is None else attributes,
                        feature_ids=None, schema_fields=())  # fmt: skip
        self.facts = BatchFacts(whole)
        self.facts.__dict__[_ATTRIBUTES] = attributes
        # the group has as many features as the points fast path takes, its batches not:
        # the group computes their way (the same values, the same path)
        self.facts.__dict__.update(_points_xy=None, _mixed=None)
        self._size = _one_size(self.starts)
        self._have: dict[str, Any] | None = None  # the group's facts, at the first prime
        self._common: dict[str, Any] = {}
        self._reprojections: list[tuple[Any, list[Any], list[Any]]] = []
        self._cuts: dict[str, list[Any] | None] = {}  # per fact, made by its first read

    def compute(self, like: BatchFacts | Computed) -> None:
        """Compute over the group the shareable facts ``like`` (a batch's facts, evaluated
        already, or what :func:`computed` read of them) has computed, and the reprojections
        it made; whatever the group cannot compute (GEOS raised on some feature) is left to
        each batch."""
        names, crss = computed(like) if isinstance(like, BatchFacts) else like
        for name in names:
            try:
                getattr(self.facts, name)
            except Exception:  # that batch's own evaluation meets it, as alone
                self.facts.__dict__.pop(name, None)
        for dst in crss:
            try:
                self.facts.in_crs(dst)
            except Exception:
                self.facts._reprojected.pop(id(dst), None)

    def prime(self, i: int, facts: BatchFacts) -> BatchFacts:
        """``facts`` (of batch ``i``), made to read the group's computed facts cut to its
        features (a :class:`PrimedFacts`); returns it.

        The facts of the group's metadata (:data:`SHARED`, the columns' key) and the
        reprojections are set at once; each per-feature fact is cut on its first read by
        any batch, for every batch at once (:meth:`cut`: a one-feature event reads three
        of the 25 facts a group computes, and cutting every one per batch was a tenth of
        its evaluation). The cuts are views of the group's arrays (the batches' rows do
        not overlap, and no fact or clause writes into a fact array it did not make: a
        copy per array per batch was 9% of routing a one-feature event); the
        ``{feature index: value}`` facts are split per batch, each batch its own dicts.
        What the group computed is taken at the first prime (nothing computes the
        group's facts after it)."""
        if self._have is None:  # the first prime: what the group computed, and its cuts
            self._have = have = dict(self.facts.__dict__)
            common = {n: have[n] for n in SHARED if n in have}
            if have.get(_ATTRIBUTES) is not None:  # every batch's table has the group's
                common[_COLUMNS] = columns_key(self.facts)
            self._common = common
            starts, size = self.starts, self._size
            self._reprojections = [
                (dst, _views(geoms, starts, size), _views(usable, starts, size))
                for dst, geoms, usable in self.facts._reprojected.values()
            ]
        own = facts.__dict__
        own.update(self._common, _points_xy=None, _mixed=None, _group_cut=(self, i))
        for dst, geoms, usable in self._reprojections:
            facts._reprojected[id(dst)] = (dst, geoms[i], usable[i])
        facts.__class__ = PrimedFacts  # its per-feature facts read the cuts (same layout)
        return facts

    def cut(self, name: str) -> list[Any] | None:
        """The per-feature fact ``name`` the group computed (at the first :meth:`prime`),
        cut per batch (a view, or a tuple of views, each; a dict fact split), made on the
        first call; None when the group did not compute it."""
        if name in self._cuts:
            return self._cuts[name]
        have, starts, size = self._have or {}, self.starts, self._size
        column: list[Any] | None
        if name not in have:
            column = None
        elif name in PER_FEATURE_DICTS:
            column = _split(have[name], starts)
        elif name == "_headers":  # a tuple of arrays, cut array by array
            column = list(zip(*(_views(h, starts, size) for h in have[name]), strict=True))
        elif name == "raw_geometries" and have[name] is have.get("_strict"):
            column = self.cut("_strict")  # the same objects
        else:
            column = _views(have[name], starts, size)
        self._cuts[name] = column
        return column


class PrimedFacts(BatchFacts):
    """The facts of batch ``i`` of a :class:`SharedFacts` group (:meth:`SharedFacts.prime`):
    a per-feature fact (:data:`PER_FEATURE`, the parse's, the ``{feature index: value}``
    ones) is the group's cut to the batch when the group computed it, else the batch's own,
    computed as :class:`BatchFacts` computes it; every other fact is the batch's own."""

    def _known(self, name: str) -> bool:
        """Whether fact ``name`` is computed, here or for the group: reading it is free."""
        at = self.__dict__.get("_group_cut")
        return name in self.__dict__ or (at is not None and name in (at[0]._have or {}))


class _Cut:
    """A per-feature fact of :class:`PrimedFacts` (see there), kept on first read."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.own = inspect.getattr_static(BatchFacts, name).func  # the batch's own way

    def __get__(self, facts: Any, owner: type | None = None) -> Any:
        if facts is None:
            return self
        at = facts.__dict__.get("_group_cut")  # (none in facts made as type(facts)(batch))
        column = None if at is None else at[0].cut(self.name)
        value = self.own(facts) if column is None else column[at[1]]
        facts.__dict__[self.name] = value
        return value


for _name in (*PER_FEATURE, *_PARSE, *PER_FEATURE_DICTS):
    setattr(PrimedFacts, _name, _Cut(_name))


#: The shareable facts a batch computed (names, in computing order) and the CRSs it
#: reprojected to (:func:`computed`).
Computed = tuple[tuple[str, ...], tuple[Any, ...]]


def computed(facts: BatchFacts) -> Computed:
    """The names of the shareable facts ``facts`` has computed and the CRSs it reprojected
    to: what :meth:`SharedFacts.compute` computes over a group like it."""
    have = facts.__dict__
    names = tuple(n for n in (*PER_FEATURE, *_PARSE, *PER_FEATURE_DICTS, *SHARED) if n in have)
    return names, tuple(dst for dst, _, _ in facts._reprojected.values())


def group_attributes(group: BatchFacts) -> pa.Table | None:
    """The attribute rows of a group's batches one after the other (the facts of
    :attr:`SharedFacts.facts`), or None when the batches' tables differ in schema (field
    metadata included) or a table's rows are not its batch's features."""
    return group.__dict__.get(_ATTRIBUTES)


def columns_key(facts: BatchFacts) -> tuple[tuple[str, str, Any], ...]:
    """The name, type (as Arrow writes it) and sorted field metadata (or None) of each
    attribute column of the batch of ``facts``, in order: read from its table's schema
    once per group when the group's tables have one schema, field metadata included
    (:meth:`SharedFacts.prime` hands it to each batch), else once per batch."""
    key = facts.__dict__.get(_COLUMNS)
    if key is None:
        key = facts.__dict__[_COLUMNS] = tuple(
            (f.name, str(f.type), tuple(sorted(f.metadata.items())) if f.metadata else None)
            for f in facts.batch.attributes.schema
        )
    return key


def _views(values: np.ndarray, starts: np.ndarray, size: int | None) -> list[np.ndarray]:
    """Views of ``values`` (first axis: the group's features) cut at ``starts`` (int (B + 1,)):
    batches of one ``size`` (None: of several) are the rows of one reshape (a view each,
    made in one C loop)."""
    b = len(starts) - 1
    if size is not None:
        return list(values.reshape(b, size, *values.shape[1:]))
    return [values[a:z] for a, z in itertools.pairwise(starts.tolist())]


def _one_size(starts: np.ndarray) -> int | None:
    """The batches' one size when they are all of it, else None (or no batch)."""
    sizes = np.diff(starts).tolist()
    return sizes[0] if sizes and sizes.count(sizes[0]) == len(sizes) else None


def _split(by_index: dict[int, Any], starts: np.ndarray) -> list[dict[int, Any]]:
    """The entries of ``by_index`` (group feature index -> value) of each batch, re-indexed
    from its first feature."""
    out: list[dict[int, Any]] = [{} for _ in range(len(starts) - 1)]
    if by_index:
        keys = list(by_index)
        owner = (np.searchsorted(starts, keys, side="right") - 1).tolist()
        bounds = starts.tolist()
        for k, j in zip(keys, owner, strict=True):
            out[j][k - bounds[j]] = by_index[k]
    return out
