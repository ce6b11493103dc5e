"""Kind ``schema``: the batch's attribute fields against the contract's (pure).

Every listed field exists with a matching type and nullability, no non-nullable field
holds a null, and no other field exists unless ``allow_extra``. Types are the logical
names of :data:`worker.core.vocab.FIELD_TYPES`; a batch field can also be ``mixed`` or
``other``, which no contract names.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from worker.core._util.jsonsafe import finite_json
from worker.core._util.memo import identity_memo
from worker.core.clauses.base import ClauseKind, clause_result, offenders_of
from worker.core.clauses.diff import Diff
from worker.core.clauses.group_tallies import attributes_key, per_segment, shared_tallies
from worker.core.clauses.tally import Tally
from worker.core.facts.batch import BatchFacts
from worker.core.facts.shared import group_attributes
from worker.core.model import Clause, ClauseResult, Contract
from worker.core.vocab import VALUE_TYPES_KEY

__all__ = ["KIND", "Params"]


@dataclass(frozen=True)
class Params:
    """``fields`` (``{"name", "type", "nullable" (false)}`` each, in the order written)
    and ``allow_extra``."""

    fields: Sequence[Mapping[str, Any]]
    allow_extra: bool = False


#: (batch type, contract type) pairs accepted as matching: JSON does not tell
#: 123456 from 123456.0, so an integer column satisfies a ``double`` field.
_LOSSLESS_WIDENING = {("integer", "double")}


def _type_problem(name: str, got: str, want: str, table: pa.Table) -> str:
    """Why field ``name`` of type ``got`` does not satisfy ``want``; for a column read as
    text (``mixed``, ``other``) the JSON types found in it, from its field metadata."""
    index = table.schema.get_field_index(name)
    meta = (table.schema.field(index).metadata or {}) if index >= 0 else {}
    found = meta.get(VALUE_TYPES_KEY, b"").decode("utf-8", "replace").replace(",", ", ")
    if got == "mixed":
        kinds = f" ({found})" if found else ""
        return (
            f"field {name!r} mixes value types{kinds}, read as text; expected {want}: "
            f"give the field one type in every feature"
        )
    if got == "other":
        kinds = f" ({found} values arrow cannot hold)" if found else ""
        return f"field {name!r} has a type no contract can name{kinds}, expected {want}"
    return f"field {name!r} has type {got}, expected {want}"


def _only_nulls(table: pa.Table, name: str) -> bool:
    """Column ``name`` has arrow type ``null`` (every value null, e.g. a JSON property
    null in every feature): it holds no value of a wrong type, whatever type it is given
    (``string``, :func:`worker.io.payloads.derive_schema`); its nulls are judged by the
    field's nullability. It was reported as "has type string, expected integer", a false
    break for a nullable integer field."""
    index = table.schema.get_field_index(name)
    return index >= 0 and pa.types.is_null(table.schema.field(index).type)


def _missing(col: pa.ChunkedArray) -> np.ndarray | None:
    """Which rows of ``col`` hold no value: null, or NaN in a floating-point column (the
    pandas spelling of a missing value, which most batch files and the Avro event carry as
    a float; the readers of formats without NaN refuse it or read null). None when no row
    is missing. Infinity is a value."""
    floating = pa.types.is_floating(col.type)
    if not col.null_count and not (floating and pc.any(pc.is_nan(col)).as_py()):
        return None
    rows = np.asarray(
        pc.is_null(col, nan_is_null=floating).to_numpy(zero_copy_only=False), dtype=bool
    )
    return rows if rows.any() else None


def _floating(table: pa.Table, name: str) -> bool:
    index = table.schema.get_field_index(name)
    return index >= 0 and pa.types.is_floating(table.schema.field(index).type)


def _schema_wanted(clause: Clause) -> list[tuple[str, str, bool]]:
    fields = KIND.params(clause).fields
    return [(f["name"], f["type"], bool(f.get("nullable", False))) for f in fields]


def measure(clause: Clause, contract: Contract, facts: BatchFacts, now: datetime) -> Tally:
    """Nulls per non-nullable contract field, offenders (the fields null in a feature)."""
    table = facts.batch.attributes
    columns = set(table.column_names)
    nulls: dict[str, int] = {}
    null_cols: list[tuple[str, np.ndarray]] = []
    for name, _, nullable in _schema_wanted(clause):
        if not nullable and name in columns:
            missing = _missing(table.column(name))
            nulls[name] = 0 if missing is None else int(missing.sum())
            if missing is not None:
                null_cols.append((name, missing))
    offenders = None
    if null_cols and table.num_rows == facts.count:
        any_null = np.logical_or.reduce([m for _, m in null_cols])
        offenders = offenders_of(
            facts,
            contract,
            any_null,
            lambda i: [n for n, m in null_cols if m[i]],
            "non-nullable fields that are null in the feature",
        )
    return {"nulls": nulls, "offenders": offenders}


def measure_group(
    clause: Clause, contract: Contract, group: BatchFacts, starts: np.ndarray, now: datetime
) -> list[Tally | None]:
    """:data:`~worker.core.clauses.base.MeasureGroup`: the tally of each batch without a
    null in a non-nullable field; None for the others, and for every batch when their
    tables differ (:func:`group_attributes`)."""
    table = group_attributes(group)
    if table is None:
        return [None] * (len(starts) - 1)
    columns = set(table.column_names)
    names = [
        name for name, _, nullable in _schema_wanted(clause) if not nullable and name in columns
    ]
    nulls = np.zeros(len(starts) - 1, dtype=np.int64)
    for name in names:
        rows = _missing(table.column(name))
        if rows is not None:
            nulls += per_segment(rows, starts)
    return shared_tallies(
        (None if k else 0 for k in nulls.tolist()),
        lambda _: {"nulls": dict.fromkeys(names, 0), "offenders": None},
    )


def render(
    clause: Clause, contract: Contract, facts: BatchFacts, tally: Tally, now: datetime
) -> ClauseResult:
    """The result from the merged tally; the fields are the batch's ``schema_fields`` (of
    the whole batch). An ``integer`` batch field satisfies a ``double`` contract field
    (lossless widening); no other type coercion."""
    wanted = _schema_wanted(clause)
    allow_extra = bool(KIND.params(clause).allow_extra)
    have = {f.name: f for f in facts.batch.schema_fields}
    table = facts.batch.attributes
    problems: list[str] = []
    for name, ftype, nullable in wanted:
        got = have.get(name)
        if got is None:
            problems.append(f"missing field {name!r}")
            continue
        if (
            got.type != ftype
            and (got.type, ftype) not in _LOSSLESS_WIDENING
            and not _only_nulls(table, name)
        ):
            problems.append(_type_problem(name, got.type, ftype, table))
        if got.nullable and not nullable:
            problems.append(f"field {name!r} is nullable, expected not nullable")
        if tally["nulls"].get(name):
            n = tally["nulls"][name]
            nan = " (a NaN counts as missing)" if _floating(table, name) else ""
            problems.append(f"field {name!r} has {n} {'null' if n == 1 else 'nulls'}{nan}")
    if not allow_extra:
        extra = sorted(set(have) - {w[0] for w in wanted})
        problems.extend(f"extra field {name!r}" for name in extra)
    measured = {"fingerprint": facts.schema_fingerprint, "problems": problems}
    message = "schema matches" if not problems else "schema differs: " + "; ".join(problems[:5])
    return clause_result(clause, not problems, measured, _expected(clause), message,
                         offenders=tally["offenders"], expected_is_finite=True)  # fmt: skip


@identity_memo(maxsize=256)  # per contract clause: the same for every event
def _expected(clause: Clause) -> dict[str, Any]:
    """The ``expected`` value of ``clause``'s results as finite JSON, built once per clause
    and shared (read only) by every result."""
    fields = [{"name": n, "type": t, "nullable": b} for n, t, b in _schema_wanted(clause)]
    return finite_json({"fields": fields, "allow_extra": bool(KIND.params(clause).allow_extra)})


def compare(old: Params, new: Params, diff: Diff) -> None:
    """A field removed (or renamed) or retyped is major; a new required field tightens, a
    new nullable one loosens; nullability and ``allow_extra`` as flags."""
    a = {f["name"]: f for f in old.fields}
    b = {f["name"]: f for f in new.fields}
    for name in sorted(a.keys() - b.keys()):
        diff.add("major", f"field {name!r} removed or renamed")
    for name in sorted(b.keys() - a.keys()):
        if b[name].get("nullable", False):
            diff.add("minor", f"new nullable field {name!r}")
        else:
            diff.add("tightening", f"new required field {name!r} ({b[name]['type']})")
    for name in sorted(a.keys() & b.keys()):
        fa, fb = a[name], b[name]
        if fa["type"] != fb["type"]:
            diff.add("major", f"field {name!r} retyped ({fa['type']} -> {fb['type']})")
        na, nb = bool(fa.get("nullable", False)), bool(fb.get("nullable", False))
        if na != nb:
            diff.add(
                "minor" if nb else "tightening",
                f"field {name!r} nullable {str(na).lower()} -> {str(nb).lower()}",
            )
    diff.flag("allow_extra", old.allow_extra, new.allow_extra)


def brief(measured: Any) -> str:
    """The first problem: ``missing field 'name'``."""
    if not isinstance(measured, Mapping) or not measured.get("problems"):
        return ""
    return str(measured["problems"][0])


def check(clause: Mapping[str, Any]) -> tuple[list[str | int], str, str] | None:
    """A field listed twice (the JSON Schema cannot say names are unique)."""
    names = [f["name"] for f in clause["fields"]]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        return ["fields"], f"duplicate field {dup[0]!r}", "list each field once"
    return None


KIND = ClauseKind("schema", Params, measure, render, compare, brief, leads=4, check=check,
                  render_key=attributes_key, measure_group=measure_group)  # fmt: skip
