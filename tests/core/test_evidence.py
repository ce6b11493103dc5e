"""Evidence summaries of an observing version (pure) and their renderings."""

from __future__ import annotations

import itertools
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest

from tests.catalogue import HOSTILE_NAMES, assert_one_line_each
from worker.cli.scenario import data_file
from worker.core.lifecycle.evidence import attainment_warning, summarise
from worker.io.contract_files import load_contract
from worker.io.reports.evidence import evidence_to_json, render_evidence_html, render_evidence_text

T0 = datetime(2026, 11, 29, 0, 0, tzinfo=timezone.utc)
V1_1 = load_contract(data_file("contracts/admin_boundaries.v1.1.yaml"))  # cadence PT6H


def record(batch: str, hours: float, passed: bool, version: str = "v1.1") -> dict[str, Any]:
    at = T0 + timedelta(hours=hours)
    clauses = [
        {
            "name": "valid",
            "kind": "validity",
            "result": "pass",
            "on_break": "halt",
            "measured": 0.0,
            "expected": 0.0,
            "message": "ok",
        },
        {
            "name": "continent",
            "kind": "domain",
            "result": "pass" if passed else "break",
            "on_break": "halt",
            "measured": [] if passed else ["Seven seas (open ocean)"],
            "expected": "codes of the domain",
            "message": "every value is a code"
            if passed
            else "column 'continent' (string): 1 value not in the domain "
            "('Seven seas (open ocean)')",
        },
    ]
    return {
        "batch_id": batch,
        "layer": "admin_boundaries",
        "version": version,
        "mode": "observing",
        "passed": passed,
        "evaluated_at": at,
        "data_time": at - timedelta(minutes=30),
        "clauses": clauses,
    }


RECORDS = [
    record("b1", 0, False),
    record("b2", 1, True),
    record("b2", 1.1, True),
    record("b3", 2, False),
    record("x", 2, True, version="v1.0"),
]


def test_summary_counts_each_batch_once_and_lists_would_be_rejections() -> None:
    e = summarise(V1_1, RECORDS, now=T0 + timedelta(hours=3))
    assert (e.evaluated, e.passed) == (3, 1)
    assert e.attainment is not None and abs(e.attainment - 1 / 3) < 1e-9
    assert [p.batch_id for p in e.would_reject] == ["b1", "b3"]
    assert e.would_reject[0].broken[0].name == "continent"
    # the span runs from the first to the last evaluation (0 h to 2 h), not to now (3 h)
    assert e.span_s == 2 * 3600 and e.missing_s == 4 * 3600
    text = render_evidence_text(e)
    assert "4.0 h missing" in text and "b3 (data time" in text
    assert (
        "continent (domain, halts): column 'continent' (string): 1 value not in the domain "
        "('Seven seas (open ocean)')" in text
    )
    assert '["Seven seas' not in text  # words, not JSON
    js = evidence_to_json(e)
    assert js["would_reject"][1]["broken"][0]["measured"] == ["Seven seas (open ocean)"]


def test_html_is_self_contained_with_an_svg_timeline() -> None:
    e = summarise(V1_1, RECORDS, now=T0 + timedelta(hours=7))
    page = render_evidence_html(e)
    assert page.startswith("<!DOCTYPE html>") and "<svg" in page
    assert page.count("<circle") == 3 and page.count('class="breach"') == 2
    assert "http://" not in page.replace('xmlns="http://www.w3.org/2000/svg"', "")
    assert "<script" not in page
    # seven hours after the first evaluation, the evidence still spans 0 h to 2 h only
    assert "4.0 h missing" in page.split("<h2>")[0]


def test_no_evaluations() -> None:
    e = summarise(V1_1, [], now=T0)
    assert (e.evaluated, e.attainment, e.span_s) == (0, None, 0.0)
    assert "no evaluations yet" in render_evidence_html(e)


def test_one_evaluation_followed_by_silence_is_no_cycle_of_evidence() -> None:
    # found by a fresh-user session: the span ran to "now", so one evaluation and a day of
    # silence counted as a full cycle of evidence
    e = summarise(V1_1, [record("b1", 0, True)], now=T0 + timedelta(days=1))
    assert e.span_s == 0.0 and e.missing_s == V1_1.cadence_s
    e = summarise(V1_1, [record("b1", 0, True), record("b2", 6, True)], now=T0 + timedelta(days=1))
    assert e.span_s == 6 * 3600 and e.missing_s == 0


def test_attainment_warning_below_objective_only() -> None:
    e = summarise(V1_1, RECORDS, now=T0 + timedelta(hours=3))
    warning = attainment_warning(e)
    assert warning is not None and warning.startswith("WARNING: admin_boundaries/v1.1")
    assert "0.333 (1/3), below its objective 0.99" in warning
    good = summarise(V1_1, [record("b1", 0, True)], now=T0)
    assert attainment_warning(good) is None
    assert attainment_warning(summarise(V1_1, [], now=T0)) is None


def test_would_be_rejections_say_how_many_were_not_quarantined_already() -> None:
    # found by a fresh-user session: an owner deciding a promotion needs the newly
    # rejected subset, not only the total
    def enforcing(batch: str, passed: bool) -> dict[str, Any]:
        return {**record(batch, 0.5, passed, version="v1.0"), "mode": "enforcing"}

    records = [*RECORDS, enforcing("b1", True), enforcing("b3", True), enforcing("b3", False)]
    e = summarise(V1_1, records, now=T0 + timedelta(hours=3))
    assert [p.batch_id for p in e.would_reject] == ["b1", "b3"]
    assert [p.batch_id for p in e.newly_rejected] == ["b1"]
    assert e.would_reject[1].quarantined_by == ("v1.0",)
    text = render_evidence_text(e)
    assert "would have rejected 2 batch(es), 1 of them not already quarantined by an " in text
    assert "b3 (data time" in text and "already quarantined by v1.0)" in text
    js = evidence_to_json(e)
    assert js["newly_rejected"] == 1 and js["would_reject"][1]["quarantined_by"] == ["v1.0"]
    assert "1 not already\nquarantined by an enforcing version" in render_evidence_html(e)
    # an observing version failing the batch does not quarantine it
    observing = {**record("b1", 0.5, False, version="v1.2"), "mode": "observing"}
    assert len(summarise(V1_1, [*records, observing], now=T0).newly_rejected) == 1


def test_close_evaluations_stay_apart_and_labels_are_anchored_inside() -> None:
    from worker.io.reports.evidence_svg import MIN_GAP_PX, breach_rate_bins, spread

    # 4 evaluations 11 s apart on a 6 h axis: four marks, at least MIN_GAP_PX apart
    records = [record(f"c{i}", i * 11 / 3600, i % 2 == 0) for i in range(4)]
    e = summarise(V1_1, records, now=T0 + timedelta(hours=6))
    page = render_evidence_html(e)
    xs = [
        float(part.split('"')[0])
        for part in page.split('<circle class="')[1:]
        for part in [part.split('cx="')[1]]
    ]
    assert len(xs) == 4
    assert all(b - a >= MIN_GAP_PX - 1e-6 for a, b in itertools.pairwise(xs))
    assert 'text-anchor="end">now</text>' in page  # at the right edge: anchored, not cut
    assert spread([10.0, 10.0, 10.0], 0.0, 100.0) == [10.0, 22.0, 34.0]
    assert spread([95.0, 99.0], 0.0, 100.0) == [88.0, 100.0]
    # breach rate over time: 2 of 4 in one 33 s span, bars labelled breaches/evaluated
    bins = breach_rate_bins(e)
    assert sum(b[3] for b in bins) == 4 and sum(b[2] for b in bins) == 2
    assert 'class="breach-rate"' in page and page.count('class="bar"') == len(bins)


def test_an_enforcing_version_calls_its_failures_its_own_quarantines() -> None:
    # issue 28 §4: `contract evidence` of an enforcing version said its own quarantines
    # were "not already quarantined by an enforcing version"
    def mode(r: dict[str, Any], m: str) -> dict[str, Any]:
        return {**r, "mode": m}

    records = [
        mode(record("b1", 0, False), "observing"),  # before promotion: a would-be rejection
        mode(record("b2", 1, True), "enforcing"),
        mode(record("b3", 2, False), "enforcing"),  # after: its own quarantine
        mode(record("b4", 3, False), "enforcing"),
    ]
    e = summarise(V1_1, records, now=T0 + timedelta(hours=4))
    assert e.enforcing and [p.batch_id for p in e.rejected_itself] == ["b3", "b4"]
    assert [p.batch_id for p in e.newly_rejected] == ["b1"]
    text = render_evidence_text(e)
    assert (
        "  quarantined 2 batch(es) itself while enforcing; while observing it would have "
        "rejected 1, 1 of them not already quarantined by an enforcing version"
    ) in text
    assert "b3 (data time 2026-11-29T01:30:00+00:00, already quarantined by this version" in text
    assert "b1 (data time 2026-11-28T23:30:00+00:00)" in text
    page = render_evidence_html(e)
    assert "Batches it rejected (quarantined 2 batch(es) itself while enforcing;" in page
    assert page.count("<td>this version (enforcing)</td>") == 2
    js = evidence_to_json(e)
    assert (js["enforcing"], js["rejected_itself"], js["newly_rejected"]) == (True, 2, 1)
    # every failure enforcing: no "would have rejected" sentence at all
    only = summarise(V1_1, records[1:], now=T0 + timedelta(hours=4))
    assert render_evidence_text(only).splitlines()[3] == (
        "  quarantined 2 batch(es) itself while enforcing"
    )


@pytest.mark.parametrize("field", ["batch_id", "clause name", "clause message"])
@pytest.mark.parametrize("name", HOSTILE_NAMES)
def test_forged_evaluation_fields_are_shown_on_one_line_each(field: str, name: str) -> None:
    # found by a new-user session: `contract evidence` and the confirmation of `contract
    # promote` printed a forged evaluation record's batch id or clause message raw: a
    # newline there writes lines of its own into what the owner confirms
    forged = record("b1", 0, False)
    if field == "batch_id":
        forged["batch_id"] = name
    else:
        forged["clauses"][1]["name" if field == "clause name" else "message"] = name
    e = summarise(V1_1, [forged, record("b2", 1, True)], now=T0 + timedelta(hours=3))
    text = render_evidence_text(e)
    assert_one_line_each(text, name, 6, 1000 if field == "clause message" else 120)
