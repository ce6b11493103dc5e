"""The overlap checks of ``verify overlap`` on plain values (no Kafka)."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import datetime, timedelta, timezone

from worker.cli.scenario import data_file
from worker.core.contracts.parse import parse_contract
from worker.core.lifecycle.migration import build_view
from worker.core.lifecycle.overlap import (
    CheckResult,
    OverlapReport,
    check_undeclared,
    clause_digest,
    find_stricter,
    find_twins,
)
from worker.core.lifecycle.overlap_checks import (
    check_stricter,
    check_twin,
)
from worker.core.model import ActiveVersion
from worker.io.contract_files import load_contract
from worker.ops.verify import render_report, report_to_json

V1 = load_contract(data_file("contracts/admin_boundaries.v1.yaml"))
STRICT = load_contract(data_file("contracts/admin_boundaries.v1.1.yaml"))
TWIN = parse_contract(
    V1.text.replace("version: v1\n", "version: v1.2\n").replace(V1.changelog, "identical twin"),
    source="twin",
)
E1 = ActiveVersion(V1, "enforcing")
S11 = ActiveVersion(STRICT, "observing")
T12 = ActiveVersion(TWIN, "observing")
NOW = datetime(2026, 11, 29, 12, 0, tzinfo=timezone.utc)


def ev(version: str, batch: str, passed: bool) -> dict[str, object]:
    return {"version": version, "batch_id": batch, "passed": passed}


def test_twin_found_by_equal_clauses_despite_another_changelog() -> None:
    assert TWIN.version == "v1.2" and TWIN.digest != V1.digest
    assert clause_digest(TWIN) == clause_digest(V1) != clause_digest(STRICT)
    assert find_twins([E1, S11, T12]) == [(E1, T12)]
    assert find_twins([E1, ActiveVersion(TWIN, "enforcing")]) == []  # none observing
    assert find_stricter([E1, S11, T12]) == [(E1, S11)]


def test_twin_passes_with_equal_attainment_over_common_batches() -> None:
    records = [ev("v1.0", "b0", True)]  # evaluated before the twin existed: not common
    records += [ev(v, b, ok) for b, ok in [("b1", True), ("b2", False)] for v in ("v1.0", "v1.2")]
    r = check_twin(E1, T12, records)
    assert r.status == "pass", r.reason
    assert r.figures["batches_both"] == 2 and r.figures["twin_attainment"] == 0.5
    assert "attainment 0.500 (1/2) vs 0.500 (1/2); 0 judged differently" in r.reason


def test_twin_fails_when_a_batch_is_judged_differently_inconclusive_if_nothing_common() -> None:
    records = [ev("v1.0", "b1", True), ev("v1.2", "b1", False), ev("v1.2", "b1", True)]
    assert check_twin(E1, T12, records).status == "pass"  # the last evaluation counts
    records.append(ev("v1.2", "b1", False))
    r = check_twin(E1, T12, records)
    assert r.status == "fail" and "1 judged differently: b1" in r.reason
    r = check_twin(E1, T12, [ev("v1.0", "b1", True)])
    assert r.status == "inconclusive" and "no batch evaluated by both yet" in r.reason
    assert r.reason.startswith("not applicable yet")


def strict_records() -> list[dict[str, object]]:
    out = []
    for batch, v1_ok, strict_ok in [
        ("w1", True, False),
        ("w2", True, True),
        ("w3", True, False),
        ("w4", False, False),
    ]:
        out += [ev("v1.0", batch, v1_ok), ev("v1.1", batch, strict_ok)]
    return out


def test_stricter_passes_with_breaches_on_admitted_batches_and_none_attributable() -> None:
    r = check_stricter(E1, S11, strict_records(), ["v1.0"], {"w1", "w2", "w3"}, {"w4": {"v1.0"}})
    assert r.status == "pass", r.reason
    assert r.figures["breaches"] == 3 and r.figures["breaches_admitted"] == 2
    assert r.figures["breaches_quarantined_by_enforcing"] == 1
    assert r.figures["quarantines_attributable"] == []
    assert "4 batch(es) evaluated, 3 breach(es), 2 of them admitted" in r.reason


def test_stricter_fails_on_an_attributable_quarantine_inconclusive_without_evidence() -> None:
    # w3 quarantined although the enforcing v1.0 passed it: the observing version halted it
    r = check_stricter(E1, S11, strict_records(), ["v1.0"], {"w1", "w2"}, {"w3": set()})
    assert r.status == "fail" and "1 quarantine(s) attributable to v1.1: w3" in r.reason
    r = check_stricter(E1, S11, strict_records(), ["v1.0"], {"w1"}, {"w1x": {"v1.1"}})
    assert r.status == "pass"
    r = check_stricter(E1, S11, strict_records(), ["v1.0"], set(), {})
    assert r.status == "inconclusive" and "3 not decided yet" in r.reason
    assert "no breach on an admitted batch recorded yet" in r.reason


def test_stricter_version_that_never_fired_is_inconclusive_and_exits_0() -> None:
    # found by a fresh-user session: FAIL (exit 1) when there was simply no evidence yet
    records = [ev(v, b, True) for b in ("w1", "w2") for v in ("v1.0", "v1.1")]
    r = check_stricter(E1, S11, records, ["v1.0"], {"w1", "w2"}, {})
    assert r.status == "inconclusive"
    assert r.reason.startswith("not applicable yet: no breach on an admitted batch")
    ok = CheckResult("undeclared_reader", "pass", "undeclared readers", "fine")
    report = OverlapReport("l", (("v1.0", "enforcing"), ("v1.1", "observing")), (r, ok))
    assert report.exit_code == 0
    text = render_report(report)
    assert "  INCONCLUSIVE  stricter observing: v1.1 (observing)" in text
    assert text.endswith(
        "result: PASS (1 of 1 applicable check(s) pass; 1 inconclusive, not applicable yet)"
    )
    assert report_to_json(report)["inconclusive"] == 1
    bad = CheckResult("identical_twin", "fail", "v1.2", "judged differently")
    assert OverlapReport("l", (), (r, ok, bad)).exit_code == 1


def test_undeclared_reader_counted_against_the_oldest_active_version() -> None:
    view = build_view(
        {"admin_boundaries": ["v1.0", "v1.1", "v2.0"]},
        [],
        ["silent"],
        ["silent"],
        now=NOW,
        stale_after=timedelta(days=7),
    )
    r = check_undeclared("admin_boundaries", "v1.0", {"silent"}, view)
    assert r.status == "pass" and "1 undeclared group(s) counted against v1.0" in r.reason
    r = check_undeclared("admin_boundaries", "v1.1", {"silent"}, view)
    assert r.status == "fail" and "silent counted against v1.0" in r.reason
    r = check_undeclared("admin_boundaries", "v1.0", {"silent", "missing"}, view)
    assert r.status == "fail" and "missing not counted" in r.reason
    assert check_undeclared("admin_boundaries", "v1.0", set(), view).status == "not_applicable"


def test_report_exit_code_text_and_json() -> None:
    na = CheckResult("identical_twin", "not_applicable", "no twin", "none")
    ok = CheckResult("undeclared_reader", "pass", "undeclared readers", "fine")
    bad = CheckResult("stricter_observing", "fail", "v1.1", "no breach")
    report = OverlapReport("l", (("v1.0", "enforcing"),), (na, ok))
    assert report.exit_code == 0
    text = render_report(report)
    assert "N/A   identical twin: no twin: none" in text
    assert text.endswith("result: PASS (1 of 1 applicable check(s) pass)")
    failed = OverlapReport("l", (("v1.0", "enforcing"),), (na, ok, bad))
    assert failed.exit_code == 1
    doc = report_to_json(failed)
    json.dumps(doc)
    assert (doc["result"], doc["applicable"], doc["passed"]) == ("fail", 2, 1)


def test_twin_with_an_equivalent_crs_spelled_otherwise_is_still_a_twin() -> None:
    respelled = parse_contract(
        TWIN.text.replace('"EPSG:4326"', '"urn:ogc:def:crs:EPSG::4326"'), source="respelled"
    )
    assert clause_digest(respelled) != clause_digest(V1)
    assert find_twins([E1, ActiveVersion(respelled, "observing")]) == [
        (E1, ActiveVersion(respelled, "observing"))
    ]


def test_nothing_verified_is_inconclusive_with_its_own_exit_code() -> None:
    na = CheckResult("identical_twin", "not_applicable", "no twin", "none")
    wait = CheckResult("stricter_observing", "inconclusive", "v1.1", "never fired")
    report = OverlapReport("l", (("v1.0", "enforcing"),), (na, wait))
    assert (report.result, report.exit_code) == ("inconclusive", 3)
    text = render_report(report)
    assert text.endswith(
        "result: INCONCLUSIVE (nothing verified: no applicable check; 1 inconclusive, "
        "1 not applicable)"
    )
    assert report_to_json(report)["result"] == "inconclusive"


def _major(version: str) -> ActiveVersion:
    text = V1.text.replace("version: v1\n", f"version: {version}\n").replace(
        "expect: east_north", "expect: north_east"
    )
    return ActiveVersion(parse_contract(text, source=version), "observing")


def test_major_overlap_both_majors_evaluate_every_batch_with_their_own_attainment() -> None:
    from worker.core.lifecycle.overlap_checks import check_major_overlap

    v2 = _major("v2")

    def at(version: str, batch: str, passed: bool, minutes: int) -> dict[str, object]:
        return {**ev(version, batch, passed), "evaluated_at": NOW + timedelta(minutes=minutes)}

    (single,) = check_major_overlap([E1, S11], [])
    assert single.status == "not_applicable"
    (waiting,) = check_major_overlap([E1, v2], [at("v1.0", "a", True, 0)])
    assert waiting.status == "inconclusive"
    records = [
        at("v1.0", "before", True, 0),  # before the overlap: v2 did not exist yet
        at("v1.0", "b1", True, 10),
        at("v2.0", "b1", False, 10),
        at("v1.0", "b2", True, 20),
        at("v2.0", "b2", True, 20),
    ]
    (ok,) = check_major_overlap([E1, v2], records)
    assert ok.status == "pass", ok.reason
    assert ok.subject == "v1.0 (enforcing) and v2.0 (observing)"
    # the newest active revision stands for its major
    records11 = [{**r, "version": "v1.1"} if r["version"] == "v1.0" else r for r in records]
    (ok,) = check_major_overlap([E1, S11, v2], records11)
    assert ok.status == "pass"
    assert (ok.figures["old_attainment"], ok.figures["new_attainment"]) == (1.0, 0.5)
    assert "attainment v1.1 1.000 (2/2), v2.0 0.500 (1/2)" in ok.reason
    (bad,) = check_major_overlap([E1, v2], [*records, at("v1.0", "b3", True, 30)])
    assert bad.status == "fail" and bad.figures["only_old"] == ["b3"]
    assert "1 evaluated by v1.0 only, 0 by v2.0 only: b3" in bad.reason


def test_two_enforcing_majors_that_no_batch_passes_together_fail_the_overlap_check() -> None:
    # found by a new-user session: a CRS major enforcing beside v1 quarantined every batch
    # and `verify overlap` said PASS (attainment 0.5 / 0.5)
    from worker.core.lifecycle.overlap_checks import check_major_overlap

    v2 = replace(_major("v2"), mode="enforcing")

    def at(version: str, batch: str, passed: bool, minutes: int) -> dict[str, object]:
        return {**ev(version, batch, passed), "evaluated_at": NOW + timedelta(minutes=minutes)}

    split = [
        at("v1.0", "in-4326", True, 10),
        at("v2.0", "in-4326", False, 10),
        at("v1.0", "in-3857", False, 20),
        at("v2.0", "in-3857", True, 20),
    ]
    (outage,) = check_major_overlap([E1, v2], split)
    assert outage.status == "fail" and outage.figures["passed_both"] == 0
    assert "none of them passed both enforcing majors" in outage.reason
    # the same evaluations with v2 observing are a sound overlap
    (ok,) = check_major_overlap([E1, replace(v2, mode="observing")], split)
    assert ok.status == "pass", ok.reason
