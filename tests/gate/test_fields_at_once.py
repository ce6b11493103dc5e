"""The routing's per-event records written at once (``__init__`` filling ``__dict__``).

:class:`Source`, :class:`OutRecord`, :class:`Outcome` (worker.gate.records) and
:class:`Decoded` (worker.gate.route) keep a frozen dataclass's behaviour with an
``__init__`` of their own: the same fields in order, defaults, equality, hash, repr,
``replace``, pickling, and no field may be set afterwards.
"""

from __future__ import annotations

import dataclasses
import inspect
import pickle
from typing import Any

import pytest

from worker.gate import records, route
from worker.gate.records import Outcome, OutRecord, Source, failed
from worker.gate.route import Decoded

DECISION = failed("decode_error", "undecodable batch-arrival event: 3 trailing bytes")
SOURCE = Source("gis.batches", 3, 1207, b"admin_boundaries", b"\x02e1", (("replay-of", b"x"),))
CASES: list[tuple[type, tuple[Any, ...], dict[str, Any]]] = [
    (Source, ("gis.batches", 3, 1207, b"admin_boundaries", b"\x02e1"), {"headers": ()}),
    (Source, tuple(vars(SOURCE).values()), {}),
    (
        OutRecord,
        ("gis.batches.admitted", "admin_boundaries", b"v", [("layer", b"a")]),
        {"per_major": False},
    ),
    (OutRecord, ("gis.batches.admitted.v1", "l", b"", [], True), {}),
    (Outcome, (SOURCE, "admin_boundaries", "e1", DECISION, (), 0.25), {"layer_label": "unknown"}),
    (Outcome, (SOURCE, None, None, DECISION, (), 1e-06, "admin_boundaries"), {}),
    (Decoded, (None, None, "admin_boundaries", "e1", DECISION), {}),
]


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
    # the fields in order, the defaults of those not given
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
    assert pickle.loads(pickle.dumps(built)) == built


def test_outcome_and_source_hash_as_dataclasses() -> None:
    a = Source("t", 0, 5, None, None)
    assert hash(a) == hash(Source(*vars(a).values())) == hash(_plain(Source)(*vars(a).values()))
    with pytest.raises(TypeError):  # a record's headers are a list: unhashable, as before
        hash(OutRecord("t", "k", b"", []))


def test_the_init_is_the_modules_own() -> None:
    # the fields written at once, not by the generated __init__ (one setattr a field)
    for cls, module in ((Source, records), (OutRecord, records), (Outcome, records),
                        (Decoded, route)):  # fmt: skip
        assert inspect.getsourcefile(cls.__init__) == module.__file__
        missing = [n for n in inspect.signature(cls.__init__).parameters if n != "self"]
        assert missing == [f.name for f in dataclasses.fields(cls)]
