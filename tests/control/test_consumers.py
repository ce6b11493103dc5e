"""worker.control.consumers without a broker: reader-side check, declaration gauge, exporter.

(Not test_consumers.py: that basename is taken by tests/integration/test_consumers.py.)
"""

from __future__ import annotations

from typing import Any

import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader

from worker.control import consumers
from worker.control.consumers import assert_admitted_under, declare
from worker.core.errors import ContractGateError, VersionMismatchError
from worker.io.codec import decode_consumer_declaration
from worker.kafka.settings import Settings


def _headers(enforced: str) -> list[tuple[str, bytes]]:
    return [
        ("batch-id", b"b-1"),
        ("layer", b"roads"),
        ("contract-versions-enforced", enforced.encode()),
    ]


def test_assert_passes_when_the_readers_major_was_enforced() -> None:
    assert assert_admitted_under(_headers("v1.1,v2.0"), "v1") == ("v1.1", "v2.0")
    assert assert_admitted_under({"contract-versions-enforced": "v2.0"}, "v2.0") == ("v2.0",)


def test_assert_fails_on_another_version_naming_the_batch() -> None:
    with pytest.raises(
        VersionMismatchError, match=r"batch b-1 of layer roads .* v2\.0, not under v1"
    ):
        assert_admitted_under(_headers("v2.0"), "v1")
    with pytest.raises(VersionMismatchError, match="no enforcing version"):
        assert_admitted_under(_headers(""), "v1")
    with pytest.raises(VersionMismatchError, match="not a record of the admitted topic"):
        assert_admitted_under([("batch-id", b"x")], "v1")
    with pytest.raises(ContractGateError):
        assert_admitted_under(_headers("v1.0"), "one")


def _points(reader: InMemoryMetricReader) -> dict[tuple[str, str, str], float]:
    out = {}
    data = reader.get_metrics_data()
    for rm in data.resource_metrics if data else []:
        for sm in rm.scope_metrics:
            for m in sm.metrics:
                if m.name == "gis_consumer_contract_version":
                    for p in m.data.data_points:
                        a = p.attributes
                        out[(a["consumer"], a["layer"], a["version"])] = p.value
    return out


class FakeConfig:
    """The config topic as ``declare`` reads it: roads v1.0 (retired) and v2.0."""

    def versions(self, layer: str | None = None) -> list[Any]:
        from types import SimpleNamespace

        return [
            SimpleNamespace(contract=SimpleNamespace(major=m, version=f"v{m}.0"), state=state)
            for m, state in ((1, "retired"), (2, "active"))
            if layer == "roads"
        ]


def test_declare_refuses_a_version_never_published_unless_forced(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], no_broker_probe: None
) -> None:
    # found by a fresh-user session: `consumers declare` accepted layers and versions that
    # were never published
    from worker.cli.main import main
    from worker.core.errors import PolicyError

    sent: list[str | None] = []
    monkeypatch.setattr(consumers, "produce_one", lambda s, t, key, v: sent.append(key) or (0, 0))
    monkeypatch.setattr(consumers, "read_config", lambda settings, registry: FakeConfig())
    meter = MeterProvider(metric_readers=[InMemoryMetricReader()]).get_meter("test")
    with pytest.raises(PolicyError, match=r"roads v3 is not published on gis\.contracts"):
        declare(Settings(), "r", "roads", "v3.1", meter=meter)
    with pytest.raises(PolicyError, match="versions of rivers: none"):
        declare(Settings(), "r", "rivers", "v1", meter=meter)
    assert sent == []
    declare(Settings(), "r", "roads", "v1.4", meter=meter)  # a retired major still exists
    declare(Settings(), "r", "rivers", "v1", meter=meter, force=True)
    assert sent == ["r/roads", "r/rivers"]
    argv = ["consumers", "declare", "r", "roads", "v3", "--bootstrap-servers", "127.0.0.1:9"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "roads v3 is not published" in err and "v1.0 (retired), v2.0 (active)" in err
    assert "--force" in err
    assert main([*argv, "--force"]) == 0
    assert sent[-1] == "r/roads"


def test_declare_writes_the_record_and_moves_the_gauge(monkeypatch: pytest.MonkeyPatch) -> None:
    sent: list[tuple[str, str | None, Any]] = []

    def fake_produce(
        settings: Settings, topic: str, key: str | None, value: Any
    ) -> tuple[int, int]:
        sent.append((topic, key, value))
        return 0, len(sent) - 1

    monkeypatch.setattr(consumers, "produce_one", fake_produce)
    monkeypatch.setattr(consumers, "read_config", lambda settings, registry: FakeConfig())
    reader = InMemoryMetricReader()
    meter = MeterProvider(metric_readers=[reader]).get_meter("test")
    settings = Settings()
    declare(settings, "unit-reader", "roads", "v1", meter=meter)
    assert _points(reader) == {("unit-reader", "roads", "v1.0"): 1}
    declare(settings, "unit-reader", "roads", "v2", meter=meter)
    assert _points(reader) == {
        ("unit-reader", "roads", "v1.0"): 0,
        ("unit-reader", "roads", "v2.0"): 1,
    }
    assert [(t, k) for t, k, _ in sent] == [("gis.contract.consumers", "unit-reader/roads")] * 2
    rec = decode_consumer_declaration(sent[-1][2])
    assert (rec["consumer"], rec["layer"], rec["version"]) == ("unit-reader", "roads", "v2.0")
    with pytest.raises(ContractGateError, match="consumer"):
        declare(settings, "", "roads", "v1", meter=meter)


def test_exporter_publishes_unattributed_rows_and_counts_per_major() -> None:
    from datetime import datetime, timedelta, timezone

    from worker.core.lifecycle.migration import Declaration, build_view
    from worker.core.lifecycle.registry import Registry
    from worker.ops.migration_exporter import MigrationExporter

    reader = InMemoryMetricReader()
    meter = MeterProvider(metric_readers=[reader]).get_meter("test")
    exporter = MigrationExporter(Settings(), Registry(), meter=meter)
    now = datetime(2026, 11, 29, tzinfo=timezone.utc)
    exporter.view = build_view(
        {"roads": ["v1.0", "v2.0"]},
        [Declaration("a", "roads", "v2.0", now)],
        ["silent"],
        ["a", "silent"],
        now=now,
        stale_after=timedelta(days=7),
    )
    assert _points(reader) == {("unattributed:silent", "roads", "v1.0"): 1}
    data = reader.get_metrics_data()
    counts = {
        (p.attributes["version"], p.attributes["oldest"]): p.value
        for rm in data.resource_metrics  # type: ignore[union-attr]
        for sm in rm.scope_metrics
        for m in sm.metrics
        if m.name == "gis.contract.consumers"
        for p in m.data.data_points
    }
    assert counts == {("v1", "true"): 1, ("v2", "false"): 1}


class _Rec:
    """A record of the admitted topic, shaped like a confluent-kafka Message."""

    def __init__(self, partition: int, offset: int, layer: str, enforced: str) -> None:
        self._p, self._o, self._layer = partition, offset, layer
        self._headers = [("batch-id", f"b{partition}-{offset}".encode()), *_headers(enforced)[1:]]
        self._headers[1] = ("layer", layer.encode())

    def key(self) -> bytes:
        return self._layer.encode()

    def headers(self) -> list[tuple[str, bytes]]:
        return self._headers

    def partition(self) -> int:
        return self._p

    def offset(self) -> int:
        return self._o

    def timestamp(self) -> tuple[int, int]:
        return 1, 1000 * self._o + self._p


def _fake_admitted(
    monkeypatch: pytest.MonkeyPatch, parts: dict[int, list[_Rec]]
) -> list[dict[int, int]]:
    reads: list[dict[int, int]] = []

    def read_topic(settings: Settings, topic: str, *, start: Any = None, **kw: Any) -> Any:
        tail = kw.get("tail")
        reads.append(dict(start or {}))
        for p, recs in parts.items():
            first = (start or {}).get(p, len(recs) if tail == 0 else 0)
            yield from (r for r in recs if r.offset() >= first)

    monkeypatch.setattr(consumers, "read_topic", read_topic)
    monkeypatch.setattr(
        consumers, "watermarks", lambda s, t: {p: (0, len(r)) for p, r in parts.items()}
    )
    return reads


def test_last_n_means_the_last_n_records_of_the_layer(monkeypatch: pytest.MonkeyPatch) -> None:
    # found by a fresh-user session: --last 1 read the last record per partition before
    # filtering by layer, found no roads record and passed ("0 admitted record(s) checked")
    roads = [_Rec(1, 0, "roads", "v1.0")]
    roads += [_Rec(1, i, "admin_boundaries", "v1.0") for i in range(1, 300)]
    reads = _fake_admitted(monkeypatch, {0: [], 1: roads})
    with pytest.raises(VersionMismatchError, match=r"\[1\]@0: batch b1-0 of layer roads"):
        consumers.check_admitted(Settings(), "roads", "v2", last=1)
    assert len(reads) > 1  # the window widened until it reached the roads record
    assert consumers.check_admitted(Settings(), "roads", "v1", last=1).startswith(
        "1 admitted record(s) of roads checked"
    )
    with pytest.raises(ContractGateError, match="no admitted record of parcels found"):
        consumers.check_admitted(Settings(), "parcels", "v1", last=5)
    with pytest.raises(ContractGateError, match="at least 1"):
        consumers.check_admitted(Settings(), "roads", "v1", last=0)


def test_assert_at_coordinates_refuses_a_record_of_another_layer(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], no_broker_probe: None
) -> None:
    # found by a fresh-user session: the record of admin_boundaries at 1@0 "passed" for
    # nyc_boroughs v1
    from worker.cli.main import main

    _fake_admitted(monkeypatch, {0: [], 1: [_Rec(1, 0, "admin_boundaries", "v1.0")]})
    code = main(["consumers", "assert", "nyc_boroughs", "v1", "--partition", "1", "--offset", "0"])
    err = capsys.readouterr().err
    assert code == 2
    assert "is of layer admin_boundaries, not nyc_boroughs" in err
    with pytest.raises(SystemExit):
        main(["consumers", "assert", "roads", "v1", "--last", "0"])
    assert "is not a whole number >= 1" in capsys.readouterr().err


def test_an_undecodable_declaration_is_warned_about_once(monkeypatch, caplog) -> None:  # type: ignore[no-untyped-def]
    # found by a new-user session: one junk record was logged again every ~60 s, by the
    # worker's migration view and by every CLI command reading the topic
    import logging

    from worker.control import attribution
    from worker.kafka.memory import MemoryMessage
    from worker.kafka.settings import Settings

    _junk = MemoryMessage.of("gis.contract.consumers", 0, 7, key=b"junk\nkey", value=b"\x00junk")
    monkeypatch.setattr(attribution, "_REPORTED", set())
    monkeypatch.setattr(attribution, "read_topic", lambda *a, **k: iter([_junk]))
    with caplog.at_level(logging.DEBUG, logger="worker.control.attribution"):
        for _ in range(3):
            assert attribution.read_declarations(Settings()) == []
    levels = [r.levelname for r in caplog.records if "ignored" in r.getMessage()]
    assert levels == ["WARNING", "DEBUG", "DEBUG"]


def _declaration(offset: int, key: bytes, consumer: str, layer: str, version: str) -> Any:
    from datetime import datetime, timezone

    from worker.io.codec import encode_consumer_declaration
    from worker.kafka.memory import MemoryMessage

    at = datetime(2026, 12, 5, tzinfo=timezone.utc)
    value = encode_consumer_declaration(consumer, layer, version, at)
    return MemoryMessage.of("gis.contract.consumers", 0, offset, key=key, value=value)


@pytest.mark.parametrize(
    ("key", "consumer", "layer", "version", "why"),
    [
        (b"bad/roads", "bad", "roads", "banana", "version 'banana'"),
        (b"bad/roads", "bad", "roads", "", "version ''"),
        (b"bad/roads", "bad", "roads", "v-1", "version 'v-1'"),
        (b"bad/roads", "bad", "roads", "v1.x", "version 'v1.x'"),
        (b"bad/roads", "bad", "roads", "v1\nv2", "version 'v1\\nv2'"),
        (b"bad/roads", "other", "roads", "v1", "consumer/layer 'other/roads'"),
        (b"bad/roads", "bad", "rivers", "v1", "consumer/layer 'bad/rivers'"),
        (None, "bad", "roads", "v1", "consumer/layer 'bad/roads'"),
    ],
)
def test_a_declaration_that_does_not_fit_its_key_or_names_no_version_is_ignored(  # type: ignore[no-untyped-def]
    monkeypatch, caplog, key, consumer, layer, version, why
) -> None:
    # found by a new-user session: one declaration with version "banana" on the consumers
    # topic made `consumers status` and `contract retire` of every layer fail with
    # "'banana' is not a contract version" (no record named), and froze the worker's
    # migration gauges; a record under another consumer's key counted that consumer twice
    import logging
    from datetime import datetime, timedelta, timezone

    from worker.control import attribution
    from worker.core.lifecycle.migration import build_view, render_view

    good = _declaration(1, b"a/roads", "a", "roads", "v2")
    bad = _declaration(2, key, consumer, layer, version)
    monkeypatch.setattr(attribution, "_REPORTED", set())
    monkeypatch.setattr(attribution, "read_topic", lambda *a, **k: iter([good, bad]))
    with caplog.at_level(logging.WARNING, logger="worker.control.attribution"):
        decls = attribution.read_declarations(Settings())
    assert [(d.consumer, d.layer, d.version) for d in decls] == [("a", "roads", "v2")]
    (line,) = [r.getMessage() for r in caplog.records]
    assert line.startswith("consumer declaration ") and " ignored: " in line
    assert why in line and "gis.contract.consumers[0]@2" in line
    now = datetime(2026, 12, 5, tzinfo=timezone.utc)
    view = build_view(
        {"roads": ["v1.0", "v2.0"]}, decls, [], ["a"], now=now, stale_after=timedelta(days=7)
    )
    assert render_view(view) == (
        "roads\n  v1 (active v1.0, oldest): 0 consumer(s)\n  v2 (active v2.0): 1 consumer(s)\n"
        "    declared: a"
    )
