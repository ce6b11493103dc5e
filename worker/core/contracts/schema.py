"""JSON Schema validation of contract documents and the messages of its errors.

The schema is ``schemas/contract.schema.json`` (draft 2020-12, read from the package data).
:func:`schema_valid` decides validity, each distinct clause once; :func:`_describe` turns one
schema error into (path, what is wrong, fix).
"""

from __future__ import annotations

import copy
import hashlib
import json
import re
from collections.abc import Sequence
from functools import cache
from importlib import resources
from typing import Any

import jsonschema

from worker.core.contracts.fixes import _FIXES

__all__ = [
    "layer_name_pattern",
    "schema_valid",
]


_COMMON = ("name", "kind", "on_break", "description")


@cache
def _validator() -> jsonschema.Draft202012Validator:
    text = resources.files("worker").joinpath("schemas/contract.schema.json").read_text("utf-8")
    return jsonschema.Draft202012Validator(json.loads(text))


@cache
def layer_name_pattern() -> re.Pattern[str]:
    """The pattern a layer name matches (``layer`` in ``contract.schema.json``, anchored):
    letters, digits, ``.``, ``_`` and ``-``, 1 to 200 of them (it keys Kafka records and
    names per-major topics)."""
    return re.compile(_validator().schema["properties"]["layer"]["pattern"])


@cache
def _split_validators() -> tuple[jsonschema.Draft202012Validator, jsonschema.Draft202012Validator]:
    """(document without its clauses' contents, one clause) validators of the same schema."""
    schema = _validator().schema
    top = copy.deepcopy(schema)
    top["properties"]["clauses"]["items"] = {}
    clause = {"$schema": schema["$schema"], "$defs": schema["$defs"], "$ref": "#/$defs/clause"}
    return jsonschema.Draft202012Validator(top), jsonschema.Draft202012Validator(clause)


#: sha256 of the canonical JSON of clauses known to be schema-valid (32 bytes each, bounded
#: in count; see :func:`schema_valid`).
_VALID_CLAUSES: set[bytes] = set()
_VALID_CLAUSES_MAX = 8192


def schema_valid(doc: Any) -> bool:
    """True when ``doc`` (JSON-shaped, see :func:`_for_schema`) satisfies the contract JSON
    Schema, deciding each clause once per distinct clause.

    The whole-document validation costs about 10 ms (draft 2020-12 ``if``/``then`` per
    clause kind with ``unevaluatedProperties``), and a worker bootstrapping 1,000 versions
    validates clauses that are mostly the same from version to version and layer to layer.
    The document is validated without its clauses' contents, then each clause on its own
    (the same ``$defs/clause`` schema), remembering the clauses found valid by their
    canonical JSON. False means "not known valid": the caller validates the whole document
    to name the errors.
    """
    top, one_clause = _split_validators()
    if not _top_valid(top, doc):
        return False
    for clause in doc.get("clauses") or ():
        try:  # no default=str: a YAML date and its text would share a key
            text = json.dumps(clause, sort_keys=True)
        except (TypeError, ValueError):  # a value JSON has no type for: not remembered
            if not one_clause.is_valid(clause):
                return False
            continue
        key = hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()
        if key in _VALID_CLAUSES:
            continue
        if not one_clause.is_valid(clause):
            return False
        if len(_VALID_CLAUSES) >= _VALID_CLAUSES_MAX:
            _VALID_CLAUSES.clear()
        _VALID_CLAUSES.add(key)
    return True


#: Keywords of the top-level schema :func:`_top_valid` checks one by one; the others it
#: allows are annotations. Any other keyword there: the whole-document validator decides.
_TOP_KEYWORDS = frozenset({"type", "required", "additionalProperties", "properties"})
_TOP_ANNOTATIONS = frozenset({"$schema", "$id", "title", "description", "$defs"})
#: (field, type name, value) of top-level scalars known valid (bounded in count and size).
_VALID_TOP: set[tuple[str, str, Any]] = set()
_VALID_TOP_MAX, _VALID_TOP_TEXT_MAX = 8192, 256


@cache
def _top_parts() -> tuple[frozenset[str], dict[str, Any]] | None:
    """(required fields, field -> validator of its subschema) when the top-level schema is
    a closed object of known keywords; None otherwise."""
    top = _split_validators()[0]
    schema = top.schema
    if set(schema) - _TOP_KEYWORDS - _TOP_ANNOTATIONS or schema.get("type") != "object":
        return None
    if schema.get("additionalProperties") is not False:
        return None
    props = {k: top.evolve(schema=sub) for k, sub in schema.get("properties", {}).items()}
    return frozenset(schema.get("required", ())), props


def _top_valid(top: jsonschema.Draft202012Validator, doc: Any) -> bool:
    """``top.is_valid(doc)``, keyword by keyword: the fields (required, none unknown), then
    each field's value against its subschema, remembering valid short scalars. The
    whole-document validation cost 0.26 ms a contract, the most of a 1,000-version
    bootstrap after YAML; the layer, version and changelog differ between versions, the
    rest recurs."""
    parts = _top_parts()
    if parts is None or not isinstance(doc, dict):
        return bool(top.is_valid(doc))
    required, props = parts
    if not required <= doc.keys() or not doc.keys() <= props.keys():
        return False
    for field, value in doc.items():
        small = isinstance(value, (str, int, float, bool)) or value is None
        if small and isinstance(value, str) and len(value) > _VALID_TOP_TEXT_MAX:
            small = False
        key = (field, type(value).__name__, value)
        if small and key in _VALID_TOP:
            continue
        if not props[field].is_valid(value):
            return False
        if small:
            if len(_VALID_TOP) >= _VALID_TOP_MAX:
                _VALID_TOP.clear()
            _VALID_TOP.add(key)
    return True


@cache
def _allowed_fields(kind: str) -> tuple[str, ...]:
    defs = _validator().schema["$defs"]
    return _COMMON + tuple(defs.get(f"kind_{kind}", {}).get("properties", {}))


def _describe(
    error: jsonschema.ValidationError, doc: Any
) -> tuple[list[Any], str, str | None] | None:
    """(path, what is wrong, fix) of one JSON Schema error; None for a redundant one.

    ``unevaluatedProperties`` also fires for known fields when the kind-specific part of a
    clause fails (its annotations are dropped); such errors name no unknown field and are
    redundant with the failure itself.
    """
    path = list(error.absolute_path)
    field = next((p for p in reversed(path) if isinstance(p, str)), "")
    if path and path[-1] == "type" and "fields" not in path:
        field = ""
    if error.validator == "required":
        missing = re.findall(r"'([^']+)' is a required", error.message)
        name = missing[0] if missing else "?"
        return [*path, name], "missing required field", _FIXES.get(name)
    if error.validator in ("unevaluatedProperties", "additionalProperties"):
        inst = error.instance if isinstance(error.instance, dict) else {}
        schema_props = error.schema.get("properties", {}) if isinstance(error.schema, dict) else {}
        kind = inst.get("kind") if "clauses" in path[:1] else None
        known = _allowed_fields(kind) if isinstance(kind, str) else tuple(schema_props)
        extra = sorted(str(k) for k in inst if k not in known)
        if not extra:
            return None
        where = f" for kind {kind}" if isinstance(kind, str) else ""
        return (
            path + extra[:1],
            "unknown field (a typo?)",
            f"allowed fields{where}: {', '.join(known)}",
        )
    inst_kind = error.instance.get("kind") if isinstance(error.instance, dict) else None
    if error.validator == "oneOf" and inst_kind == "coverage":
        return (
            path,
            "needs exactly one of region or expected_features",
            "give region (bbox or WKT) for areal layers, or expected_features (int > 0)",
        )
    if error.validator == "anyOf" and isinstance(error.instance, dict):
        return path, "needs min, max or both", "give integer bounds, e.g. {min: 1, max: 1000}"
    shown = error.instance if not isinstance(error.instance, (dict, list)) else None
    message = error.message
    if error.validator == "pattern":  # the fix says what is expected; the regex does not
        message = "not in the expected form"
    if error.instance is None:  # YAML null (or an empty value): said in YAML's terms
        what = f"invalid value null ({re.sub(r'^None ', 'null ', message)})"
    else:
        what = f"invalid value {shown!r} ({message})" if shown is not None else message
    hint = _numeric_text_hint(error.instance)
    if hint:
        return path, what, hint
    if field == "expect":
        kind = _clause_kind(doc, path)
        fix = _FIXES["crs"] if kind == "crs" else "expected east_north or north_east"
        return path, what, fix
    return path, what, _FIXES.get(field)


_YAML11_FLOAT_TEXT = re.compile(r"[-+]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)[eE]([-+]?)([0-9]+)")


def _numeric_text_hint(instance: Any) -> str | None:
    """A fix for a number YAML 1.1 read as text (``1e9``, ``1.0e9``: its floats need a dot
    and a signed exponent, ``1.0e+9``), found in ``instance`` or its list items."""
    items = instance if isinstance(instance, list) else [instance]
    for item in items:
        m = _YAML11_FLOAT_TEXT.fullmatch(item) if isinstance(item, str) else None
        if m:
            mantissa = item[: m.start(1) - 1]
            mantissa = mantissa if "." in mantissa else mantissa + ".0"
            fixed = f"{mantissa}e{m.group(1) or '+'}{m.group(2)}"
            return f"YAML 1.1 reads {item!r} as text: write {fixed} (a dot and a signed exponent)"
    return None


def _clause_kind(doc: Any, path: Sequence[Any]) -> Any:
    try:
        return doc["clauses"][path[1]].get("kind")
    except (KeyError, IndexError, TypeError, AttributeError):
        return None


def _for_schema(value: Any) -> Any:
    """A JSON-shaped copy for jsonschema (domain codes as strings)."""
    if isinstance(value, dict):
        return {str(k) if isinstance(k, int) else k: _for_schema(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_for_schema(v) for v in value]
    return value
