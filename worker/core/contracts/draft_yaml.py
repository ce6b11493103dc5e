"""A :class:`~worker.core.contracts.draft_model.Draft` as YAML text with comments (pure).

Every string is written double-quoted by PyYAML's emitter (escapes included), so no code
or name is ever retyped by a YAML 1.1 reader (``"NO"``, ``"010"``, ``"1e3"``, ``"on"``
stay strings); integer domain codes are written as plain decimal integers (they match
integer columns); numbers never in exponent form (YAML 1.1 reads ``1e-06`` as a string).
Comments are one line each, control characters replaced, so no text from a sample can
add a line of YAML.
"""

from __future__ import annotations

import math
import re
from typing import Any

import numpy as np
import yaml

from worker.core.contracts.draft_model import Codes, Draft, DraftClause, Fields, Note

__all__ = ["render_draft", "scalar"]

_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")
#: Column of the comments beside values (a longer line gets two spaces).
COMMENT_COLUMN = 40


def scalar(value: Any) -> str:
    """One YAML scalar: a string double-quoted, a bool ``true``/``false``, an int in
    decimal, a float in its shortest round-trip digits (never an exponent).

    Raises
    ------
    ValueError
        A non-finite float, or a type no contract field holds.
    """
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"non-finite number {value!r} in a draft")
        text = np.format_float_positional(value, trim="-")  # shortest, never an exponent
        return text if "." in text else f"{text}.0"
    if isinstance(value, str):
        out = yaml.safe_dump(value, default_style='"', allow_unicode=True, width=math.inf)
        return str(out).rstrip("\n")
    raise ValueError(f"cannot write {type(value).__name__} in a draft")


def _comment(text: str) -> str:
    return _CONTROL.sub(" ", text)


def _line(indent: int, text: str, comment: str | None = None) -> str:
    line = " " * indent + text
    if comment:
        line = line.ljust(COMMENT_COLUMN) + ("  " if len(line) >= COMMENT_COLUMN else "")
        line += f"# {_comment(comment)}"
    return line.rstrip()


def _flow(value: Any) -> str:
    if isinstance(value, list):
        return "[" + ", ".join(_flow(v) for v in value) + "]"
    return scalar(value)


def _param(key: str, value: Any, comment: str | None) -> list[str]:
    if isinstance(value, Codes):
        lines = [_line(4, f"{key}:", comment)]
        lines += [_line(6, f"{scalar(c)}: {scalar(m)}", note) for c, m, note in value.entries]
        return lines
    if isinstance(value, Fields):
        lines = [_line(4, f"{key}:", comment)]
        for name, ftype, nullable, note in value.entries:
            entry = f"- {{name: {scalar(name)}, type: {ftype}, nullable: {scalar(nullable)}}}"
            lines.append(_line(6, entry, note))
        return lines
    return [_line(4, f"{key}: {_flow(value)}", comment)]


def _clause(c: DraftClause | Note) -> list[str]:
    if isinstance(c, Note):
        return [_line(2, f"# {_comment(text)}") for text in c.comments]
    lines = [_line(2, f"# {_comment(text)}") for text in c.comments]
    lines.append(_line(2, f"- name: {scalar(c.name)}"))
    lines.append(_line(4, f"kind: {c.kind}"))
    if c.on_break != "halt":
        lines.append(_line(4, f"on_break: {c.on_break}", "the samples break it: see above"))
    for key, value, comment in c.params:
        lines += _param(key, value, comment)
    return lines


def render_draft(draft: Draft) -> str:
    """The draft as a YAML document with comments, ending in a newline."""
    lines = [f"# {_comment(h)}" for h in draft.header]
    lines += [
        _line(0, f"layer: {scalar(draft.layer)}"),
        _line(0, "version: v1", "the layer's first version"),
        _line(0, f"cadence: {scalar(draft.cadence)}", "--cadence: how often batches arrive"),
        _line(0, f"objective: {scalar(draft.objective)}", "--objective: share admitted"),
        _line(0, f"owner: {scalar(draft.owner)}", "--owner"),
        _line(0, f"changelog: {scalar(draft.changelog)}"),
        "clauses:",
    ]
    for c in draft.clauses:
        lines += _clause(c)
    return "\n".join(lines) + "\n"
