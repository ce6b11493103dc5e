"""The command table: ``COMMANDS`` is what ``contract-gate --help`` lists, each module
registers its own parser and handler, and every help text names every flag."""

from __future__ import annotations

import argparse

import pytest

from tests.cli.test_help import parsers
from worker.cli import main as cli
from worker.cli.commands import COMMANDS
from worker.cli.commands.contract import ACTIONS
from worker.cli.main import build_parser, main
from worker.cli.parser_tree import arguments, is_subcommands, subcommand_help, subcommands


def _help(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    with pytest.raises(SystemExit) as exc:
        main([*argv, "--help"])
    assert exc.value.code == 0
    return capsys.readouterr().out


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    assert sum(map(is_subcommands, arguments(parser))) == 1
    return subcommands(parser)


def test_help_lists_the_commands_of_the_table_in_its_order(
    capsys: pytest.CaptureFixture[str],
) -> None:
    text = _help([], capsys)
    listed = text.split("\n  COMMAND\n", 1)[1].split("\n\n", 1)[0]
    # a command's name at 4 spaces, its wrapped help further in
    names = [line.split()[0] for line in listed.splitlines() if line[4] != " "]
    assert names == list(COMMANDS)
    assert list(_subparsers(build_parser())) == list(COMMANDS)


@pytest.mark.parametrize("name", list(COMMANDS))
def test_each_command_module_registers_its_parser_and_handler(name: str) -> None:
    parser = _subparsers(build_parser())[name]
    assert parser.prog == f"contract-gate {name}"
    assert parser.get_default("handler") is COMMANDS[name].run


@pytest.mark.parametrize(
    ("argv", "named"),
    [
        (["check", "b.parquet", "--contract", "c.yaml"], "check"),
        (["--log-level", "debug", "run"], "run"),
        (["--log-level=info", "topics", "create"], "topics"),
        (["--help", "check"], None),  # the top-level help lists every command
        (["--version"], None),
        (["completion", "bash"], None),  # the script is generated from every parser
        (["chekc", "b.parquet"], None),  # the error lists every command
        ([], None),
    ],
)
def test_a_named_command_is_parsed_by_its_parser_alone(argv: list[str], named: str | None) -> None:
    assert cli.command_named(argv) == named


@pytest.mark.parametrize(
    "argv",
    [
        ["check", "b.parquet", "--contract", "c.yaml", "--format", "json", "--eval-threads", "1"],
        ["--log-level", "debug", "contract", "init", "b.parquet", "--layer", "parcels"],
        ["run", "--bootstrap-servers", "k:9092", "--eval-threads", "2"],
    ],
)
def test_the_parser_of_one_command_parses_as_the_whole_tree(argv: list[str]) -> None:
    def parsed(only: str | None) -> dict[str, object]:
        values = vars(build_parser(only).parse_args(argv))
        values.pop("root_parser")  # the tree itself: one command's or every command's
        return values

    name = cli.command_named(argv)
    assert name is not None
    assert parsed(name) == parsed(None)
    assert len(_subparsers(build_parser(name))) == 1


def test_the_contract_actions_are_the_table_of_the_group() -> None:
    contract = _subparsers(build_parser())["contract"]
    assert list(_subparsers(contract)) == list(ACTIONS)
    help_line = subcommand_help(build_parser())["contract"]
    assert help_line is not None
    assert all(action in help_line for action in ACTIONS)  # "contract versions: publish, ..."


@pytest.mark.parametrize(
    "path", [path for path, _ in parsers(build_parser())][1:], ids=lambda p: p[14:]
)
def test_every_help_exits_0_and_names_every_flag(
    path: str, capsys: pytest.CaptureFixture[str]
) -> None:
    parser = dict(parsers(build_parser()))[path]
    text = _help(path.split()[1:], capsys)
    assert text.startswith(f"usage: {path} ")
    flags = [
        flag
        for action in arguments(parser)
        if action.help != argparse.SUPPRESS
        for flag in action.option_strings
    ]
    assert flags, path  # -h at least
    missing = [flag for flag in flags if flag not in text]
    assert not missing, f"{path} --help does not name {missing}"


def test_the_entry_point_docstring_names_every_command_and_action() -> None:
    doc = cli.__doc__ or ""
    assert all(f"``{name}" in doc for name in COMMANDS), doc
    assert all(action in doc for action in ACTIONS), doc


def test_a_count_below_one_is_refused_the_same_way_everywhere(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # consumers assert --last had its own copy of positive_int (_at_least_one)
    for argv in (
        ["consumers", "assert", "roads", "v1", "--last", "0"],
        ["topics", "create", "--partitions", "0"],
        ["broker", "--partitions", "x"],
    ):
        with pytest.raises(SystemExit) as exc:
            build_parser().parse_args(argv)
        assert exc.value.code == 2
        assert "is not a whole number >= 1" in capsys.readouterr().err
