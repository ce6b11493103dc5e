"""A domain clause on a property whose values mix JSON types (read as text): each value is
compared as the producer wrote it (worker.core.clauses.domain, through check and evaluate).

A fresh-user session found ``{"code": 1}`` and ``{"code": "A"}`` passing a domain of the
string codes ``"1"`` and ``"A"``: the number 1, read as the text "1", matched.
"""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from tests.catalogue import active, clause, contract_of
from worker.core.clauses.domain_values import mixed_column, unknown_mixed
from worker.core.evaluate import evaluate
from worker.io.formats.base import text_column
from worker.io.payloads import read_batch_file

T = datetime(2026, 11, 29, 6, tzinfo=timezone.utc)


def _batch(tmp_path: Path, codes: list[Any]) -> Any:
    feats = [
        {"type": "Feature", "geometry": {"type": "Point", "coordinates": [i, 0]},
         "properties": {"code": c}}
        for i, c in enumerate(codes)
    ]  # fmt: skip
    path = tmp_path / "b.geojson"
    path.write_text(json.dumps({"type": "FeatureCollection", "features": feats}))
    return read_batch_file(path, layer="parcels", data_time=T)


def _domain(tmp_path: Path, codes: list[Any], values: dict[Any, str]) -> Any:
    c = clause("code", "domain", column="code", values=values, allow_null=True)
    decision = evaluate(_batch(tmp_path, codes), [active(contract_of(c))], now=T)
    return decision.verdicts[0].clauses[0]


def test_a_number_does_not_match_a_string_code_in_a_mixed_column(tmp_path: Path) -> None:
    r = _domain(tmp_path, [1, "A"], {"1": "one", "A": "a"})
    assert r.broke and r.measured["unknown"] == [1] and r.measured["unknown_count"] == 1
    assert "column 'code' (mixed: integer, string): 1 value not in the domain (1)" in r.message
    assert r.offenders is not None
    assert [(o.index, o.value) for o in r.offenders.features] == [(0, 1)]


def test_each_value_matches_codes_of_its_own_json_type(tmp_path: Path) -> None:
    codes = {"A": "a", 1: "one", 2: "two"}
    assert not _domain(tmp_path, [1, "A", 2.0, None], codes).broke  # 2.0: JSON's one number
    r = _domain(tmp_path, ["1", 1, True, 2.5, [1], "A"], codes)
    assert r.measured["unknown"] == ["1", True, 2.5, "[1]"]  # the string "1" is no number
    assert r.measured["unknown_count"] == 4


def test_the_reader_records_the_json_type_of_every_row() -> None:
    field, array = text_column("code", [1, "1", None, True, 2.5, {"a": 1}, [1]])
    column = mixed_column(field, array)
    assert column is not None
    assert column.types == "boolean, double, integer, list, string, struct"
    assert column.values == [1, "1", None, True, 2.5, '{"a": 1}', "[1]"]
    mask, shown = unknown_mixed(column, {"1": "x", "[1]": "the text of a list is no list"})
    assert mask.tolist() == [True, False, False, True, True, True, True]
    assert shown == [1, True, 2.5, '{"a": 1}', "[1]"]


@pytest.mark.parametrize("rows", [0, 3])
def test_a_plain_text_column_is_not_read_as_mixed(rows: int) -> None:
    plain = pa.array(["1"] * rows, pa.string())
    assert mixed_column(pa.field("code", pa.string()), plain) is None
    field, _ = text_column("code", [1, "x"])
    assert mixed_column(field, plain) is None  # kinds of another column length: ignored
