"""Shared test configuration: integration tests are marked by their folder."""

from __future__ import annotations

import pytest


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "integration" in item.path.parts:
            item.add_marker(pytest.mark.integration)


@pytest.fixture(autouse=True, scope="session")
def _validate_avro_writes() -> None:
    """Validate every Avro record the code under test writes (production writes first and
    validates only on failure; see ``worker.io.codec.avro._write``)."""
    from worker.io.codec import avro

    avro.validate_writes = True
