"""The drafted column clauses: a domain per low-cardinality column, the schema (pure).

A text or integer column present in every sample with at most ``--max-codes`` distinct
values gets a domain clause listing each code (its observed count in a comment, a
placeholder meaning to fill in) and ``allow_null`` as observed; other columns are named
in a comment saying why they have none. The schema lists every field with a contract
type present in every sample, with its observed nullability.
"""

from __future__ import annotations

from collections.abc import Iterator

from worker.core._util.text import clip
from worker.core.clauses import domain as domain_kind
from worker.core.clauses import schema as schema_kind
from worker.core.contracts.draft_model import Codes, DraftClause, Fields, Note
from worker.core.contracts.profile import DOMAIN_TYPES, ColumnProfile, Profile
from worker.core.vocab import FIELD_TYPES

__all__ = ["domain_clauses", "plural", "schema_clause"]

#: Codes longer than this (characters) are no codes: such a column gets no domain.
MAX_CODE_CHARS = 200
#: Most domain clauses drafted (a contract holds at most 256 clauses).
MAX_DOMAINS = 200


def plural(n: int, word: str) -> str:
    """``1 sample``, ``2 samples``."""
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def _sort_key(code: str | int) -> tuple[int, str | int]:
    return (0, code) if isinstance(code, int) else (1, code)


def _why_no_domain(name: str, col: ColumnProfile, samples: int, max_codes: int) -> str | None:
    """Why column ``name`` gets no domain clause ("" when it gets one), None when it is
    not a text or integer column (no reason is given)."""
    if not name:
        return "an empty name, which a contract cannot name"
    if col.type not in DOMAIN_TYPES:
        return None if col.type in FIELD_TYPES else f"type {col.type}"
    if col.present < samples:
        return f"in {col.present} of {samples} samples only"
    if col.codes is None:
        return f"more than {max_codes} distinct values"
    if not col.codes:
        return "no value, only nulls"
    if any(isinstance(c, str) and len(c) > MAX_CODE_CHARS for c in col.codes):
        return f"a value longer than {MAX_CODE_CHARS} characters"
    return ""


def _domain(name: str, col: ColumnProfile) -> DraftClause:
    codes = col.codes or {}
    entries = tuple(
        (code, f"FILL IN: what {clip(str(code), 60)} means", f"observed: {plural(n, 'feature')}")
        for code, n in sorted(codes.items(), key=lambda kv: _sort_key(kv[0]))
    )
    params = (
        ("column", name, f"{col.type}, {plural(len(codes), 'distinct value')}"),
        ("values", Codes(entries), None),
        ("allow_null", col.nulls > 0, f"observed: {plural(col.nulls, 'null')}"),
    )
    return DraftClause(f"domain_{name}", domain_kind.KIND.name, params)


def domain_clauses(profile: Profile, samples: int, max_codes: int) -> Iterator[DraftClause | Note]:
    """A domain clause per low-cardinality text or integer column present in every
    sample (column order), then one note naming the columns left out and why."""
    left_out: list[str] = []
    drafted = 0
    for name, col in profile.columns.items():
        why = _why_no_domain(name, col, samples, max_codes)
        if why is None:
            continue  # not a text or integer column: no domain is expected
        if why == "" and drafted < MAX_DOMAINS:
            drafted += 1
            yield _domain(name, col)
        elif why:
            left_out.append(f"{clip(name, 60)} ({why})")
        else:
            left_out.append(f"{clip(name, 60)} (more than {MAX_DOMAINS} domains)")
    if left_out:
        lines = ["text and integer columns without a domain clause:"]
        lines += [f"  {entry}" for entry in left_out[:50]]
        if len(left_out) > 50:
            lines.append(f"  and {len(left_out) - 50} more")
        yield Note(tuple(lines))


def _field_type(col: ColumnProfile) -> str | None:
    return col.type if col.type in FIELD_TYPES else None


def schema_clause(profile: Profile, samples: int) -> DraftClause | Note:
    """The schema clause: every field with a contract type present in every sample, its
    observed nullability; ``allow_extra`` true (with a comment) when some field cannot be
    listed, so the samples still pass."""
    fields: list[tuple[str, str, bool, str]] = []
    unlisted: list[str] = []
    for name, col in profile.columns.items():
        ftype = _field_type(col)
        if ftype is None or col.present < samples or not name:
            why = f"type {col.type}" if ftype is None else f"in {col.present} of {samples} samples"
            unlisted.append(f"{clip(name, 60)} ({why if name else 'an empty name'})")
            continue
        fields.append((name, ftype, col.nulls > 0, f"observed: {plural(col.nulls, 'null')}"))
    if not fields:
        return Note(("schema: left out: the samples have no attribute field a contract can type.",))
    comments: tuple[str, ...] = ()
    if unlisted:
        comments = (
            "fields not listed, so allow_extra is true: "
            + ", ".join(unlisted[:20])
            + (f" and {len(unlisted) - 20} more" if len(unlisted) > 20 else ""),
        )
    params = (
        ("allow_extra", bool(unlisted), None),
        ("fields", Fields(tuple(fields)), None),
    )
    return DraftClause("schema", schema_kind.KIND.name, params, comments)
