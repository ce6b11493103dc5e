"""How a contract problem is worded: the field path, what is wrong, and the fix.

Every check of a contract document (:mod:`.yaml_doc`, :mod:`.schema`, :mod:`.semantic`)
raises :class:`worker.core.errors.ContractError` built by :func:`_fail`, whose message names
the source, the JSON path of the field (``clauses[3].max_age``), what is wrong and the fix
(:data:`_FIXES`, one per field name).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from worker.core.clauses import CLAUSE_KINDS
from worker.core.errors import ContractError
from worker.core.vocab import FIELD_TYPES

#: Nothing public: :mod:`.yaml_doc`, :mod:`.schema`, :mod:`.semantic`, :mod:`.parse` import by name.
__all__: list[str] = []


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
    "kind": "expected one of " + ", ".join(CLAUSE_KINDS),
    "on_break": "expected halt or warn",
    "description": "expected a string",
    "expect": "for kind crs a CRS such as EPSG:4326; for axis_order east_north or north_east",
    "region": "expected a bbox [minx, miny, maxx, maxy] or a WKT polygon string",
    "crs": "expected a CRS such as EPSG:4326 (EPSG code, WKT or PROJJSON text)",
    "min_fraction_inside": _FRACTION_FIX,
    "max_invalid_fraction": _FRACTION_FIX,
    "min_fraction": _FRACTION_FIX,
    "tolerance": "expected a number >= 0 in the units of the contract CRS",
    "allowed": "expected a non-empty list of distinct geometry types: Point, "
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


def _path(parts: Iterable[Any]) -> str:
    out = ""
    for p in parts:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else str(p))
    return out or "(document)"


def _fail(source: str, path: Iterable[Any], what: str, fix: str | None = None) -> ContractError:
    tail = f"; {fix}" if fix else ""
    field = _path(path)
    return ContractError(f"{source}: {field}: {what}{tail}", field=field, fix=fix)
