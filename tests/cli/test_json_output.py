"""``--format json`` on every printing command, errors as one JSON object, shell completion
(issue 28 §2).

The commands are read from the parser tree, so a new command with ``--format`` must be
listed here (offline, run for real) or in :data:`KAFKA_COMMANDS` (run against the embedded
broker by tests/integration/test_json_output.py); a new command without it must be listed
in :data:`NO_FORMAT` with why.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from worker.cli.main import build_parser, main
from worker.cli.parser_tree import arguments, subcommands, walk
from worker.cli.scenario import data_file

CASES = Path(__file__).resolve().parents[1] / "cases"
RECENT = ["--data-time", "2026-11-29T06:00:00Z", "--now", "2026-11-29T07:00:00Z"]
NYC = data_file("contracts/nyc_boroughs.v1.yaml")
AB_V1, AB_V1_1 = (
    data_file("contracts/admin_boundaries.v1.yaml"),
    data_file("contracts/admin_boundaries.v1.1.yaml"),
)

#: Commands with ``--format`` that need a broker: their JSON is checked by
#: tests/integration/test_json_output.py, one broker for all of them.
KAFKA_COMMANDS = (
    "topics create",
    "contract publish",
    "contract evidence",
    "contract promote",
    "contract list",
    "contract retire",
    "consumers declare",
    "consumers assert",
    "consumers status",
    "quarantine tail",
    "quarantine show",
    "quarantine replay",
    "verify overlap",
    "batch publish",
)
#: Leaf commands that print no result document, and why.
NO_FORMAT = {
    "run": "the worker: logs, no result",
    "broker": "a foreground broker: prints the export line, then runs until stopped",
    "demo": "a walkthrough printed for a reader, ending in the demo's own summary",
    "contract init": "prints a draft contract (YAML with comments), the input of publish",
    "completion": "prints a shell script",
}


def _leaves() -> dict[str, Any]:
    """Every command that runs (a parser without subcommands), by its path."""
    return {
        path.removeprefix("contract-gate "): p
        for path, p in walk(build_parser())
        if path != "contract-gate" and not subcommands(p)
    }


def _has_json(parser: Any) -> bool:
    return any(
        "--format" in a.option_strings and "json" in (a.choices or []) for a in arguments(parser)
    )


def _offline(tmp_path: Path) -> dict[str, tuple[list[str], int]]:
    """argv and exit code of each offline command with ``--format``, on real files."""
    base, head = tmp_path / "base", tmp_path / "head"
    base.mkdir()
    head.mkdir()
    (base / "ab.v1.yaml").write_text(AB_V1.read_text())
    (head / "ab.v1.yaml").write_text(AB_V1.read_text())
    (head / "ab.v1.1.yaml").write_text(AB_V1_1.read_text())
    return {
        "check": (["check", BATCH, "--contract", _e01(tmp_path, INSIDE), *RECENT], 0),
        "contract classify": (["contract", "classify", str(AB_V1), str(AB_V1_1)], 0),
        "contract review": (
            ["contract", "review", str(base), str(head), "--now", "2026-11-29T07:00:00Z"],
            0,
        ),
    }


#: The batch of field case E01 (3 parcels in Zürich, OGC:CRS84) and regions of its contract.
BATCH = str(CASES / "E01" / "batch.geojson")
INSIDE, SWAPPED = "[8.4, 47.3, 8.6, 47.5]", "[8.6, 47.3, 8.4, 47.5]"


def _e01(tmp_path: Path, region: str, version: str = "v1") -> str:
    """E01's contract with ``region`` for its extent clause (the case's own is invalid)."""
    text = (CASES / "E01" / "contract.yaml").read_text()
    assert "region: [8.4, 47.3, 800, 47.5]" in text
    text = text.replace("[8.4, 47.3, 800, 47.5]", region).replace(
        "version: v1\n", f"version: {version}\n"
    )
    path = tmp_path / f"parcels.{version}.{len(region)}.{region[1]}.yaml"
    path.write_text(text)
    return str(path)


def test_every_command_has_json_output_or_a_reason_not_to() -> None:
    leaves = _leaves()
    with_json = {name for name, p in leaves.items() if _has_json(p)}
    offline = {"check", "contract classify", "contract review"}
    assert with_json == offline | set(KAFKA_COMMANDS)
    assert set(leaves) - with_json == set(NO_FORMAT)


@pytest.mark.parametrize("command", ["check", "contract classify", "contract review"])
def test_offline_json_output_parses(
    command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv, code = _offline(tmp_path)[command]
    assert main([*argv, "--format", "json"]) == code
    out = capsys.readouterr().out
    doc = json.loads(out)
    assert isinstance(doc, dict) and doc


def test_check_json_names_the_layer_the_batch_file_and_the_contract_files(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    contract = _e01(tmp_path, INSIDE)
    twin = _e01(tmp_path, INSIDE, "v1.1")  # the same clauses as v1.1, observing
    argv = ["check", BATCH, "--contract", contract, "--observing", twin, *RECENT]
    assert main([*argv, "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["layer"] == "parcels" and doc["batch_file"] == BATCH and doc["features"] == 3
    assert doc["contracts"] == [
        {"file": contract, "version": "parcels/v1.0", "mode": "enforcing"},
        {"file": twin, "version": "parcels/v1.1", "mode": "observing"},
    ]
    assert doc["decision"] == "admitted" and doc["notes"] == []


@pytest.mark.parametrize("command", sorted(set(_leaves()) - set(NO_FORMAT)))
def test_an_argument_error_is_one_json_object_with_exit_2(
    command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as stop:
        main([*command.split(), "--format", "json", "--bogus"])
    assert stop.value.code == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    doc = json.loads(captured.err)
    assert set(doc) == {"error", "field", "fix"}
    assert doc["error"].startswith(f"contract-gate {command}: ")
    assert doc["fix"] == f"see `contract-gate {command} --help`"


def _error(capsys: pytest.CaptureFixture[str], argv: list[str]) -> dict[str, Any]:
    assert main([*argv, "--format", "json"]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.count("\n") == 1
    doc: dict[str, Any] = json.loads(captured.err)
    assert set(doc) == {"error", "field", "fix"}
    return doc


def test_runtime_errors_of_offline_commands_are_json_with_field_and_fix(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    case = CASES / "E01"
    bad = tmp_path / "bad.yaml"
    bad.write_text(NYC.read_text().replace("max_invalid_fraction: 0.0", "max_invalid_fraction: 2"))
    doc = _error(capsys, ["check", str(case / "batch.geojson"), "--contract", str(bad)])
    assert doc["field"] == "clauses[4].max_invalid_fraction"
    assert doc["fix"] is not None and "between 0 and 1" in doc["fix"]
    assert doc["error"].startswith(f"{bad}: clauses[4].max_invalid_fraction: ")

    doc = _error(
        capsys,
        ["check", str(case / "batch.geojson"), "--contract", str(NYC), "--id-column", "nope"],
    )
    assert doc["field"] == "--id-column" and "is not a column of" in doc["error"]

    doc = _error(capsys, ["contract", "classify", str(AB_V1), str(NYC)])
    assert "different layers" in doc["error"] or "layer" in doc["error"]

    empty = tmp_path / "empty"
    empty.mkdir()
    doc = _error(capsys, ["contract", "review", str(empty), str(empty)])
    assert doc["field"] == "--contracts-dir"
    assert doc["fix"] == (
        "give the directory that holds them with --contracts-dir (relative to the repository "
        "root; default 'contracts')"
    )


def test_a_client_setting_librdkafka_refuses_is_a_json_error(
    capsys: pytest.CaptureFixture[str],
) -> None:
    doc = _error(capsys, ["contract", "list", "--kafka-property", "bogus.prop=1"])
    assert doc == {
        "error": 'Kafka error: No such configuration property: "bogus.prop"',
        "field": "--kafka-property",
        "fix": "check --bootstrap-servers, --kafka-property and CONTRACT_GATE_KAFKA_* settings",
    }


def test_without_json_errors_stay_one_line_of_text(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    assert main(["contract", "review", str(empty), str(empty)]) == 2
    err = capsys.readouterr().err
    assert (
        err.startswith("contract-gate contract: error: no contract files") and err.count("\n") == 1
    )


def test_check_text_says_a_region_with_minx_above_maxx_crosses_the_antimeridian(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # issue 28 §4: a swapped minx/maxx in a geographic CRS is legal (a band across 180°),
    # so nothing refused it and nothing said it
    argv = ["check", BATCH, "--contract", _e01(tmp_path, SWAPPED), *RECENT]
    assert main(argv) == 1
    out = capsys.readouterr().out
    note = (
        "note: parcels/v1.0: clause extent: region [8.6, 47.3, 8.4, 47.5] has minx > maxx: in "
        "OGC:CRS84 it crosses the antimeridian (a band 359.8° wide from 8.6 east to 8.4); if "
        "that is a typo, write [8.4, 47.3, 8.6, 47.5]"
    )
    assert out.splitlines()[-1] == note
    assert main([*argv, "--format", "json"]) == 1
    assert json.loads(capsys.readouterr().out)["notes"] == [note.removeprefix("note: ")]
    # an ordinary box says nothing
    assert main(["check", BATCH, "--contract", _e01(tmp_path, INSIDE), *RECENT]) == 0
    assert "antimeridian" not in capsys.readouterr().out


@pytest.mark.parametrize("shell", ["bash", "zsh"])
def test_completion_scripts_name_every_command_and_action(
    shell: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["completion", shell]) == 0
    script = capsys.readouterr().out
    first = "#compdef contract-gate" if shell == "zsh" else "# AUTOMATICALLY GENERATED by"
    assert script.startswith(first)
    if shell == "bash":
        assert "complete -o bashdefault -F _shtab_contract_gate contract-gate" in script
    for path in _leaves():
        for word in path.split():
            assert word in script, (shell, path)
    for flag in ("--format", "--bootstrap-servers", "--all-since", "--offenders"):
        assert flag in script


@pytest.mark.skipif(shutil.which("bash") is None, reason="bash is not installed")
def test_bash_completion_is_valid_bash_and_completes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    main(["completion", "bash"])
    script = tmp_path / "contract-gate.bash"
    script.write_text(capsys.readouterr().out)
    assert subprocess.run(["bash", "-n", str(script)], capture_output=True).returncode == 0

    def complete(line: str) -> list[str]:
        words = line.split(" ")
        probe = (
            f"source {script}; COMP_WORDS=({' '.join(words)}); COMP_CWORD={len(words) - 1}; "
            f'COMP_LINE="{line}"; COMP_POINT=${{#COMP_LINE}}; _shtab_contract_gate; '
            'printf "%s\\n" "${COMPREPLY[@]}"'
        )
        done = subprocess.run(["bash", "-c", probe], capture_output=True, text=True, timeout=30)
        return sorted(done.stdout.split())

    assert complete("contract-gate quarantine re") == ["replay"]
    assert complete("contract-gate contract pro") == ["promote"]
    assert "--format" in complete("contract-gate topics create --fo")
