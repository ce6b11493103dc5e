"""What the completion scripts complete, in the shells themselves (``completion bash|zsh``).

The fault family: shtab writes a positional without completions as an empty ``_arguments``
action, and zsh then only *lists* the options a ``--pre<TAB>`` matches on every command
with such a positional (``check``, ``consumers declare``, ``contract classify``, ...):
nothing is inserted. The cases are read from the parser tree, so every command with a
positional and every argument that takes a path is covered, new ones included.
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from worker.cli.args import PATHS
from worker.cli.commands.completion import SHELLS, script
from worker.cli.main import build_parser
from worker.cli.parser_tree import arguments, subcommands, walk

DRIVER = Path(__file__).with_name("data") / "complete.zsh"


def _leaves() -> dict[str, argparse.ArgumentParser]:
    """Every command that runs, by its words after ``contract-gate``."""
    return {
        path.removeprefix("contract-gate "): p
        for path, p in walk(build_parser())
        if path != "contract-gate" and not subcommands(p)
    }


def _values(p: argparse.ArgumentParser) -> list[argparse.Action]:
    """The arguments of ``p`` that take a value, as the script is generated (marked)."""
    script(p, "zsh")  # gives each value argument its completion, as `completion` does
    return [a for a in arguments(p) if a.nargs != 0 and a.help != argparse.SUPPRESS]


def _unique_prefix(option: str, options: list[str]) -> str:
    """The shortest prefix of ``option`` (at least ``--`` and two letters) no other has."""
    for n in range(4, len(option) + 1):
        if not any(o != option and o.startswith(option[:n]) for o in options):
            return option[:n]
    raise AssertionError(f"{option} is a prefix of another option")


def _option_cases() -> list[tuple[str, str]]:
    """(typed, completed): an option of each command with a positional, by a prefix."""
    cases = []
    for words, p in _leaves().items():
        positionals = [a for a in arguments(p) if not a.option_strings and a.choices is None]
        if not positionals:
            continue
        options = sorted(s for a in arguments(p) for s in a.option_strings if s.startswith("--"))
        option = next(o for o in options if o not in ("--help", "--log-level"))
        prefix = _unique_prefix(option, options)
        cases.append((f"contract-gate {words} {prefix}", f"contract-gate {words} {option} "))
    return cases


def _path_cases(sample: Path) -> list[tuple[str, str]]:
    """(typed, completed): a file name where each path argument of each command is."""
    head, rest = str(sample)[:-6], str(sample)
    cases = []
    for words, p in _leaves().items():
        before = ""
        for a in _values(p):
            if getattr(a, "complete", None) is PATHS:
                at = f"{a.option_strings[-1]} " if a.option_strings else ""
                typed = f"contract-gate {words} {before}{at}{head}"
                cases.append((typed, f"contract-gate {words} {before}{at}{rest} "))
            if not a.option_strings:  # the next positional comes after this one
                before += f"{rest} " if getattr(a, "complete", None) is PATHS else "x "
    return cases


def test_every_positional_has_a_zsh_action() -> None:
    """No positional spec of the zsh script has an empty action (``":help:"``)."""
    text = script(build_parser(), "zsh")
    specs = re.findall(r'^\s+"(?:\(\*\)|\(\*\):|\(-\)\*:)?:.*"$', text, re.M)
    assert specs, "no positional spec found: the script's layout changed"
    assert [s for s in specs if s.endswith(':"')] == []


def test_the_tree_has_path_arguments_and_positionals() -> None:
    """The cases below are not empty: the commands that take files and positionals."""
    tmp = Path("/nonexistent/sample-batch.parquet")
    paths = {typed.split(" /")[0] for typed, _ in _path_cases(tmp)}
    assert "contract-gate check" in paths
    assert "contract-gate contract classify" in {" ".join(t.split()[:3]) for t in paths}
    assert len(_option_cases()) >= 10


@pytest.mark.skipif(shutil.which("zsh") is None, reason="zsh is not installed")
def test_zsh_completes_options_and_paths_on_every_command(tmp_path: Path) -> None:
    (tmp_path / "fpath").mkdir()
    (tmp_path / "fpath" / "_contract-gate").write_text(script(build_parser(), "zsh"))
    sample = tmp_path / "sample-batch.parquet"
    sample.write_bytes(b"")
    cases = _option_cases() + _path_cases(sample)
    listed = tmp_path / "cases.tsv"
    listed.write_text("".join(f"{typed}\t{want}\n" for typed, want in cases))
    done = subprocess.run(
        ["zsh", "-f", str(DRIVER), str(tmp_path / "fpath"), str(listed)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
    )
    results = [line.split("\t") for line in done.stdout.splitlines()]
    assert len(results) == len(cases), done.stderr
    assert [r for r in results if r[0] != "ok"] == []


@pytest.mark.skipif(shutil.which("bash") is None, reason="bash is not installed")
def test_bash_completes_paths_where_a_path_is_taken(tmp_path: Path) -> None:
    bash_script = tmp_path / "contract-gate.bash"
    bash_script.write_text(script(build_parser(), "bash"))
    sample = tmp_path / "sample-batch.parquet"
    sample.write_bytes(b"")
    for typed, want in _path_cases(sample):
        words = typed.split(" ")
        probe = (
            f"source {bash_script}; COMP_WORDS=({typed}); COMP_CWORD={len(words) - 1}; "
            f'COMP_LINE="{typed}"; COMP_POINT=${{#COMP_LINE}}; _shtab_contract_gate; '
            'printf "%s\\n" "${COMPREPLY[@]}"'
        )
        done = subprocess.run(["bash", "-c", probe], capture_output=True, text=True, timeout=30)
        assert done.stdout.split() == [str(sample)], (typed, done.stdout, done.stderr)
        assert want.endswith(f"{sample} ")


@pytest.mark.parametrize("first", SHELLS)
def test_a_script_leaves_the_parser_as_it_was_for_the_next_shell(first: str) -> None:
    """Stop 38: ``script`` marked the parser's arguments for its shell and left the marks,
    so a bash script of a parser that had written the zsh one said "complete nothing"
    (``COMPGEN=''``) for its positionals: every script is now that of a fresh parser."""
    fresh = {shell: script(build_parser(), shell) for shell in SHELLS}
    parser = build_parser()
    assert script(parser, first) == fresh[first]
    for shell in SHELLS:
        assert script(parser, shell) == fresh[shell], (first, shell)
