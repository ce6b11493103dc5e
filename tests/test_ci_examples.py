"""The shipped pre-commit hook and example CI workflow run `contract review` as documented."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest
import yaml

from tests.gitrepo import GitRepo
from worker.cli.main import build_parser, main
from worker.cli.scenario import data_file

ROOT = Path(__file__).resolve().parents[1]
V1 = data_file("contracts/admin_boundaries.v1.yaml").read_text()
V1_1 = data_file("contracts/admin_boundaries.v1.1.yaml").read_text()


def _hook() -> dict[str, object]:
    hooks = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())
    (hook,) = [h for h in hooks if h["id"] == "contract-review"]
    return dict(hook)


def test_pre_commit_hook_reviews_the_staged_files_against_head(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    hook = _hook()
    assert hook["pass_filenames"] is False and hook["language"] == "python"
    argv = shlex.split(str(hook["entry"]))
    assert argv[0] == "contract-gate"
    repo = GitRepo(tmp_path / "repo")
    repo.commit("v1", "2026-11-01T00:00:00+00:00", {"contracts/ab.v1.yaml": V1})
    monkeypatch.chdir(repo.root)
    # a staged v1.1 that declares no class: the hook fails, naming the fix
    (repo.root / "contracts" / "ab.v1.1.yaml").write_text(V1_1.replace("change: tightening", ""))
    assert main([*argv[1:], "--contracts-dir", "contracts"]) == 1
    assert "FAIL: no declared change class: add `change: tightening`" in capsys.readouterr().out
    (repo.root / "contracts" / "ab.v1.1.yaml").write_text(V1_1)
    assert main([*argv[1:], "--contracts-dir", "contracts"]) == 0


def test_example_workflow_runs_a_valid_review_command() -> None:
    flow = yaml.safe_load((ROOT / "deploy" / "ci" / "contract-review.yml").read_text())
    steps = flow["jobs"]["review"]["steps"]
    checkout = next(s for s in steps if str(s.get("uses", "")).startswith("actions/checkout"))
    assert checkout["with"]["fetch-depth"] == 0  # BASE must be in the clone
    run = next(s["run"] for s in steps if s.get("id") == "review")
    line = next(x for x in run.splitlines() if x.startswith("contract-gate "))
    words = shlex.split(line.split(">")[0])
    args = build_parser().parse_args(words[1:])
    assert (args.contract_command, args.format, args.head) == ("review", "markdown", "HEAD")
    assert args.base == "origin/$GITHUB_BASE_REF"
    assert args.contracts_dir == "$CONTRACTS_DIR" and flow["env"]["CONTRACTS_DIR"] == "contracts"
    assert any("exit" in str(s.get("run", "")) for s in steps[-1:])
