"""The project carries its own contract reference (docs/contracts.md), and its README and docs
pages link nothing outside the repository."""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path

from worker.core.clauses import CLAUSE_KINDS
from worker.core.geometry_types import BASE_TYPES
from worker.core.vocab import FIELD_TYPES

REPO = Path(__file__).resolve().parents[1]
DOC = (REPO / "docs" / "contracts.md").read_text(encoding="utf-8")
SCHEMA = json.loads((REPO / "worker" / "schemas" / "contract.schema.json").read_text())


def _generated_pages() -> frozenset[str]:
    """The pages the mkdocs hook writes at build time (``PAGES`` of tools/docs_reference.py)."""
    spec = importlib.util.spec_from_file_location(
        "docs_reference", REPO / "tools" / "docs_reference.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return frozenset(module.PAGES)


GENERATED_PAGES = _generated_pages()


def _docs() -> list[Path]:
    """README.md and every page of the docs site (docs/**/*.md)."""
    return [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]


def test_readme_and_docs_link_only_files_in_the_repository() -> None:
    for doc in _docs():
        text = doc.read_text(encoding="utf-8")
        assert "../shared" not in text, doc
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text):
            if target.startswith(("http://", "https://", "mailto:")):
                continue
            if doc.parent.name == "docs" and target in GENERATED_PAGES:
                continue  # written by the mkdocs hook at build time
            assert (doc.parent / target).exists(), f"{doc.relative_to(REPO)}: {target}"
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    for name in re.findall(r"\b[A-Z][A-Z_]*\.md\b", readme):  # a design file outside the repo
        assert (REPO / name).is_file(), name


def test_every_clause_kind_and_parameter_is_documented() -> None:
    for kind in CLAUSE_KINDS:
        row = next((line for line in DOC.splitlines() if line.startswith(f"| `{kind}` |")), None)
        assert row is not None, f"no row for {kind}"
        for param in SCHEMA["$defs"][f"kind_{kind}"].get("properties", {}):
            assert f"`{param}`" in row, f"{kind}.{param} undocumented"
    for field in SCHEMA["properties"]:
        assert f"| `{field}` |" in DOC, f"document field {field} undocumented"


def test_vocabularies_region_crs_and_default_mode_are_documented() -> None:
    for t in FIELD_TYPES:
        assert f"`{t}`" in DOC
    for base in dict.fromkeys(BASE_TYPES):
        assert f"`{base}`" in DOC
    assert "else **the batch's declared CRS**" in DOC
    assert "**`enforcing` by default**" in DOC


def test_operator_path_waits_for_readyz_before_producing() -> None:
    # batches were produced before the worker had joined
    page = (REPO / "docs" / "operations-deploy.md").read_text(encoding="utf-8")
    section = page.split("## Operator path without a cluster", 1)[1].split("\n## ", 1)[0]
    wait = section.index("until curl -sf localhost:8080/readyz")
    assert section.index("contract-gate run") < wait < section.index("contract-gate batch publish")
    assert "Wait for `/readyz` (200) before producing" in section


#: Who found a problem, and when, is kept in CHANGELOG.md; the code keeps the why.
HISTORY_NOTE = re.compile(r"fresh-user|new-user|found by (?:a|the|fuzzing)\b", re.IGNORECASE)

#: Files allowed to hold a history note: none (issue 25 item 7). This set may only shrink.
PENDING: frozenset[str] = frozenset()


def test_history_notes_live_in_the_changelog_not_the_code() -> None:
    holding = {
        path.relative_to(REPO).as_posix()
        for path in sorted((REPO / "worker").rglob("*"))
        if path.is_file() and "__pycache__" not in path.parts
        if HISTORY_NOTE.search(path.read_bytes().decode("utf-8", "replace"))
    }
    assert holding - PENDING == set(), "who found it goes in CHANGELOG.md, the why stays"
    assert PENDING - holding == set(), "cleaned: drop these from PENDING"
    assert "## Earlier findings" in (REPO / "CHANGELOG.md").read_text(encoding="utf-8")
