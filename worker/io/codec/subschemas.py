"""Parts of a parsed Avro record schema, as schemas of their own (for
:class:`worker.io.codec.avro.RecordParts`, at import): a record of some of its fields, a
type with its named types referenced as a parsed schema holds them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import fastavro

__all__ = ["referenced", "sub_record"]


def sub_record(
    schema: Mapping[str, Any], fields: Sequence[Mapping[str, Any]], part: str, named: dict[str, Any]
) -> Any:
    """A record schema of ``fields`` of the parsed record ``schema`` (its named types
    referenced from ``named``), named after it and ``part``; None for no fields."""
    if not fields:
        return None
    doc = {
        "type": "record",
        "name": f"{schema['name']}__{part}",
        "fields": [{**f, "type": referenced(f["type"], set())} for f in fields],
    }
    return fastavro.parse_schema(doc, dict(named))


def referenced(t: Any, seen: set[str]) -> Any:
    """``t`` with every named type (record, enum, fixed) after its first definition given
    by its full name, and every definition kept once, as in a parsed schema; field
    defaults and logical types kept."""
    if isinstance(t, list):
        return [referenced(b, seen) for b in t]
    if not isinstance(t, dict):
        return t
    out = {k: v for k, v in t.items() if not k.startswith("__")}
    if t.get("type") in ("record", "error", "enum", "fixed") and "name" in t:
        if t["name"] in seen:
            return t["name"]
        seen.add(t["name"])
    if "fields" in out:
        out["fields"] = [{**f, "type": referenced(f["type"], seen)} for f in out["fields"]]
    for key in ("items", "values"):
        if key in out:
            out[key] = referenced(out[key], seen)
    if isinstance(out.get("type"), (dict, list)):
        out["type"] = referenced(out["type"], seen)
    return out
