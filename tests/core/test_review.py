"""Contract review (worker/core/contracts/review.py) on the shipped contracts and variants of
them."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone

import pytest

from worker.cli.scenario import data_file
from worker.core.contracts.parse import parse_contract
from worker.core.contracts.review import Review, review, review_to_json
from worker.core.errors import ContractError
from worker.io.reports.review import render_review_markdown, render_review_text

D = "contracts/"
V1 = data_file("contracts/admin_boundaries.v1.yaml").read_text()
V1_1 = data_file("contracts/admin_boundaries.v1.1.yaml").read_text()
NYC = data_file("contracts/nyc_boroughs.v1.yaml").read_text()
NOW = datetime(2026, 12, 1, tzinfo=timezone.utc)


def variant(
    text: str, version: str, *, change: str | None = None, replace: dict[str, str] | None = None
) -> str:
    """``text`` renumbered to ``version`` with an optional ``change:`` and replacements."""
    lines = [
        line for line in text.splitlines() if not line.startswith(("change:", "mode:", "evidence:"))
    ]
    out = "\n".join(lines) + "\n"
    out = out.replace(f"version: {_version_of(text)}\n", f"version: {version}\n")
    for old, new in (replace or {}).items():
        assert old in out, old
        out = out.replace(old, new)
    if change is not None:
        out = out.replace(f"version: {version}\n", f"version: {version}\nchange: {change}\n")
    return out


def _version_of(text: str) -> str:
    return next(line.split()[1] for line in text.splitlines() if line.startswith("version:"))


def with_fields(text: str, **fields: str) -> str:
    version = _version_of(text)
    extra = "".join(f"{k}: {v}\n" for k, v in fields.items())
    return text.replace(f"version: {version}\n", f"version: {version}\n{extra}", 1)


BASE = {D + "admin_boundaries.v1.yaml": V1, D + "nyc_boroughs.v1.yaml": NYC}
#: v1 -> v1.1 drops a domain code: a tightening
TIGHT = variant(
    V1, "v1.1", change="tightening", replace={"      North America: North America\n": ""}
)
#: v1 -> v2 redraws the extent: major
MAJOR = variant(
    V1,
    "v2",
    change="major",
    replace={"region: [-180, -90, 180, 90]": "region: [-170, -90, 180, 90]"},
)
#: v1 -> v1.1 adds a domain code: minor
LOOSE = variant(
    V1,
    "v1.1",
    change="minor",
    replace={"      Asia: Asia\n": "      Asia: Asia\n      Zealandia: Zealandia\n"},
)


def run(head: dict[str, str], base: dict[str, str] | None = None, **kw: object) -> Review:
    return review(BASE if base is None else base, head, now=NOW, **kw)  # type: ignore[arg-type]


def only(r: Review) -> list[str]:
    assert len(r.versions) == 1, r.versions
    return list(r.versions[0].failures)


def test_shipped_contracts_from_an_empty_base_pass() -> None:
    head = {
        D + "admin_boundaries.v1.yaml": V1,
        D + "admin_boundaries.v1.1.yaml": V1_1,
        D + "nyc_boroughs.v1.yaml": NYC,
    }
    r = run(head, base={})
    assert [(v.layer, v.version, v.status) for v in r.versions] == [
        ("admin_boundaries", "v1.0", "added"),
        ("admin_boundaries", "v1.1", "added"),
        ("nyc_boroughs", "v1.0", "added"),
    ]
    v11 = r.versions[1]
    assert v11.classification is not None and v11.classification.class_ == "tightening"
    assert (v11.predecessor, v11.required, v11.declared, v11.agrees) == (
        "v1.0",
        "v1.1",
        "tightening",
        True,
    )
    assert v11.mode == "observing"
    assert not r.failed and r.warnings == ()


def test_unchanged_files_are_not_reviewed() -> None:
    assert run(dict(BASE)).versions == ()


@pytest.mark.parametrize(
    ("text", "declared", "computed", "version"),
    [
        (TIGHT, "tightening", "tightening", "v1.1"),
        (MAJOR, "major", "major", "v2.0"),
        (LOOSE, "minor", "minor", "v1.1"),
    ],
)
def test_declared_class_agreeing_passes(
    text: str, declared: str, computed: str, version: str
) -> None:
    r = run({**BASE, D + "new.yaml": text})
    v = r.versions[0]
    assert v.classification is not None and v.classification.class_ == computed
    assert (v.required, v.declared, v.agrees, v.failures) == (version, declared, True, ())


def test_missing_declared_class_fails_naming_the_computed_one() -> None:
    text = variant(TIGHT, "v1.1")
    assert only(run({**BASE, D + "v11.yaml": text})) == [
        "no declared change class: add `change: tightening` (computed for v1.0 -> v1.1; "
        "continent: domain codes removed: 'North America')"
    ]


def test_declared_class_disagreeing_fails() -> None:
    text = variant(TIGHT, "v1.1", change="minor")
    r = run({**BASE, D + "v11.yaml": text})
    assert only(r) == [
        "declares change: minor, but the change v1.0 -> v1.1 is tightening (tightening "
        "differences; continent: domain codes removed: 'North America')"
    ]
    assert r.versions[0].agrees is False


def test_number_that_does_not_follow_the_class_fails() -> None:
    # a major change numbered as a minor revision, and a minor numbered as a major
    major_as_minor = variant(MAJOR, "v1.1", change="major")
    assert only(run({**BASE, D + "x.yaml": major_as_minor})) == [
        "a major change must be v2.0, not v1.1 (after v1.0; docs/contracts.md, lifecycle policy)"
    ]
    minor_as_major = variant(LOOSE, "v2", change="minor")
    assert only(run({**BASE, D + "x.yaml": minor_as_major})) == [
        "a minor change must be v1.1, not v2.0 (after v1.0; docs/contracts.md, lifecycle policy)"
    ]


def test_a_revision_below_an_existing_one_must_take_the_next_number() -> None:
    base = {**BASE, D + "v12.yaml": variant(LOOSE, "v1.2", change="minor")}
    # v1.1 filled in after v1.2 exists: the next revision of major 1 is v1.3
    r = run({**base, D + "v11.yaml": LOOSE}, base=base)
    assert only(r) == [
        "a minor change must be v1.3, not v1.1 (after v1.0; docs/contracts.md, lifecycle policy)"
    ]


def test_two_versions_added_at_once_chain() -> None:
    v12 = variant(TIGHT, "v1.2", change="tightening", replace={"      Europe: Europe\n": ""})
    r = run({**BASE, D + "v11.yaml": TIGHT, D + "v12.yaml": v12})
    assert [(v.version, v.predecessor, v.required, v.failures) for v in r.versions] == [
        ("v1.1", "v1.0", "v1.1", ()),
        ("v1.2", "v1.1", "v1.2", ()),
    ]


def test_edit_in_place_fails_with_the_change_and_the_number_it_needs() -> None:
    edited = V1.replace("max: 1000", "max: 900")
    r = run({**BASE, D + "admin_boundaries.v1.yaml": edited})
    (v,) = r.versions
    assert v.status == "changed" and v.classification is not None
    assert v.classification.class_ == "tightening"
    old, new = parse_contract(V1).digest[:12], parse_contract(edited).digest[:12]
    assert v.failures == (
        f"edit in place: admin_boundaries v1.0 exists at BASE with another document (digest "
        f"{old}, HEAD {new}); a published version is immutable: keep it and give the "
        "tightening change a new version (v1.1)",
    )


def test_comment_only_change_and_move_are_not_failures() -> None:
    head = {
        D + "admin_boundaries.v1.yaml": "# reviewed\n" + V1,
        D + "retired/nyc_boroughs.v1.yaml": NYC,
    }
    r = run(head)
    assert [(v.version, v.status, v.failures) for v in r.versions] == [
        ("v1.0", "changed", ()),
        ("v1.0", "moved", ()),
    ]


def test_removed_version_fails() -> None:
    r = run({D + "admin_boundaries.v1.yaml": V1})
    assert only(r) == [
        "nyc_boroughs v1.0 removed: a version file is never deleted; retire the major with "
        "`contract-gate contract retire nyc_boroughs v1` and keep the file (move it under "
        "retired/)"
    ]
    assert r.versions[0].status == "removed"


def test_invalid_and_duplicate_files_fail() -> None:
    bad = V1.replace("cadence: PT6H", "cadence: six hours")
    r = run({**BASE, D + "bad.yaml": variant(bad, "v1.1", change="minor"), D + "copy.yaml": V1})
    failures = {v.path: v.failures for v in r.versions}
    assert failures[D + "bad.yaml"][0].startswith(
        f"not a valid contract: {D}bad.yaml: cadence: invalid value 'six hours'"
    )
    assert failures[D + "copy.yaml"] == (
        f"the same layer and version as {D}admin_boundaries.v1.yaml: one file per version",
    )


def _evidence(layer: str = "admin_boundaries", version: str = "v1.1", span_h: float = 7.0) -> str:
    return json.dumps(
        {"layer": layer, "version": version, "span_s": span_h * 3600, "cadence": "PT6H"}
    )


ENFORCING = with_fields(TIGHT, mode="enforcing", evidence="evidence/ab.v1.1.json")


def test_enforcing_tightening_with_a_full_cycle_of_evidence_passes() -> None:
    files = {"evidence/ab.v1.1.json": _evidence()}
    r = run({**BASE, D + "v11.yaml": ENFORCING}, read_evidence=files.get)
    assert only(r) == []


@pytest.mark.parametrize(
    ("evidence", "failure"),
    [
        (
            None,
            "evidence evidence/ab.v1.1.json not found at HEAD (a path from the repository "
            "root; write it with `contract-gate contract evidence admin_boundaries v1.1 "
            "--format json -o FILE`, committed, or a URL)",
        ),
        (
            _evidence(span_h=3),
            "evidence evidence/ab.v1.1.json spans 3.0 h (first to last evaluation), less than "
            "one cadence cycle (PT6H = 6.0 h); 3.0 h missing",
        ),
        (
            _evidence(version="v1"),
            "evidence evidence/ab.v1.1.json is of admin_boundaries v1, not admin_boundaries "
            "v1.1: link this version's own observing evidence",
        ),
        (
            _evidence(layer="nyc_boroughs"),
            "evidence evidence/ab.v1.1.json is of nyc_boroughs v1.1, not admin_boundaries "
            "v1.1: link this version's own observing evidence",
        ),
        (
            "{not json",
            "evidence evidence/ab.v1.1.json is not JSON (Expecting property name enclosed in "
            "double quotes: line 1 column 2 (char 1)); expected `contract-gate contract "
            "evidence admin_boundaries v1.1 --format json -o FILE`, committed, or a URL",
        ),
        (
            '{"layer": "admin_boundaries"}',
            "evidence evidence/ab.v1.1.json is not `contract evidence --format json` output "
            "(missing or bad version, span_s); expected `contract-gate contract evidence "
            "admin_boundaries v1.1 --format json -o FILE`, committed, or a URL",
        ),
    ],
)
def test_enforcing_tightening_with_bad_evidence_fails(evidence: str | None, failure: str) -> None:
    files = {} if evidence is None else {"evidence/ab.v1.1.json": evidence}
    assert only(run({**BASE, D + "v11.yaml": ENFORCING}, read_evidence=files.get)) == [failure]


def test_enforcing_tightening_without_evidence_fails_and_url_warns() -> None:
    bare = with_fields(TIGHT, mode="enforcing")
    (failure,) = only(run({**BASE, D + "v11.yaml": bare}))
    assert failure.startswith("a tightening declared `mode: enforcing` without `evidence:`")
    url = with_fields(TIGHT, mode="enforcing", evidence="https://ci.example/ev.json")
    r = run({**BASE, D + "v11.yaml": url})
    assert only(r) == [] and r.versions[0].warnings == (
        "evidence https://ci.example/ev.json is a URL: its layer, version and span are not checked",
    )


def test_promotion_in_git_is_metadata_not_an_edit_in_place() -> None:
    # v1.1 was published observing; the PR that promotes it adds mode and evidence only
    base = {**BASE, D + "v11.yaml": with_fields(TIGHT, mode="observing")}
    assert parse_contract(base[D + "v11.yaml"]).digest == parse_contract(ENFORCING).digest
    head = {**BASE, D + "v11.yaml": ENFORCING}
    r = run(head, base=base, read_evidence={"evidence/ab.v1.1.json": _evidence(span_h=2)}.get)
    (v,) = r.versions
    assert v.status == "changed" and v.agrees is True
    assert v.failures == (
        "evidence evidence/ab.v1.1.json spans 2.0 h (first to last evaluation), less than one "
        "cadence cycle (PT6H = 6.0 h); 4.0 h missing",
    )


def test_a_class_declared_on_a_published_version_must_agree() -> None:
    base = {**BASE, D + "v11.yaml": variant(TIGHT, "v1.1")}
    r = run({**BASE, D + "v11.yaml": variant(TIGHT, "v1.1", change="minor")}, base=base)
    (v,) = r.versions
    assert (v.status, v.agrees) == ("changed", False)
    assert v.failures[0].startswith("declares change: minor, but the change v1.0 -> v1.1 is")
    legacy = run({**BASE, D + "v11.yaml": "# note\n" + base[D + "v11.yaml"]}, base=base)
    assert legacy.versions[0].failures == ()  # undeclared and published before: not required


def test_more_than_two_active_versions_warns() -> None:
    observing = with_fields(TIGHT, mode="observing")
    head = {**BASE, D + "v11.yaml": observing, D + "v2.yaml": MAJOR}
    r = run(head)
    assert not r.failed
    assert r.warnings[0].startswith(
        "admin_boundaries: 3 active versions (v1.0, v1.1, v2.0): a stalled migration"
    )
    # v1.1 enforcing supersedes v1.0: two active, no warning; retired files do not count
    head[D + "v11.yaml"] = TIGHT
    assert run(head).warnings == ()
    head[D + "retired/v1.yaml"] = head.pop(D + "admin_boundaries.v1.yaml")
    assert run(head).warnings == ()


def test_overlap_older_than_two_cycles_warns_from_the_file_dates() -> None:
    head = {**BASE, D + "v2.yaml": MAJOR}
    added = NOW - timedelta(hours=13)  # 13 h at PT6H = 2.17 cycles
    r = run(head, dates={D + "v2.yaml": added})
    assert r.warnings == (
        "admin_boundaries: overlap of v1, v2 open for 2.2 cadence cycles (since "
        "2026-11-30T11:00:00+00:00, the date of contracts/v2.yaml): more than two; move the "
        "consumers of v1 and retire it",
    )
    assert run(head, dates={D + "v2.yaml": NOW - timedelta(hours=11)}).warnings == ()
    assert run(head).warnings == ()  # no date, no figure


def test_first_version_needs_no_class_and_a_declared_one_is_a_warning() -> None:
    roads = V1.replace("layer: admin_boundaries", "layer: roads")
    r = run({**BASE, D + "roads.yaml": with_fields(roads, change="minor")})
    (v,) = r.versions
    assert (v.classification, v.required, v.failures) == (None, None, ())
    assert v.warnings == (
        "declares change: minor, but it is the first version of roads (nothing to compare "
        "with; the field is optional here)",
    )


def test_json_text_and_markdown_renderings() -> None:
    r = run({**BASE, D + "v11.yaml": variant(TIGHT, "v1.1", change="minor")})
    doc = review_to_json(r)
    assert doc["failed"] is True and doc["failures"] == 1
    (v,) = doc["versions"]
    assert v["classification"]["class"] == "tightening"
    assert {
        "clause": "continent",
        "kind": "domain",
        "class": "tightening",
        "reason": "domain codes removed: 'North America'",
    } in v["classification"]["differences"]
    assert (v["required_version"], v["declared"], v["agrees"]) == ("v1.1", "minor", False)
    text = render_review_text(r, "main", "pr")
    assert "  v1.0 -> v1.1: change class tightening" in text
    assert "  required version v1.1; declared change minor (disagrees)" in text
    assert text.endswith(
        "contract review main -> pr: FAILED: 1 version(s) reviewed, 1 failure(s), 0 warning(s)"
    )
    md = render_review_markdown(r, "main", "pr")
    assert (
        "| `contracts/v11.yaml` | admin_boundaries v1.1 | added | tightening | v1.1 | "
        "minor (disagrees) | 1 failure(s) |"
    ) in md
    assert "| tightening | continent | domain | domain codes removed: 'North America' |" in md
    assert md.startswith("### :x: contract review `main` -> `pr`: FAILED")


def test_review_fields_are_validated_and_outside_the_digest() -> None:
    with pytest.raises(ContractError) as err:
        parse_contract(with_fields(V1, change="breaking"), source="x.yaml")
    assert str(err.value).startswith("x.yaml: change: invalid value 'breaking'")
    assert "declare the change class against the previous version" in str(err.value)
    plain = parse_contract(V1)
    meta = parse_contract(with_fields(V1, change="minor", mode="enforcing", evidence="e.json"))
    assert meta.digest == plain.digest
    assert (meta.change, meta.declared_mode, meta.evidence) == ("minor", "enforcing", "e.json")
    with pytest.raises(ContractError) as err:
        parse_contract(with_fields(V1, mode="soft"), source="x.yaml")
    assert str(err.value) == (
        "x.yaml: mode: invalid value 'soft' ('soft' is not one of ['enforcing', 'observing']); "
        "expected enforcing or observing"
    )


def test_evidence_span_is_taken_from_its_evaluation_times_not_its_span_field() -> None:
    # found by a new-user session: span_s edited to 99999 passed with evaluations 26 s apart
    doc = json.loads(_evidence(span_h=27.7))
    doc |= {"first_evaluated_at": "2026-11-30T10:00:00+00:00",
            "last_evaluated_at": "2026-11-30T10:00:26+00:00"}  # fmt: skip
    files = {"evidence/ab.v1.1.json": json.dumps(doc)}
    failures = only(run({**BASE, D + "v11.yaml": ENFORCING}, read_evidence=files.get))
    assert failures[0].startswith(
        "evidence evidence/ab.v1.1.json says span_s 99720 but its evaluations run from "
        "2026-11-30T10:00:00+00:00 to 2026-11-30T10:00:26+00:00 (26 s): the file was edited"
    )
    assert failures[1].endswith("spans 26 s (first to last evaluation), less than one cadence "
                                "cycle (PT6H = 6.0 h); 6.0 h missing")  # fmt: skip


def test_a_tightening_that_shortens_its_cadence_needs_a_cycle_of_the_old_cadence() -> None:
    # found by a new-user session: cadence PT6H -> PT20S with max_age tightened passed on
    # 26 s of evidence
    quick = ENFORCING.replace("cadence: PT6H", "cadence: PT20S")
    assert quick != ENFORCING
    files = {"evidence/ab.v1.1.json": _evidence(span_h=1)}
    assert only(run({**BASE, D + "v11.yaml": quick}, read_evidence=files.get)) == [
        "evidence evidence/ab.v1.1.json spans 1.0 h (first to last evaluation), less than one "
        "cadence cycle of v1.0, which it tightens (PT6H = 6.0 h); 5.0 h missing"
    ]
