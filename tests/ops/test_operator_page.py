"""The operator page without a broker: escaping and bounds of everything it echoes,
the routes it serves (GET only, read-only) and the ring of quarantined batches."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from datetime import timedelta
from types import SimpleNamespace

from tests.catalogue import NOW, contract_of
from worker.core.lifecycle.migration import Declaration, build_view
from worker.core.lifecycle.overview import Sources, build_overview
from worker.core.lifecycle.policy import Published
from worker.core.model import Decision, QuarantineReason
from worker.gate.records import Outcome, Source
from worker.io.reports.operator_page import render_fragments, render_operator_page
from worker.ops.operator import OverviewSource, RecentQuarantines
from worker.ops.operator_routes import operator_response

HOSTILE = '<img src=x onerror="alert(1)">&'
TEN_MB = "R" * 10_000_000


def outcome(offset: int, message: str = "broken", layer: str = "roads") -> Outcome:
    reason = QuarantineReason(
        "contract_break", message, "v1.0", "enforcing", HOSTILE, measured=message, kind="crs"
    )
    source = Source("gis.batches", 0, offset, layer.encode(), b"...")
    return Outcome(source, layer, f"b-{offset}", Decision("quarantined", (), (reason,)), (), 0.0)


def test_hostile_names_and_ten_megabyte_reasons_are_escaped_and_bounded() -> None:
    layer = HOSTILE + "x" * 1000
    v1 = contract_of(version="v1.0", layer=layer)
    v2 = contract_of(version="v2.0", layer=layer)
    known = [
        Published(v, "enforcing", "active", "major", (), NOW - timedelta(days=d), "t")
        for v, d in ((v1, 4), (v2, 1))
    ]
    mig = build_view(
        {layer: ["v1.0", "v2.0"]},
        [Declaration(HOSTILE * 100, layer, "v1.0", NOW)],
        [HOSTILE],
        [HOSTILE * 100, HOSTILE],
        now=NOW,
        stale_after=timedelta(days=1),
    )
    recent = RecentQuarantines(now=lambda: NOW)
    recent(outcome(7, TEN_MB, layer))
    o = build_overview(
        Sources(known, {}, mig, breaks={layer: [TEN_MB]}), quarantined=recent.rows(), now=NOW
    )
    page = render_operator_page(o)
    assert len(page) < 60_000
    assert "<img" not in page and 'onerror="' not in page
    assert "&lt;img src=x onerror=&quot;alert(1)&quot;&gt;&amp;" in page
    assert "[clipped: 10000000 chars in all]" in page
    assert len(re.findall(r"<script>", page)) == 1  # the page's own, nothing echoed
    fragments = json.dumps(render_fragments(o))
    assert "<img" not in fragments and len(fragments) < 60_000


def test_the_ring_keeps_the_last_quarantines_and_their_batch_links() -> None:
    recent = RecentQuarantines(maxlen=3, now=lambda: NOW)
    for offset in range(5):
        recent(outcome(offset))
    rows = recent.rows()
    assert [r["batch_id"] for r in rows] == ["b-4", "b-3", "b-2"]
    assert rows[0]["link"] == "/batch/gis.batches/0/4"
    assert rows[0]["broken"][0]["clause"] == f"v1.0:{HOSTILE}"
    assert recent.find("gis.batches", 0, 1) is None  # fell out of the ring
    kept = recent.find("gis.batches", 0, 4)
    assert kept is not None and kept.record["reasons"][0]["message"] == "broken"
    assert recent.events_per_s() == 5 / 60.0
    assert kept.record["worker_id"] == "this worker"  # no record written: rebuilt


def test_the_ring_keeps_the_record_the_worker_wrote() -> None:
    from worker.gate.records import quarantine_record
    from worker.kafka.settings import Topics

    o = outcome(9)
    written = quarantine_record(
        o.source, o.layer, o.batch_id, o.decision, Topics(), NOW, "worker-7"
    )
    recent = RecentQuarantines(now=lambda: NOW)
    recent(replace(o, records=(written,)))
    kept = recent.find("gis.batches", 0, 9)
    assert kept is not None
    assert (kept.record["worker_id"], kept.record["original"]) == ("worker-7", b"")
    assert kept.record["source_offset"] == 9


def state() -> SimpleNamespace:
    from worker.core.lifecycle.registry import Registry

    return SimpleNamespace(
        registry=Registry(),
        config=SimpleNamespace(bootstrapped=True),
        assigned=frozenset({("gis.batches", 0)}),
        batches_committed=3,
        transactions_aborted=0,
        last_loop_monotonic=0.0,
        broker_unreachable_since=None,
        metrics=None,
    )


def test_routes_serve_the_page_the_json_and_refuse_unknown_batches() -> None:
    source = OverviewSource(state(), RecentQuarantines())
    page = operator_response("/", source)
    assert page is not None and page.status == 200 and page.content_type.startswith("text/html")
    assert b'<div id="worker">' in page.body and b"gis.batches[0]" in page.body
    doc = operator_response("/overview.json", source)
    assert doc is not None and doc.status == 200
    parsed = json.loads(doc.body)
    assert set(parsed["html"]) == {"worker", "layers", "quarantine"}
    assert parsed["model"]["worker"]["batches_committed"] == 3
    missing = operator_response("/batch/gis.batches/0/99", source)
    assert missing is not None and missing.status == 404  # only kept coordinates are read
    assert operator_response("/batch/../../etc", source).status == 404  # type: ignore[union-attr]
    assert operator_response("/status", source) is None  # left to the other handlers


def test_every_version_colour_index_has_a_colour() -> None:
    from worker.core.lifecycle.overview import PALETTE_SIZE
    from worker.io.reports.overlap_svg import PALETTE

    assert len(PALETTE) == PALETTE_SIZE == len(set(PALETTE))


def test_the_decision_rate_counts_the_last_minute_only() -> None:
    t = [1000.0]
    recent = RecentQuarantines(clock=lambda: t[0], now=lambda: NOW)
    for _ in range(30):
        recent(outcome(1))
    t[0] = 1030.5
    for _ in range(90):
        recent(outcome(2))
    assert recent.events_per_s() == 120 / 60
    t[0] = 1061.0  # the first 30 are more than a minute old
    assert recent.events_per_s() == 90 / 60


def test_batch_pages_read_from_kafka_at_most_two_at_a_time() -> None:
    from worker.ops import operator_routes

    recent = RecentQuarantines(now=lambda: NOW)
    recent(outcome(4))
    source = OverviewSource(state(), recent)
    held = [operator_routes._READS.acquire(blocking=False) for _ in range(2)]
    try:
        busy = operator_response("/batch/gis.batches/0/4", source)
        assert held == [True, True] and busy is not None and busy.status == 503
    finally:
        for _ in held:
            operator_routes._READS.release()
