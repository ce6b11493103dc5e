"""Validation of contract documents: YAML loading, JSON Schema, semantic checks (DESIGN.md 3).

The document is loaded with a safe YAML loader that refuses duplicate keys, checked against
``schemas/contract.schema.json`` (JSON Schema draft 2020-12, read from the package data), then
semantically (durations parse, clause names are unique, CRS definitions resolve, regions are
well formed). Every problem raises :class:`worker.core.errors.ContractError` naming the field
path, what is wrong and the fix.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from functools import cache
from importlib import resources
from typing import Any

import jsonschema
import yaml

from worker.core.durations import parse_duration_s
from worker.core.errors import ContractError

_COMMON = ("name", "kind", "on_break", "description")
_DURATION_FIX = "expected an ISO 8601 duration such as PT4H, P1D or PT30M"
_FRACTION_FIX = "expected a fraction between 0 and 1, e.g. 0.98"


_FIXES: dict[str, str] = {
    "layer": "expected a non-empty layer name, e.g. parcels_authoritative",
    "version": "write v<major>.<minor>, e.g. v7.1 (v7 means v7.0)",
    "cadence": _DURATION_FIX,
    "max_age": _DURATION_FIX,
    "max_clock_skew": _DURATION_FIX,
    "objective": "expected a fraction with 0 < objective <= 1, e.g. 0.99",
    "owner": "expected a non-empty owner (team) name",
    "changelog": "say in a non-empty string why this version exists",
    "clauses": "expected a non-empty list of clauses",
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
    "allowed": "expected a non-empty list of distinct OGC geometry types: Point, LineString, "
    "Polygon, MultiPoint, MultiLineString, MultiPolygon, GeometryCollection",
    "allow_empty": "expected true or false",
    "allow_null": "expected true or false",
    "allow_extra": "expected true or false",
    "nullable": "expected true or false",
    "column": "expected the attribute column name as a string",
    "values": "expected a mapping of code -> meaning, e.g. {R1: residential, C1: commercial}",
    "fields": "expected a non-empty list of {name, type, nullable}",
    "type": "expected one of string, integer, double, boolean, timestamp, date, binary",
    "expected_features": "expected an integer > 0",
    "min": "expected an integer >= 0",
    "max": "expected an integer >= 0",
}


class _UniqueKeyLoader(yaml.SafeLoader):
    """A SafeLoader that refuses duplicate mapping keys (PyYAML keeps the last silently)."""


def _construct_mapping(loader: _UniqueKeyLoader, node: yaml.MappingNode) -> dict[Any, Any]:
    mapping: dict[Any, Any] = {}
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=True)
        if key in mapping:
            raise yaml.constructor.ConstructorError(
                None, None, f"duplicate key {key!r}", key_node.start_mark
            )
        mapping[key] = loader.construct_object(value_node, deep=True)
    return mapping


@cache
def _validator() -> jsonschema.Draft202012Validator:
    text = resources.files("worker").joinpath("schemas/contract.schema.json").read_text("utf-8")
    return jsonschema.Draft202012Validator(json.loads(text))


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
    what = f"invalid value {shown!r} ({error.message})" if shown is not None else error.message
    if field == "expect":
        kind = _clause_kind(doc, path)
        fix = _FIXES["crs"] if kind == "crs" else "expected east_north or north_east"
        return path, what, fix
    return path, what, _FIXES.get(field)


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


def _check_region(source: str, path: list[Any], region: Any) -> None:
    if isinstance(region, list):
        if region[1] > region[3]:
            raise _fail(source, path, "miny is greater than maxy", _FIXES["region"])
        if region[0] == region[2] or region[1] == region[3]:
            raise _fail(source, path, "the bbox has zero width or height", _FIXES["region"])
        return
    import shapely

    try:
        geom = shapely.from_wkt(region)
    except shapely.errors.GEOSException as exc:
        raise _fail(source, path, f"not readable as WKT ({exc})", _FIXES["region"]) from None
    if geom is None or geom.is_empty or geom.geom_type not in ("Polygon", "MultiPolygon"):
        raise _fail(source, path, "the WKT is not a non-empty polygon", _FIXES["region"])
    if not shapely.is_valid(geom):
        raise _fail(
            source,
            path,
            f"the WKT polygon is invalid ({shapely.is_valid_reason(geom)})",
            "make the ring simple (no self-intersection), e.g. list the vertices in order "
            "around the boundary",
        )


def _check_crs(source: str, path: list[Any], text: str) -> None:
    from worker.core.errors import CrsError
    from worker.core.spatial import resolve_crs

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
            _check_region(source, ["clauses", i, "region"], c["region"])
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
