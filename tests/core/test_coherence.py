"""Clauses that no batch can pass together (worker.core.contracts.coherence)."""

from __future__ import annotations

import pytest

from tests.catalogue import clause, contract_of
from worker.cli.scenario import data_file
from worker.core.contracts.coherence import contradictions
from worker.io.contract_files import load_contract


def test_the_shipped_contracts_contradict_nothing() -> None:
    for name in ("admin_boundaries.v1", "admin_boundaries.v1.1", "nyc_boroughs.v1"):
        assert contradictions(load_contract(data_file(f"contracts/{name}.yaml"))) == []


def test_text_codes_for_an_integer_column_contradict_its_schema_clause(tmp_path) -> None:  # type: ignore[no-untyped-def]
    # a fresh-user session quoted every BoroCode code of the shipped NYC contract
    text = data_file("contracts/nyc_boroughs.v1.yaml").read_text()
    for code in range(1, 6):
        text = text.replace(f"      {code}: ", f"      '{code}': ")
    path = tmp_path / "quoted.yaml"
    path.write_text(text)
    (problem,) = contradictions(load_contract(path))
    assert "lists only text codes ('1', '2', '3', ...) for column 'BoroCode'" in problem
    assert "types integer: no value of it can pass both" in problem


@pytest.mark.parametrize(
    ("field_type", "codes", "contradicts"),
    [
        ("integer", {"1": "a"}, True),
        ("integer", {1.0: "a"}, False),  # whole-number floats match integers
        ("integer", {1.5: "a"}, True),
        ("integer", {"1": "a", 2: "b"}, False),  # one code can match
        ("double", {1: "a"}, False),
        ("string", {1: "a", 2.5: "b"}, True),
        ("string", {False: "a"}, True),
        ("boolean", {True: "yes"}, False),
        ("date", {"2024-01-01": "a"}, False),  # other types are not compared
    ],
)
def test_codes_are_compared_with_the_field_type_as_the_domain_clause_matches(
    field_type: str, codes: dict, contradicts: bool
) -> None:
    schema = clause("schema", "schema", fields=[{"name": "code", "type": field_type}])
    domain = clause("codes", "domain", column="code", values=codes)
    assert bool(contradictions(contract_of(schema, domain))) is contradicts
    other_column = clause("codes", "domain", column="other", values=codes)
    assert contradictions(contract_of(schema, other_column)) == []
