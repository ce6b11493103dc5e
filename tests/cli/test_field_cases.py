"""Field cases (tests/cases/, see its README): each folder's `contract-gate check` call,
run in-process, reaches the verdict its expected.json names."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest

from worker.cli.main import main

CASES = Path(__file__).resolve().parents[1] / "cases"


def _argv(case: Path) -> list[str]:
    """The arguments after ``contract-gate`` on the ``exec`` line of the case's cmd.sh."""
    for line in (case / "cmd.sh").read_text().splitlines():
        words = shlex.split(line)
        if words[:2] == ["exec", "contract-gate"]:
            return words[2:]
    raise AssertionError(f"{case.name}/cmd.sh has no 'exec contract-gate' line")


def _refuse(token: str) -> None:
    raise AssertionError(f"non-JSON token {token} in the output")


def _broken(out: dict[str, object]) -> list[str]:
    versions = out.get("versions", [])
    assert isinstance(versions, list)
    return sorted(
        {c["name"] for v in versions for c in v.get("clauses", []) if c.get("result") == "break"}
    )


@pytest.mark.parametrize(
    "case", sorted(p.name for p in CASES.iterdir() if (p / "expected.json").exists())
)
def test_field_case(
    case: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = CASES / case
    want = json.loads((folder / "expected.json").read_text())
    monkeypatch.chdir(folder)
    code = main(_argv(folder))
    captured = capsys.readouterr()
    if captured.out.strip():  # JSON output never carries the non-JSON tokens NaN/Infinity
        json.loads(captured.out, parse_constant=_refuse)
    if "exit" in want:
        assert code == want["exit"], captured.out + captured.err
        assert captured.err.strip(), "a refusal says why on stderr"
        return
    if "or_exit" in want and code == want["or_exit"]:
        assert captured.err.strip(), "a refusal says why on stderr"
        return
    out = json.loads(captured.out, parse_constant=_refuse)
    assert out["decision"] == want["decision"], want["note"]
    if want.get("match") == "decision":  # only the decision counts (see the README)
        return
    must = set(want["broken"])  # every clause that must break, and only those that may
    assert must <= set(_broken(out)) <= must | set(want.get("may_break", [])), want["note"]
