"""Text and JSON of ``contract publish`` and ``retire`` rendered from the control plane's
values (issue 28 §2): the text is the lines the commands always printed, the JSON the
documented shape. The results are built from real policy decisions on the shipped
contracts, as :mod:`worker.control.publish` builds them."""

from __future__ import annotations

from datetime import datetime, timezone

from worker.cli.lifecycle_output import publish_json, publish_text, retire_json, retire_text
from worker.cli.scenario import data_file
from worker.control.publish_history import publish_result
from worker.control.results import RecordWritten, RetireResult
from worker.core.contracts.parse import parse_contract
from worker.core.lifecycle.policy import Published
from worker.core.lifecycle.publishing import decide_publish
from worker.io.contract_files import load_contract

NOW = datetime(2026, 11, 29, 12, 0, tzinfo=timezone.utc)
V1 = load_contract(data_file("contracts/admin_boundaries.v1.yaml"))
V1_1 = load_contract(data_file("contracts/admin_boundaries.v1.1.yaml"))  # a tightening
V1_2 = parse_contract(
    V1.text.replace("version: v1\n", "version: v1.2\n").replace("boundaries-team", "geo-team")
)


def _written(p: Published, offset: int) -> RecordWritten:
    key = f"{p.contract.key}/{p.contract.digest}/{p.mode}-{p.state}"
    return RecordWritten(key, p.contract.key, p.mode, p.state, "gis.contracts", 0, offset)


def test_an_enforcing_minor_that_ends_a_trial_renders_its_records_note_and_class() -> None:
    known = [
        Published(V1, "enforcing", "active", None, (), NOW, "t"),
        Published(V1_1, "observing", "active", "tightening", (), NOW, "t"),
    ]
    d = decide_publish(V1_2, mode="enforcing", known=known, published_by="t", now=NOW)
    records = tuple(_written(p, 10 + i) for i, p in enumerate(d.writes))
    r = publish_result(V1_2, ("published", d.message), "enforcing", decision=d, records=records)
    text = publish_text(r)
    assert text.splitlines()[-3:] == [
        "wrote admin_boundaries/v1.2 enforcing/active at gis.contracts[0]@10",
        "wrote admin_boundaries/v1.0 enforcing/superseded at gis.contracts[0]@11",
        "wrote admin_boundaries/v1.1 observing/superseded at gis.contracts[0]@12",
    ]
    assert text.startswith(d.message + "\n")
    doc = publish_json(r)
    assert {k: doc[k] for k in ("layer", "version", "change_class", "mode", "outcome")} == {
        "layer": "admin_boundaries",
        "version": "v1.2",
        "change_class": "minor",
        "mode": "enforcing",
        "outcome": "published",
    }
    assert (doc["predecessor"], doc["supersedes"], doc["dry_run"]) == (
        "v1.1",
        ["v1.0", "v1.1"],
        False,
    )
    assert doc["digest"] == V1_2.digest and doc["key"] == "admin_boundaries/v1.2"
    assert [(w["version"], w["state"], w["offset"]) for w in doc["records"]] == [
        ("admin_boundaries/v1.2", "active", 10),
        ("admin_boundaries/v1.0", "superseded", 11),
        ("admin_boundaries/v1.1", "superseded", 12),
    ]
    (note,) = doc["notes"]
    assert note.startswith("v1.1 was observing (a change on trial) and is no longer evaluated")
    assert doc["warnings"] == [] and doc["lines"] == text.splitlines()


def test_a_first_observing_version_is_class_first_with_its_warning() -> None:
    d = decide_publish(V1, mode="observing", known=[], published_by="t", now=NOW)
    r = publish_result(V1, ("dry-run", "dry run (nothing written): x"), "observing", decision=d)
    doc = publish_json(r)
    assert (doc["change_class"], doc["outcome"], doc["dry_run"]) == ("first", "dry-run", True)
    assert (doc["records"], doc["supersedes"], doc["predecessor"]) == ([], [], None)
    (warning,) = doc["warnings"]
    assert warning.startswith("layer admin_boundaries has no enforcing version")
    assert publish_text(r) == "dry run (nothing written): x"


def test_retire_text_is_the_one_summary_line_and_json_the_gate_state() -> None:
    record = RecordWritten("k", "parcels/v1.1", "enforcing", "retired", "gis.contracts", 2, 40)
    r = RetireResult(
        "parcels", "v1", ("v1.1",), 0, ("old-app",), "gis.batches.admitted.v1", "ops", (record,)
    )
    assert retire_text(r) == (
        "retired parcels v1 (v1.1) by ops: no consumer reads against it (1 stale declaration(s) "
        "shown in consumers status); its per-major read path gis.batches.admitted.v1 is no longer "
        "written (the topic is kept: delete it with your Kafka tooling when nothing needs its "
        "records)"
    )
    doc = retire_json(r)
    assert (doc["version"], doc["retired"], doc["readers_left"], doc["stale"]) == (
        "v1",
        ["v1.1"],
        0,
        ["old-app"],
    )
    assert doc["records"] == [
        {"key": "k", "version": "parcels/v1.1", "mode": "enforcing", "state": "retired",
         "topic": "gis.contracts", "partition": 2, "offset": 40}
    ]  # fmt: skip
