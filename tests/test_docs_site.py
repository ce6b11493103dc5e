"""The docs site (issue 28 §1): it builds with ``mkdocs build --strict`` and no network, its
tables hold one short line per cell, the code cites only design files that exist, the README
stays short and keeps the quick start, and every documented command runs as written."""

from __future__ import annotations

import importlib.util
import os
import re
import shlex
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from worker.cli.main import build_parser

REPO = Path(__file__).resolve().parents[1]
#: The longest table cell any doc may hold; a longer text goes under the table as prose.
MAX_CELL_CHARS = 160
#: The README's limit (issue 28: httpx, quix-streams, shapely keep 20-170 lines).
MAX_README_LINES = 200
#: The two quick-start commands, byte for byte: CI and users run them.
QUICK_START = (
    "python3.11 -m venv .venv && .venv/bin/pip install -q -e '.[embedded]'"
    " && .venv/bin/contract-gate demo",
    "python3.11 -m venv .venv && .venv/bin/pip install -q -e '.[embedded,formats,test]'"
    " && .venv/bin/python -m pytest -q",
)
#: Options whose value is a file the command writes, not one it reads.
OUTPUT_OPTIONS = frozenset({"--offenders", "--html", "-o", "--output", "--geojson"})
#: Suffixes of the files a documented command reads; each must be in the repository.
INPUT_SUFFIXES = (".yaml", ".yml", ".parquet", ".geojson", ".json", ".zip", ".shp", ".gpkg")


def _docs() -> list[Path]:
    return [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]


def _outside_fences(text: str) -> Iterator[tuple[int, str]]:
    """``(line number, line)`` of every line outside fenced code blocks."""
    fenced = False
    for number, line in enumerate(text.splitlines(), 1):
        if line.lstrip().startswith("```"):
            fenced = not fenced
        elif not fenced:
            yield number, line


def table_cells(line: str) -> list[str]:
    """The cells of one Markdown table row: split on ``|`` outside code spans, not ``\\|``.

    >>> table_cells("| `a \\\\| b` | c\\\\|d |")
    ['`a \\\\| b`', 'c\\\\|d']
    """
    cells, current, in_code, i = [], "", False, 0
    body = line.strip().strip("|") if line.strip().endswith("|") else line.strip()[1:]
    while i < len(body):
        char = body[i]
        if char == "\\" and body[i + 1 : i + 2] == "|":
            current, i = current + "\\|", i + 2
            continue
        if char == "`":
            in_code = not in_code
        if char == "|" and not in_code:
            cells.append(current.strip())
            current = ""
        else:
            current += char
        i += 1
    return [*cells, current.strip()]


def test_table_cells_are_split_on_pipes_outside_code_only() -> None:
    assert table_cells("| `a \\| b` | c\\|d | e |") == ["`a \\| b`", "c\\|d", "e"]
    assert table_cells("|---|---|") == ["---", "---"]


def test_no_table_cell_in_any_doc_is_over_160_characters() -> None:
    long_cells = [
        f"{doc.relative_to(REPO)}:{number}: {len(cell)} characters: {cell[:60]}..."
        for doc in _docs()
        for number, line in _outside_fences(doc.read_text(encoding="utf-8"))
        if line.startswith("|")
        for cell in table_cells(line)
        if len(cell) > MAX_CELL_CHARS
    ]
    assert long_cells == [], "put the text under the table as prose:\n" + "\n".join(long_cells)


#: A design file named in the code: ``DESIGN.md`` (upper case, as cited) or ``docs/x.md``.
CITED_FILE = re.compile(r"(?<![\w/.-])(docs/[\w./-]*\w\.md|[A-Z][A-Z_]*\.md)\b")


def cited_files(text: str) -> set[str]:
    """The design files a source text names, as written (``DESIGN.md``, ``docs/design.md``)."""
    return {m.group(1) for m in CITED_FILE.finditer(text)}


def test_cited_files_are_read_as_written() -> None:
    text = "see DESIGN.md section 2, docs/design.md s.7, tests/data/README.md, LogicalTypes.md"
    assert cited_files(text) == {"DESIGN.md", "docs/design.md"}


def test_the_code_cites_only_design_files_in_the_repository() -> None:
    # 44 docstrings cited a DESIGN.md that lived outside the repository (issue 28)
    sources = [
        *sorted((REPO / "worker").rglob("*.py")),
        *sorted((REPO / "worker" / "schemas").glob("*.json")),
        *sorted(p for p in (REPO / "tests").rglob("*.py") if p != Path(__file__)),
    ]
    missing = sorted(
        f"{path.relative_to(REPO)}: {name}"
        for path in sources
        for name in cited_files(path.read_text(encoding="utf-8"))
        if not (REPO / name).is_file()
    )
    assert missing == [], "cite docs/design.md or a docs page:\n" + "\n".join(missing)


def test_the_readme_is_short_and_keeps_the_quick_start() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) <= MAX_README_LINES
    quick_start = (REPO / "docs" / "quickstart.md").read_text(encoding="utf-8")
    for command in QUICK_START:
        assert f"```sh\n{command}\n```" in readme
        assert f"```sh\n{command}\n```" in quick_start


def shell_commands(text: str) -> Iterator[str]:
    """Every command line of the ``sh`` code blocks of a doc, continuation lines joined."""
    block: list[str] | None = None
    for line in text.splitlines():
        if block is None:
            block = [] if line.strip() == "```sh" else None
        elif line.strip() == "```":
            yield from block
            block = None
        elif block and block[-1].endswith("\\"):
            block[-1] = block[-1][:-1].rstrip() + " " + line.strip()
        else:
            block.append(line.strip())


def _gate_argv(command: str) -> list[str] | None:
    """The arguments after ``contract-gate`` of a documented command, else None."""
    words = shlex.split(command, comments=True)
    if not words or not words[0].endswith("contract-gate"):
        return None
    assert words[0] == ".venv/bin/contract-gate", f"not the venv's: {command}"
    argv: list[str] = []
    for word in words[1:]:
        if word in ("&", "&&", "|", ">", ";"):
            break
        argv.append("2026-11-29T06:00:00Z" if word.startswith("$(date") else word)
    return argv


def _documented_commands() -> Iterator[tuple[str, list[str]]]:
    for doc in _docs():
        for command in shell_commands(doc.read_text(encoding="utf-8")):
            argv = _gate_argv(command.strip())
            if argv is not None:
                yield f"{doc.relative_to(REPO)}: {command.strip()}", argv


def test_every_documented_command_parses_and_reads_files_in_the_repository() -> None:
    # `check nybb_16a.zip` named a file the repository does not ship, and the broker
    # walkthrough ran `contract-gate` without the venv (issue 28 §5)
    commands = list(_documented_commands())
    assert len(commands) >= 10
    parser = build_parser()
    for where, argv in commands:
        try:
            parser.parse_args(argv)
        except SystemExit as exc:  # argparse's way of refusing
            pytest.fail(f"{where}: refused by the parser ({exc})")
        inputs = [
            word
            for before, word in zip(["", *argv], argv, strict=False)
            if before not in OUTPUT_OPTIONS and word.endswith(INPUT_SUFFIXES)
        ]
        for name in inputs:
            assert (REPO / name).is_file(), f"{where}: {name} is not in the repository"


def test_shell_commands_join_continuation_lines() -> None:
    text = "```sh\n.venv/bin/contract-gate check a.parquet \\\n    --contract b.yaml\nls\n```\n"
    assert list(shell_commands(text)) == [
        ".venv/bin/contract-gate check a.parquet --contract b.yaml",
        "ls",
    ]


def test_mkdocs_build_strict_passes_without_network(tmp_path: Path) -> None:
    if importlib.util.find_spec("mkdocs") is None or importlib.util.find_spec("material") is None:
        pytest.skip("mkdocs and mkdocs-material are not installed: pip install -e '.[docs]'")
    site = tmp_path / "site"
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1", "PYTHONPATH": str(REPO)}
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-f", "mkdocs.yml", "-d", str(site)],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    cli = (site / "reference-cli.html").read_text(encoding="utf-8")
    assert "usage: contract-gate contract review" in cli  # generated from the parser
    codes = (site / "reference-reason-codes.html").read_text(encoding="utf-8")
    assert "contract_history_broken" in codes and "gate_error" in codes
    records = (site / "reference-records.html").read_text(encoding="utf-8")
    assert "QuarantineRecord" in records and "ContractRecord" in records
    index = (site / "index.html").read_text(encoding="utf-8")
    assert "fonts.googleapis.com" not in index  # theme.font: false, nothing fetched
    assert (site / "img" / "overlap.svg").is_file()
