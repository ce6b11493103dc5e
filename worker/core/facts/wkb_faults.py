"""The structural faults of a batch's WKB values, and why a feature has no geometry (pure).

The first base of :class:`worker.core.facts.parse.ParsedFacts`, whose facts it reads
(:attr:`~worker.core.facts.parse.ParsedFacts._read`, ``_headers``, ``missing``, ...):
which values GEOS must never parse (:func:`worker.core.facts.wkb_check.wkb_problem`),
which have bytes after the end of their geometry (:mod:`worker.core.facts.wkb_end`), the
curved and ISO surface types named from their headers, and the reason of each feature
without a geometry (:meth:`WkbFaults.parse_error`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import shapely

from worker.core._util.memo import fact
from worker.core.facts.wkb_check import DEFAULT_MAX_DEPTH, WkbRefused, walk, wkb_problem
from worker.core.facts.wkb_end import trailing_bytes, walked_faults
from worker.core.facts.wkb_header import curve_type_name

if TYPE_CHECKING:
    from worker.core.model import Batch

__all__ = ["WkbFaults", "wkb_has_nonfinite"]


def wkb_has_nonfinite(data: bytes, max_depth: int = DEFAULT_MAX_DEPTH) -> bool:
    """Whether a structurally sound WKB value has a NaN or infinite coordinate.

    Used to name the fault when GEOS refuses a geometry: a ring whose closing point is NaN
    is "not closed" to GEOS (NaN != NaN), but the defect a data engineer must fix is the
    non-finite coordinate. Empty points (all NaN by the WKB convention) count too; the
    caller asks only about values GEOS refused. False when the structure is unsound.
    """
    spans: list[tuple[int, int, str]] = []
    try:
        walk(data, max_depth, spans)
    except WkbRefused:
        return False
    for offset, count, order in spans:
        values = np.frombuffer(data, dtype=np.dtype(order + "f8"), count=count, offset=offset)
        if not np.isfinite(values).all():
            return True
    return False


class WkbFaults:
    """The structural facts of :class:`~worker.core.facts.parse.ParsedFacts` (its base):
    every fact is computed once per instance, from the parse facts the subclass defines."""

    batch: Batch
    if TYPE_CHECKING:  # the subclass's facts

        @property
        def count(self) -> int: ...
        @property
        def _points_xy(self) -> np.ndarray | None: ...
        @property
        def _headers(self) -> tuple[np.ndarray, ...]: ...
        @property
        def _read(self) -> np.ndarray: ...
        @property
        def _strict_missing(self) -> np.ndarray: ...
        @property
        def missing(self) -> np.ndarray: ...

    @fact
    def _walked(self) -> tuple[dict[int, str], dict[int, str]]:
        """(refused before parsing, bytes after the end of the geometry): index -> reason
        of the values that may hold nested geometries (``may_nest``), each walked once
        (:func:`worker.core.facts.wkb_end.walked_faults`)."""
        if self._points_xy is not None:
            return {}, {}
        present, single = self._headers[:2]
        return walked_faults(self.batch.geometries_wkb, np.flatnonzero(present & ~single))

    @fact
    def _trailing(self) -> dict[int, str]:
        """Index -> reason (``"4 bytes after the end of the WKB geometry (it ends at byte
        21 of 25)"``) of each value GEOS read though bytes follow its geometry: the walked
        ones (:attr:`_walked`) and the single geometries that
        :func:`worker.core.facts.wkb_end.trailing_bytes` finds (screened by size)."""
        if self._points_xy is not None:  # 21-byte values: a 2D point ends at byte 21
            return {}
        found = trailing_bytes(self.batch.geometries_wkb, self._read, self._headers)
        return {**self._walked[1], **found}

    trailing = property(lambda self: self._trailing, doc=":attr:`_trailing`, public.")

    @fact
    def _refused_before_parse(self) -> dict[int, str]:
        """Index -> reason of WKB values that GEOS must never see: those that may hold
        nested geometries (:func:`worker.core.facts.wkb_header.may_nest`) and fail
        :func:`worker.core.facts.wkb_check.wkb_problem` (deep nesting, bad byte order, impossible
        counts). Single geometries are left to GEOS, which refuses their impossible counts
        by itself; :attr:`_refused` then names their structural fault."""
        return self._walked[0]

    @fact
    def _refused(self) -> dict[int, str]:
        """Index -> structural reason (:func:`worker.core.facts.wkb_check.wkb_problem`) of every WKB
        value with one: those refused before parsing, and the single geometries GEOS's
        strict reader refused (few; walked only then, so a batch of valid polygons is
        never walked in Python), and those with bytes after their geometry
        (:attr:`_trailing`)."""
        out = dict(self._refused_before_parse)
        if self._points_xy is not None:
            return out
        out.update(self._trailing)
        for i in np.flatnonzero(self._strict_missing & ~self.missing).tolist():
            data = self.batch.geometries_wkb[i]
            if i not in out and data is not None and (reason := wkb_problem(data)):
                out[i] = reason
        return out

    @fact
    def curve_type_names(self) -> dict[int, str]:
        """Index -> the type its header names (``"CircularString"``, ``"TIN Z"``) of the
        values refused before parsing for being curved or that GEOS could not read (ISO
        WKB 15-17: PolyhedralSurface, TIN, Triangle; see
        :func:`worker.core.facts.wkb_header.curve_type_name`): the geometry_type clause
        names them instead of "missing or unparseable"."""
        values = self.batch.geometries_wkb
        unread = set(self._refused_before_parse)
        if self._points_xy is None:
            unread.update(np.flatnonzero(self._strict_missing).tolist())
        named = ((i, curve_type_name(values[i])) for i in sorted(unread))
        return {i: name for i, name in named if name is not None}

    @fact
    def _refused_mask(self) -> np.ndarray:
        out = np.zeros(self.count, dtype=bool)
        out[list(self._refused)] = True
        return out

    def parse_error(self, index: int) -> str:
        """Why feature ``index`` has no geometry object: the reader's reason
        (``Batch.geometry_errors``), GEOS's WKB reader's (e.g. "IllegalArgumentException:
        Points of LinearRing do not form a closed linestring"), or "missing geometry"."""
        if index in self.batch.geometry_errors:
            return f"unreadable geometry: {self.batch.geometry_errors[index]}"
        wkb = self.batch.geometries_wkb[index]
        if wkb is None:
            return "missing geometry"
        if index in self._refused:
            return self._refused[index]
        try:
            with np.errstate(invalid="ignore"):
                shapely.from_wkb(wkb)
        except (shapely.errors.GEOSException, TypeError, ValueError) as exc:
            if wkb_has_nonfinite(wkb):
                return (
                    f"non-finite coordinate (NaN or inf) in the WKB; GEOS says: {str(exc).strip()}"
                )
            # not "unparseable WKB": a text or GeoArrow geometry (an open ring) reaches
            # GEOS as the literal WKB the reader wrote, which its user never saw
            return f"GEOS cannot read the geometry: {str(exc).strip()}"
        return "GEOS cannot read the geometry"
