"""``--format json`` of every command that talks to Kafka, on one embedded broker (issue 28).

One scene for the module (its own topic prefix): nyc_boroughs v1.0 (at most 3 features,
so the 5 boroughs are quarantined as ``nyc-5``), then v1.1 (at most 10) and v2.0, both
enforcing, and a real worker that admits ``nyc-ok``. Each command of
:data:`tests.cli.test_json_output.KAFKA_COMMANDS` then runs for real with ``--format json``
and its document is parsed and checked against the scene; the cases run in the order
listed (``contract retire`` last: it retires v1). Bounded: every wait has a deadline.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from tests.broker_timing import SESSION_TIMEOUT_MS
from tests.cli.test_json_output import KAFKA_COMMANDS
from tests.integration.cli import run_cli
from tests.integration.conftest import RunningWorker
from worker.cli.scenario import data_file
from worker.control.publish import contract_record, publish_contract
from worker.io.codec import encode_batch, encode_contract_record
from worker.io.contract_files import load_contract
from worker.io.payloads import read_batch_file
from worker.kafka.admin import create_topics, produce_one
from worker.kafka.broker_route import RunningBroker
from worker.kafka.settings import Settings, Topics
from worker.ops.quarantine import read_quarantine
from worker.ops.replay import where_admitted

LAYER = "nyc_boroughs"
PACIFIC = """layer: pacific_islands
version: v1
cadence: P1D
objective: 0.99
owner: qa
changelog: a band across the antimeridian
clauses:
  - {name: srid, kind: crs, expect: "EPSG:4326"}
  - {name: box, kind: extent, region: [170, -50, -170, -30], min_fraction_inside: 1.0}
"""


def _contract(tmp: Path, version: str, max_features: int) -> Path:
    text = data_file("contracts/nyc_boroughs.v1.yaml").read_text()
    text = text.replace("version: v1\n", f"version: {version}\n")
    text = text.replace("    max: 10\n", f"    max: {max_features}\n")
    path = tmp / f"nyc_boroughs.{version}.yaml"
    path.write_text(text)
    return path


def _until(what: str, ready: Callable[[], Any], timeout_s: float = 60) -> Any:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = ready()
        if value:
            return value
        time.sleep(0.3)
    raise AssertionError(f"{what} not within {timeout_s} s")


def _send(settings: Settings, batch_id: str) -> None:
    nyc = read_batch_file(
        data_file("nyc_boroughs.parquet"),
        layer=LAYER,
        data_time=datetime.now(timezone.utc) - timedelta(minutes=5),
        batch_id=batch_id,
    )
    produce_one(settings, settings.topics.batches, LAYER, encode_batch(nyc))


@pytest.fixture(scope="module")
def scene(broker: RunningBroker, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    tmp = tmp_path_factory.mktemp("json")
    prefix = f"t{uuid.uuid4().hex[:8]}."
    settings = Settings(
        bootstrap_servers=broker.bootstrap_servers,
        group_id=f"{prefix}gate",
        topics=Topics().with_prefix(prefix),
        session_timeout_ms=SESSION_TIMEOUT_MS,
    )
    create_topics(settings, partitions=3)
    publish_contract(settings, _contract(tmp, "v1", 3), published_by="t")
    worker = RunningWorker(settings).start()
    try:
        _send(settings, "nyc-5")
        _until("nyc-5 quarantined", lambda: [e for e in read_quarantine(settings)])
        publish_contract(settings, _contract(tmp, "v1.1", 10), published_by="t")
        # v2.0 as test_consumers writes it: the record straight to the config topic (a
        # renumbered copy is no major change to the policy, the overlap is what counts)
        v2 = load_contract(_contract(tmp, "v2", 10))
        record = contract_record(v2, mode="enforcing", change_class="major", published_by="t")
        produce_one(settings, settings.topics.contracts, v2.key, encode_contract_record(record))

        def both_active() -> bool:
            active = worker.pipeline.registry.active(LAYER)
            return {v.contract.version for v in active} == {"v1.1", "v2.0"}

        _until("v1.1 and v2.0 active in the worker", both_active)
        _send(settings, "nyc-ok")
        _until("nyc-ok admitted", lambda: where_admitted(settings, "nyc-ok"))
        (tmp / "pacific.yaml").write_text(PACIFIC)
        yield settings, tmp, worker
    finally:
        worker.close()


def _json(settings: Settings, capsys: Any, argv: list[str], code: int = 0) -> Any:
    got, out, err = run_cli(settings, capsys, *argv, "--format", "json")
    assert got == code, (argv, out, err)
    return json.loads(out)


def _topics(s: Settings, tmp: Path, capsys: Any) -> None:
    doc = _json(s, capsys, ["topics", "create"])
    assert {t["name"] for t in doc["topics"]} >= {s.topics.batches, s.topics.quarantine}
    assert {t["outcome"] for t in doc["topics"] if not t["per_major"]} == {"exists"}
    assert doc["not_compacted"] == 0


def _publish(s: Settings, tmp: Path, capsys: Any) -> None:
    # issue 28 §4: a region with minx > maxx in a geographic CRS is said to cross 180°
    doc = _json(s, capsys, ["contract", "publish", str(tmp / "pacific.yaml"), "--dry-run"])
    assert (doc["layer"], doc["version"], doc["dry_run"]) == ("pacific_islands", "v1.0", True)
    assert doc["lines"][0].startswith("dry run (nothing written): ")
    note = (
        "note: pacific_islands/v1.0: clause box: region [170, -50, -170, -30] has minx > maxx: "
        "in EPSG:4326 it crosses the antimeridian (a band 20° wide from 170 east to -170); if "
        "that is a typo, write [-170, -50, 170, -30]"
    )
    assert doc["lines"][-1] == note
    assert (doc["outcome"], doc["change_class"], doc["mode"]) == ("dry-run", "first", "enforcing")
    assert doc["records"] == [] and doc["notes"] == [note.removeprefix("note: ")]
    assert (
        doc["key"] == "pacific_islands/v1.0"
        and doc["digest"] == load_contract(tmp / "pacific.yaml").digest
    )
    code, out, _ = run_cli(s, capsys, "contract", "publish", str(tmp / "pacific.yaml"), "--dry-run")
    assert code == 0 and out.splitlines()[-1] == note
    # published for real: the record written, where the broker put it
    doc = _json(s, capsys, ["contract", "publish", str(tmp / "pacific.yaml")])
    assert (doc["outcome"], doc["change_class"], doc["predecessor"]) == ("published", "first", None)
    [record] = doc["records"]
    assert (record["version"], record["mode"], record["state"], record["topic"]) == (
        "pacific_islands/v1.0",
        "enforcing",
        "active",
        s.topics.contracts,
    )
    assert record["key"] == f"pacific_islands/v1.0/{doc['digest']}"
    assert doc["lines"][-2] == "wrote pacific_islands/v1.0 enforcing/active at " + (
        f"{s.topics.contracts}[{record['partition']}]@{record['offset']}"
    )
    # once more: the same document is a no-op that writes nothing
    doc = _json(s, capsys, ["contract", "publish", str(tmp / "pacific.yaml")])
    assert (doc["outcome"], doc["records"], doc["change_class"]) == ("no-op", [], None)
    assert doc["dry_run"] is False
    doc = _json(s, capsys, ["contract", "publish", str(tmp / "pacific.yaml"), "--dry-run"])
    assert (doc["outcome"], doc["dry_run"], doc["records"]) == ("no-op", True, [])


def _evidence(s: Settings, tmp: Path, capsys: Any) -> None:
    doc = _json(s, capsys, ["contract", "evidence", LAYER, "v1.1"])
    assert (doc["layer"], doc["version"]) == (LAYER, "v1.1")
    assert doc["enforcing"] is True and doc["evaluated"] >= 1
    assert "nyc-ok" in [p["batch_id"] for p in doc["evaluations"]]
    target = tmp / "evidence.json"  # --output: the file is the document, stdout stays empty
    argv = ["contract", "evidence", LAYER, "v1.1", "--format", "json", "--output", str(target)]
    code, out, err = run_cli(s, capsys, *argv)
    assert (code, out, err) == (0, "", f"wrote {target}\n")
    assert json.loads(target.read_text())["evaluated"] == doc["evaluated"]


def _promote(s: Settings, tmp: Path, capsys: Any) -> None:
    doc = _json(s, capsys, ["contract", "promote", LAYER, "v1.1", "--yes"])
    assert (doc["layer"], doc["version"], doc["key"]) == (LAYER, "v1.1", f"{LAYER}/v1.1")
    assert doc["lines"] == [f"{LAYER}/v1.1 is already enforcing (no-op)"]
    assert (doc["outcome"], doc["from_mode"], doc["to_mode"]) == ("no-op", "enforcing", "enforcing")
    assert (doc["evidence"], doc["records"], doc["supersedes"]) == (None, [], [])


def _list(s: Settings, tmp: Path, capsys: Any) -> None:
    doc = _json(s, capsys, ["contract", "list", LAYER])
    assert doc["topic"] == s.topics.contracts and doc["broken"] == {}
    rows = {(v["version"], v["mode"], v["state"]) for v in doc["versions"]}
    assert ("v1.1", "enforcing", "active") in rows and ("v2.0", "enforcing", "active") in rows
    assert all(isinstance(v["age_cycles"], float) for v in doc["versions"])


def _retire(s: Settings, tmp: Path, capsys: Any) -> None:
    doc = _json(s, capsys, ["contract", "retire", LAYER, "v1"])
    assert (doc["layer"], doc["version"], doc["retired"]) == (LAYER, "v1", ["v1.1"])
    assert doc["lines"] == [f"retired {LAYER} v1 (v1.1): no consumer reads against it"]
    assert (doc["readers_left"], doc["stale"], doc["read_path"]) == (0, [], None)
    [record] = doc["records"]
    assert (record["version"], record["mode"], record["state"], record["topic"]) == (
        f"{LAYER}/v1.1",
        "enforcing",
        "retired",
        s.topics.contracts,
    )


def _declare(s: Settings, tmp: Path, capsys: Any) -> None:
    group = f"{s.group_id}-downstream"
    doc = _json(s, capsys, ["consumers", "declare", group, LAYER, "v2"])
    assert (doc["consumer"], doc["layer"], doc["version"]) == (group, LAYER, "v2")
    assert doc["topic"] == s.topics.consumers
    assert isinstance(doc["partition"], int) and isinstance(doc["offset"], int)


def _assert(s: Settings, tmp: Path, capsys: Any) -> None:
    doc = _json(s, capsys, ["consumers", "assert", LAYER, "v1", "--last", "1"])
    assert doc == {
        "layer": LAYER,
        "version": "v1",
        "checked": 1,
        "passed": True,
        "summary": f"1 admitted record(s) of {LAYER} checked: all admitted under v1",
    }


def _status(s: Settings, tmp: Path, capsys: Any) -> None:
    doc = _json(s, capsys, ["consumers", "status", LAYER])
    assert isinstance(doc, list) and {r["layer"] for r in doc} == {LAYER}


def _tail(s: Settings, tmp: Path, capsys: Any) -> None:
    code, out, err = run_cli(s, capsys, "quarantine", "tail", "--layer", LAYER, "--format", "json")
    assert code == 0, err
    rows = [json.loads(line) for line in out.splitlines()]  # one document per line
    assert [r["record"]["batch_id"] for r in rows] == ["nyc-5"]
    assert rows[0]["topic"] == s.topics.quarantine


def _show(s: Settings, tmp: Path, capsys: Any) -> None:
    doc = _json(s, capsys, ["quarantine", "show", "nyc-5"])
    assert doc["record"]["batch_id"] == "nyc-5" and doc["record"]["reasons"]
    assert doc["quarantined"] is True and doc["admitted"] is None
    # issue 28 §4: an admitted batch says where it went
    admitted = where_admitted(s, "nyc-ok")
    assert admitted is not None and admitted.startswith(f"{s.topics.admitted}[")
    doc = _json(s, capsys, ["quarantine", "show", "nyc-ok"])
    assert doc == {"batch": "nyc-ok", "quarantined": False, "admitted": admitted}
    code, out, _ = run_cli(s, capsys, "quarantine", "show", "nyc-ok")
    assert (code, out) == (0, f"batch nyc-ok was admitted, not quarantined: {admitted}\n")


def _replay(s: Settings, tmp: Path, capsys: Any) -> None:
    doc = _json(s, capsys, ["quarantine", "replay", "nyc-5"])
    assert doc["batch"] == "nyc-5" and doc["replayed"] is True
    assert doc["topic"] == s.topics.batches and doc["from"].startswith(s.topics.quarantine)
    # the worker admits it under v1.1/v2.0: `show` of the quarantined batch says where it went
    admitted = _until("nyc-5 admitted after its replay", lambda: where_admitted(s, "nyc-5"))
    code, out, _ = run_cli(s, capsys, "quarantine", "show", "nyc-5")
    assert code == 0
    assert out.splitlines()[-1] == (
        f"  admitted: {admitted} (a later event of this batch, e.g. a replay)"
    )
    doc = _json(s, capsys, ["quarantine", "replay", "--all-since", "2000-01-01T00:00:00Z"], 1)
    assert doc["replayed"] == [] and [r["batch"] for r in doc["refused"]] == ["nyc-5"]


def _verify(s: Settings, tmp: Path, capsys: Any) -> None:
    got, out, err = run_cli(s, capsys, "verify", "overlap", LAYER, "--format", "json")
    assert got in (0, 1, 3), err
    assert isinstance(json.loads(out), dict)


def _batch(s: Settings, tmp: Path, capsys: Any) -> None:
    path = str(data_file("nyc_boroughs.parquet"))
    # the data time given: the file's modification time (the default) is the checkout's,
    # which the contracts' 6-hour freshness quarantined in a checkout over 6 hours old
    now = datetime.now(timezone.utc).isoformat()
    argv = [
        "batch",
        "publish",
        path,
        "--layer",
        LAYER,
        "--batch-id",
        "nyc-json",
        "--data-time",
        now,
    ]
    doc = _json(s, capsys, argv)
    assert {k: doc[k] for k in ("batch_id", "layer", "features", "topic", "payload_uri")} == {
        "batch_id": "nyc-json",
        "layer": LAYER,
        "features": 5,
        "topic": s.topics.batches,
        "payload_uri": None,
    }
    assert doc["offset"] >= 0 and doc["partition"] in (0, 1, 2)


#: One case per command, in the order they run (``contract retire`` last).
CASES: dict[str, Callable[[Settings, Path, Any], None]] = {
    "topics create": _topics,
    "contract publish": _publish,
    "contract evidence": _evidence,
    "contract promote": _promote,
    "contract list": _list,
    "consumers declare": _declare,
    "batch publish": _batch,
    "consumers assert": _assert,
    "consumers status": _status,
    "quarantine tail": _tail,
    "quarantine show": _show,
    "quarantine replay": _replay,
    "verify overlap": _verify,
    "contract retire": _retire,
}


def test_every_kafka_command_with_json_has_a_case() -> None:
    assert sorted(CASES) == sorted(KAFKA_COMMANDS)


@pytest.mark.parametrize("command", list(CASES))
def test_json_output_parses(command: str, scene: Any, capsys: Any) -> None:
    settings, tmp, _worker = scene
    CASES[command](settings, tmp, capsys)


@pytest.mark.parametrize(
    ("argv", "field", "fix", "says"),
    [
        (
            ["quarantine", "show", "nope"],
            "BATCH_ID",
            "list them with `contract-gate quarantine tail` (undecodable events: use "
            "PARTITION@OFFSET)",
            "no quarantined batch 'nope'",
        ),
        (
            ["contract", "promote", LAYER, "v9", "--yes"],
            "version",
            f"give one of the published versions of {LAYER}: v1.0, v1.1, v2.0",
            f"{LAYER}/v9.0 is not published",
        ),
        (
            ["consumers", "assert", "no_such_layer", "v1"],
            "layer",
            "check the layer name, or check again once a batch of it is admitted",
            "no admitted record of no_such",
        ),
        (
            ["quarantine", "replay", "nyc-5", "--layer", LAYER],
            "--layer",
            "leave --layer out, or replay with --all-since TIME",
            "--layer selects",
        ),
    ],
)
def test_kafka_command_errors_are_one_json_object_with_exit_2(
    argv: list[str], field: str, fix: str, says: str, scene: Any, capsys: Any
) -> None:
    # issue 28 §2: field and fix are the ones the raise site states, not guessed
    settings, _tmp, _worker = scene
    code, out, err = run_cli(settings, capsys, *argv, "--format", "json")
    assert (code, out) == (2, "")
    doc = json.loads(err)
    assert set(doc) == {"error", "field", "fix"} and says in doc["error"]
    assert (doc["field"], doc["fix"]) == (field, fix)
    # the text line is the message as before
    code, _, text = run_cli(settings, capsys, *argv)
    assert (code, text) == (2, f"contract-gate {argv[0]}: error: {doc['error']}\n")
