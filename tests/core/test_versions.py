"""Contract version labels: parsed, majors, and which version serves a reader."""

from __future__ import annotations

import pytest

from worker.core.errors import ContractGateError
from worker.core.lifecycle.versions import major_label, parse_version, version_covers


def test_parse_version_and_major() -> None:
    assert parse_version("v7.1") == (7, 1)
    assert parse_version("v7") == (7, 0)
    assert parse_version("7") == (7, 0)
    assert major_label("v1.1") == "v1"
    with pytest.raises(ContractGateError, match="v<major>"):
        parse_version("seven")


def test_version_covers_same_major_and_at_least_the_minor() -> None:
    assert version_covers("v1.1", "v1")
    assert version_covers("v1.0", "v1.0")
    assert not version_covers("v1.0", "v1.1")
    assert not version_covers("v2.0", "v1.0")
