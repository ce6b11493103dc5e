"""`contract-gate contract review` on a temporary git history of real contract changes, on
directories, and on this repository's own contracts (the CI gate over worker/data/contracts).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.gitrepo import GitRepo, git_available
from worker.cli.main import main
from worker.cli.scenario import data_file
from worker.io.contract_tree import EMPTY_TREE

REPO_ROOT = Path(__file__).resolve().parents[2]
SHIPPED = "worker/data/contracts"
V1 = data_file("contracts/admin_boundaries.v1.yaml").read_text()
V1_1 = data_file("contracts/admin_boundaries.v1.1.yaml").read_text()
NYC = data_file("contracts/nyc_boroughs.v1.yaml").read_text()
EVIDENCE = {
    "layer": "admin_boundaries",
    "version": "v1.1",
    "cadence": "PT6H",
    "cadence_s": 21600.0,
    "span_s": 25200.0,  # 7 h: more than one PT6H cycle
    "evaluated": 29,
}


def _v2() -> str:
    text = V1.replace("version: v1\n", "version: v2\nchange: major\n")
    return text.replace("region: [-180, -90, 180, 90]", "region: [-180, -60, 180, 90]")


@pytest.fixture
def history(tmp_path: Path) -> tuple[GitRepo, list[str]]:
    """c0 first versions; c1 v1.1 observing; c2 its promotion; c3 v2 (major); c4 a bad PR."""
    repo = GitRepo(tmp_path / "repo")
    c = "contracts/"
    commits = [
        repo.commit(
            "first versions",
            "2026-11-01T00:00:00+00:00",
            {c + "admin_boundaries.v1.yaml": V1, c + "nyc_boroughs.v1.yaml": NYC},
        ),
        repo.commit(
            "v1.1 observing", "2026-11-02T00:00:00+00:00", {c + "admin_boundaries.v1.1.yaml": V1_1}
        ),
        repo.commit(
            "promote v1.1",
            "2026-11-03T00:00:00+00:00",
            {
                c + "admin_boundaries.v1.1.yaml": V1_1.replace(
                    "mode: observing ", "evidence: evidence/ab.v1.1.json\nmode: enforcing "
                ),
                "evidence/ab.v1.1.json": json.dumps(EVIDENCE),
            },
        ),
        repo.commit("v2", "2026-11-04T00:00:00+00:00", {c + "admin_boundaries.v2.yaml": _v2()}),
        repo.commit(
            "a bad PR",
            "2026-11-04T06:00:00+00:00",
            {
                c + "admin_boundaries.v1.yaml": V1.replace("max: 1000", "max: 900"),
                c + "admin_boundaries.v2.1.yaml": _v2()
                .replace("version: v2\nchange: major", "version: v2.1\nchange: minor")
                .replace("max: 1000", "max: 500"),
            },
            remove=(c + "nyc_boroughs.v1.yaml",),
        ),
    ]
    return repo, commits


def _review(repo: GitRepo, base: str, head: str, *extra: str) -> list[str]:
    return ["contract", "review", base, head, "--repo", str(repo.root), *extra]


def test_each_good_step_of_the_history_passes(
    history: tuple[GitRepo, list[str]], capsys: pytest.CaptureFixture[str]
) -> None:
    repo, c = history
    assert main(_review(repo, c[0], c[1])) == 0
    out = capsys.readouterr().out
    assert "admin_boundaries v1.1 (contracts/admin_boundaries.v1.1.yaml): added" in out
    assert "  required version v1.1; declared change tightening (agrees)" in out
    assert main(_review(repo, c[1], c[2], "--format", "json")) == 0
    doc = json.loads(capsys.readouterr().out)
    (v,) = doc["versions"]
    assert (v["status"], v["mode"], v["evidence"]) == (
        "changed",
        "enforcing",
        "evidence/ab.v1.1.json",
    )
    assert (v["classification"]["class"], v["failures"]) == ("tightening", [])


def test_overlap_age_warning_from_the_commit_dates(
    history: tuple[GitRepo, list[str]], capsys: pytest.CaptureFixture[str]
) -> None:
    repo, c = history
    argv = _review(repo, c[2], c[3], "--now", "2026-11-05T00:00:00Z")
    assert main(argv) == 0  # warnings do not fail the review
    out = capsys.readouterr().out
    assert (
        "WARNING: admin_boundaries: overlap of v1, v2 open for 4.0 cadence cycles (since "
        "2026-11-04T00:00:00+00:00, the date of contracts/admin_boundaries.v2.yaml)"
    ) in out
    assert main(_review(repo, c[2], c[3], "--now", "2026-11-04T11:00:00Z")) == 0
    assert "WARNING" not in capsys.readouterr().out


def test_bad_pull_request_fails_with_one_line_per_failure(
    history: tuple[GitRepo, list[str]], capsys: pytest.CaptureFixture[str]
) -> None:
    repo, c = history
    assert main(_review(repo, c[3], c[4], "--now", "2026-11-04T07:00:00Z")) == 1
    out = capsys.readouterr().out
    fails = [line.strip() for line in out.splitlines() if line.strip().startswith("FAIL:")]
    assert len(fails) == 3
    assert fails[0].startswith(
        "FAIL: edit in place: admin_boundaries v1.0 exists at BASE with another document"
    )
    assert fails[1] == (
        "FAIL: declares change: minor, but the change v2.0 -> v2.1 is tightening "
        "(tightening differences; size: max 1000 -> 500 (stricter))"
    )
    assert fails[2].startswith("FAIL: nyc_boroughs v1.0 removed: a version file is never")
    assert out.rstrip().endswith("FAILED: 3 version(s) reviewed, 3 failure(s), 0 warning(s)")


def test_markdown_for_a_pull_request_comment(
    history: tuple[GitRepo, list[str]], capsys: pytest.CaptureFixture[str]
) -> None:
    repo, c = history
    assert main(_review(repo, c[3], c[4], "--format", "markdown")) == 1
    md = capsys.readouterr().out
    assert md.startswith("### :x: contract review `")
    assert "| file | version | status | computed class | required | declared | result |" in md
    assert (
        "| `contracts/admin_boundaries.v2.1.yaml` | admin_boundaries v2.1 | added | "
        "tightening | v2.1 | minor (disagrees) | 1 failure(s) |"
    ) in md
    assert "<details><summary>admin_boundaries v2.0 -> v2.1: tightening</summary>" in md
    assert "| tightening | size | feature_count | max 1000 -> 500 (stricter) |" in md


def test_unknown_revision_is_exit_2(
    history: tuple[GitRepo, list[str]], capsys: pytest.CaptureFixture[str]
) -> None:
    repo, _ = history
    assert main(_review(repo, "nope", "HEAD")) == 2
    assert "'nope' is neither a directory nor a git revision" in capsys.readouterr().err


def test_a_contracts_dir_with_no_contract_at_either_side_is_exit_2(
    history: tuple[GitRepo, list[str]], capsys: pytest.CaptureFixture[str]
) -> None:
    # found by a new-user session: --contracts-dir misspelt passed ("0 version(s) reviewed")
    repo, c = history
    argv = [*_review(repo, EMPTY_TREE, c[1]), "--contracts-dir", "contractz"]
    assert main(argv) == 2
    assert "no contract files (*.yaml, *.yml) under 'contractz' at " in capsys.readouterr().err
    assert main(_review(repo, EMPTY_TREE, c[1])) == 0  # the right directory still passes


def test_two_directories(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base, head = tmp_path / "base", tmp_path / "head"
    base.mkdir()
    head.mkdir()
    (base / "ab.v1.yaml").write_text(V1)
    (head / "ab.v1.yaml").write_text(V1)
    (head / "ab.v1.1.yaml").write_text(V1_1.replace("change: tightening", "change: major"))
    assert main(["contract", "review", str(base), str(head)]) == 1
    out = capsys.readouterr().out
    assert "FAIL: declares change: major, but the change v1.0 -> v1.1 is tightening" in out


def test_a_version_moved_under_retired_is_named_so_not_a_first_version(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # a fresh-user finding: v1.0 moved into retired/ read "first version of ab"
    base, head = tmp_path / "base", tmp_path / "head"
    base.mkdir()
    (head / "retired").mkdir(parents=True)
    (base / "ab.v1.yaml").write_text(V1)
    (base / "ab.v1.1.yaml").write_text(V1_1)
    (head / "retired" / "ab.v1.yaml").write_text(V1)
    (head / "ab.v1.1.yaml").write_text(V1_1)
    assert main(["contract", "review", str(base), str(head)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[:2] == [
        "admin_boundaries v1.0 (retired/ab.v1.yaml): moved",
        "  the same document under a new path (under retired/: a retired version): nothing "
        "to declare",
    ]
    assert not any("first version" in line for line in lines)


# --- this repository's own contracts: `contract review` as part of the suite (and CI) ---


def test_shipped_contracts_pass_review_against_an_empty_base(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The working tree's contracts, every file reviewed as added (no git needed)."""
    empty = tmp_path / "empty"
    empty.mkdir()
    argv = ["contract", "review", str(empty), str(REPO_ROOT), "--contracts-dir", SHIPPED]
    assert main(argv) == 0, capsys.readouterr().out
    out = capsys.readouterr().out
    assert "admin_boundaries v1.1 (worker/data/contracts/admin_boundaries.v1.1.yaml)" in out
    assert "3 version(s) reviewed, 0 failure(s)" in out


def _git_ok(*args: str) -> bool:
    if not git_available():
        return False
    done = subprocess.run(["git", "-C", str(REPO_ROOT), *args], capture_output=True)
    return done.returncode == 0


@pytest.mark.skipif(
    not _git_ok("rev-parse", "--verify", "--quiet", "HEAD^{commit}"),
    reason="not a git checkout (e.g. an unpacked sdist)",
)
def test_shipped_contracts_pass_review_in_git(capsys: pytest.CaptureFixture[str]) -> None:
    """HEAD against git's empty tree (works in a shallow clone too), and against its parent
    when the clone has it: a commit that edits a shipped version in place fails here."""
    base = ["contract", "review", "--repo", str(REPO_ROOT), "--contracts-dir", SHIPPED]
    assert main([*base[:2], EMPTY_TREE, "HEAD", *base[2:]]) == 0, capsys.readouterr().out
    if _git_ok("rev-parse", "--verify", "--quiet", "HEAD~1^{commit}"):
        assert main([*base[:2], "HEAD~1", "HEAD", *base[2:]]) == 0, capsys.readouterr().out
