"""Mergeable profiles of sample features, the input of a drafted contract (pure).

``contract init`` (:mod:`worker.core.contracts.draft`) reads one or more sample batches
chunk by chunk; each chunk's :class:`~worker.core.facts.batch.BatchFacts` becomes a
:class:`Profile` (:func:`profile_facts`) and the profiles are merged in order
(:func:`merge_profiles`), so memory is bounded by a chunk plus a few hundred numbers per
column, whatever the sample's size. Everything here is computed from the facts the
clauses themselves measure (type names with dimensions, validity, emptiness, area of use,
envelopes in ``east_north`` order, in the batch's declared CRS), so the draft describes
the samples exactly as ``check`` will judge them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import shapely

from worker.core._util.gcpause import collector_paused
from worker.core.chunks import ChunkedBatch
from worker.core.contracts.lon_cover import LonCover, lon_cover_of
from worker.core.facts.batch import BatchFacts
from worker.core.model import Batch

__all__ = ["ColumnProfile", "Profile", "merge_profiles", "profile_batch", "profile_facts"]

#: Logical field types whose low-cardinality columns become domain clauses.
DOMAIN_TYPES = ("string", "integer")


@dataclass(frozen=True)
class ColumnProfile:
    """One attribute column over the features profiled so far.

    ``type`` is the logical field type (:data:`worker.core.vocab.FIELD_TYPES`, or
    ``mixed``/``other``, which no contract names; ``varies`` when chunks or samples
    disagree); ``nulls`` the null count; ``present`` the samples holding the column;
    ``codes`` the count of each distinct non-null value (str or int) while there are at
    most ``max_codes``, None once there are more (or when the type is not a domain type).
    """

    type: str
    nulls: int = 0
    present: int = 1
    codes: Mapping[str | int, int] | None = field(default_factory=dict)


@dataclass(frozen=True)
class Profile:
    """What the draft needs to know of some features (counts are features).

    ``types`` maps a geometry type name (OGC Simple Features) with dimensions
    (``MultiPolygon Z``) to its
    count; ``missing`` counts features without a (readable) geometry, ``empty`` empty
    ones, ``invalid`` the ones the validity clause counts invalid, ``outside_area`` those
    with a coordinate beyond the declared CRS's area of use. ``bounds`` is the envelope
    (minx, miny, maxx, maxy, ``east_north``, declared CRS units) of the usable features,
    None when there are none; ``lon`` the longitudes they occupy (geographic CRS only,
    :class:`~worker.core.contracts.lon_cover.LonCover`). ``counts`` holds the feature count of
    each sample profiled; ``columns`` each attribute column.
    """

    counts: tuple[int, ...] = ()
    types: Mapping[str, int] = field(default_factory=dict)
    missing: int = 0
    empty: int = 0
    invalid: int = 0
    outside_area: int = 0
    unplaced: int = 0
    bounds: tuple[float, float, float, float] | None = None
    lon: LonCover | None = None
    columns: Mapping[str, ColumnProfile] = field(default_factory=dict)

    @property
    def features(self) -> int:
        """Features profiled, over every sample."""
        return sum(self.counts)


def _union_bounds(
    a: tuple[float, float, float, float] | None, b: tuple[float, float, float, float] | None
) -> tuple[float, float, float, float] | None:
    if a is None or b is None:
        return a if b is None else b
    return (min(a[0], b[0]), min(a[1], b[1]), max(a[2], b[2]), max(a[3], b[3]))


def _merge_codes(
    a: Mapping[str | int, int] | None, b: Mapping[str | int, int] | None, max_codes: int
) -> Mapping[str | int, int] | None:
    if a is None or b is None:
        return None
    both = dict(a)
    for code, n in b.items():
        both[code] = both.get(code, 0) + n
    return both if len(both) <= max_codes else None


def _merged_type(a: str, b: str) -> str:
    """One type for a column typed ``a`` in some features and ``b`` in others: ``double``
    for integers and doubles (an integer column satisfies a ``double`` field), else
    ``varies``."""
    if a == b:
        return a
    return "double" if {a, b} == {"integer", "double"} else "varies"


def _merge_column(a: ColumnProfile, b: ColumnProfile, max_codes: int) -> ColumnProfile:
    return ColumnProfile(
        type=_merged_type(a.type, b.type),
        nulls=a.nulls + b.nulls,
        present=a.present + b.present,
        codes=_merge_codes(a.codes, b.codes, max_codes),
    )


def merge_profiles(a: Profile, b: Profile, *, max_codes: int, same_sample: bool) -> Profile:
    """``a`` and then ``b`` as one profile. ``same_sample``: ``b`` is the next chunk of
    ``a``'s last sample (its count adds to that sample's, and its columns are not counted
    as present twice); else ``b`` is another sample. A column of one side only keeps that
    side's ``present`` count (the draft compares it with the number of samples)."""
    if same_sample and a.counts and b.counts:
        counts = (*a.counts[:-1], a.counts[-1] + sum(b.counts))
    else:
        counts = a.counts + b.counts
    columns = dict(a.columns)
    for name, col in b.columns.items():
        if name not in columns:
            columns[name] = col
            continue
        merged = _merge_column(columns[name], col, max_codes)
        columns[name] = replace(merged, present=columns[name].present) if same_sample else merged
    types = dict(a.types)
    for name, n in b.types.items():
        types[name] = types.get(name, 0) + n
    lon = b.lon if a.lon is None else (a.lon if b.lon is None else a.lon.merge(b.lon))
    return Profile(
        counts=counts,
        types=types,
        missing=a.missing + b.missing,
        empty=a.empty + b.empty,
        invalid=a.invalid + b.invalid,
        outside_area=a.outside_area + b.outside_area,
        unplaced=a.unplaced + b.unplaced,
        bounds=_union_bounds(a.bounds, b.bounds),
        lon=lon,
        columns=columns,
    )


def _codes_of(col: pa.ChunkedArray, logical: str, max_codes: int) -> dict[str | int, int] | None:
    """The count of each distinct non-null value of a string or integer column, None when
    there are more than ``max_codes`` (or the column is of another type)."""
    if logical not in DOMAIN_TYPES:
        return None
    if pa.types.is_dictionary(col.type):
        col = col.cast(col.type.value_type)
    if logical == "integer" and not pa.types.is_integer(col.type):
        return None  # e.g. a column read as text whose values are integers: no codes
    if logical == "string" and not (
        pa.types.is_string(col.type) or pa.types.is_large_string(col.type)
    ):
        return None
    counted = pc.value_counts(col.drop_null())
    if len(counted) > max_codes:
        return None
    values = counted.field("values").to_pylist()
    return dict(zip(values, counted.field("counts").to_pylist(), strict=True))


def _columns_of(facts: BatchFacts, max_codes: int) -> dict[str, ColumnProfile]:
    table = facts.batch.attributes
    out: dict[str, ColumnProfile] = {}
    for spec in facts.batch.schema_fields:
        if spec.name not in table.column_names:
            continue
        col = table.column(spec.name)
        out[spec.name] = ColumnProfile(
            type=spec.type, nulls=col.null_count, codes=_codes_of(col, spec.type, max_codes)
        )
    return out


def _part_bounds(facts: BatchFacts, usable: np.ndarray) -> np.ndarray:
    """float (P, 4): the envelope of every part of the usable geometries (a MultiPolygon
    across the antimeridian has one part on each side)."""
    parts = shapely.get_parts(facts.geometries[usable])
    return np.asarray(shapely.bounds(parts), dtype=float).reshape(-1, 4)


def profile_facts(facts: BatchFacts, *, max_codes: int) -> Profile:
    """The profile of one chunk (or one whole sample read at once).

    Parameters
    ----------
    facts : BatchFacts
        The chunk's facts (geometries in ``east_north`` order, declared CRS resolved).
    max_codes : int
        A column with more distinct values has no ``codes`` (no domain is drafted).
    """
    names = facts.type_names
    present = names[names != None]  # noqa: E711 - elementwise comparison of an object array
    kinds, counts = np.unique(present.astype(str), return_counts=True) if present.size else ((), ())
    usable = facts.usable & ~facts.outside_area_of_use
    bounds = None
    if usable.any():
        b = facts.bounds[usable]
        bounds = (
            float(np.min(b[:, 0])),
            float(np.min(b[:, 1])),
            float(np.max(b[:, 2])),
            float(np.max(b[:, 3])),
        )
    crs = facts.declared_crs
    lon = (
        lon_cover_of(_part_bounds(facts, usable)) if crs is not None and crs.is_geographic else None
    )
    return Profile(
        counts=(facts.count,),
        types={str(k): int(c) for k, c in zip(kinds, counts, strict=True)},
        missing=int(np.count_nonzero(names == None)),  # noqa: E711
        empty=int(np.count_nonzero(facts.is_empty)),
        invalid=int(facts.invalid_count),
        outside_area=int(np.count_nonzero(facts.outside_area_of_use & facts.usable)),
        unplaced=int(np.count_nonzero(~usable & ~facts.is_empty)),
        bounds=bounds,
        lon=lon,
        columns=_columns_of(facts, max_codes),
    )


def profile_batch(
    loaded: Batch | ChunkedBatch,
    *,
    max_codes: int,
    on_chunk: Callable[[int], None] | None = None,
) -> Profile:
    """The profile of one sample: chunk by chunk for a :class:`ChunkedBatch` (one chunk's
    geometries held at a time), else the whole batch at once. ``on_chunk`` is called with
    the features profiled so far after each chunk (progress). May raise the reader's
    errors (:class:`worker.core.errors.PayloadError`)."""
    if not isinstance(loaded, ChunkedBatch):
        out = profile_facts(BatchFacts(loaded), max_codes=max_codes)
        if on_chunk is not None:
            on_chunk(out.features)
        return out
    acc: Profile | None = None
    offset = 0
    edges = (BatchFacts(loaded.batch).edges_problem,)
    for chunk in loaded.chunks():
        with collector_paused():
            part = profile_facts(BatchFacts(chunk, offset, edges), max_codes=max_codes)
        acc = (
            part
            if acc is None
            else merge_profiles(acc, part, max_codes=max_codes, same_sample=True)
        )
        offset += part.features
        if on_chunk is not None:
            on_chunk(offset)
    return acc if acc is not None else Profile(counts=(0,))
