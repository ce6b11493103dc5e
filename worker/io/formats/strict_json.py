"""Strict JSON: one reading of a text, or a refusal naming where it is ambiguous.

Python's :func:`json.loads` accepts what RFC 8259 does not define: the constants ``NaN``,
``Infinity`` and ``-Infinity`` (section 6: "Numeric values that cannot be represented in
the grammar below (such as Infinity and NaN) are not permitted"), and an object that
repeats a member name, keeping the last one (section 4: "The names within an object
SHOULD be unique", and receivers then disagree on which value counts). RFC 7493 (I-JSON)
makes both errors, as well as numbers beyond IEEE 754 double precision (section 2.2,
``1e400`` read as infinity) and strings holding a lone UTF-16 surrogate (section 2.1,
``"\\ud800"``, which UTF-8 cannot hold). :func:`loads_strict` reads a document as
:func:`json.loads` does and raises :class:`NotStrictJson` for any of these, with the JSON
path of the first one (``features[3].properties.depth_m``).
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from worker.core._util.text import clip
from worker.core.errors import PayloadCorrupt

__all__ = ["NotStrictJson", "json_path", "loads_strict"]


class NotStrictJson(PayloadCorrupt):
    """A JSON text with a non-finite number, a repeated member name or a lone surrogate:
    two readers of it may see two different documents (RFC 8259 sections 4 and 6,
    RFC 7493 section 2)."""


class _Flagged:
    """A value the strict reader refuses, kept in place so its path can be found."""

    __slots__ = ("why",)

    def __init__(self, why: str) -> None:
        self.why = why


class _Duplicated(dict[str, Any]):
    """An object whose member ``name`` was repeated (the first value kept)."""

    name: str


_CONSTANTS = {
    "NaN": "NaN is not a JSON number (RFC 8259 section 6)",
    "Infinity": "Infinity is not a JSON number (RFC 8259 section 6)",
    "-Infinity": "-Infinity is not a JSON number (RFC 8259 section 6)",
}
#: An escaped UTF-16 surrogate in the text (the only way one reaches a decoded string).
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")
_LONE = re.compile("[\ud800-\udfff]")
#: A number that may exceed double precision (an exponent of 3 digits or 309 digits in a
#: row): only then are numbers read through Python (slower) to find an overflow.
_HUGE = re.compile(rb"[eE]\+?0*[1-9][0-9]{2}|[0-9]{309}")
#: The longest integer literal Python converts (``sys.get_int_max_str_digits()``'s default,
#: CVE-2020-10735): a longer one is refused with its path, not with Python's hint.
_INT_DIGITS = 4300


def loads_strict(data: bytes) -> Any:
    """The JSON document in ``data``, read strictly.

    Raises
    ------
    NotStrictJson
        Without the file name (the caller adds it): the first refused value in document
        order and its JSON path.
    json.JSONDecodeError, UnicodeDecodeError, RecursionError
        As :func:`json.loads`.
    """
    flagged = False

    def constant(name: str) -> _Flagged:
        nonlocal flagged
        flagged = True
        return _Flagged(_CONSTANTS.get(name, f"{name} is not a JSON number"))

    def number(text: str) -> float | _Flagged:
        nonlocal flagged
        value = float(text)  # an integer literal stays an int, exact
        if math.isinf(value):
            flagged = True
            return _Flagged(
                f"{clip(text, 40)} is beyond double precision, read as infinity (RFC 7493 "
                "section 2.2)"
            )
        return value

    def members(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        nonlocal flagged
        obj = dict(pairs)
        if len(obj) == len(pairs):
            return obj
        flagged = True
        seen: set[str] = set()
        twice = next(k for k, _ in pairs if k in seen or seen.add(k))  # type: ignore[func-returns-value]
        dup = _Duplicated()
        for k, v in pairs:
            dup.setdefault(k, v)
        dup.name = twice
        return dup

    huge = _HUGE.search(data) is not None
    floats, ints = (number, _integer) if huge else (None, None)
    # decoded as json.loads decodes bytes (RFC 8259 8.1 detection, 'surrogatepass'), so a
    # surrogate written as UTF-8 bytes (ED A0 80: no valid UTF-8) is seen like an escape
    text = data.decode(json.detect_encoding(data), "surrogatepass")
    doc = json.loads(
        text,
        parse_constant=constant,
        parse_float=floats,
        parse_int=ints,
        object_pairs_hook=members,
    )
    if flagged or huge or _SURROGATE_ESCAPE.search(data) or _LONE.search(text):
        problem = _first_problem(doc)
        if problem is not None:
            path, why = problem
            raise NotStrictJson(f"{path or 'the document'}: {why}")
    return doc


def _integer(text: str) -> int | _Flagged:
    """``parse_int`` of a text with huge numbers: the exact int (even beyond int64 or a
    double: a property is then read as text, a coordinate refused by the WKB writer), or
    a refusal when it is longer than Python converts."""
    digits = len(text.lstrip("-"))
    if digits <= _INT_DIGITS:
        return int(text)
    return _Flagged(
        f"an integer of {digits} digits: more than the {_INT_DIGITS} Python reads "
        "(RFC 7493 section 2.2: beyond double precision)"
    )


def _first_problem(doc: Any) -> tuple[str, str] | None:
    """``(JSON path, why)`` of the first refused value in document order, else None.
    Iterative: any depth :func:`json.loads` produced is safe to walk."""
    stack: list[tuple[Any, str]] = [(doc, "")]
    while stack:
        node, path = stack.pop()
        if isinstance(node, _Flagged):
            return path, node.why
        if isinstance(node, str) and _LONE.search(node):
            return path, _lone(node)
        if isinstance(node, _Duplicated):
            return path, (
                f"the member name {clip(node.name, 60)!r} appears more than once in one "
                "object (RFC 8259 section 4, RFC 7493 section 2.3): readers disagree on "
                "which value counts; keep one"
            )
        if isinstance(node, dict):
            for key in node:
                if _LONE.search(key):
                    return json_path(path, key), _lone(key)
            stack.extend((v, json_path(path, k)) for k, v in reversed(node.items()))
        elif isinstance(node, list):
            stack.extend((v, f"{path}[{i}]") for i, v in reversed(list(enumerate(node))))
    return None


def _lone(text: str) -> str:
    found = _LONE.search(text)
    code = ord(found.group()) if found else 0
    return (
        f"a lone UTF-16 surrogate \\u{code:04x} in a string, which no UTF-8 text can hold "
        "(RFC 7493 section 2.1)"
    )


_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def json_path(parent: str, key: str) -> str:
    """``parent.key``, or ``parent["key"]`` for a key that is not a plain name (clipped
    to 60 characters)."""
    if _NAME.match(key):
        step = clip(key, 60)
        return f"{parent}.{step}" if parent else step
    return f"{parent}[{json.dumps(clip(key, 60))}]"
