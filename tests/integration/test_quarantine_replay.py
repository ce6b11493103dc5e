"""A quarantined batch, replayed after its contract is fixed, is admitted (real broker)."""

from __future__ import annotations

import json
import re
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from tests.integration.cli import run_cli
from worker.cli.demo import collect_results
from worker.cli.scenario import data_file
from worker.control.publish import publish_contract
from worker.io.codec import encode_batch
from worker.io.payloads import read_batch_file
from worker.kafka.admin import produce_one
from worker.kafka.settings import Settings
from worker.ops.quarantine import QuarantineEntry, read_quarantine


def cli(settings: Settings, capsys: Any, *argv: str) -> str:
    code, out, err = run_cli(settings, capsys, "quarantine", *argv)
    assert code == 0, out + err
    return out


def contract_with_max(tmp_path: Path, version: str, max_features: int) -> Path:
    text = data_file("contracts/nyc_boroughs.v1.yaml").read_text()
    text = text.replace("version: v1\n", f"version: {version}\n")
    assert "    max: 10\n" in text
    text = text.replace("    max: 10\n", f"    max: {max_features}\n")
    path = tmp_path / f"nyc_boroughs.{version}.yaml"
    path.write_text(text)
    return path


def replay_headers(settings: Settings, partition: int, offset: int) -> dict[str, str]:
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer(settings.reader(**{"group.id": f"{settings.group_id}-check"}))
    try:
        consumer.assign([TopicPartition(settings.topics.batches, partition, offset)])
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is not None and msg.error() is None:
                return {k: (v or b"").decode() for k, v in (msg.headers() or [])}
    finally:
        consumer.close()
    raise AssertionError("replayed event not found")


def wait_quarantined(settings: Settings, batch_id: str, timeout_s: float = 60) -> QuarantineEntry:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        for entry in read_quarantine(settings):
            if entry.batch_id == batch_id:
                return entry
        time.sleep(0.5)
    raise AssertionError(f"{batch_id} not quarantined within {timeout_s} s")


def test_replay_after_contract_fix_is_admitted(
    settings: Settings, start_worker: Any, tmp_path: Path, capsys: Any
) -> None:
    # v1.0 allows at most 3 features: the 5 boroughs break it
    publish_contract(settings, contract_with_max(tmp_path, "v1", 3), published_by="t")
    worker = start_worker(settings)
    nyc = read_batch_file(
        data_file("nyc_boroughs.parquet"),
        layer="nyc_boroughs",
        data_time=datetime.now(timezone.utc) - timedelta(minutes=5),
        batch_id="nyc-5",
    )
    produce_one(settings, settings.topics.batches, "nyc_boroughs", encode_batch(nyc))
    entry = wait_quarantined(settings, "nyc-5")
    assert entry.record is not None
    assert [(r["version"], r["clause"]) for r in entry.record["reasons"]] == [("v1.0", "size")]

    tail = cli(settings, capsys, "tail", "--layer", "nyc_boroughs")
    head, row = tail.splitlines()
    assert head.split() == [
        "quarantined",
        "at",
        "layer",
        "batch",
        "replay",
        "record",
        "what",
        "broke",
    ]
    assert " nyc_boroughs  nyc-5  " in row and row.endswith("v1.0:size (5 features)")
    assert row.index("v1.0:size") == head.index("what broke")  # aligned columns
    assert cli(settings, capsys, "tail", "--layer", "other_layer") == (
        f"no quarantined batches of layer other_layer on {settings.topics.quarantine}\n"
    )
    show = cli(settings, capsys, "show", "nyc-5")
    assert "v1.0 (enforcing) size:" in show and "measured: 5" in show

    # the fix: v1.1 loosens the bound (a minor change), enforcing, superseding v1.0
    report = publish_contract(settings, contract_with_max(tmp_path, "v1.1", 10), published_by="t")
    assert (report.change_class, report.outcome, report.supersedes) == (
        "minor",
        "published",
        ("v1.0",),
    ), report
    assert "minor" in report.message
    deadline = time.monotonic() + 30
    while [v.contract.version for v in worker.pipeline.registry.active("nyc_boroughs")] != ["v1.1"]:
        assert time.monotonic() < deadline, "worker did not pick up v1.1"
        time.sleep(0.2)

    replayed = cli(settings, capsys, "replay", "nyc-5")
    assert "replayed nyc-5" in replayed
    m = re.search(re.escape(settings.topics.batches) + r"\[(\d+)\]@(\d+)", replayed)
    assert m, replayed
    partition, offset = int(m[1]), int(m[2])
    assert replay_headers(settings, partition, offset) == {
        "replay-of": "nyc-5",
        "replay-source": entry.coordinates,
    }
    result = collect_results(settings, 2, 2, timeout_s=60)
    assert result.decisions[(partition, offset)] == "admitted"
    headers = result.admitted_headers[(partition, offset)]
    assert headers["batch-id"] == "nyc-5"
    assert headers["contract-versions-enforced"] == "v1.1"


def cli_code(settings: Settings, capsys: Any, *argv: str) -> tuple[int, str]:
    code, out, err = run_cli(settings, capsys, "quarantine", *argv)
    return code, out + err


def admitted_headers(settings: Settings, n: int, timeout_s: float = 60) -> list[dict[str, str]]:
    from worker.kafka.admin import read_topic

    deadline = time.monotonic() + timeout_s
    while True:
        msgs = list(read_topic(settings, settings.topics.admitted))
        if len(msgs) >= n or time.monotonic() > deadline:
            return [{k: (v or b"").decode() for k, v in (m.headers() or [])} for m in msgs]
        time.sleep(0.3)


def test_replay_all_since_and_never_twice_admitted(
    settings: Settings, start_worker: Any, tmp_path: Path, capsys: Any
) -> None:
    publish_contract(settings, contract_with_max(tmp_path, "v1", 3), published_by="t")
    worker = start_worker(settings)

    def send(batch_id: str) -> None:
        nyc = read_batch_file(
            data_file("nyc_boroughs.parquet"),
            layer="nyc_boroughs",
            data_time=datetime.now(timezone.utc) - timedelta(minutes=5),
            batch_id=batch_id,
        )
        produce_one(settings, settings.topics.batches, "nyc_boroughs", encode_batch(nyc))

    send("nyc-old")
    old = wait_quarantined(settings, "nyc-old")
    assert old.record is not None
    since = old.record["quarantined_at"] + timedelta(milliseconds=1)
    send("nyc-a")
    send("nyc-b")
    wait_quarantined(settings, "nyc-a")
    wait_quarantined(settings, "nyc-b")

    publish_contract(settings, contract_with_max(tmp_path, "v1.1", 10), published_by="t")
    deadline = time.monotonic() + 30
    while [v.contract.version for v in worker.pipeline.registry.active("nyc_boroughs")] != ["v1.1"]:
        assert time.monotonic() < deadline, "worker did not pick up v1.1"
        time.sleep(0.2)

    code, out = cli_code(settings, capsys, "replay", "nyc-old")
    assert code == 0, out
    assert admitted_headers(settings, 1)[0]["replay-of"] == "nyc-old"
    # the admitted batch is never replayed again without --force
    code, out = cli_code(settings, capsys, "replay", "nyc-old")
    assert code == 2
    assert "batch nyc-old was already admitted (at " + settings.topics.admitted in out
    assert "use --force" in out

    code, out = cli_code(
        settings, capsys, "replay", "--all-since", since.isoformat(), "--layer", "nyc_boroughs"
    )
    assert code == 0, out
    assert "replayed nyc-a" in out and "replayed nyc-b" in out and "nyc-old" not in out
    assert "2 batch(es) of layer nyc_boroughs quarantined since" in out
    admitted = admitted_headers(settings, 3)
    assert sorted((h["batch-id"], h["replay-of"]) for h in admitted) == [
        ("nyc-a", "nyc-a"),
        ("nyc-b", "nyc-b"),
        ("nyc-old", "nyc-old"),
    ]
    assert all(h["contract-versions-enforced"] == "v1.1" for h in admitted)

    # every batch since the start is admitted now: all refused, exit 1, nothing produced
    start = (since - timedelta(hours=1)).isoformat()
    code, out = cli_code(settings, capsys, "replay", "--all-since", start)
    assert code == 1, out
    assert out.count("already admitted") == 3 and "0 batch(es) quarantined since" in out
    assert "3 not replayed" in out
    code, out = cli_code(settings, capsys, "replay", "--all-since", start, "--layer", "other_layer")
    assert code == 0 and "0 batch(es) of layer other_layer" in out
    time.sleep(2)
    assert len(admitted_headers(settings, 3)) == 3


def test_two_replays_in_flight_admit_the_batch_once(settings: Settings, start_worker: Any) -> None:
    # issue 10 item 12: both replays passed the CLI's check and both were admitted
    publish_contract(settings, data_file("contracts/nyc_boroughs.v1.yaml"), published_by="t")
    nyc = read_batch_file(
        data_file("nyc_boroughs.parquet"), layer="nyc_boroughs", crs="EPSG:2263",
        data_time=datetime.now(timezone.utc), batch_id="orig-7",
    )  # fmt: skip
    headers = [("replay-of", b"orig-7")]
    for _ in range(2):
        produce_one(settings, settings.topics.batches, "nyc_boroughs", encode_batch(nyc),
                    headers=headers, partition=0)  # fmt: skip
    first = start_worker(settings)
    result = collect_results(settings, 2, 0, timeout_s=60)
    assert sorted(result.decisions.values()) == ["admitted", "quarantined"]
    (dup,) = result.quarantine.values()
    assert dup["reason_code"] == "duplicate_replay"
    first.close()
    # a restarted worker remembers it from the admitted topic
    produce_one(settings, settings.topics.batches, "nyc_boroughs", encode_batch(nyc),
                headers=headers, partition=0)  # fmt: skip
    start_worker(settings.with_(instance_id="second"))
    result = collect_results(settings, 3, 0, timeout_s=60)
    assert sorted(result.decisions.values()) == ["admitted", "quarantined", "quarantined"]
    assert [q["reason_code"] for q in result.quarantine.values()] == ["duplicate_replay"] * 2


def test_tail_of_an_empty_quarantine_topic_says_so(settings: Settings, capsys: Any) -> None:
    # found by a fresh-user session: an empty tail printed nothing at all
    assert cli(settings, capsys, "tail").strip() == (
        f"no quarantined batches on {settings.topics.quarantine}"
    )


def test_geojson_ids_published_inline_name_the_offenders_in_quarantine_show(
    settings: Settings, start_worker: Any, tmp_path: Path, capsys: Any
) -> None:
    # issue 14: an inline event lost the GeoJSON ids; offenders fell back to row indexes
    from tests.cli.test_check_offenders import CONTRACT, _geojson

    (tmp_path / "places.yaml").write_text(CONTRACT)
    publish_contract(settings, tmp_path / "places.yaml", published_by="t")
    start_worker(settings)
    geo = _geojson(tmp_path / "b.geojson")
    code, _out, err = run_cli(
        settings, capsys, "batch", "publish", str(geo), "--layer", "places", "--batch-id", "ids-1"
    )
    assert code == 0, err
    wait_quarantined(settings, "ids-1")
    show = cli(settings, capsys, "show", "ids-1")
    assert "#1 (id 'out'): [100, 10, 100, 10]" in show
    out_file = tmp_path / "offenders.geojson"
    cli(settings, capsys, "show", "ids-1", "--geojson", str(out_file))
    doc = json.loads(out_file.read_text())
    assert [f["id"] for f in doc["features"]] == ["out"]
    # the record carries each reason's clause kind (issue 25), so the summary names it
    (summary,) = doc["contract_gate"]["clauses"]
    assert (summary["clause"], summary["total"], summary["kind"]) == ("v1.0:extent", 1, "extent")
