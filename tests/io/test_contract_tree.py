"""Contract files of git revisions and directories (worker/io/contract_tree.py)."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

import pytest

from tests.gitrepo import GitRepo
from worker.cli.scenario import data_file
from worker.core.errors import ContractGateError
from worker.io.contract_tree import EMPTY_TREE, read_tree

V1 = data_file("contracts/admin_boundaries.v1.yaml").read_text()
V1_1 = data_file("contracts/admin_boundaries.v1.1.yaml").read_text()


@pytest.fixture
def repo(tmp_path: Path) -> GitRepo:
    r = GitRepo(tmp_path / "repo")
    r.commit(
        "v1",
        "2026-11-01T06:00:00+00:00",
        {"contracts/ab.v1.yaml": V1, "README.md": "x", "contracts/notes.txt": "not yaml"},
    )
    r.commit(
        "v1.1",
        "2026-11-02T06:00:00+01:00",
        {"contracts/ab.v1.1.yaml": V1_1, "evidence/ab.json": "{}"},
    )
    return r


def test_git_revision_files_dates_and_reader(repo: GitRepo) -> None:
    head = read_tree("HEAD", "contracts", repo=str(repo.root))
    assert sorted(head.files) == ["contracts/ab.v1.1.yaml", "contracts/ab.v1.yaml"]
    assert head.files["contracts/ab.v1.yaml"] == V1
    assert head.dates == {
        "contracts/ab.v1.yaml": datetime(2026, 11, 1, 6, tzinfo=timezone.utc),
        "contracts/ab.v1.1.yaml": datetime(2026, 11, 2, 5, tzinfo=timezone.utc),
    }
    assert head.read("evidence/ab.json") == "{}"
    assert head.read("./evidence/../evidence/ab.json") == "{}"
    assert head.read("../outside.json") is None and head.read("nope.json") is None
    assert head.label.startswith("HEAD (") and len(head.label) == len("HEAD (") + 13
    before = read_tree("HEAD~1", "contracts", repo=str(repo.root))
    assert sorted(before.files) == ["contracts/ab.v1.yaml"]
    assert before.read("evidence/ab.json") is None  # not in that revision


def test_empty_tree_and_missing_directory_have_no_files(repo: GitRepo) -> None:
    empty = read_tree(EMPTY_TREE, "contracts", repo=str(repo.root))
    assert (empty.files, empty.dates) == ({}, {})
    assert read_tree("HEAD", "elsewhere", repo=str(repo.root)).files == {}


def test_unknown_revision_is_an_error_naming_it(repo: GitRepo) -> None:
    with pytest.raises(ContractGateError) as err:
        read_tree("no-such-branch", "contracts", repo=str(repo.root))
    assert str(err.value).startswith(
        f"'no-such-branch' is neither a directory nor a git revision of {repo.root}"
    )


def test_directory_tree(tmp_path: Path) -> None:
    (tmp_path / "c" / "retired").mkdir(parents=True)
    (tmp_path / "c" / "a.yaml").write_text(V1)
    (tmp_path / "c" / "retired" / "b.yml").write_text(V1_1)
    (tmp_path / "c" / "x.json").write_text("{}")
    (tmp_path / "ev.json").write_text('{"a": 1}')
    tree = read_tree(str(tmp_path), "c")
    assert sorted(tree.files) == ["c/a.yaml", "c/retired/b.yml"]
    mtime = (tmp_path / "c" / "a.yaml").stat().st_mtime
    assert tree.dates["c/a.yaml"] == datetime.fromtimestamp(mtime, timezone.utc)
    assert tree.read("ev.json") == '{"a": 1}'
    assert tree.read("../ev.json") is None
    assert tree.read("c") is None  # a directory is no file


@pytest.mark.parametrize(
    ("link", "target"),
    [
        ("c/secret.yaml", "{outside}/secret.yaml"),  # absolute, out of the tree
        ("c/secret.yaml", "../../outside/secret.yaml"),  # relative, climbing out
        ("c/env.yaml", "/proc/self/environ"),  # a pseudo-file holding the CI's secrets
    ],
)
def test_a_contract_file_linking_out_of_the_directory_is_refused_naming_it(
    tmp_path: Path, link: str, target: str
) -> None:
    # found by a new-user session: `contract review BASE HEAD` of two directories (a pull
    # request checked out) read a symlink to a file anywhere on the CI machine, while the
    # tree's own reader refused any path out of the tree
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.yaml").write_text("layer: x\nversion: v1\nowner: TOKEN-123\n")
    root = tmp_path / "head"
    (root / "c").mkdir(parents=True)
    (root / "c" / "a.yaml").write_text(V1)
    (root / "c" / "same.yaml").symlink_to("a.yaml")  # inside the tree: read as any file
    (root / link).symlink_to(target.format(outside=outside))
    with pytest.raises(ContractGateError) as err:
        read_tree(str(root), "c")
    assert str(err.value).startswith(f"{root}/{link} links to ")
    assert "outside the tree" in str(err.value) and "TOKEN" not in str(err.value)
    (root / link).unlink()
    assert sorted(read_tree(str(root), "c").files) == ["c/a.yaml", "c/same.yaml"]
