"""The generated pages of the docs site, written at every `mkdocs build` so they cannot drift.

An mkdocs hook (``hooks:`` in ``mkdocs.yml``): ``on_files`` adds five pages that exist in
no file of ``docs/``:

- ``reference-cli.md``: ``--help`` of every command and action, from the argparse parser
  tree (:func:`worker.cli.main.build_parser`, walked by :mod:`worker.cli.parser_tree`);
- ``reference-records.md``: every Avro record, from ``worker/schemas/*.avsc``;
- ``reference-reason-codes.md``: the quarantine reason codes, from
  :class:`worker.core.vocab.ReasonCode` and the ``#:`` comment above each member;
- ``reference-contract-schema.md``: the contract document's JSON Schema;
- ``changelog.md``: ``CHANGELOG.md`` as it is.

``python tools/docs_reference.py DIR`` writes the same pages into DIR, to read them
without mkdocs.
"""

from __future__ import annotations

import ast
import contextlib
import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))  # this checkout's worker, not an installed one

SCHEMAS = REPO / "worker" / "schemas"
VOCAB = REPO / "worker" / "core" / "vocab.py"
#: The width ``--help`` is formatted for (argparse reads ``COLUMNS``), as the pinned help.
HELP_COLUMNS = "80"


@contextlib.contextmanager
def _columns(width: str) -> Iterator[None]:
    previous = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = width
    try:
        yield
    finally:
        if previous is None:
            os.environ.pop("COLUMNS", None)
        else:
            os.environ["COLUMNS"] = previous


def cli_page() -> str:
    """Markdown of every command's ``--help``, depth first in registration order."""
    from worker.cli.main import build_parser
    from worker.cli.parser_tree import walk

    out = [
        "# Command-line reference",
        "",
        "Generated from the argparse parser at every build: each command's `--help` as",
        "`contract-gate` prints it. What the commands do, with examples, is in",
        "[Commands](reference-commands.md).",
        "",
    ]
    with _columns(HELP_COLUMNS):
        for path, parser in walk(build_parser(), "contract-gate"):
            out += [f"## {path}", "", "```text", parser.format_help().rstrip(), "```", ""]
    return "\n".join(out)


def _type_name(avro_type: Any) -> str:
    if isinstance(avro_type, list):
        return " or ".join(_type_name(t) for t in avro_type)
    if isinstance(avro_type, dict):
        kind = avro_type.get("type")
        if kind == "array":
            return f"array of {_type_name(avro_type['items'])}"
        if kind == "map":
            return f"map of {_type_name(avro_type['values'])}"
        if kind in ("record", "enum", "fixed"):
            return str(avro_type["name"])
        return _type_name(kind)
    return str(avro_type)


def _nested_records(avro_type: Any) -> Iterator[dict[str, Any]]:
    if isinstance(avro_type, list):
        for t in avro_type:
            yield from _nested_records(t)
    elif isinstance(avro_type, dict):
        if avro_type.get("type") == "record":
            yield avro_type
        for key in ("items", "values"):
            if key in avro_type:
                yield from _nested_records(avro_type[key])


def _record_lines(record: dict[str, Any]) -> list[str]:
    out = [f"### {record['name']}", ""]
    if record.get("doc"):
        out += [str(record["doc"]), ""]
    nested: list[dict[str, Any]] = []
    for field in record["fields"]:
        line = f"- `{field['name']}`: {_type_name(field['type'])}"
        if "default" in field:
            line += f", default `{json.dumps(field['default'])}`"
        if field.get("doc"):
            line += f". {field['doc']}"
        out.append(line)
        nested += list(_nested_records(field["type"]))
    out.append("")
    for inner in nested:
        out += _record_lines(inner)
    return out


def records_page() -> str:
    """Markdown of every Avro record of ``worker/schemas``, nested records after their parent."""
    out = [
        "# Records",
        "",
        "Generated from the Avro schemas (`worker/schemas/*.avsc`, namespace `gis.contract`)",
        "at every build. Which topic carries which record is in [Topics](operations-topics.md).",
        "",
    ]
    for path in sorted(SCHEMAS.glob("*.avsc")):
        schema = json.loads(path.read_text(encoding="utf-8"))
        out += [f"## `{path.name}`", "", *_record_lines(schema)]
    return "\n".join(out)


def reason_codes() -> list[tuple[str, str]]:
    """``[(code, meaning), ...]`` of :class:`ReasonCode`, the meaning from its ``#:`` lines."""
    from worker.core.vocab import ReasonCode

    source = VOCAB.read_text(encoding="utf-8").splitlines()
    cls = next(
        node
        for node in ast.parse("\n".join(source)).body
        if isinstance(node, ast.ClassDef) and node.name == "ReasonCode"
    )
    meanings: dict[str, str] = {}
    for node in cls.body:
        if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name):
            comment: list[str] = []
            row = node.lineno - 2
            while row >= 0 and source[row].strip().startswith("#:"):
                comment.insert(0, source[row].strip()[2:].strip())
                row -= 1
            meanings[node.targets[0].id] = " ".join(comment).replace("``", "`")
    return [(code.value, meanings.get(code.name, "")) for code in ReasonCode]


def reason_codes_page() -> str:
    """Markdown of the quarantine reason codes."""
    out = [
        "# Reason codes",
        "",
        "Why a batch went to quarantine: the quarantine record's `reason_code`, each reason's",
        "`code` and the header `dlq.reason`. Generated from `ReasonCode`",
        "(`worker/core/vocab.py`) at every build.",
        "",
    ]
    out += [f"- `{code}`: {meaning}" for code, meaning in reason_codes()]
    out += [
        "",
        "The payload reasons, with when each is retried, are explained under",
        "[Payloads by reference](guides-payloads-by-reference.md).",
        "",
    ]
    return "\n".join(out)


def _schema_type(spec: dict[str, Any]) -> str:
    if "enum" in spec:
        return "one of " + ", ".join(f"`{v}`" for v in spec["enum"])
    if "$ref" in spec:
        return f"`{spec['$ref']}`"
    return str(spec.get("type", "see the schema"))


def contract_schema_page() -> str:
    """Markdown of the contract JSON Schema: its top-level fields, then the whole schema."""
    text = (SCHEMAS / "contract.schema.json").read_text(encoding="utf-8")
    schema = json.loads(text)
    required = set(schema.get("required", []))
    out = [
        "# Contract JSON Schema",
        "",
        "The machine-checked form of a contract document (`worker/schemas/contract.schema.json`,",
        "also `schemas/contract.schema.json`), included at every build. What each field and",
        "clause kind means is in the [contract reference](contracts.md).",
        "",
        "## Top-level fields",
        "",
    ]
    for name, spec in schema.get("properties", {}).items():
        need = "required" if name in required else "optional"
        kind = _schema_type(spec)
        out.append(f"- `{name}` ({need}): {kind}")
    out += ["", "## The schema", "", "```json", text.rstrip(), "```", ""]
    return "\n".join(out)


def changelog_page() -> str:
    """``CHANGELOG.md`` of the repository root."""
    return (REPO / "CHANGELOG.md").read_text(encoding="utf-8")


#: Generated page -> its builder.
PAGES = {
    "reference-cli.md": cli_page,
    "reference-records.md": records_page,
    "reference-reason-codes.md": reason_codes_page,
    "reference-contract-schema.md": contract_schema_page,
    "changelog.md": changelog_page,
}


def on_files(files: Any, config: Any) -> Any:
    """mkdocs hook: add the generated pages to the build."""
    from mkdocs.structure.files import File

    for name, build in PAGES.items():
        files.append(File.generated(config, name, content=build()))
    return files


if __name__ == "__main__":
    target = Path(sys.argv[1])
    target.mkdir(parents=True, exist_ok=True)
    for name, build in PAGES.items():
        (target / name).write_text(build(), encoding="utf-8")
