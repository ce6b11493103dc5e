"""``contract list`` as text without a broker (the registry read from the config topic
replaced by one fed the records)."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from tests.catalogue import HOSTILE_NAMES, assert_one_line_each
from worker.cli.scenario import data_file
from worker.control import listing
from worker.control.publish import contract_record
from worker.core.lifecycle.registry import Registry
from worker.io.codec import encode_contract_record
from worker.io.config_records import apply_config_value
from worker.io.contract_files import load_contract
from worker.kafka.settings import Settings

V1 = load_contract(data_file("contracts/admin_boundaries.v1.yaml"))
AT = datetime(2026, 12, 1, tzinfo=timezone.utc)


@pytest.mark.parametrize("field", ["published_by", "change_class"])
@pytest.mark.parametrize("name", HOSTILE_NAMES)
def test_record_fields_are_shown_on_one_line_escaped(
    monkeypatch: pytest.MonkeyPatch, field: str, name: str
) -> None:
    # found by a new-user session: a config record's published_by (or change_class) of
    # "ci\nESCALATION: ..." printed a forged line under `contract list`, and an ANSI escape
    # in it reached the operator's terminal
    reg = Registry()
    record = contract_record(V1, mode="enforcing", published_at=AT) | {field: name}
    event = apply_config_value(reg, f"{V1.key}/{V1.digest}", encode_contract_record(record))
    assert event.outcome == "added"
    monkeypatch.setattr(listing, "read_published", lambda settings: reg)
    text = listing.list_versions(Settings(), None, datetime(2026, 12, 2, tzinfo=timezone.utc))
    assert_one_line_each(text, name, 2)
    assert text.split("\n")[1].startswith("admin_boundaries/v1.0  enforcing  active  ")
