"""One-line errors: argparse, YAML syntax, durations; --log-level after the command."""

from __future__ import annotations

from pathlib import Path

import pytest

from worker.cli.main import build_parser, main

CONTRACT = Path(__file__).resolve().parents[2] / "worker/data/contracts/admin_boundaries.v1.yaml"
BATCH = Path(__file__).resolve().parents[1] / "cases/E01/batch.geojson"


def test_argparse_error_is_one_line_naming_the_help(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["check"])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert err == (
        "contract-gate check: error: the following arguments are required: batch "
        "(see `contract-gate check --help`)\n"
    )


def test_log_level_is_accepted_after_the_command_too() -> None:
    parser = build_parser()
    assert parser.parse_args(["run", "--log-level", "DEBUG"]).log_level == "DEBUG"
    assert parser.parse_args(["--log-level", "INFO", "run"]).log_level == "INFO"
    assert parser.parse_args(["quarantine", "tail", "--log-level", "ERROR"]).log_level == "ERROR"
    assert parser.parse_args(["run"]).log_level is None


@pytest.mark.parametrize(
    "argv", [["check", "x.geojson", "--log-level", "bogus"], ["--log-level", "bogus", "run"]]
)
def test_an_unknown_log_level_is_a_one_line_error_with_exit_2(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    # it was a ValueError traceback and exit 1 (for check: "quarantined"), a fresh-user find
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert "argument --log-level: 'bogus' is not a log level; use one of DEBUG, INFO" in err
    assert build_parser().parse_args(["run", "--log-level", "warning"]).log_level == "WARNING"


@pytest.mark.parametrize("layer", ["bad layer/../x", "roads east", "x" * 201, ""])
def test_batch_publish_refuses_a_layer_no_contract_can_have(
    layer: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # a fresh-user session published a batch of layer "bad layer/../x" (exit 0)
    with pytest.raises(SystemExit) as exc:
        main(["batch", "publish", str(BATCH), "--layer", layer])
    assert exc.value.code == 2
    assert "argument --layer: " in capsys.readouterr().err
    args = build_parser().parse_args(["batch", "publish", "f.geojson", "--layer", "a.b_c-1"])
    assert args.layer == "a.b_c-1"


def test_yaml_syntax_error_is_one_line_with_file_line_and_column(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("layer: x\nversion: v1\n  cadence: P1D\n")
    assert main(["check", str(BATCH), "--contract", str(bad)]) == 2
    err = capsys.readouterr().err
    assert err == (
        f"contract-gate check: error: {bad}: line 3, column 10: not readable as YAML: "
        "mapping values are not allowed here\n"
    )


def test_duration_error_gives_the_hint_not_the_regex(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "dur.yaml"
    bad.write_text(CONTRACT.read_text().replace("max_age: PT6H", "max_age: 6h"))
    assert main(["check", str(BATCH), "--contract", str(bad)]) == 2
    err = capsys.readouterr().err
    assert "max_age: invalid value '6h' (not in the expected form)" in err
    assert "such as PT4H, P1D or PT30M" in err and "\\d" not in err


def test_an_output_file_that_cannot_be_written_is_one_error_naming_it(tmp_path: Path) -> None:
    # a fresh-user session: `contract evidence -o /tmp` was an IsADirectoryError traceback
    # (check --html and quarantine show --geojson already said it in one line)
    from worker.cli.args import write_output
    from worker.core.errors import ContractGateError

    with pytest.raises(ContractGateError, match=f"^cannot write {tmp_path}: Is a directory$"):
        write_output(str(tmp_path), "x")
    missing = tmp_path / "no" / "such.txt"
    with pytest.raises(ContractGateError, match="No such file or directory"):
        write_output(str(missing), "x")
    write_output(str(tmp_path / "ok.txt"), "é")
    assert (tmp_path / "ok.txt").read_text("utf-8") == "é"
