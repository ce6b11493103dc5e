"""Errors name their field and fix where they are raised (issue 28 §2).

Every ``raise`` of an error of :mod:`worker.core.errors` in :mod:`worker.cli`,
:mod:`worker.control` and :mod:`worker.ops` (behind the quarantine and verify commands)
states ``field=`` or ``fix=`` (or both), so ``--format json`` errors carry them instead of
guessing from the message; the guess (the first ``--flag``, the clause after the last
``"; "``) is left only for errors that state neither.
"""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

import worker.core.errors as errors
from tests.cli.test_json_output import AB_V1, BATCH, NYC, RECENT
from worker.cli.main import main
from worker.cli.output import error_document
from worker.core.errors import ContractGateError, PolicyError

ROOT = Path(__file__).resolve().parents[2]
WALKED = ("worker/cli", "worker/control", "worker/ops")

#: Raise sites allowed to state neither field nor fix, ``path:function`` -> why. Empty: every
#: error raised in the command line, the control plane and ops is about something the user
#: can change.
ALLOWED: dict[str, str] = {}


def _error_class(node: ast.expr) -> type[ContractGateError] | None:
    """The error class ``node`` (``PolicyError`` or ``errors.PolicyError``) names, or None."""
    name = node.id if isinstance(node, ast.Name) else getattr(node, "attr", None)
    found = getattr(errors, name, None) if name else None
    if isinstance(found, type) and issubclass(found, ContractGateError):
        return found
    return None


def _raise_sites() -> list[tuple[str, int, str, set[str]]]:
    """``(path, line, function, keywords)`` of every ``raise SomeError(...)`` walked."""
    sites = []
    for folder in WALKED:
        for path in sorted((ROOT / folder).rglob("*.py")):
            tree = ast.parse(path.read_text(), str(path))
            for func in ast.walk(tree):
                if not isinstance(func, ast.FunctionDef | ast.AsyncFunctionDef):
                    continue
                for node in ast.walk(func):
                    if not (isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call)):
                        continue
                    if _error_class(node.exc.func) is None:
                        continue
                    keywords = {k.arg for k in node.exc.keywords if k.arg}
                    rel = str(path.relative_to(ROOT))
                    sites.append((rel, node.lineno, func.name, keywords))
    return sites


def test_every_raise_site_of_cli_and_control_states_its_field_or_fix() -> None:
    sites = _raise_sites()
    # the walk finds the sites (a walk that finds nothing would pass anything)
    assert len({(p, line) for p, line, _, _ in sites}) >= 50
    missing = [
        f"{path}:{line} ({func})"
        for path, line, func, keywords in sites
        if not keywords & {"field", "fix"} and f"{path}:{func}" not in ALLOWED
    ]
    assert missing == [], "raise sites without field= or fix=: " + ", ".join(missing)


def test_the_walk_sees_a_raise_without_field_or_fix() -> None:
    source = (
        "def f():\n    raise PolicyError('x')\n\ndef g():\n    raise PolicyError('y', fix='z')\n"
    )
    calls = [n for n in ast.walk(ast.parse(source)) if isinstance(n, ast.Raise)]
    assert [_error_class(c.exc.func) for c in calls if isinstance(c.exc, ast.Call)] == [
        PolicyError,
        PolicyError,
    ]
    assert [{k.arg for k in c.exc.keywords} for c in calls if isinstance(c.exc, ast.Call)] == [
        set(),
        {"fix"},
    ]


def test_field_and_fix_leave_the_message_alone_and_the_guess_is_only_a_fallback() -> None:
    stated = PolicyError("v9 is not published; give a published version", field="version")
    assert str(stated) == "v9 is not published; give a published version"
    # field stated, fix not: the fix stays null (no guess mixed into what the raiser said)
    assert error_document(stated) == {"error": str(stated), "field": "version", "fix": None}
    bare = ContractGateError("--last must be at least 1 (got 0); give 1 or more")
    assert error_document(bare) == {
        "error": str(bare),
        "field": "--last",
        "fix": "give 1 or more",
    }


@pytest.mark.parametrize(
    ("extra", "line", "field", "fix"),
    [
        (
            ["--id-column", "nope"],
            f"--id-column 'nope' is not a column of {BATCH} (columns: parcel_id)",
            "--id-column",
            "name a column of the batch file, or leave --id-column out",
        ),
        (
            ["--contract", str(NYC)],
            "nyc_boroughs/v1.0 given more than once; pass each version once (a version is one "
            "document: two files with the same layer/version are an edit in place)",
            "--contract",
            "pass each version once",
        ),
        (
            ["--contract", str(AB_V1)],
            "contracts are for different layers ['admin_boundaries', 'nyc_boroughs']; check one "
            "layer at a time",
            "--contract",
            "check one layer at a time",
        ),
    ],
)
def test_a_raise_site_field_and_fix_reach_json_and_the_text_line_is_unchanged(
    extra: list[str], line: str, field: str, fix: str, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["check", BATCH, "--contract", str(NYC), *extra, *RECENT]
    assert main(argv) == 2
    assert capsys.readouterr().err == f"contract-gate check: error: {line}\n"
    assert main([*argv, "--format", "json"]) == 2
    assert json.loads(capsys.readouterr().err) == {"error": line, "field": field, "fix": fix}
