"""Lifecycle policy decisions (docs/design.md section 5), pure."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from worker.cli.scenario import data_file
from worker.core.contracts.parse import parse_contract
from worker.core.lifecycle.escalations import escalations
from worker.core.lifecycle.policy import Published
from worker.core.lifecycle.promotion import decide_promotion
from worker.core.lifecycle.publishing import decide_publish
from worker.core.model import Contract
from worker.io.contract_files import load_contract

NOW = datetime(2026, 11, 29, 12, 0, tzinfo=timezone.utc)
V1 = load_contract(data_file("contracts/admin_boundaries.v1.yaml"))
V1_1 = load_contract(data_file("contracts/admin_boundaries.v1.1.yaml"))  # tightening


def variant(base: Contract, version: str, *edits: tuple[str, str]) -> Contract:
    text = base.text.replace(
        f"version: {base.text.split('version: ')[1].split()[0]}", f"version: {version}"
    )
    for old, new in edits:
        assert old in text
        text = text.replace(old, new)
    return parse_contract(text, source=version)


def pub(
    c: Contract, mode: str = "enforcing", state: str = "active", at: datetime = NOW
) -> Published:
    return Published(c, mode, state, None, (), at, "tester")


def decide(c: Contract, mode: str, *known: Published):  # type: ignore[no-untyped-def]
    return decide_publish(c, mode=mode, known=list(known), published_by="me", now=NOW)


def test_first_version_is_written_as_given() -> None:
    d = decide(V1, "enforcing")
    assert d.action == "write" and [w.contract.key for w in d.writes] == ["admin_boundaries/v1.0"]


def test_same_digest_noop_other_digest_edit_in_place() -> None:
    assert decide(V1, "enforcing", pub(V1)).action == "noop"
    edited = parse_contract(V1.text.replace("max_age: PT6H", "max_age: PT1H"))
    d = decide(edited, "enforcing", pub(V1))
    assert d.action == "refuse" and "edit in place" in d.message
    assert (d.field, d.fix) == ("version", "give the change a new version number")


def test_same_document_in_another_mode_is_refused_not_a_noop() -> None:
    # found by a fresh-user session: republishing with --mode observing printed "no-op"
    d = decide(V1_1, "enforcing", pub(V1), pub(V1_1, "observing"))
    assert d.action == "refuse"
    assert "already published observing" in d.message
    assert "contract-gate contract promote admin_boundaries v1.1" in d.message
    d = decide(V1, "observing", pub(V1))
    assert d.action == "refuse" and "cannot change its mode to observing" in d.message


def test_tightening_only_observing_and_carries_its_class() -> None:
    d = decide(V1_1, "enforcing", pub(V1))
    assert d.action == "refuse" and "--mode observing" in d.message
    assert d.field == "--mode" and d.fix is not None and d.fix.startswith("publish it --mode obs")
    assert "change class tightening" in d.message
    ok = decide(V1_1, "observing", pub(V1))
    assert ok.action == "write" and len(ok.writes) == 1
    (w,) = ok.writes
    assert (w.mode, w.state, w.change_class) == ("observing", "active", "tightening")
    assert [x.clause for x in w.differences] == ["(document)", "continent"]
    assert w.to_record()["differences"][1]["class"] == "tightening"


def test_numbering_follows_the_class() -> None:
    projection = variant(V1, "v1.1", ('expect: "EPSG:4326"', 'expect: "EPSG:3857"'))
    d = decide(projection, "observing", pub(V1))
    assert d.action == "refuse"
    assert "a major change must be v2.0, not v1.1" in d.message
    minor_as_major = variant(V1, "v2", ("owner: boundaries-team", "owner: geo-team"))
    d = decide(minor_as_major, "enforcing", pub(V1))
    assert d.action == "refuse" and "a minor change must be v1.1, not v2.0" in d.message


def test_enforcing_minor_supersedes_its_predecessor_of_the_same_major() -> None:
    minor = variant(V1, "v1.1", ("owner: boundaries-team", "owner: geo-team"))
    d = decide(minor, "enforcing", pub(V1))
    assert d.action == "write"
    assert [(w.contract.version, w.mode, w.state) for w in d.writes] == [
        ("v1.1", "enforcing", "active"),
        ("v1.0", "enforcing", "superseded"),
    ]
    # the new version's own record carries the supersession (one atomic change)
    assert [w.supersedes for w in d.writes] == [("admin_boundaries/v1.0",), ()]
    assert d.writes[0].to_record()["supersedes"] == ["admin_boundaries/v1.0"]
    assert "supersedes v1.0" in d.message


def test_enforcing_minor_after_an_observing_tightening_is_refused() -> None:
    minor_of_tight = variant(V1_1, "v1.2", ("owner: boundaries-team", "owner: geo-team"))
    d = decide(minor_of_tight, "enforcing", pub(V1), pub(V1_1, "observing"))
    assert d.action == "refuse" and "without evidence" in d.message


def test_major_opens_an_overlap() -> None:
    major = variant(V1, "v2", ("expect: east_north", "expect: north_east"))
    d = decide(major, "observing", pub(V1))
    assert d.action == "write" and len(d.writes) == 1
    assert "overlap begins with v1.0" in d.message


def test_promotion_needs_one_cadence_and_confirmation_then_supersedes() -> None:
    known = [pub(V1), pub(V1_1, "observing")]
    short = decide_promotion(V1_1.key, known=known, span_s=2 * 3600, confirmed=True)
    assert short.action == "refuse"
    assert "4.0 h missing" in short.message  # cadence PT6H
    assert (short.field, short.fix) == ("version", "promote it once its evidence spans 4.0 h more")
    unconfirmed = decide_promotion(V1_1.key, known=known, span_s=6 * 3600, confirmed=False)
    assert unconfirmed.action == "refuse" and "--yes" in unconfirmed.message
    ok = decide_promotion(V1_1.key, known=known, span_s=6 * 3600, confirmed=True)
    assert [(w.contract.version, w.mode, w.state) for w in ok.writes] == [
        ("v1.1", "enforcing", "active"),
        ("v1.0", "enforcing", "superseded"),
    ]
    assert ok.writes[0].supersedes == ("admin_boundaries/v1.0",)
    assert (
        decide_promotion("admin_boundaries/v9.0", known=known, span_s=1e9, confirmed=True).action
        == "refuse"
    )


def test_escalations() -> None:
    v2 = variant(V1, "v2", ("expect: east_north", "expect: north_east"))
    v2_1 = variant(v2, "v2.1", ("owner: boundaries-team", "owner: geo-team"))
    young = [pub(V1), pub(v2, at=NOW - timedelta(hours=6))]
    assert escalations(young, NOW) == []
    old = [pub(V1), pub(v2, at=NOW - timedelta(hours=13)), pub(v2_1, "observing")]
    warnings = escalations(old, NOW)
    assert any("3 active versions" in w for w in warnings)
    assert any("open for 2.2 cadence cycles" in w for w in warnings)


def test_crs_respelled_is_numbered_and_published_as_a_minor() -> None:
    respelled = variant(V1, "v1.1", ('"EPSG:4326"', '"urn:ogc:def:crs:EPSG::4326"'))
    d = decide(respelled, "enforcing", pub(V1))
    assert d.action == "write" and d.classification is not None
    assert d.classification.class_ == "minor"
    assert [(w.contract.version, w.state) for w in d.writes] == [
        ("v1.1", "active"),
        ("v1.0", "superseded"),
    ]
    assert d.writes[0].change_class == "minor"
    wrong = variant(V1, "v2.0", ('"EPSG:4326"', '"urn:ogc:def:crs:EPSG::4326"'))
    assert "a minor change must be v1.1" in decide(wrong, "enforcing", pub(V1)).message


def test_promotion_and_supersession_writes_keep_class_differences_and_provenance() -> None:
    earlier = NOW - timedelta(days=3)
    v1 = Published(V1, "enforcing", "active", "minor", (), earlier, "first-publisher")
    v11 = decide(V1_1, "observing", v1).writes[0]
    assert (v11.change_class, v11.published_by) == ("tightening", "me")
    d = decide_promotion(V1_1.key, known=[v1, v11], span_s=V1_1.cadence_s, confirmed=True)
    promoted, superseded = d.writes
    assert (promoted.mode, promoted.change_class, promoted.differences) == (
        "enforcing",
        "tightening",
        v11.differences,
    )
    assert (promoted.published_at, promoted.published_by) == (NOW, "me")
    assert superseded.state == "superseded"
    assert (superseded.change_class, superseded.published_at, superseded.published_by) == (
        "minor",
        earlier,
        "first-publisher",
    )


def test_during_an_overlap_the_older_major_gets_a_revision_classified_within_its_major() -> None:
    # found by a new-user session: after v1, v1.1 (observing) and v2 (axis order changed),
    # v1.2 = v1.1 with only the owner edited was refused as "a major change must be v3.0"
    v2 = variant(V1, "v2", ("expect: east_north", "expect: north_east"))
    owner = V1_1.owner
    v1_2 = variant(V1_1, "v1.2", (f"owner: {owner}", "owner: another-team"))
    known = (pub(V1), pub(V1_1, "observing"), pub(v2, "observing"))
    d = decide(v1_2, "observing", *known)
    assert d.action == "write", d.message
    assert d.classification is not None and d.classification.class_ == "minor"
    assert "v1.1 -> v1.2" in d.message
    # a new major is still numbered after every known major
    v3 = variant(v2, "v2.1", ("expect: north_east", "expect: east_north"))
    refused = decide(v3, "observing", *known)
    assert refused.action == "refuse" and "a major change must be v3.0" in refused.message


def test_a_revision_of_a_retired_major_is_refused() -> None:
    # found by a new-user session: with v1.0 retired and v2.0 active, v1.1 (owner edited)
    # was published active as a "minor" of v1.0, so a major nobody reads came back in force
    v2 = variant(V1, "v2", ("expect: east_north", "expect: north_east"))
    revived = variant(V1, "v1.1", ("owner: boundaries-team", "owner: geo-team"))
    d = decide(revived, "enforcing", pub(V1, state="retired"), pub(v2))
    assert d.action == "refuse" and not d.writes
    assert "major v1 of layer admin_boundaries is retired" in d.message
    assert "current major (v2)" in d.message
    # while one revision of the major is still active, the major takes revisions
    d = decide(revived, "enforcing", pub(V1), pub(v2))
    assert d.action == "write" and d.classification is not None
    assert d.classification.class_ == "minor"


def test_a_major_whose_newest_revision_is_retired_is_retired_whatever_came_before() -> None:
    # a fresh-user session: v1.0 superseded by v1.1, v1.1 retired, v2.0 active; v1.2 was
    # published enforcing (the check wanted every revision of v1 retired)
    v1_1 = variant(V1, "v1.1", ("owner: boundaries-team", "owner: geo-team"))
    v1_2 = variant(V1, "v1.2", ("owner: boundaries-team", "owner: maps-team"))
    v2 = variant(V1, "v2", ("expect: east_north", "expect: north_east"))
    d = decide(v1_2, "enforcing", pub(V1, state="superseded"), pub(v1_1, state="retired"), pub(v2))
    assert d.action == "refuse" and not d.writes
    assert "major v1 of layer admin_boundaries is retired" in d.message


def test_superseding_an_observing_trial_says_that_its_evaluation_ends() -> None:
    # found by a new-user session: an enforcing minor superseded the observing tightening
    # v1.1 with only "supersedes v1.0, v1.1" said
    v1_2 = variant(V1, "v1.2", ("owner: boundaries-team", "owner: geo-team"))
    d = decide(v1_2, "enforcing", pub(V1), pub(V1_1, "observing"))
    assert d.action == "write"
    assert [(w.contract.version, w.state) for w in d.writes] == [
        ("v1.2", "active"),
        ("v1.0", "superseded"),
        ("v1.1", "superseded"),
    ]
    assert "note: v1.1 was observing (a change on trial) and is no longer evaluated" in d.message
    # the same note as a value, without its prefix, and the message carries it as a line
    (note,) = d.notes
    assert note.startswith("v1.1 was observing (a change on trial)") and not d.warnings
    assert f"\nnote: {note}" in d.message
    plain = decide(
        variant(V1, "v1.1", ("owner: boundaries-team", "owner: x")), "enforcing", pub(V1)
    )
    assert "note:" not in plain.message


def test_promotion_needs_a_cycle_of_the_enforcing_cadence_when_the_new_one_is_shorter() -> None:
    # found by a new-user session: v1.1 tightened max_age and cut its own cadence to PT20S,
    # then was promoted after 26 s of evidence
    quick = variant(V1_1, "v1.1", ("cadence: PT6H", "cadence: PT20S"))
    known = [pub(V1), pub(quick, "observing")]
    d = decide_promotion(quick.key, known=known, span_s=26, confirmed=True)
    assert d.action == "refuse"
    assert d.message == (
        "admin_boundaries/v1.1: observing evidence spans 26 s, shorter than one cadence cycle "
        "(PT6H = 6.0 h, the cadence of v1.0, which it would replace (v1.1's own is PT20S)); "
        "6.0 h missing"
    )
    assert decide_promotion(quick.key, known=known, span_s=6 * 3600, confirmed=True).writes


def test_a_major_enforcing_beside_another_on_the_shared_topic_is_warned_about() -> None:
    # found by a new-user session: a CRS major published enforcing (the default mode)
    # quarantined every batch of the layer, and a major hiding a tightening enforced it
    # without evidence, with nothing said
    crs_major = variant(V1, "v2", ('expect: "EPSG:4326"', 'expect: "EPSG:3857"'))
    d = decide(crs_major, "enforcing", pub(V1))
    assert d.action == "write"
    assert (
        "warning: v2.0 enforces beside v1.0 on the shared admitted topic, where a batch must "
        "pass both: its CRS or axis order differs, so no batch can pass both and every batch "
        "will be quarantined from now on" in d.message
    )
    sneak = variant(V1_1, "v2", ("Africa: Africa", "Africa: Afrique"))  # a meaning: major
    d = decide(sneak, "enforcing", pub(V1))
    assert d.classification is not None and d.classification.class_ == "major"
    assert "it also tightens continent without observing evidence" in d.message
    (warning,) = d.warnings
    assert "it also tightens continent" in warning and d.message.endswith(f"\nwarning: {warning}")
    # observing, or beside an observing old major, or with per-major paths: nothing to say
    assert "warning" not in decide(crs_major, "observing", pub(V1)).message
    assert "warning" not in decide(crs_major, "enforcing", pub(V1, "observing")).message
    opted = ("layer: admin_boundaries", "layer: admin_boundaries\nread_paths: per_major")
    per_major = variant(crs_major, "v2", opted)
    assert "warning" not in decide(per_major, "enforcing", pub(V1)).message


def test_a_new_major_after_a_retired_one_follows_the_version_in_force() -> None:
    # found by a new-user session: v1 enforcing, v2 published then retired; v3.0 (a CRS
    # change against v1) was refused as "a minor change must be v2.1 (after v2.0)", and
    # v2.1 as a revision of a retired major
    v2 = variant(V1, "v2", ("owner: boundaries-team", "owner: geo-team"))
    v3 = variant(V1, "v3", ('expect: "EPSG:4326"', 'expect: "EPSG:3857"'))
    d = decide(v3, "observing", pub(V1), pub(v2, state="retired"))
    assert d.action == "write", d.message
    assert d.predecessor is not None and d.predecessor.contract.version == "v1.0"
    assert d.message.startswith("v1.0 -> v3.0: change class major")


def test_an_observing_version_of_a_layer_without_an_enforcing_one_is_warned_about() -> None:
    # a fresh-user session: a layer of one observing version admitted a broken batch, and
    # nothing said so at publish
    first = decide(V1, "observing")
    assert first.action == "write"
    assert "warning: layer admin_boundaries has no enforcing version" in first.message
    assert first.warnings == (first.message.split("\nwarning: ")[1],)
    assert first.warnings[0].startswith("layer admin_boundaries has no enforcing version")
    assert "warning" not in decide(V1, "enforcing").message
    trial = variant(V1, "v1.1", ("owner: boundaries-team", "owner: geo-team"))
    beside = decide(trial, "observing", pub(V1))  # an enforcing v1.0 is in force
    assert beside.action == "write" and "no enforcing version" not in beside.message
