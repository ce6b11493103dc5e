"""A frozen dataclass whose ``__init__`` writes its fields at once (pure).

A frozen dataclass's generated ``__init__`` writes each field with a call of
``object.__setattr__`` (about 0.1 us a field on the per-event path: a ``ClauseResult`` took
1 us). :func:`fields_at_once` gives the class an ``__init__`` of the same parameters
(the fields in order, their defaults) that sets the instance's ``__dict__`` to one dict
built whole: 0.3 us for ten fields. Everything else stays the dataclass's: fields, equality,
hash, repr, frozen ``__setattr__``/``__delattr__``, ``dataclasses.replace`` (which calls
this ``__init__``), copying and pickling (which restore ``__dict__``).

Why the dict is built whole: CPython 3.11 reads an attribute of an instance whose values
are inline, or whose ``__dict__`` is an ordinary dict, with a specialised instruction; a
``__dict__`` filled key by key after reading ``self.__dict__`` is a split dict, which those
instructions do not read: each read then takes the generic path, about four times as long
(stop 42's ``Source`` was read at 95 ns for six fields against 23 ns).
"""

from __future__ import annotations

import dataclasses
from typing import Any, TypeVar

__all__ = ["fields_at_once"]

T = TypeVar("T")


def fields_at_once(cls: type[T]) -> type[T]:
    """Class decorator, above ``@dataclass(frozen=True)``: replace the generated
    ``__init__`` with one that sets ``__dict__`` to ``{field: value, ...}`` in the fields'
    order (see the module docstring). Returns ``cls``.

    Raises
    ------
    TypeError
        ``cls`` is not a dataclass, has ``__slots__`` (no ``__dict__``), or a field that is
        not an ``__init__`` parameter or has a default factory (not needed yet).
    """
    if not dataclasses.is_dataclass(cls) or "__slots__" in vars(cls):
        raise TypeError(f"{cls.__name__}: fields_at_once needs a dataclass with a __dict__")
    fields = dataclasses.fields(cls)
    params, entries, defaults = [], [], {}
    for f in fields:
        if not f.init or f.default_factory is not dataclasses.MISSING:
            raise TypeError(f"{cls.__name__}.{f.name}: only plain init fields are written at once")
        if f.default is dataclasses.MISSING:
            params.append(f.name)
        else:
            defaults[f"_default_{f.name}"] = f.default
            params.append(f"{f.name}=_default_{f.name}")
        entries.append(f"{f.name!r}: {f.name}")
    source = (
        f"def __init__(self, {', '.join(params)}):\n"
        f"    _set(self, '__dict__', {{{', '.join(entries)}}})\n"
    )
    names: dict[str, Any] = {"_set": object.__setattr__, **defaults}
    # (as dataclasses writes its own __init__: a function of these parameters, compiled)
    exec(compile(source, f"<fields_at_once {cls.__qualname__}>", "exec"), names)
    init = names["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    init.__module__ = cls.__module__
    init.__annotations__ = {f.name: f.type for f in fields} | {"return": None}
    init.__doc__ = "Write the fields at once (worker.core._util.at_once.fields_at_once)."
    cls.__init__ = init  # type: ignore[method-assign]
    return cls
