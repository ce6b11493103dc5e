"""The clause cache of :func:`worker.core.contracts.schema.schema_valid`: a clause found
valid is remembered by its JSON, so a value JSON has no type for (a YAML date) must never
share the key of its text."""

from __future__ import annotations

import copy
import datetime as dt
from pathlib import Path

import yaml

from worker.core.contracts.schema import _for_schema, schema_valid

V1 = (
    Path(__file__).resolve().parents[2]
    / "worker"
    / "data"
    / "contracts"
    / "admin_boundaries.v1.yaml"
)


def _doc_with_column(column: object) -> dict[str, object]:
    doc = _for_schema(yaml.safe_load(V1.read_text(encoding="utf-8")))
    doc = copy.deepcopy(doc)
    clause = next(c for c in doc["clauses"] if "column" in c)
    clause["column"] = column
    return doc


def test_a_date_is_not_taken_for_the_text_of_a_cached_valid_clause() -> None:
    assert schema_valid(_doc_with_column("2026-01-01"))  # now remembered as valid
    assert not schema_valid(_doc_with_column(dt.date(2026, 1, 1)))  # a column name is a string
    assert schema_valid(_doc_with_column("2026-01-01"))  # the cache still answers for the text


def test_the_shipped_contract_is_valid_twice() -> None:
    """Cold, then from the cache: the same answer."""
    doc = _for_schema(yaml.safe_load(V1.read_text(encoding="utf-8")))
    assert schema_valid(doc) and schema_valid(copy.deepcopy(doc))
