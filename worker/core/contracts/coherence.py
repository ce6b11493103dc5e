"""Clauses of one contract version that no batch can pass together (pure).

Each clause is valid on its own, so the contract loads; but a domain clause whose codes
are all of another type than the schema clause gives their column admits no value: a
code ``'1'`` (text) never matches an integer column, and an integer column is what the
schema clause demands. An NYC contract quoting every BoroCode code (``'1': Manhattan``)
while its schema clause still typed BoroCode ``integer`` loaded without a word, and
``contract classify`` called the change a tightening.
The domain clause's matching rules (no coercion between text and numbers; whole-number
floats match integer codes) are those of :mod:`worker.core.clauses.kinds`.

This is not a load error: a version already on the config topic must keep loading in
every worker. ``contract publish`` refuses a new version with such a pair, ``check``
warns.
"""

from __future__ import annotations

from typing import Any

from worker.core.model import Contract

__all__ = ["contradictions"]


def _is_integer(code: Any) -> bool:
    return (type(code) is int) or (type(code) is float and code.is_integer())


#: Schema field type -> whether a domain code (as YAML typed it) can match a value of it.
_MATCHES = {
    "integer": _is_integer,
    "double": lambda code: type(code) in (int, float),
    "string": lambda code: type(code) is str,
    "boolean": lambda code: type(code) is bool,
}


def contradictions(contract: Contract) -> list[str]:
    """Why no batch can pass ``contract``'s clauses together, one sentence each; empty
    when nothing contradicts.

    Found: a domain clause none of whose codes can match a value of the type a schema
    clause gives its column (``integer``, ``double``, ``string``, ``boolean``; other
    field types are not compared). Non-null values then break one of the two clauses.
    """
    typed: dict[str, tuple[str, str]] = {}
    for c in contract.clauses:
        if c.kind == "schema":
            for f in c.params.get("fields") or ():
                typed.setdefault(str(f["name"]), (str(f["type"]), c.name))
    out = []
    for c in contract.clauses:
        if c.kind != "domain" or c.params.get("column") not in typed:
            continue
        column = str(c.params["column"])
        field_type, schema_clause = typed[column]
        matches = _MATCHES.get(field_type)
        codes = list(c.params.get("values") or ())
        if matches is None or not codes or any(matches(code) for code in codes):
            continue
        kinds = sorted({"text" if type(code) is str else type(code).__name__ for code in codes})
        shown = ", ".join(repr(code) for code in codes[:3]) + (", ..." if len(codes) > 3 else "")
        out.append(
            f"domain clause {c.name!r} lists only {' and '.join(kinds)} codes ({shown}) for "
            f"column {column!r}, which schema clause {schema_clause!r} types {field_type}: "
            f"no value of it can pass both; write the codes as {field_type} values, or give "
            "the field the codes' type"
        )
    return out
