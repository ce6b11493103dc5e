"""Kind ``domain``: every value of a column is one of the domain's codes; nulls only when
allowed (pure).

Codes keep their YAML type and are never coerced: strings match string codes, integers
integer codes, whole doubles integer codes too (JSON has one number type). A column read
as text because its values mix JSON types (a JSON property holding ``1`` in one feature
and ``"A"`` in another) is compared as the producer wrote each value
(:mod:`worker.core.clauses.domain_values`): compared as text, the number ``1`` matched the
string code ``"1"``. An unknown value that equals a code after
Unicode normalisation is named with both forms.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Hashable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from worker.core._util.jsonsafe import finite_json
from worker.core._util.memo import identity_memo
from worker.core._util.text import clip
from worker.core.clauses.base import ClauseKind, clause_result, offenders_of
from worker.core.clauses.diff import Diff
from worker.core.clauses.domain_values import (
    SMALL_COLUMN_ROWS,
    _domain_column,
    _family,
    _key_family,
    _unknown_arrow,
    _unknown_nested,
    _unknown_small,
    mixed_column,
    unknown_mixed,
)
from worker.core.clauses.group_tallies import per_segment, shared_tallies
from worker.core.clauses.tally import Distinct, Tally
from worker.core.facts.batch import BatchFacts
from worker.core.facts.shared import columns_key, group_attributes
from worker.core.model import Clause, ClauseResult, Contract
from worker.core.vocab import VALUE_KINDS_KEY

__all__ = ["KIND", "Params"]


@dataclass(frozen=True)
class Params:
    """``column``, ``values`` (code -> meaning; the codes in the order written) and
    ``allow_null``."""

    column: str
    values: Mapping[Any, str]
    allow_null: bool = False


def measure(clause: Clause, contract: Contract, facts: BatchFacts, now: datetime) -> Tally:
    """The column's type, unknown and null counts, the first 10 distinct unknown values,
    offenders (an empty tally when the column is missing)."""
    p: Params = KIND.params(clause)
    column, values, allow_null = p.column, p.values, bool(p.allow_null)
    if column not in facts.batch.attributes.column_names:
        return {}
    col = _domain_column(facts, column)
    family = _family(col.type)
    fields = facts.batch.attributes.schema
    mixed = mixed_column(fields.field(column), col) if family == "str" else None
    col_type = str(col.type)
    if mixed is not None:  # values of several JSON types, read as text: compared as written
        bad, unknown = unknown_mixed(mixed, values)
        col_type = f"mixed: {mixed.types}" if mixed.types else col_type
    elif pa.types.is_nested(col.type):
        bad, unknown = _unknown_nested(col)
    elif family in ("str", "int") and len(col) <= SMALL_COLUMN_ROWS:
        bad, unknown = _unknown_small(col, _domain_keys(clause, family))
    else:
        bad, unknown = _unknown_arrow(col, values, family)
    n_unknown = int(np.count_nonzero(bad))
    if not allow_null and col.null_count:  # no null: the mask is unchanged
        bad = bad | np.asarray(pc.is_null(col).to_numpy(zero_copy_only=False), dtype=bool)
    # the value of each offender named (at most offender_limit() of them), not of the column
    value = mixed.values.__getitem__ if mixed is not None else (lambda i: col[i].as_py())
    offenders = offenders_of(
        facts,
        contract,
        bad if len(bad) == facts.count else np.zeros(facts.count, dtype=bool),
        value,
        f"value of column {column!r}",
    )
    return {
        "type": col_type,
        "unknown_count": n_unknown,
        "null_count": int(col.null_count),
        "unknown": Distinct(tuple(unknown), 10),
        "offenders": offenders,
    }


def measure_group(
    clause: Clause, contract: Contract, group: BatchFacts, starts: np.ndarray, now: datetime
) -> list[Tally | None]:
    """:data:`~worker.core.clauses.base.MeasureGroup`: the tally of each batch whose values
    are all codes (nulls too unless allowed), in a text or integer column of at most
    :data:`SMALL_COLUMN_ROWS` rows a batch, not read as mixed text; None for the others, and
    for every batch when their tables differ (:func:`group_attributes`)."""
    n = len(starts) - 1
    p: Params = KIND.params(clause)
    table = group_attributes(group)
    if table is None or p.column not in table.column_names:
        return [None] * n
    col = table.column(p.column)
    family = _family(col.type)  # neither dictionary nor decimal: compared as it is
    meta = table.schema.field(p.column).metadata or {}
    if family not in ("str", "int") or VALUE_KINDS_KEY in meta:
        return [None] * n
    if int(np.diff(starts).max(initial=0)) > SMALL_COLUMN_ROWS:
        return [None] * n
    bad, _ = _unknown_small(col, _domain_keys(clause, family))
    unknown = per_segment(bad, starts).tolist()
    null_rows = np.asarray(pc.is_null(col).to_numpy(zero_copy_only=False), dtype=bool)
    nulls = per_segment(null_rows, starts).tolist()
    col_type, allow_null = str(col.type), bool(p.allow_null)
    return shared_tallies(
        (
            None if u or (nn and not allow_null) else nn
            for u, nn in zip(unknown, nulls, strict=True)
        ),
        lambda nn: {
            "type": col_type,
            "unknown_count": 0,
            "null_count": nn,
            "unknown": Distinct((), 10),
            "offenders": None,
        },
    )


@identity_memo(maxsize=64)  # each entry holds a set of every code: keep few
def _domain_keys(clause: Clause, family: str) -> frozenset[Any]:
    """The domain codes of ``clause`` a column of ``family`` (``str`` or ``int``) can hold."""
    return frozenset(k for k in KIND.params(clause).values if _key_family(k) == family)


def _spelled(value: Any) -> str:
    """A domain value as a message shows it: text quoted, booleans and null as JSON and
    YAML write them (``true``, not Python's ``True``, beside offenders that say ``true``)."""
    if value is None or isinstance(value, bool):
        return "null" if value is None else str(value).lower()
    return repr(value)


def render(
    clause: Clause, contract: Contract, facts: BatchFacts, tally: Tally, now: datetime
) -> ClauseResult:
    """``measured``: ``unknown`` (first 10 distinct), ``unknown_count``, ``null_count``;
    a missing column breaks the clause naming the batch's columns."""
    p: Params = KIND.params(clause)
    column, values, allow_null = p.column, p.values, bool(p.allow_null)
    expected = _expected(clause)
    table = facts.batch.attributes
    if column not in table.column_names:
        measured = {"missing_column": column, "columns": list(table.column_names)}
        msg = f"domain column {column!r} is missing from the batch attributes"
        return clause_result(clause, False, measured, expected, msg, expected_is_finite=True)
    n_unknown, n_null = tally["unknown_count"], tally["null_count"]
    distinct = tally["unknown"]
    unknown = list(distinct.items)
    col_type = tally.get("type") or str(_domain_column(facts, column).type)
    ok = n_unknown == 0 and (allow_null or n_null == 0)
    measured = {"unknown": unknown, "unknown_count": n_unknown, "null_count": n_null}
    null_rule = "allowed" if allow_null else "not allowed"
    nulls = f"{n_null} {'null' if n_null == 1 else 'nulls'} ({null_rule})"
    if ok:
        message = f"every value of column {column!r} ({col_type}) is a domain code; {nulls}"
    else:
        # "..." only when distinct values may have been left out (the sample is full), not
        # because one value occurs in several rows: ('Atlantis', ...) for two Atlantis rows
        codes = list(values)
        shown_codes = ", ".join(_spelled(c) for c in codes[:10]) + (
            f", ... ({len(codes)} codes)" if len(codes) > 10 else ""
        )
        found = ", ".join(clip(_spelled(u), 80) for u in unknown) + (
            ", ..." if len(unknown) >= distinct.cap and n_unknown > len(unknown) else ""
        )
        message = (
            f"column {column!r} ({col_type}): {n_unknown} "
            f"{'value' if n_unknown == 1 else 'values'} not in the domain"
            + (f" ({found})" if found else "")
            + f"; {nulls}; the codes are {shown_codes}"
        )
    near = normalisation_mismatches(unknown, values)
    if near:
        message += "; " + "; ".join(near)
    return clause_result(
        clause, ok, measured, expected, message, near, tally["offenders"], expected_is_finite=True
    )


@identity_memo(maxsize=64)  # each entry holds a list of every code: keep few
def _expected(clause: Clause) -> dict[str, Any]:
    """The ``expected`` value of ``clause``'s results as finite JSON, built once per clause
    and shared (read only) by every result."""
    p: Params = KIND.params(clause)
    values = list(p.values)
    return finite_json({"column": p.column, "values": values, "allow_null": bool(p.allow_null)})


def _form(text: str) -> str:
    for form in ("NFC", "NFD"):
        if unicodedata.is_normalized(form, text):
            return form
    return "neither NFC nor NFD"


def _code_points(text: str) -> str:
    return " ".join(f"U+{ord(ch):04X}" for ch in text)


def normalisation_mismatches(unknown: Any, codes: Any) -> list[str]:
    """Messages for unknown values that equal a domain code after Unicode normalisation.

    ``"Zu\u0308rich"`` (NFD: u + combining diaeresis) and ``"Z\u00fcrich"`` (NFC: ü) look
    identical but are different strings (Unicode Standard Annex #15); the message names both
    forms and their code points, and the fix. Only string values and string codes compare.
    """
    if not any(isinstance(value, str) for value in unknown):  # nothing to compare
        return []
    by_nfc: dict[str, str] = {}
    for code in codes:
        if isinstance(code, str):
            by_nfc.setdefault(unicodedata.normalize("NFC", code), code)
    out = []
    for value in unknown:
        if not isinstance(value, str):
            continue
        code = by_nfc.get(unicodedata.normalize("NFC", value))
        if code is not None and code != value:
            out.append(
                f"value {value!r} ({_form(value)}: {_code_points(value)}) differs from the code "
                f"{code!r} ({_form(code)}: {_code_points(code)}) only by Unicode "
                f"normalisation: normalise the column (or the contract) to {_form(code)}"
            )
    return out


def compare(old: Params, new: Params, diff: Diff) -> None:
    """Another column or a code's meaning changed is major; codes removed tighten, codes
    added loosen; ``allow_null`` as a flag."""
    if old.column != new.column:
        diff.add("major", f"domain column changed ({old.column} -> {new.column})")
    a, b = dict(old.values), dict(new.values)
    changed = sorted((k for k in a.keys() & b.keys() if a[k] != b[k]), key=repr)
    if changed:
        diff.add(
            "major",
            "code meaning changed: " + "; ".join(f"{k!r}: {a[k]!r} -> {b[k]!r}" for k in changed),
        )
    removed = sorted(a.keys() - b.keys(), key=repr)
    added = sorted(b.keys() - a.keys(), key=repr)
    if removed:
        diff.add("tightening", f"domain codes removed: {', '.join(map(repr, removed))}")
    if added:
        diff.add("minor", f"domain codes added: {', '.join(map(repr, added))}")
    diff.flag("allow_null", old.allow_null, new.allow_null)


def brief(measured: Any) -> str:
    """The first unknown values (``unknown 'Atlantis'``), else the missing column, else
    the nulls."""
    m = measured if isinstance(measured, Mapping) else {}
    if m.get("unknown"):
        return "unknown " + ", ".join(repr(u) for u in m["unknown"][:3])
    if m.get("missing_column"):
        return f"column {m['missing_column']!r} missing"
    if m.get("null_count"):
        n = m["null_count"]
        return f"{n} null" if n == 1 else f"{n} nulls"
    return ""


def render_key(facts: BatchFacts) -> Hashable:
    """What ``render`` reads of the facts: the attribute column names (a missing column's
    result lists them; the column's type is in the tally), given with their types and
    field metadata (:func:`~worker.core.facts.shared.columns_key`, read once per group)."""
    return columns_key(facts)


KIND = ClauseKind("domain", Params, measure, render, compare, brief, render_key=render_key,
                  measure_group=measure_group)  # fmt: skip
