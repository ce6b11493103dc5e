"""Per-major read paths, pure: which majors pass, which layers opt in."""

from __future__ import annotations

from worker.cli.scenario import data_file
from worker.core.contracts.parse import parse_contract
from worker.core.lifecycle.read_paths import opts_in, passing_majors, per_major_majors
from worker.core.model import ActiveVersion, VersionVerdict

V1 = data_file("contracts/admin_boundaries.v1.yaml").read_text()


def _verdict(version: str, mode: str, passed: bool) -> VersionVerdict:
    return VersionVerdict("roads", version, mode, passed, ())  # type: ignore[arg-type]


def test_passing_majors_needs_every_enforcing_revision_and_ignores_observing() -> None:
    verdicts = [
        _verdict("v7.0", "enforcing", True),
        _verdict("v7.1", "observing", False),  # observing never closes a path
        _verdict("v8.0", "enforcing", False),
        _verdict("v9.0", "enforcing", True),
        _verdict("v9.1", "enforcing", False),  # one enforcing revision broke: v9 fails
        _verdict("v10.0", "observing", True),  # observing never opens one either
    ]
    assert passing_majors(verdicts) == (7,)
    assert passing_majors([]) == ()


def test_opt_in_from_any_active_version_and_majors_of_the_layer() -> None:
    v7 = parse_contract(V1.replace("version: v1\n", "version: v7\n"))
    v8 = parse_contract(V1.replace("version: v1\n", "version: v8\nread_paths: per_major\n"))
    v81 = parse_contract(V1.replace("version: v1\n", "version: v8.1\n"))
    assert (v7.read_paths, v8.read_paths) == ("shared", "per_major")
    assert not opts_in([v7, v81]) and opts_in([v7, v8])
    active = [ActiveVersion(v7), ActiveVersion(v8, "observing"), ActiveVersion(v81)]
    assert per_major_majors(active) == (7, 8)
    assert per_major_majors([ActiveVersion(v7)]) == ()


def test_read_paths_is_in_the_digest_and_a_minor_difference() -> None:
    from worker.core.contracts.classify import classify

    shared = parse_contract(V1.replace("version: v1\n", "version: v1.1\nread_paths: shared\n"))
    assert shared.digest == parse_contract(V1.replace("version: v1\n", "version: v1.1\n")).digest
    per = parse_contract(V1.replace("version: v1\n", "version: v1.1\nread_paths: per_major\n"))
    assert per.digest != shared.digest
    result = classify(parse_contract(V1), per)
    assert result.class_ == "minor"
    assert [(d.kind, d.class_) for d in result.differences] == [("read_paths", "minor")]
