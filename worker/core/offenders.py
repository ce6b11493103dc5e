"""The features that broke a clause (pure): :class:`Offender`, one of them, and
:class:`Offenders`, the first :data:`MAX_OFFENDERS` of them and the total, as a
:class:`~worker.core.model.ClauseResult` carries them and the records serialise them.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, replace
from typing import Any

from worker.core._util.jsonsafe import bounded_json_text, json_text

__all__ = [
    "MAX_OFFENDERS",
    "Offender",
    "Offenders",
    "every_offender",
    "fewer_offenders",
    "fit_offenders",
    "left_out",
    "measured_json",
    "offender_limit",
]


#: How many offending features a clause result names (the first ones in batch order); the
#: total is always counted.
MAX_OFFENDERS = 100

_LIMIT: ContextVar[int | None] = ContextVar("offender_limit", default=MAX_OFFENDERS)


@contextmanager
def fewer_offenders(named: int) -> Iterator[None]:
    """Within it, clause results name :func:`offender_limit` less ``named`` offenders (at
    least 0; every one stays every one): what a chunk of a batch names when the chunks
    before it already named ``named`` (:func:`worker.core.clauses.tally.merge` keeps the
    first offenders in batch order, so the ones it would cut are not computed). The
    totals are counted as before."""
    limit = _LIMIT.get()
    token = _LIMIT.set(None if limit is None else max(0, limit - named))
    try:
        yield
    finally:
        _LIMIT.reset(token)


def offender_limit() -> int | None:
    """How many offenders a clause result names in this context: :data:`MAX_OFFENDERS`,
    or None (every one) inside :func:`every_offender`."""
    return _LIMIT.get()


def left_out(total: object, named: int, what: str) -> str | None:
    """``"138 offend, 100 recorded, 38 <what>"`` when ``named`` offenders of a clause are
    fewer than its ``total`` (a record keeps the first :data:`MAX_OFFENDERS`); None when
    every one is named or the total is not a count."""
    if not isinstance(total, int) or total <= named:
        return None
    return f"{total} offend, {named} recorded, {total - named} {what}"


@contextmanager
def every_offender() -> Iterator[None]:
    """Within it, clause results name every offending feature, not the first
    :data:`MAX_OFFENDERS`: ``check --html`` and ``--offenders``, which hold the whole file,
    draw and write every one (:meth:`Offenders.first` cuts them back for the records)."""
    token = _LIMIT.set(None)
    try:
        yield
    finally:
        _LIMIT.reset(token)


@dataclass(frozen=True)
class Offender:
    """One feature that broke a clause.

    ``index`` is the feature's row index in the batch (0-based, batch order); ``id`` its
    feature id: the value of the id column (``Batch.id_column``, else the contract's
    ``id_column``), else the id the file gives the feature (``Batch.feature_ids``), else None (the
    index is then the only name). ``value`` is what the clause measured on that feature,
    JSON-compatible: a geometry type name, a GEOS validity reason, the offending code, the
    feature's bounds ``[minx, miny, maxx, maxy]``, ... (``Offenders.measure`` says which).
    """

    index: int
    id: str | int | float | None
    value: Any


@dataclass(frozen=True)
class Offenders:
    """The features that broke one clause: the first :data:`MAX_OFFENDERS` and the total.

    ``measure`` names what each ``Offender.value`` is, with its unit (e.g. ``"bounds in
    EPSG:4326 (degrees)"``, ``"GEOS validity reason"``).
    """

    total: int
    features: tuple[Offender, ...]
    measure: str

    def first(self, n: int = MAX_OFFENDERS) -> Offenders:
        """These offenders with only the first ``n`` features named (the total kept)."""
        return self if len(self.features) <= n else replace(self, features=self.features[:n])

    def to_json(self) -> dict[str, Any]:
        """``{"total", "measure", "features": [{"index", "id", "value"}, ...]}``."""
        return {
            "total": self.total,
            "measure": self.measure,
            "features": [{"index": o.index, "id": o.id, "value": o.value} for o in self.features],
        }

    @classmethod
    def from_json(cls, doc: Any) -> Offenders | None:
        """The inverse of :meth:`to_json`; None for anything that is not such a mapping."""
        if not isinstance(doc, Mapping) or not isinstance(doc.get("features"), list):
            return None
        feats = tuple(
            Offender(int(f.get("index", -1)), f.get("id"), f.get("value"))
            for f in doc["features"]
            if isinstance(f, Mapping)
        )
        total = doc.get("total")
        return cls(
            total if isinstance(total, int) else len(feats), feats, str(doc.get("measure", ""))
        )


def fit_offenders(offenders: Offenders, max_chars: int) -> dict[str, Any]:
    """``offenders.to_json()`` with as many of its first features as fit in ``max_chars``
    characters of JSON text (:func:`~worker.core._util.jsonsafe.json_text`); the total is
    kept, so a reader knows how many were left out."""
    doc = offenders.to_json()
    budget = max_chars - len(json_text({**doc, "features": []}) or "")
    kept = []
    for feature in doc["features"]:
        budget -= len(json_text(feature) or "") + 2
        if budget < 0:
            break
        kept.append(feature)
    doc["features"] = kept
    return doc


def measured_json(
    measured: Any, offenders: Offenders | None, max_chars: int, max_offender_chars: int
) -> str | None:
    """A quarantine reason's ``measured`` JSON text, at most ``max_chars`` of it
    (:func:`~worker.core._util.jsonsafe.bounded_json_text`); with offenders, a mapping
    that adds them under ``"offenders"`` (:func:`fit_offenders` of ``max_offender_chars``;
    a measured value clipped to ``max_chars`` goes under ``"clipped_measured"``).
    :func:`worker.io.codec.records.decode_quarantine` splits them out again."""
    text = bounded_json_text(measured, max_chars)
    if offenders is None:
        return text
    fitted = fit_offenders(offenders, max_offender_chars)
    if isinstance(measured, Mapping) and "offenders" not in measured and text and text[0] == "{":
        return json_text({**measured, "offenders": fitted})
    clipped = None if text is None else json.loads(text)  # our own JSON text
    return json_text({"clipped_measured": clipped, "offenders": fitted})
