"""Kind ``geometry_type``: every geometry's type, with its coordinate dimension, is allowed
(pure).

Names are the ``geometry_types`` vocabulary
(:data:`worker.core.geometry_types.GEOMETRY_TYPES`): a bare name (``Polygon``) is XY only;
``Polygon Z``, ``Polygon M`` and ``Polygon ZM`` must be listed to be allowed. ``measured``
maps each disallowed type name (same vocabulary; ``missing or unparseable`` for a feature
without a geometry, ``empty`` for empties of an allowed type when ``allow_empty`` is false)
to its feature count.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import numpy as np

from worker.core._util.memo import identity_memo
from worker.core.clauses.base import ClauseKind, clause_result, offenders_of
from worker.core.clauses.diff import Diff
from worker.core.clauses.group_tallies import no_facts, per_segment, shared_tallies
from worker.core.clauses.tally import Counts, Tally
from worker.core.facts.batch import BatchFacts
from worker.core.geometry_types import GEOMETRY_TYPES, TYPE_NAME_TABLE
from worker.core.model import Clause, ClauseResult, Contract

__all__ = ["KIND", "Params"]

_MISSING_TYPE = "missing or unparseable"
_DIMENSION_NAMES = {"": "XY", "Z": "XYZ", "M": "XYM", "ZM": "XYZM"}


@dataclass(frozen=True)
class Params:
    """``allowed`` type names (in the order written) and ``allow_empty``."""

    allowed: Sequence[str]
    allow_empty: bool = False


@identity_memo(maxsize=256)  # per contract clause: the same for every event
def _allowed_rows(clause: Clause) -> np.ndarray:
    """bool (len(TYPE_NAME_TABLE),): the rows of the type-name table ``clause`` allows
    (read only).

    Raises
    ------
    ValueError
        An ``allowed`` name outside the vocabulary (see :func:`_allowed_types`).
    """
    allowed = _allowed_types(clause)
    rows = np.array([name in allowed for name in TYPE_NAME_TABLE], dtype=bool)
    rows.flags.writeable = False
    return rows


def _allowed_types(clause: Clause) -> list[str]:
    allowed = list(KIND.params(clause).allowed)
    unknown = [a for a in allowed if a not in GEOMETRY_TYPES]
    if unknown:
        raise ValueError(f"unknown geometry type names {unknown}; use {list(GEOMETRY_TYPES)}")
    return allowed


def measure(clause: Clause, contract: Contract, facts: BatchFacts, now: datetime) -> Tally:
    """Disallowed type names with their counts, empties of an allowed type, offenders.

    Raises
    ------
    ValueError
        An ``allowed`` name outside the vocabulary (a clause built by hand).
    """
    allowed_rows = _allowed_rows(clause)
    allow_empty = bool(KIND.params(clause).allow_empty)
    names = facts.type_names
    if facts.curve_type_names:  # refused before parsing, but their header names them
        names = names.copy()
        names[list(facts.curve_type_names)] = list(facts.curve_type_names.values())
    type_ok = allowed_rows[facts.type_name_index]
    bad = np.asarray([_MISSING_TYPE if n is None else n for n in names[~type_ok]], dtype=object)
    shown_names, counts = np.unique(bad, return_counts=True) if bad.size else ((), ())
    empty_bad = facts.is_empty & type_ok & (not allow_empty)

    def type_of(i: int) -> Any:
        if empty_bad[i]:
            return f"empty {names[i]}"
        return _MISSING_TYPE if names[i] is None else str(names[i])

    offenders = offenders_of(
        facts, contract, ~type_ok | empty_bad, type_of, "geometry type (geometry_types name)"
    )
    return {
        "types": Counts(tuple((str(k), int(c)) for k, c in zip(shown_names, counts, strict=True))),
        "empty": int(np.count_nonzero(facts.is_empty & type_ok)),
        "offenders": offenders,
    }


def measure_group(
    clause: Clause, contract: Contract, group: BatchFacts, starts: np.ndarray, now: datetime
) -> list[Tally | None]:
    """:data:`~worker.core.clauses.base.MeasureGroup`: the tally of each batch whose every
    feature is of an allowed type (and not empty unless allowed); None for the others, and
    for every batch when a feature has a curve type (named from its header).

    Raises
    ------
    ValueError
        As :func:`measure`.
    """
    n = len(starts) - 1
    if group.curve_type_names:
        return [None] * n
    allowed_rows = _allowed_rows(clause)
    allow_empty = bool(KIND.params(clause).allow_empty)
    type_ok = allowed_rows[group.type_name_index]
    empty_ok = group.is_empty & type_ok
    bad = per_segment(~type_ok | (empty_ok & (not allow_empty)), starts).tolist()
    empties = per_segment(empty_ok, starts).tolist()
    return shared_tallies(
        (None if b else e for b, e in zip(bad, empties, strict=True)),
        lambda e: {"types": Counts(()), "empty": e, "offenders": None},
    )


def render(
    clause: Clause, contract: Contract, facts: BatchFacts, tally: Tally, now: datetime
) -> ClauseResult:
    """The result from the merged tally (see the module's docstring)."""
    allowed = _allowed_types(clause)
    allow_empty = bool(KIND.params(clause).allow_empty)
    measured: dict[str, int] = dict(tally["types"].counts)
    n_empty = tally["empty"]
    if n_empty and not allow_empty:
        measured["empty"] = n_empty
    ok = not measured
    shown = ", ".join(f"{k}: {v}" for k, v in measured.items())
    empties = "allowed" if allow_empty else "not allowed"
    rule = f"allowed: {', '.join(allowed)}; empty geometries {empties}"
    if ok:
        message = f"every geometry is of an allowed type ({rule})"
    else:
        message = f"disallowed geometries {shown} ({rule})"
    dims = [k for k in measured if " " in k and k.split(" ")[0] in allowed and k in GEOMETRY_TYPES]
    if dims:
        message += (
            f"; a bare type name allows XY coordinates only: list {', '.join(dims)} in "
            "allowed to accept them, or have the producer drop the extra dimension"
        )
    expected = {"allowed": allowed, "allow_empty": allow_empty}
    return clause_result(clause, ok, measured, expected, message, offenders=tally["offenders"])


def compare(old: Params, new: Params, diff: Diff) -> None:
    """Types removed tighten, types added loosen (the dimension is part of the type:
    ``Point`` -> ``Point Z`` removes one and adds the other); ``allow_empty`` as a flag."""
    ta, tb = set(old.allowed), set(new.allowed)
    if ta - tb:
        diff.add("tightening", f"geometry types removed: {_types_shown(ta - tb, tb, 'stays')}")
    if tb - ta:
        diff.add("minor", f"geometry types added: {_types_shown(tb - ta, tb, 'also')}")
    diff.flag("allow_empty", old.allow_empty, new.allow_empty)


def _types_shown(changed: set[str], now_allowed: set[str], verb: str) -> str:
    """Changed geometry type names, each with its coordinate dimension and the dimensions
    the new version still allows of the same base type (``geometry_types``
    names: ``Polygon`` is XY only, ``Polygon Z`` XYZ): a dimension added is a type added,
    a dimension removed a type removed."""
    out = []
    for name in sorted(changed):
        base, _, dim = name.partition(" ")
        same_base = sorted(
            _DIMENSION_NAMES.get(o.partition(" ")[2], "?")
            for o in now_allowed
            if o.partition(" ")[0] == base and o != name
        )
        note = _DIMENSION_NAMES.get(dim, dim)
        if same_base:
            note += f"; {base} {verb} allowed as {', '.join(same_base)}"
        out.append(f"{name} ({note})")
    return ", ".join(out)


def brief(measured: Any) -> str:
    """The disallowed types with their counts: ``Point: 3, empty: 1``."""
    if not isinstance(measured, Mapping) or not measured:
        return ""
    return ", ".join(f"{k}: {v}" for k, v in measured.items() if isinstance(v, int))


KIND = ClauseKind("geometry_type", Params, measure, render, compare, brief, leads=1,
                  render_key=no_facts, measure_group=measure_group)  # fmt: skip
