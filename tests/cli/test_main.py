"""The offline ``contract-gate check`` command: output shapes and exit codes."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from worker.cli.main import main
from worker.cli.scenario import data_file

V1 = str(data_file("contracts/admin_boundaries.v1.yaml"))
V11 = str(data_file("contracts/admin_boundaries.v1.1.yaml"))
WORLD = str(data_file("admin_boundaries.parquet"))
RECENT = ["--data-time", "2026-11-29T10:00:00Z", "--now", "2026-11-29T12:00:00+00:00"]


def test_check_json_shape_and_exit_0_when_admitted(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["check", WORLD, "--contract", V1, "--observing", V11, "--format", "json", *RECENT])
    doc = json.loads(capsys.readouterr().out)
    assert code == 0 and doc["decision"] == "admitted"
    assert [(v["version"], v["mode"], v["passed"]) for v in doc["versions"]] == [
        ("v1.0", "enforcing", True),
        ("v1.1", "observing", False),
    ]
    clause = doc["versions"][1]["clauses"][5]
    assert set(clause) == {
        "name",
        "kind",
        "result",
        "on_break",
        "measured",
        "expected",
        "message",
        "offenders",
    }
    assert clause["offenders"]["total"] == 1
    assert (clause["name"], clause["result"]) == ("continent", "break")
    assert clause["measured"]["unknown"] == ["Seven seas (open ocean)"]
    assert doc["versions"][0]["clauses"][0]["measured"] == "EPSG:4326"


def test_check_exit_1_when_quarantined_with_swap_diagnosis(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Paris stored latitude-first in an RFC 7946 file (declared east_north by the format)
    path = tmp_path / "paris.geojson"
    path.write_text(
        json.dumps(
            {
                "type": "FeatureCollection",
                "features": [
                    {
                        "type": "Feature",
                        "geometry": {"type": "Point", "coordinates": [48.8566, 2.3522]},
                        "properties": {"name": "Paris"},
                    }
                ],
            }
        )
    )
    contract = tmp_path / "cities.yaml"
    contract.write_text(
        "layer: cities\nversion: v1\ncadence: P1D\nobjective: 0.99\nowner: t\nchangelog: first\n"
        "clauses:\n"
        "  - {name: srid, kind: crs, expect: 'EPSG:4326'}\n"
        "  - {name: europe, kind: extent, region: [-25, 34, 45, 72]}\n"
    )
    code = main(["check", str(path), "--contract", str(contract), *RECENT])
    out = capsys.readouterr().out
    assert code == 1
    assert "BREAK europe" in out
    assert "diagnosis: axis order looks swapped" in out
    assert out.strip().endswith("decision: quarantined (enforcing v1.0 europe)")


@pytest.mark.parametrize(
    "argv, fragment",
    [
        (["check", "/nonexistent.geojson", "--contract", V1], "nonexistent.geojson"),
        (["check", WORLD], "--contract"),
        (["check", WORLD, "--contract", "/nope.yaml"], "nope.yaml"),
        (["check", WORLD, "--contract", V1, "--crs", "EPSG:99999999"], "EPSG:99999999"),
    ],
)
def test_bad_input_exit_2_with_a_message(
    argv: list[str], fragment: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "error:" in err and fragment in err


def test_data_time_without_offset_is_refused_by_argparse(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["check", WORLD, "--contract", V1, "--data-time", "2026-11-29T10:00:00"])
    assert exc.value.code == 2
    assert "no UTC offset" in capsys.readouterr().err


def test_the_same_version_twice_is_bad_input(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", WORLD, "--contract", V1, "--observing", V1]) == 2
    assert "admin_boundaries/v1.0 given more than once" in capsys.readouterr().err


def test_unreachable_broker_is_named(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["topics", "create", "--bootstrap-servers", "127.0.0.1:1"]) == 2
    assert "cannot reach Kafka at 127.0.0.1:1" in capsys.readouterr().err


def test_a_closed_output_pipe_is_not_a_traceback() -> None:
    # found by a fresh-user session: `contract-gate ... --format json | head -1` tracebacked
    import subprocess
    import sys

    argv = [sys.executable, "-m", "worker", "check", WORLD, "--contract", V1, "--format", "json"]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # the reader is gone before the command writes
    with proc.stderr:
        err = proc.stderr.read().decode()
    proc.wait(timeout=60)
    assert "Traceback" not in err
    assert proc.returncode == 141


@pytest.mark.parametrize(
    ("text", "hint"),
    [
        (
            "2026-11-30",
            "'2026-11-30' is a date without a time; write the time and its offset, "
            "e.g. 2026-11-30T00:00:00Z",
        ),
        ("2026-11-30Z", "'2026-11-30Z' is a date without a time"),
        (
            "2026-11-30T06:00:00",
            "'2026-11-30T06:00:00' has no UTC offset; add one, e.g. 2026-11-30T06:00:00Z",
        ),
        ("yesterday", "'yesterday' is not an ISO 8601 date-time; write e.g. 2026-11-29T06:00:00Z"),
    ],
)
def test_time_errors_suggest_a_form_that_parses(text: str, hint: str) -> None:
    # found by a fresh-user session: the suggested fix for a bare date was itself refused
    import argparse

    from worker.cli.args import parse_time

    with pytest.raises(argparse.ArgumentTypeError) as info:
        parse_time(text)
    assert str(info.value).startswith(hint)
    suggestion = str(info.value).split("e.g. ")[-1].split(" ")[0]
    assert parse_time(suggestion).tzinfo is not None  # the suggestion itself parses


@pytest.mark.parametrize(
    ("argv", "where"),
    [
        (["check", "batch.geojson", "--bogus"], "contract-gate check"),
        (["contract", "list", "--bogus"], "contract-gate contract list"),
        (["consumers", "status", "--format", "text", "--bogus"], "contract-gate consumers status"),
    ],
)
def test_an_unknown_option_points_to_its_subcommand_help(
    argv: list[str], where: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # found by a new-user trial: the message named the top-level help
    with pytest.raises(SystemExit) as stop:
        main(argv)
    assert stop.value.code == 2
    assert capsys.readouterr().err == (
        f"{where}: error: unrecognized arguments: --bogus (see `{where} --help`)\n"
    )


def test_with_format_json_an_unknown_option_is_one_json_object(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as stop:
        main(["consumers", "status", "--format", "json", "--bogus"])
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert json.loads(err) == {
        "error": "contract-gate consumers status: unrecognized arguments: --bogus",
        "field": "--bogus",
        "fix": "see `contract-gate consumers status --help`",
    }


def test_check_warns_of_file_metadata_its_geometries_contradict(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    table = pq.read_table(WORLD)
    geo = json.loads(table.schema.metadata[b"geo"])
    geo["columns"]["geometry"]["bbox"] = [0, 0, 1, 1]
    path = tmp_path / "bbox_lie.parquet"
    pq.write_table(table.replace_schema_metadata({b"geo": json.dumps(geo).encode()}), path)
    assert main(["check", str(path), "--contract", V1, *RECENT]) == 0  # the verdict is the data's
    err = capsys.readouterr().err
    assert "warning: the file's bbox [0, 0, 1, 1] does not contain its features" in err


@pytest.mark.parametrize("fmt", ["text", "json"])
@pytest.mark.parametrize(
    ("module", "argv"),
    [
        ("check", ["check", WORLD, "--contract", V1]),
        ("contract", ["contract", "classify", V1, V11]),
        ("consumers", ["consumers", "status"]),
        ("quarantine", ["quarantine", "tail"]),
        ("batch", ["batch", "publish", WORLD, "--layer", "admin_boundaries"]),
    ],
)
def test_a_bug_is_exit_70_with_one_line_never_the_exit_of_a_decision(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    module: str,
    argv: list[str],
    fmt: str,
) -> None:
    # found by a new-user session: 'geo' metadata nested 5,000 deep made `check` raise a
    # RecursionError: a traceback and exit 1, the exit of a quarantined batch (and of a
    # failed review) to every script and CI job reading it
    def broken(args: object) -> int:
        raise RecursionError("maximum recursion depth exceeded")

    monkeypatch.setattr(f"worker.cli.commands.{module}.run", broken)
    assert main([*argv, "--format", fmt] if fmt == "json" else argv) == 70
    err = capsys.readouterr().err
    assert "Traceback" not in err and len(err.splitlines()) == 1
    why = "internal error (a bug of contract-gate): RecursionError: maximum recursion depth"
    if fmt == "json":
        doc = json.loads(err)
        assert doc["error"].startswith(why) and "--log-level DEBUG" in doc["fix"]
    else:
        assert err.startswith(f"contract-gate {argv[0]}: error: {why}")
        assert err.rstrip().endswith(
            "rerun with --log-level DEBUG for the traceback, and report it with the input"
        )


def test_a_bug_in_the_worker_logs_its_traceback_at_error(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    """`run` is a pod's long-running worker: its crash cannot be rerun with --log-level
    DEBUG, so the traceback goes to its log at ERROR (a one-shot command's stays at DEBUG),
    and the line says where it is. Exit 70 as for every command."""

    def broken(args: object) -> int:
        raise KeyError("lost")

    monkeypatch.setattr("worker.cli.commands.run.run", broken)
    with caplog.at_level(logging.ERROR):
        assert main(["run"]) == 70
    logged = [r for r in caplog.records if r.levelno == logging.ERROR and r.exc_info]
    assert len(logged) == 1 and logged[0].exc_info is not None
    assert logged[0].exc_info[0] is KeyError
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err.startswith("contract-gate run: error: internal error (a bug of contract-gate): ")
    assert err.endswith("report it with the traceback logged above and the input")
