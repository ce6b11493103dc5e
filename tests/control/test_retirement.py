"""The retirement gate of ``contract retire`` without a broker (pure decision, record rewrite)."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

import pytest

from tests.catalogue import HOSTILE_NAMES, assert_one_line_each
from worker.cli.lifecycle_output import retire_text
from worker.cli.scenario import data_file
from worker.control import retirement
from worker.control.results import RecordWritten
from worker.control.retirement import retire, retirement_targets
from worker.core.contracts.classify import Difference
from worker.core.contracts.parse import parse_contract
from worker.core.errors import PolicyError
from worker.core.lifecycle.migration import build_view
from worker.core.lifecycle.policy import Published
from worker.io.contract_files import load_contract
from worker.kafka.settings import Settings

AT = datetime(2026, 11, 1, 8, 0, tzinfo=timezone.utc)
V1 = load_contract(data_file("contracts/admin_boundaries.v1.yaml"))
V1_1 = load_contract(data_file("contracts/admin_boundaries.v1.1.yaml"))
V2 = parse_contract(V1.text.replace("version: v1\n", "version: v2.0\n"), source="v2")
DIFF = Difference("continent", "domain", "tightening", "domain codes removed: 'x'")


def pub(c: Any, mode: str, change_class: str | None = None) -> Published:
    diffs = (DIFF,) if change_class else ()
    return Published(c, mode, "active", change_class, diffs, AT, "original-publisher")


def test_retirement_refused_when_no_enforcing_version_would_remain() -> None:
    # found by a fresh-user session: v1.1 enforcing, v2.0 observing, `retire v1` succeeded
    # and every later batch was admitted
    active = [pub(V1_1, "enforcing", "tightening"), pub(V2, "observing", "major")]
    with pytest.raises(PolicyError) as err:
        retirement_targets(active, "admin_boundaries", 1)
    msg = str(err.value)
    assert "without an active enforcing version" in msg
    assert "promote the new major first: " in msg
    assert "contract-gate contract promote admin_boundaries v2.0" in msg
    active = [pub(V1_1, "enforcing"), pub(V2, "enforcing", "major")]
    assert [p.contract.version for p in retirement_targets(active, "admin_boundaries", 1)] == [
        "v1.1"
    ]
    with pytest.raises(PolicyError, match="only active major"):
        retirement_targets(active[:1], "admin_boundaries", 1)
    with pytest.raises(PolicyError, match="not active"):
        retirement_targets(active, "admin_boundaries", 3)


class FakeRegistry:
    def __init__(self, known: list[Published]) -> None:
        self.known = known

    def head(self, layer: str) -> str | None:
        return None

    def published(self, layer: str | None = None) -> list[Published]:
        return self.known


def _layer_state(monkeypatch: pytest.MonkeyPatch, known: list[Published], *declared: Any) -> None:
    """``retire`` reads ``known`` as the layer's versions and ``declared`` consumers (whose
    groups exist) from the consumers topic, with v1.1 and v2.0 active."""
    monkeypatch.setattr(retirement, "read_published", lambda settings: FakeRegistry(known))
    monkeypatch.setattr(
        retirement,
        "migration_view",
        lambda settings, **kw: build_view(
            {"admin_boundaries": ["v1.1", "v2.0"]},
            list(declared),
            [],
            [d.consumer for d in declared],
            now=AT,
            stale_after=kw["stale_after"],
        ),
    )


def test_retirement_rewrite_keeps_class_differences_and_provenance(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # found by a fresh-user session: the retired record lost its change class
    v1_1 = pub(V1_1, "enforcing", "tightening")
    known = [pub(V1, "enforcing"), v1_1, pub(V2, "enforcing", "major")]
    known[0] = Published(V1, "enforcing", "superseded", None, (), AT, "original-publisher")
    written: list[Published] = []
    _layer_state(monkeypatch, known)

    def fake_write(
        settings: Settings, records: tuple[Published, ...], **kw: Any
    ) -> tuple[RecordWritten, ...]:
        written.extend(records)
        return tuple(
            RecordWritten("k", p.contract.key, p.mode, p.state, "t", 0, 7) for p in records
        )

    monkeypatch.setattr(retirement, "produce_records", fake_write)
    result = retire(Settings(), "admin_boundaries", "v1", retired_by="ops")
    assert retire_text(result).startswith("retired admin_boundaries v1 (v1.1) by ops")
    assert (result.major, result.retired, result.readers_left) == ("v1", ("v1.1",), 0)
    assert result.read_path is None and result.retired_by == "ops"
    assert [(r.version, r.state, r.offset) for r in result.records] == [
        ("admin_boundaries/v1.1", "retired", 7)
    ]
    assert len(written) == 1
    record = written[0].to_record()
    assert record["state"] == "retired" and record["mode"] == "enforcing"
    assert record["change_class"] == "tightening"
    assert record["differences"] == [
        {"clause": "continent", "kind": "domain", "class": "tightening", "reason": DIFF.reason}
    ]
    assert (record["published_at"], record["published_by"]) == (AT, "original-publisher")


def test_retirement_refusal_gives_every_reason_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    # found by a new-user session: promoting v2.0 as told, then retrying, revealed that
    # a consumer still read v1: the refusals came one at a time
    from worker.core.lifecycle.migration import Declaration

    known = [pub(V1_1, "enforcing", "tightening"), pub(V2, "observing", "major")]
    _layer_state(monkeypatch, known, Declaration("atlas-app", "admin_boundaries", "v1.1", AT))
    monkeypatch.setattr(retirement, "produce_records", lambda settings, records, **kw: ())
    with pytest.raises(PolicyError) as err:
        retire(Settings(), "admin_boundaries", "v1")
    first, second = str(err.value).split("\nand: ")
    assert "without an active enforcing version" in first
    assert "1 consumer(s) still read against it: atlas-app (declared)" in second


@pytest.mark.parametrize("name", HOSTILE_NAMES)
def test_retirement_refusal_names_a_hostile_consumer_on_one_line(
    monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    # found by a new-user session: a consumer group id with a newline or an ANSI escape
    # went into the refusal as it was
    from worker.core.lifecycle.migration import Declaration

    known = [pub(V1_1, "enforcing", "tightening"), pub(V2, "enforcing", "major")]
    _layer_state(monkeypatch, known, Declaration(name, "admin_boundaries", "v1.1", AT))
    with pytest.raises(PolicyError) as err:
        retire(Settings(), "admin_boundaries", "v1")
    assert str(err.value).startswith("retirement of admin_boundaries v1 refused: 1 consumer(s)")
    assert_one_line_each(str(err.value), name, 1)
