"""The core's per-event results written at once (``__init__`` writing ``__dict__`` whole).

:class:`ClauseResult`, :class:`VersionVerdict` and :class:`Decision` (worker.core.model),
built for every event, keep a frozen dataclass's behaviour with an ``__init__`` of their
own: the same fields in order, defaults, equality, hash, repr, ``replace``, pickling, and
no field may be set or deleted afterwards (the gate's twin: tests/gate/test_fields_at_once.py).
"""

from __future__ import annotations

import copy
import dataclasses
import inspect
import pickle
from typing import Any

import pytest

from worker.core._util.at_once import fields_at_once
from worker.core.evaluate import decide, version_verdict
from worker.core.model import (
    ActiveVersion,
    ClauseResult,
    Contract,
    Decision,
    QuarantineReason,
    VersionVerdict,
)

PASS = ClauseResult("srid", "crs", "pass", "halt", "EPSG:4326", "EPSG:4326", "declared EPSG:4326")
BREAK = ClauseResult(
    "extent", "extent", "break", "halt", {"fraction_inside": 0.5, "bounds": [0.0, 1.5, 2.0, 3.0]},
    None, "half of the features lie outside", ("axis order looks swapped",), None, None,
)  # fmt: skip
GATE = ClauseResult("valid", "validity", "break", "warn", None, None, "m", (), None, "E: x")
VERDICT = VersionVerdict("admin_boundaries", "v1.0", "enforcing", True, (PASS,))
REASON = QuarantineReason("contract_break", "m", "v1.0", "enforcing", "extent", kind="extent")
CASES: list[tuple[type, tuple[Any, ...], dict[str, Any]]] = [
    (ClauseResult, ("srid", "crs", "pass", "halt", "EPSG:4326", None, "ok"),
     {"diagnoses": (), "offenders": None, "gate_error": None}),
    (ClauseResult, tuple(vars(BREAK).values()), {}),
    (ClauseResult, tuple(vars(GATE).values()), {}),
    (VersionVerdict, tuple(vars(VERDICT).values()), {}),
    (VersionVerdict, ("l", "v2.1", "observing", False, (BREAK, GATE)), {}),
    (Decision, ("admitted", (VERDICT,)), {"reasons": (), "diagnoses": ()}),
    (Decision, ("quarantined", (VERDICT,), (REASON,), ("axis order looks swapped",)), {}),
]  # fmt: skip


def _plain(cls: type) -> type:
    """The same fields as a frozen dataclass with the generated ``__init__``."""
    spec = [(f.name, f.type, f) for f in dataclasses.fields(cls)]
    return dataclasses.make_dataclass(cls.__name__, spec, frozen=True)


@pytest.mark.parametrize(("cls", "args", "defaults"), CASES)
def test_built_as_the_frozen_dataclass(
    cls: type, args: tuple[Any, ...], defaults: dict[str, Any]
) -> None:
    names = [f.name for f in dataclasses.fields(cls)]
    built = cls(*args)
    by_name = cls(**dict(zip(names, args, strict=False)))
    reference = _plain(cls)(*args)
    # every field, in order, the defaults of those not given: a field the __init__ leaves
    # out (or one it adds) fails here
    assert list(vars(built)) == names
    assert vars(built) == vars(by_name) == vars(reference)
    assert {n: getattr(built, n) for n in defaults} == defaults
    assert repr(built) == repr(reference)
    assert built == by_name and built != reference  # (a dataclass equals its own class only)
    with pytest.raises(dataclasses.FrozenInstanceError):
        built.__setattr__(names[0], "changed")
    with pytest.raises(dataclasses.FrozenInstanceError):
        delattr(built, names[-1])
    changed = dataclasses.replace(built, **{names[1]: args[0]})
    assert getattr(changed, names[1]) == args[0] and vars(built) == vars(by_name)
    for again in (pickle.loads(pickle.dumps(built)), copy.copy(built), copy.deepcopy(built)):
        assert again == built and type(again) is cls and list(vars(again)) == names


def test_hash_as_dataclasses() -> None:
    for obj in (PASS, GATE, VERDICT, Decision("admitted", (VERDICT,))):
        values = tuple(vars(obj).values())
        assert hash(obj) == hash(type(obj)(*values)) == hash(_plain(type(obj))(*values))
    with pytest.raises(TypeError):  # a dict measured: unhashable, as before
        hash(BREAK)


def test_properties_read_the_fields() -> None:
    assert (PASS.broke, PASS.halts, BREAK.broke, BREAK.halts, GATE.halts) == (
        False, False, True, True, True,
    )  # fmt: skip
    assert VersionVerdict("l", "v1", "enforcing", False, (PASS, BREAK, GATE)).broken == (
        BREAK, GATE,
    )  # fmt: skip
    d = Decision("quarantined", (VERDICT, dataclasses.replace(VERDICT, version="v2.0")))
    assert not d.admitted and d.enforcing_passed == ("v1.0", "v2.0")


def test_verdicts_and_decisions_of_the_core_are_these() -> None:
    contract = Contract("l", "v1.0", 1, 0, "PT6H", 21600.0, 0.99, "o", "c", (), "d")
    v = version_verdict(ActiveVersion(contract, "observing"), (PASS, BREAK))
    assert vars(v) == vars(VersionVerdict("l", "v1.0", "observing", False, (PASS, BREAK)))
    assert decide((v,)) == Decision("admitted", (v,), (), ("axis order looks swapped",))


def test_the_init_is_written_at_once() -> None:
    # the fields written at once, not by the generated __init__ (one setattr a field)
    for cls in (ClauseResult, VersionVerdict, Decision):
        assert cls.__init__.__code__.co_filename == f"<fields_at_once {cls.__qualname__}>"
        params = [n for n in inspect.signature(cls.__init__).parameters if n != "self"]
        assert params == [f.name for f in dataclasses.fields(cls)]
        assert inspect.signature(cls) == inspect.signature(_plain(cls))  # defaults too


def test_fields_at_once_refuses_what_it_cannot_write() -> None:
    @dataclasses.dataclass(frozen=True, slots=True)
    class Slotted:
        a: int

    @dataclasses.dataclass(frozen=True)
    class Made:
        a: list[int] = dataclasses.field(default_factory=list)

    @dataclasses.dataclass(frozen=True)
    class Derived:
        a: int = dataclasses.field(default=0, init=False)

    class Plain:
        a: int

    for cls in (Slotted, Made, Derived, Plain):
        with pytest.raises(TypeError, match=cls.__name__):
            fields_at_once(cls)


def test_a_default_is_the_fields_own_object() -> None:
    marker = object()

    @fields_at_once
    @dataclasses.dataclass(frozen=True)
    class WithDefaults:
        a: int
        b: Any = marker
        c: str = "x"

    made = WithDefaults(1)
    assert vars(made) == {"a": 1, "b": marker, "c": "x"} and made.b is marker
    assert WithDefaults(1, c="y", b=None) == WithDefaults(a=1, b=None, c="y")
    with pytest.raises(TypeError):
        WithDefaults()  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        WithDefaults(1, d=2)  # type: ignore[call-arg]
