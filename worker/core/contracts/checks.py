"""Validation of contract documents: YAML loading, JSON Schema, semantic checks (DESIGN.md 3).

The document is loaded with a safe YAML loader that refuses duplicate keys, checked against
``schemas/contract.schema.json`` (JSON Schema draft 2020-12, read from the package data), then
semantically (durations parse, clause names are unique, CRS definitions resolve, regions are
well formed). Every problem raises :class:`worker.core.errors.ContractError` naming the field
path, what is wrong and the fix.
"""

from __future__ import annotations

import copy
import hashlib
import json
import math
import re
from collections.abc import Iterable, Sequence
from functools import cache
from importlib import resources
from typing import Any

import jsonschema
import numpy as np
import yaml

from worker.core._util.durations import parse_duration_s
from worker.core.errors import ContractError
from worker.core.model import FIELD_TYPES

_COMMON = ("name", "kind", "on_break", "description")
_DURATION_FIX = "expected an ISO 8601 duration such as PT4H, P1D or PT30M"
_FRACTION_FIX = "expected a fraction between 0 and 1, e.g. 0.98"


_FIXES: dict[str, str] = {
    "layer": "expected a layer name of letters, digits, '.', '_' and '-' (at most 200; it keys "
    "Kafka records and names the per-major topics), e.g. parcels_authoritative",
    "version": "write v<major>.<minor> without leading zeros, e.g. v7.1 (v7 means v7.0)",
    "cadence": _DURATION_FIX,
    "max_age": _DURATION_FIX,
    "max_clock_skew": _DURATION_FIX,
    "objective": "expected a fraction with 0 < objective <= 1, e.g. 0.99",
    "owner": "expected a non-empty owner (team) name",
    "changelog": "say in a non-empty string why this version exists",
    "clauses": "expected a non-empty list of clauses",
    "change": "declare the change class against the previous version: major, tightening or "
    "minor (`contract-gate contract classify OLD NEW` computes it)",
    "mode": "expected enforcing or observing",
    "evidence": "expected a repository path to `contract evidence --format json` output, or "
    "an http(s) URL",
    "read_paths": "expected shared or per_major",
    "name": "expected a non-empty string",
    "kind": "expected one of crs, axis_order, extent, geometry_type, validity, domain, "
    "freshness, coverage, schema, feature_count",
    "on_break": "expected halt or warn",
    "description": "expected a string",
    "expect": "for kind crs a CRS such as EPSG:4326; for axis_order east_north or north_east",
    "region": "expected a bbox [minx, miny, maxx, maxy] or a WKT polygon string",
    "crs": "expected a CRS such as EPSG:4326 (EPSG code, WKT or PROJJSON text)",
    "min_fraction_inside": _FRACTION_FIX,
    "max_invalid_fraction": _FRACTION_FIX,
    "min_fraction": _FRACTION_FIX,
    "tolerance": "expected a number >= 0 in the units of the contract CRS",
    "allowed": "expected a non-empty list of distinct GeoParquet geometry types: Point, "
    "LineString, Polygon, MultiPoint, MultiLineString, MultiPolygon, GeometryCollection, each "
    "XY only as a bare name, or with a space and Z, M or ZM for the other coordinate "
    "dimensions (e.g. 'Polygon Z')",
    "allow_empty": "expected true or false",
    "allow_null": "expected true or false",
    "allow_extra": "expected true or false",
    "nullable": "expected true or false",
    "column": "expected the attribute column name as a string",
    "values": "expected a mapping of code -> meaning, e.g. {R1: residential, C1: commercial}",
    "fields": "expected a non-empty list of {name, type, nullable}",
    "type": f"expected one of {', '.join(FIELD_TYPES)}",
    "expected_features": "expected an integer > 0",
    "min": "expected an integer >= 0",
    "max": "expected an integer >= 0",
}


#: Largest contract document accepted, in bytes of UTF-8, checked before YAML sees it.
MAX_DOCUMENT_BYTES = 1 << 20
#: Deepest nesting of YAML collections accepted (a contract needs 5 levels).
MAX_DEPTH = 32

_STR_TAG = "tag:yaml.org,2002:str"
_INT_TAG = "tag:yaml.org,2002:int"
_PLAIN_DECIMAL = re.compile(r"-?(?:0|[1-9][0-9]*)")
_YAML11_READS = {
    "tag:yaml.org,2002:int": "an integer",
    "tag:yaml.org,2002:float": "a float",
    "tag:yaml.org,2002:bool": "a boolean",
    "tag:yaml.org,2002:null": "null",
    "tag:yaml.org,2002:timestamp": "a timestamp",
}


def _quote_it(text: str) -> str:
    return (
        f"quote it ('{text}': ...) to keep it as written: YAML 1.1 reads unquoted 010 as "
        "octal 8, 0x1A as 26, 1:30 as base-60 90, 1_000 as 1000, yes/no/on/off as booleans, "
        "1.5 as a float and ~ as null; unquoted, only plain decimal integers such as 10 stay "
        "as written"
    )


def _yaml11_value(node: yaml.ScalarNode) -> Any:
    """What YAML 1.1 (PyYAML's SafeLoader) makes of a scalar node, for messages."""
    loader = yaml.SafeLoader("")
    try:
        return loader.construct_object(node)
    except (yaml.YAMLError, ValueError):
        return node.value
    finally:
        loader.dispose()


class _UniqueKeyLoader(yaml.SafeLoader):
    """A SafeLoader that refuses duplicate mapping keys (PyYAML keeps the last silently),
    anchors and aliases (``&a``/``*a``: a "billion laughs" document expands exponentially)
    and collections nested deeper than :data:`MAX_DEPTH`."""

    _depth = 0

    def compose_node(self, parent: Any, index: Any) -> Any:
        event = self.peek_event()
        if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None) is not None:
            raise yaml.composer.ComposerError(
                None,
                None,
                "YAML anchors and aliases (&name, *name) are not allowed in a contract; "
                "write each value out in full",
                event.start_mark,
            )
        self._depth += 1
        try:
            if self._depth > MAX_DEPTH:
                raise yaml.composer.ComposerError(
                    None,
                    None,
                    f"collections nested deeper than {MAX_DEPTH} levels; a contract needs 5",
                    event.start_mark,
                )
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1


def _construct_mapping(loader: _UniqueKeyLoader, node: yaml.MappingNode) -> dict[Any, Any]:
    mapping: dict[Any, Any] = {}
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=True)
        try:
            hash(key)
        except TypeError:
            raise yaml.constructor.ConstructorError(
                None, None, f"a mapping key is a {type(key).__name__}", key_node.start_mark
            ) from None
        if key in mapping:
            raise yaml.constructor.ConstructorError(
                None, None, f"duplicate key {key!r}", key_node.start_mark
            )
        mapping[key] = loader.construct_object(value_node, deep=True)
    return mapping


def _child(node: Any, key: str) -> Any:
    """The value node of ``key`` in a mapping node (None when absent or not a mapping)."""
    if not isinstance(node, yaml.MappingNode):
        return None
    for k, v in node.value:
        if isinstance(k, yaml.ScalarNode) and k.tag == _STR_TAG and k.value == key:
            return v
    return None


def _check_domain_nodes(root: Any, source: str) -> None:
    """Domain codes and meanings mean what their authors wrote (YAML 1.1 implicit types).

    A code (key of a domain clause's ``values``) must be a string (quoted, or plain text
    YAML reads as a string) or a plain decimal integer (``10``, ``-3``); a meaning must be a
    string. Anything YAML 1.1 would turn into another value (``010`` -> 8, ``0x1A`` -> 26,
    ``1:30`` -> 90, ``1_000`` -> 1000, ``yes`` -> True, ``1.5``, ``~``, dates) is refused
    with a "quote it" fix, judged on the node's tag and source text before construction.
    """
    clauses = _child(root, "clauses")
    if not isinstance(clauses, yaml.SequenceNode):
        return
    for i, clause in enumerate(clauses.value):
        values = _child(clause, "values")
        if not isinstance(values, yaml.MappingNode):
            continue
        for key, value in values.value:
            text = key.value if isinstance(key, yaml.ScalarNode) else "?"
            where = ["clauses", i, "values", text]
            if not isinstance(key, yaml.ScalarNode):
                raise _fail(source, where, "a domain code must be a scalar", _quote_it("code"))
            if key.tag == _INT_TAG and _PLAIN_DECIMAL.fullmatch(key.value):
                pass
            elif key.tag != _STR_TAG:
                reads = _YAML11_READS.get(key.tag, key.tag)
                raise _fail(
                    source,
                    where,
                    f"domain code {key.value} is written unquoted and YAML 1.1 reads it as "
                    f"{reads}: {_yaml11_value(key)!r}, not the code {key.value!r}",
                    _quote_it(key.value),
                )
            if isinstance(value, yaml.ScalarNode) and value.tag != _STR_TAG:
                reads = _YAML11_READS.get(value.tag, value.tag)
                raise _fail(
                    source,
                    where,
                    f"the meaning {value.value} is written unquoted and YAML 1.1 reads it as "
                    f"{reads}: {_yaml11_value(value)!r}; a meaning is text",
                    _quote_it(value.value).replace(
                        f"'{value.value}': ...", f"...: '{value.value}'"
                    ),
                )


def _yaml_problem(exc: yaml.YAMLError) -> str:
    """One line: ``line L, column C: not readable as YAML: <problem>`` (1-based, from the
    PyYAML mark of the problem), without PyYAML's multi-line source excerpt."""
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
    context = getattr(exc, "context", None)
    where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""
    why = f"{context}, {problem}" if context and problem and context not in problem else problem
    return f"{where}not readable as YAML: {why}"


def load_document(text: str, source: str) -> Any:
    """The YAML document ``text`` as Python values, refusing what would not mean what the
    author wrote.

    Refused, each with :class:`ContractError` naming ``source``: more than
    :data:`MAX_DOCUMENT_BYTES` bytes (checked before parsing), unreadable YAML, anchors and
    aliases (refused while composing, before any expansion: a nested-alias "billion
    laughs" document fails in microseconds), nesting deeper than :data:`MAX_DEPTH`,
    duplicate or unhashable keys, and domain codes or meanings YAML 1.1 would retype
    (:func:`_check_domain_nodes`).
    """
    size = len(text.encode("utf-8", errors="surrogatepass"))
    if size > MAX_DOCUMENT_BYTES:
        raise ContractError(
            f"{source}: (document): {size} bytes, more than the {MAX_DOCUMENT_BYTES} a contract "
            "may have; a contract is a short YAML file (move large regions to a simpler "
            "polygon or a bbox)"
        )
    fast = _load_with_libyaml(text, source)
    if fast is not _NOT_FAST:
        return fast
    try:  # the reader refuses control characters already here (found by fuzzing)
        loader = _UniqueKeyLoader(text)
    except yaml.YAMLError as exc:
        raise ContractError(f"{source}: {_yaml_problem(exc)}") from None
    try:
        root = loader.get_single_node()
        _check_domain_nodes(root, source)
        return None if root is None else loader.construct_document(root)
    except yaml.YAMLError as exc:
        raise ContractError(f"{source}: {_yaml_problem(exc)}") from None
    except (ValueError, OverflowError) as exc:  # e.g. `2026-13-45`, a YAML timestamp
        raise ContractError(
            f"{source}: not readable as YAML: a value cannot be constructed ({exc}); quote "
            "it if it is text"
        ) from None
    finally:
        loader.dispose()


_NOT_FAST = object()
_CSafeLoader: Any = getattr(yaml, "CSafeLoader", None)


def _load_with_libyaml(text: str, source: str) -> Any:
    """:func:`load_document` composed by libyaml (PyYAML's C binding), when it can give the
    same answer; else :data:`_NOT_FAST` and the caller takes the pure-Python path.

    The pure-Python composer cost about 3 ms a contract, most of a worker's start-up with
    1,000 versions on the config topic. libyaml refuses nesting beyond its own limit (1,000
    levels) while scanning, so its recursive composer cannot exhaust the stack; a text with
    no ``&`` and no ``*`` has no anchor and no alias; nesting beyond :data:`MAX_DEPTH` is
    counted on the composed nodes (iteratively). Construction is the same Python
    constructor (duplicate keys, domain node checks). Any YAML error goes to the Python
    path, so messages are the same whichever path read the document.
    """
    if _CSafeLoader is None or "&" in text or "*" in text:
        return _NOT_FAST
    loader = _CSafeLoader(text)
    loader.yaml_constructors = _UniqueKeyLoader.yaml_constructors
    try:
        root = loader.get_single_node()
        if root is None:
            return None
        if _node_depth(root) > MAX_DEPTH:
            return _NOT_FAST  # the Python composer names where
        _check_domain_nodes(root, source)
        return loader.construct_document(root)
    except (yaml.YAMLError, ValueError, OverflowError):  # e.g. an impossible timestamp
        return _NOT_FAST
    finally:
        loader.dispose()


def _node_depth(root: yaml.Node) -> int:
    """Deepest nesting of collection nodes under ``root`` (a scalar root is depth 1)."""
    deepest, stack = 0, [(root, 1)]
    while stack:
        node, depth = stack.pop()
        deepest = max(deepest, depth)
        if isinstance(node, yaml.SequenceNode):
            stack.extend((child, depth + 1) for child in node.value)
        elif isinstance(node, yaml.MappingNode):
            for key, value in node.value:
                stack.append((key, depth + 1))
                stack.append((value, depth + 1))
    return deepest


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
    if not top.is_valid(doc):
        return False
    for clause in doc.get("clauses") or ():
        text = json.dumps(clause, sort_keys=True, default=str)
        key = hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()
        if key in _VALID_CLAUSES:
            continue
        if not one_clause.is_valid(clause):
            return False
        if len(_VALID_CLAUSES) >= _VALID_CLAUSES_MAX:
            _VALID_CLAUSES.clear()
        _VALID_CLAUSES.add(key)
    return True


@cache
def _allowed_fields(kind: str) -> tuple[str, ...]:
    defs = _validator().schema["$defs"]
    return _COMMON + tuple(defs.get(f"kind_{kind}", {}).get("properties", {}))


def _path(parts: Iterable[Any]) -> str:
    out = ""
    for p in parts:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else str(p))
    return out or "(document)"


def _fail(source: str, path: Iterable[Any], what: str, fix: str | None = None) -> ContractError:
    tail = f"; {fix}" if fix else ""
    return ContractError(f"{source}: {_path(path)}: {what}{tail}")


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


def _check_keys(doc: Any, source: str) -> None:
    """Domain codes must be str or int; every other key must be a string."""
    clauses = doc.get("clauses") if isinstance(doc, dict) else None
    for i, c in enumerate(clauses if isinstance(clauses, list) else []):
        values = c.get("values") if isinstance(c, dict) else None
        if not isinstance(values, dict):
            continue
        for code in values:
            if isinstance(code, bool) or not isinstance(code, (int, str)):
                raise _fail(
                    source,
                    ["clauses", i, "values", str(code)],
                    f"domain code {code!r} is a {type(code).__name__}",
                    "quote it (YAML reads on/off/yes/no as booleans, 1.5 as a float)",
                )


def _check_finite(value: Any, source: str, path: list[Any] | None = None) -> None:
    """Every number in the document is finite (JSON Schema lets NaN pass ``minimum`` and
    ``maximum``, and infinity pass ``minimum``). Region bboxes are left to
    :func:`_check_region`, which names the bound."""
    path = path or []
    if isinstance(value, float) and not math.isfinite(value):
        raise _fail(
            source,
            path,
            f"{value} is not a finite number (YAML .inf/.nan, or a literal beyond about "
            "1.8e308 such as 1.0e+400, which overflows to infinity)",
            _FIXES.get(next((p for p in reversed(path) if isinstance(p, str)), ""))
            or "write a finite number",
        )
    if isinstance(value, dict):
        for k, v in value.items():
            if k != "region":
                _check_finite(v, source, [*path, k])
    elif isinstance(value, list):
        for i, v in enumerate(value):
            _check_finite(v, source, [*path, i])


def _region_crs(doc: dict[str, Any], clause: dict[str, Any]) -> Any:
    """The CRS a clause's region is written in (clause ``crs``, else the crs clause's
    ``expect``, as :func:`worker.core.clauses.kinds.contract_crs`), resolved; None when the
    region is in the batch's declared CRS or the CRS does not resolve (reported on its own
    field)."""
    from worker.core.errors import CrsError
    from worker.core.spatial.crs import resolve_crs

    text = clause.get("crs")
    if text is None:
        text = next((c.get("expect") for c in doc["clauses"] if c.get("kind") == "crs"), None)
    if text is None:
        return None
    try:
        return resolve_crs(text)
    except CrsError:
        return None


def _check_region(source: str, path: list[Any], region: Any, crs: Any = None) -> None:
    """A bbox or WKT region is well formed, finite and within the range of ``crs``.

    ``crs`` (a pyproj CRS or None) is the CRS the region is written in; with it, a
    geographic CRS in degrees needs longitudes in [-180, 180] and latitudes in [-90, 90]
    (``east_north`` order: [minx, miny, maxx, maxy] = [west, south, east, north]; minx >
    maxx crosses the antimeridian), and a projected CRS needs the region near its area of
    use (:func:`_check_region_in_crs`).
    """
    if isinstance(region, list):
        names = ("minx", "miny", "maxx", "maxy")
        for name, v in zip(names, region, strict=True):
            if not math.isfinite(v):
                raise _fail(
                    source,
                    path,
                    f"{name} is {v} (not a finite number; a literal beyond about 1.8e308, "
                    "e.g. 1.0e+400, overflows to infinity)",
                    "write finite numbers, e.g. [8.4, 47.3, 8.6, 47.5]",
                )
        if region[1] > region[3]:
            raise _fail(source, path, "miny is greater than maxy", _FIXES["region"])
        if region[0] == region[2] or region[1] == region[3]:
            raise _fail(source, path, "the bbox has zero width or height", _FIXES["region"])
        if crs is not None and not crs.is_geographic and region[0] > region[2]:
            raise _fail(
                source,
                path,
                f"minx is greater than maxx in the projected CRS {_label(crs)} (only a "
                "geographic bbox may cross the antimeridian)",
                "write [minx, miny, maxx, maxy] with minx < maxx",
            )
        _check_region_in_crs(source, path, [float(v) for v in region], crs)
        return
    import shapely

    try:
        with np.errstate(all="ignore"):  # 1e400 in WKT overflows to inf: refused below
            geom = shapely.from_wkt(region)
    except shapely.errors.GEOSException as exc:
        raise _fail(source, path, f"not readable as WKT ({exc})", _FIXES["region"]) from None
    if geom is None or geom.is_empty or geom.geom_type not in ("Polygon", "MultiPolygon"):
        raise _fail(source, path, "the WKT is not a non-empty polygon", _FIXES["region"])
    coords = shapely.get_coordinates(geom)
    if not bool(np.isfinite(coords).all()):
        raise _fail(
            source, path, "the WKT polygon has a non-finite coordinate (NaN or inf)", "use numbers"
        )
    if not shapely.is_valid(geom):
        raise _fail(
            source,
            path,
            f"the WKT polygon is invalid ({shapely.is_valid_reason(geom)})",
            "make the ring simple (no self-intersection), e.g. list the vertices in order "
            "around the boundary",
        )
    _check_region_in_crs(source, path, [float(b) for b in geom.bounds], crs)


def _label(crs: Any) -> str:
    from worker.core.spatial.crs import crs_label

    return crs_label(crs)


def _check_region_in_crs(source: str, path: list[Any], bounds: list[float], crs: Any) -> None:
    """``bounds`` ([minx, miny, maxx, maxy], finite) lie within the range of ``crs``.

    Geographic CRS in degrees: x (longitude) in [-180, 180], y (latitude) in [-90, 90].
    Projected CRS with an area of use (EPSG): the area of use (lon/lat, EPSG database) is
    transformed into the CRS with ``pyproj.Transformer.transform_bounds`` (densified
    edges); a region reaching beyond that box by more than the box's larger side is "far
    outside" and refused (an order-of-magnitude slip, or degrees and metres mixed up). A
    CRS without area of use, or whose area does not transform to finite bounds, is not
    range-checked.
    """
    if crs is None:
        return
    minx, miny, maxx, maxy = bounds
    if crs.is_geographic:
        unit = crs.axis_info[0].unit_name if crs.axis_info else "degree"
        if unit != "degree":
            return
        for name, v, lo, hi, axis in (
            ("minx", minx, -180, 180, "longitude"),
            ("maxx", maxx, -180, 180, "longitude"),
            ("miny", miny, -90, 90, "latitude"),
            ("maxy", maxy, -90, 90, "latitude"),
        ):
            if not lo <= v <= hi:
                raise _fail(
                    source,
                    path,
                    f"{axis} {v:g} ({name}) is outside [{lo}, {hi}] in the geographic CRS "
                    f"{_label(crs)}",
                    "write the region in degrees, longitude (x) first: [west, south, east, "
                    "north] with west > east for a region crossing the antimeridian",
                )
        return
    area = _area_of_use_in_crs(crs)
    if area is None:
        return
    ax0, ay0, ax1, ay1 = area
    margin = max(ax1 - ax0, ay1 - ay0)
    if minx < ax0 - margin or maxx > ax1 + margin or miny < ay0 - margin or maxy > ay1 + margin:
        raise _fail(
            source,
            path,
            f"the region [{minx:.6g}, {miny:.6g}, {maxx:.6g}, {maxy:.6g}] lies far outside "
            f"the area of use of {_label(crs)} ({crs.area_of_use.name}: about "
            f"[{ax0:.6g}, {ay0:.6g}, {ax1:.6g}, {ay1:.6g}] in CRS units)",
            f"write the region in {_label(crs)} units ({crs.axis_info[0].unit_name}), or "
            "declare the CRS it is written in",
        )


@cache
def _area_of_use_in_crs(crs: Any) -> tuple[float, float, float, float] | None:
    """The EPSG area of use of a projected CRS as [minx, miny, maxx, maxy] in the CRS; None
    when it has none or it does not transform to finite bounds."""
    from pyproj import Transformer
    from pyproj.exceptions import ProjError

    aou = crs.area_of_use
    base = crs.geodetic_crs
    if aou is None or base is None:
        return None
    try:
        tx = Transformer.from_crs(base, crs, always_xy=True)
        out = tx.transform_bounds(aou.west, aou.south, aou.east, aou.north, densify_pts=21)
    except ProjError:
        return None
    if not all(math.isfinite(v) for v in out):
        return None
    return (float(out[0]), float(out[1]), float(out[2]), float(out[3]))


def _check_crs(source: str, path: list[Any], text: str) -> None:
    from worker.core.errors import CrsError
    from worker.core.spatial.crs import resolve_crs

    try:
        resolve_crs(text)
    except CrsError as exc:
        raise _fail(source, path, f"CRS {text!r} does not resolve ({exc})", _FIXES["crs"]) from None


def _semantic_checks(doc: dict[str, Any], source: str) -> float:
    """Checks JSON Schema cannot express; returns cadence in seconds."""
    durations: list[tuple[list[Any], str]] = [(["cadence"], doc["cadence"])]
    seen: dict[str, int] = {}
    for i, c in enumerate(doc["clauses"]):
        if c["name"] in seen:
            raise _fail(
                source,
                ["clauses", i, "name"],
                f"clause name {c['name']!r} is already used by clauses[{seen[c['name']]}]",
                "clause names must be unique within a version; rename one",
            )
        seen[c["name"]] = i
        for key in ("max_age", "max_clock_skew"):
            if key in c:
                durations.append((["clauses", i, key], c[key]))
        if "region" in c:
            _check_region(source, ["clauses", i, "region"], c["region"], _region_crs(doc, c))
        if c["kind"] == "feature_count" and c.get("min", 0) > c.get("max", c.get("min", 0)):
            raise _fail(source, ["clauses", i], "min is greater than max", "make min <= max")
        if c["kind"] == "schema":
            names = [f["name"] for f in c["fields"]]
            dup = sorted({n for n in names if names.count(n) > 1})
            if dup:
                raise _fail(
                    source,
                    ["clauses", i, "fields"],
                    f"duplicate field {dup[0]!r}",
                    "list each field once",
                )
        if c["kind"] == "crs":
            _check_crs(source, ["clauses", i, "expect"], c["expect"])
        if "crs" in c:
            _check_crs(source, ["clauses", i, "crs"], c["crs"])
    seconds = {}
    for path, text in durations:
        try:
            seconds[_path(path)] = parse_duration_s(text)
        except ValueError as exc:
            raise _fail(source, path, f"invalid duration {text!r} ({exc})", _DURATION_FIX) from None
    if seconds["cadence"] <= 0:
        raise _fail(source, ["cadence"], "the cadence must be longer than zero", _DURATION_FIX)
    return seconds["cadence"]
