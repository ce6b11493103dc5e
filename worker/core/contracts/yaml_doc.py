"""Safe loading of a contract's YAML text (docs/design.md 3).

Refused before any value is used: documents over :data:`MAX_DOCUMENT_BYTES`, anchors and
aliases, nesting deeper than :data:`MAX_DEPTH`, duplicate or unhashable keys, domain codes
or meanings that YAML 1.1 would retype (unquoted ``010``, ``yes``, ``1:30``), and numbers it
would (``min: 010``).
"""

from __future__ import annotations

import re
import sys
from typing import Any

import yaml

from worker.core.contracts.fixes import _fail
from worker.core.contracts.yaml_fast import _construct, _FastLoader, _node_depth, unique_mapping
from worker.core.contracts.yaml_numbers import _YAML11_READS, _check_number_nodes, _yaml11_value
from worker.core.errors import ContractError

__all__ = [
    "MAX_DEPTH",
    "MAX_DOCUMENT_BYTES",
    "load_document",
]


#: Largest contract document accepted, in bytes of UTF-8, checked before YAML sees it.
MAX_DOCUMENT_BYTES = 1 << 20
#: Deepest nesting of YAML collections accepted (a contract needs 5 levels).
MAX_DEPTH = 32

_STR_TAG = "tag:yaml.org,2002:str"
_INT_TAG = "tag:yaml.org,2002:int"
_PLAIN_DECIMAL = re.compile(r"-?(?:0|[1-9][0-9]*)")

#: What PyYAML's constructors raise on a value they cannot build: ValueError and
#: OverflowError (``2026-13-45``), and on an explicit tag with an empty or malformed value
#: IndexError (``!!int``), KeyError (``!!bool``), AttributeError (``!!timestamp 2020``) and
#: TypeError (``!!map [a]``).
_CONSTRUCTION_ERRORS = (ValueError, OverflowError, IndexError, KeyError, AttributeError, TypeError)
#: Characters libyaml reads otherwise than PyYAML's Python reader and scanner: a tab after
#: a token (PyYAML refuses it, libyaml takes it into the value or skips it), a lone
#: surrogate (libyaml cannot be given one; PyYAML names it), ``!`` (an empty non-specific
#: tag is '' to libyaml, None to PyYAML). A text holding one takes the Python path.
_PYTHON_ONLY = re.compile("[\t!\ud800-\udfff]")


def _quote_it(text: str) -> str:
    return (
        f"quote it ('{text}': ...) to keep it as written: YAML 1.1 reads unquoted 010 as "
        "octal 8, 0x1A as 26, 1:30 as base-60 90, 1_000 as 1000, yes/no/on/off as booleans, "
        "1.5 as a float and ~ as null; unquoted, only plain decimal integers such as 10 stay "
        "as written"
    )


class _UniqueKeyLoader(yaml.SafeLoader):
    """A SafeLoader that refuses duplicate mapping keys (PyYAML keeps the last silently),
    anchors and aliases (``&a``/``*a``: a "billion laughs" document expands exponentially)
    and collections nested deeper than :data:`MAX_DEPTH`."""

    _depth = 0

    def compose_node(self, parent: Any, index: Any) -> Any:
        event = self.peek_event()
        if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None) is not None:
            raise yaml.composer.ComposerError(
                None,
                None,
                "YAML anchors and aliases (&name, *name) are not allowed in a contract; "
                "write each value out in full",
                event.start_mark,
            )
        self._depth += 1
        try:
            if self._depth > MAX_DEPTH:
                raise yaml.composer.ComposerError(
                    None,
                    None,
                    f"collections nested deeper than {MAX_DEPTH} levels; a contract needs 5",
                    event.start_mark,
                )
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1


def _construct_mapping(loader: _UniqueKeyLoader, node: yaml.MappingNode) -> dict[Any, Any]:
    return unique_mapping(node, lambda child: loader.construct_object(child, deep=True))


def _child(node: Any, key: str) -> Any:
    """The value node of ``key`` in a mapping node (None when absent or not a mapping)."""
    if not isinstance(node, yaml.MappingNode):
        return None
    for k, v in node.value:
        if isinstance(k, yaml.ScalarNode) and k.tag == _STR_TAG and k.value == key:
            return v
    return None


def _check_domain_nodes(root: Any, source: str) -> None:
    """Domain codes and meanings mean what their authors wrote (YAML 1.1 implicit types).

    A code (key of a domain clause's ``values``) must be a string (quoted, or plain text
    YAML reads as a string) or a plain decimal integer (``10``, ``-3``); a meaning must be a
    string. Anything YAML 1.1 would turn into another value (``010`` -> 8, ``0x1A`` -> 26,
    ``1:30`` -> 90, ``1_000`` -> 1000, ``yes`` -> True, ``1.5``, ``~``, dates) is refused
    with a "quote it" fix, judged on the node's tag and source text before construction.
    """
    clauses = _child(root, "clauses")
    if not isinstance(clauses, yaml.SequenceNode):
        return
    for i, clause in enumerate(clauses.value):
        values = _child(clause, "values")
        if not isinstance(values, yaml.MappingNode):
            continue
        for key, value in values.value:
            text = key.value if isinstance(key, yaml.ScalarNode) else "?"
            where = ["clauses", i, "values", text]
            if not isinstance(key, yaml.ScalarNode):
                raise _fail(source, where, "a domain code must be a scalar", _quote_it("code"))
            if key.tag == _INT_TAG and _PLAIN_DECIMAL.fullmatch(key.value):
                pass
            elif key.tag != _STR_TAG:
                reads = _YAML11_READS.get(key.tag, key.tag)
                raise _fail(
                    source,
                    where,
                    f"domain code {key.value} is written unquoted and YAML 1.1 reads it as "
                    f"{reads}: {_yaml11_value(key)!r}, not the code {key.value!r}",
                    _quote_it(key.value),
                )
            if isinstance(value, yaml.ScalarNode) and value.tag != _STR_TAG:
                reads = _YAML11_READS.get(value.tag, value.tag)
                raise _fail(
                    source,
                    where,
                    f"the meaning {value.value} is written unquoted and YAML 1.1 reads it as "
                    f"{reads}: {_yaml11_value(value)!r}; a meaning is text",
                    _quote_it(value.value).replace(
                        f"'{value.value}': ...", f"...: '{value.value}'"
                    ),
                )


def _yaml_problem(exc: yaml.YAMLError) -> str:
    """One line: ``line L, column C: not readable as YAML: <problem>`` (1-based, from the
    PyYAML mark of the problem), without PyYAML's multi-line source excerpt."""
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
    context = getattr(exc, "context", None)
    where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""
    why = f"{context}, {problem}" if context and problem and context not in problem else problem
    return f"{where}not readable as YAML: {why}"


def load_document(text: str, source: str) -> Any:
    """The YAML document ``text`` as Python values, refusing what would not mean what the
    author wrote.

    Refused, each with :class:`ContractError` naming ``source``: more than
    :data:`MAX_DOCUMENT_BYTES` bytes (checked before parsing), unreadable YAML, anchors and
    aliases (refused while composing, before any expansion: a nested-alias "billion
    laughs" document fails in microseconds), nesting deeper than :data:`MAX_DEPTH`,
    duplicate or unhashable keys, and domain codes or meanings YAML 1.1 would retype
    (:func:`_check_domain_nodes`).
    """
    size = len(text.encode("utf-8", errors="surrogatepass"))
    if size > MAX_DOCUMENT_BYTES:
        raise ContractError(
            f"{source}: (document): {size} bytes, more than the {MAX_DOCUMENT_BYTES} a contract "
            "may have; a contract is a short YAML file (move large regions to a simpler "
            "polygon or a bbox)",
            field="(document)",
            fix="keep the contract short: move large regions to a simpler polygon or a bbox",
        )
    fast = _load_with_libyaml(text, source)
    if fast is not _NOT_FAST:
        return fast
    try:  # the reader refuses control characters already here, in the constructor
        loader = _UniqueKeyLoader(text)
    except yaml.YAMLError as exc:
        raise ContractError(
            f"{source}: {_yaml_problem(exc)}", fix="correct the YAML at the place named"
        ) from None
    try:
        root = loader.get_single_node()
        _check_domain_nodes(root, source)
        _check_number_nodes(root, source)
        return None if root is None else loader.construct_document(root)
    except yaml.YAMLError as exc:
        raise ContractError(
            f"{source}: {_yaml_problem(exc)}", fix="correct the YAML at the place named"
        ) from None
    except _CONSTRUCTION_ERRORS as exc:  # `2026-13-45`, a YAML timestamp; `!!int` alone
        why = str(exc)
        if "Exceeds the limit" in why:  # not Python's hint (sys.set_int_max_str_digits)
            why = f"an integer of more than {sys.get_int_max_str_digits()} digits"
        elif not isinstance(exc, ValueError | OverflowError):
            why = f"an explicit tag such as !!int on an empty or malformed value: {exc}"
        raise ContractError(
            f"{source}: not readable as YAML: a value cannot be constructed ({why}); quote "
            "it if it is text",
            fix="quote the value if it is text",
        ) from None
    finally:
        loader.dispose()


_NOT_FAST = object()


def _load_with_libyaml(text: str, source: str) -> Any:
    """:func:`load_document` composed by libyaml (PyYAML's C binding), when it can give the
    same answer; else :data:`_NOT_FAST` and the caller takes the pure-Python path.

    The pure-Python composer cost about 3 ms a contract, most of a worker's start-up with
    1,000 versions on the config topic. libyaml refuses nesting beyond its own limit (1,000
    levels) while scanning, so its recursive composer cannot exhaust the stack; a text with
    no ``&`` and no ``*`` has no anchor and no alias; nesting beyond :data:`MAX_DEPTH` is
    counted on the composed nodes (iteratively). Construction is the same Python
    constructor (duplicate keys, domain node checks). Any YAML error goes to the Python
    path, so messages are the same whichever path read the document.
    """
    if _FastLoader is None or "&" in text or "*" in text or _PYTHON_ONLY.search(text):
        return _NOT_FAST
    if "\ufeff" in text[1:]:  # a BOM after the first character: libyaml drops it
        return _NOT_FAST
    loader = _FastLoader(text)
    loader.yaml_constructors = _UniqueKeyLoader.yaml_constructors
    try:
        root = loader.get_single_node()
        if root is None:
            return None
        if _node_depth(root) > MAX_DEPTH:
            return _NOT_FAST  # the Python composer names where
        _check_domain_nodes(root, source)
        _check_number_nodes(root, source)
        return _construct(loader, root)
    except (yaml.YAMLError, *_CONSTRUCTION_ERRORS):  # e.g. an impossible timestamp
        return _NOT_FAST
    finally:
        loader.dispose()
