"""The libyaml fast path of a contract's YAML (``worker.core.contracts.yaml_fast``) against
PyYAML's pure-Python path: the same values and types, or the same refusal, on hostile text;
and neither path lets an exception other than ContractError out (stop 35's differential
tests: tabs, BOMs, lone surrogates, empty tags were read differently or crashed)."""

from __future__ import annotations

import math
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from worker.core.contracts import parse as _registers_constructors  # noqa: F401
from worker.core.contracts.yaml_doc import _NOT_FAST, load_document
from worker.core.errors import ContractError

_FAST = "worker.core.contracts.yaml_doc._load_with_libyaml"


def _not_fast(text: str, source: str) -> object:
    return _NOT_FAST


PATHS = ("libyaml", "python")


def _typed(value: object) -> object:
    """``value`` with every scalar tagged by its type (1, 1.0, True and '' vs None differ)."""
    if isinstance(value, dict):
        return {(type(k).__name__, k): _typed(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_typed(v) for v in value]
    if isinstance(value, float) and math.isnan(value):
        return ("float", "nan")
    return (type(value).__name__, value)


@pytest.fixture(params=PATHS)
def path(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    if request.param == "python":
        monkeypatch.setattr(_FAST, _not_fast)
    yield request.param


def _read(text: str, python: bool = False) -> tuple[str, object]:
    """("ok", typed values) or ("refused", the ContractError's message)."""
    with pytest.MonkeyPatch.context() as mp:
        if python:
            mp.setattr(_FAST, _not_fast)
        try:
            return "ok", _typed(load_document(text, "t.yaml"))
        except ContractError as exc:
            return "refused", str(exc)


#: Texts libyaml read differently from PyYAML's scanner (tabs after a token, a second
#: BOM, an empty non-specific tag) or could not encode (a lone surrogate): each found by
#: the fuzz below before the fix, with what the Python path makes of it.
DISAGREED = [
    ("layer: x\t\n", "refused", "found character '\\t' that cannot start any token"),
    ("a: b\tc\n", "refused", "found character '\\t' that cannot start any token"),
    ("a: 1 \t# c\n", "refused", "found character '\\t' that cannot start any token"),
    ("\ufeff\ufeffa: b\n", "ok", {("str", "\ufeffa"): ("str", "b")}),
    ("a: !\n", "ok", {("str", "a"): ("NoneType", None)}),
    ("a: x\ud800\n", "refused", "unacceptable character #xd800"),
]


@pytest.mark.parametrize(("text", "outcome", "want"), DISAGREED)
def test_both_paths_read_what_libyaml_read_differently_as_pyyaml_does(
    path: str, text: str, outcome: str, want: object
) -> None:
    got = _read(text)
    assert got[0] == outcome
    if outcome == "ok":
        assert got[1] == want
    else:
        assert isinstance(got[1], str) and str(want) in got[1] and got[1].startswith("t.yaml: ")


#: Explicit tags whose PyYAML constructor raised an IndexError, KeyError, AttributeError or
#: TypeError on an empty or malformed value (a traceback from `contract-gate validate`).
MALFORMED_TAGS = [
    "a: !!int\n",
    "a: !!float\n",
    "a: !!bool\n",
    "a: !!timestamp\n",
    "a: !!timestamp 2020\n",
    "a: !!map [a]\n",
]


@pytest.mark.parametrize("text", MALFORMED_TAGS)
def test_a_malformed_tagged_value_is_refused_with_the_place_not_a_traceback(
    path: str, text: str
) -> None:
    with pytest.raises(ContractError, match=r"^t\.yaml: .*a value cannot be constructed"):
        load_document(text, "t.yaml")


_PIECES = st.sampled_from(
    ["a", ":", " ", "\n", "-", "[", "]", "{", "}", ",", "?", "'", '"', "!!", "!", "str", "int",
     "map", "timestamp", "<<", "010", "1", "1:30", "yes", "2026-12-03", "2026-13-45", "1e999",
     ".nan", "~", "\t", "#", "|", ">", "---", "\r", "\x85", "\u2028", "\ufeff", "\x07", "é",
     "\ud800", "99999999999999999999999"]
)  # fmt: skip


@settings(
    max_examples=300,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(st.lists(_PIECES, max_size=16).map("".join))
def test_the_libyaml_path_reads_any_text_as_the_python_path_does(text: str) -> None:
    assert _read(text) == _read(text, python=True)
