"""JSON text that is JSON: no ``NaN``, ``Infinity`` or ``-Infinity`` tokens (RFC 8259 §6).

Python's :func:`json.dumps` writes non-finite floats as the bare tokens ``NaN``,
``Infinity`` and ``-Infinity`` by default, which no strict JSON parser reads. Every JSON
the CLI prints, the worker writes to Kafka (records' ``measured``/``expected``) or serves
over HTTP goes through :func:`finite_json` / :func:`dumps_json`, with one documented rule:

* a non-finite number becomes the **string** ``"inf"``, ``"-inf"`` or ``"nan"`` (it keeps
  what was measured, unlike ``null``, and is never a bare JSON token);
* numpy scalars become Python numbers (then the rule above), numpy arrays lists, tuples
  lists; everything else is left as is.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from worker.core._util.text import clip, clip_strings

__all__ = [
    "TextAround",
    "bounded_json_text",
    "dumps_json",
    "finite_clipped",
    "finite_floats",
    "finite_json",
    "json_around",
    "json_text",
    "text_around",
]


def _number(v: float) -> float | str:
    if math.isfinite(v):
        return v
    if math.isnan(v):
        return "nan"
    return "inf" if v > 0 else "-inf"


def finite_json(value: Any) -> Any:
    """A copy of ``value`` with every non-finite float replaced by ``"inf"``, ``"-inf"`` or
    ``"nan"`` (recursively through mappings, lists, tuples and numpy arrays).

    Mapping keys are kept (JSON keys are strings anyway); numpy integers and floats become
    ``int`` / ``float``; bools stay bools. Runs once per clause result on the per-event
    path, so the common exact types are dispatched before the general ``isinstance`` checks.
    """
    t = type(value)
    if t is str or t is int or t is bool or value is None:
        return value
    if t is float:
        return value if value - value == 0.0 else _number(value)  # inf - inf and nan are nan
    if t is dict:
        return {k: finite_json(v) for k, v in value.items()}
    if t is list or t is tuple:
        if all(type(v) is str for v in value):
            return list(value)
        return [finite_json(v) for v in value]
    if isinstance(value, (bool, str, int)):
        return value
    if isinstance(value, float):
        return _number(value)
    if isinstance(value, np.generic):
        return finite_json(value.item())
    if isinstance(value, Mapping):
        return {k: finite_json(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, np.ndarray)):
        return [finite_json(v) for v in value]
    return value


def finite_clipped(value: Any, max_chars: int) -> Any:
    """``finite_json(clip_strings(value, max_chars))`` in one walk instead of two (a
    clause result's ``measured`` value goes through both on the per-event path).

    Exactly what the two give: ``clip_strings`` clips the strings (keys included) of
    dicts, lists and tuples and leaves every other value as it is, which ``finite_json``
    then converts; such other values (numpy arrays, other mappings, named tuples) are
    therefore converted without clipping, as before.

    Raises
    ------
    ValueError
        ``max_chars`` below 1 and a string to clip (as :func:`clip`).
    """
    t = type(value)
    if t is str:
        return clip(value, max_chars)
    if t is int or t is bool or value is None:
        return value
    if t is float:
        return value if value - value == 0.0 else _number(value)
    if t is dict or (t is not list and t is not tuple and isinstance(value, dict)):
        return {
            (clip(k, max_chars) if type(k) is str else clip_strings(k, max_chars)): finite_clipped(
                v, max_chars
            )
            for k, v in value.items()
        }
    if t is list or t is tuple:
        return [finite_clipped(v, max_chars) for v in value]
    if isinstance(value, str):
        return clip(value, max_chars)
    return finite_json(value)


def dumps_json(value: Any, **kwargs: Any) -> str:
    """:func:`json.dumps` of :func:`finite_json` of ``value`` with ``allow_nan=False``.

    Keyword arguments go to :func:`json.dumps` (``indent``, ``sort_keys``, ``default``...);
    values produced by ``default`` are made finite too, so the text never holds ``NaN``
    or ``Infinity``.
    """
    default = kwargs.pop("default", None)
    if default is not None:
        kwargs["default"] = lambda v: finite_json(default(v))
    return json.dumps(finite_json(value), allow_nan=False, **kwargs)


#: The encoder of :func:`json_text`: what ``json.dumps(value, sort_keys=True,
#: ensure_ascii=False, allow_nan=False)`` builds on every call, built once (the per-event
#: path writes one text per clause result).
_RECORD_JSON = json.JSONEncoder(sort_keys=True, ensure_ascii=False, allow_nan=False)


def json_text(value: Any) -> str | None:
    """Sorted-keys JSON text of ``value`` as records carry it (None stays None): plain
    :func:`json.dumps` for the finite JSON types the core builds, else :func:`dumps_json`
    with numpy scalars as Python numbers and anything else as its ``str``. A dict given
    from :func:`text_around` whose entry is a list of finite floats is written from its
    text around it (the same text: the encoder writes such a float as its ``repr``)."""
    if value is None:
        return None
    if type(value) is TextAround and len(value) == value.around[3]:  # its text around a list
        key, head, tail, _ = value.around
        floats = value[key]
        if type(floats) is list and finite_floats(floats):
            return f"{head}[{', '.join(map(float.__repr__, floats))}]{tail}"
    try:  # values built by the core are finite JSON types already (finite_json)
        return _RECORD_JSON.encode(value)
    except (TypeError, ValueError):
        pass

    def fallback(v: Any) -> Any:
        return v.item() if hasattr(v, "item") else str(v)  # numpy scalars, then anything

    return dumps_json(value, sort_keys=True, ensure_ascii=False, default=fallback)


def bounded_json_text(value: Any, max_chars: int) -> str | None:
    """:func:`json_text` of ``value``, or when longer than ``max_chars`` the JSON *string*
    of its clipped text (still valid JSON: it decodes to a str ending in the clip marker of
    :func:`worker.core._util.text.clip`)."""
    text = json_text(value)
    if text is None or len(text) <= max_chars:
        return text
    return json.dumps(clip(text, max_chars))


class TextAround(dict[str, Any]):
    """A dict (equal to, read and written as its plain copy) whose JSON text around one
    entry is known: :attr:`around` ``(key, head, tail, size)``, from :func:`text_around`."""

    __slots__ = ("around",)
    around: tuple[str, str, str, int]


#: A string no JSON value the core builds holds, put in place of the entry split around.
AROUND_MARK = "\x00\x1f\x00json_around"


def finite_floats(values: Iterable[Any]) -> bool:
    """Whether every item of ``values`` is a finite ``float`` (exactly: not a subclass):
    then :func:`finite_clipped` and :func:`finite_json` of a list of them are its copy."""
    for v in values:  # noqa: SIM110 - a loop: all() of a generator took 2.3x as long for a box
        if type(v) is not float or v - v != 0.0:  # inf - inf, nan: nan
            return False
    return True


def json_around(value: Mapping[str, Any], key: str) -> tuple[str, str] | None:
    """The :func:`json_text` of ``value`` split around the value of its ``key``: ``(head,
    tail)`` such that ``head + json_text(v) + tail`` is ``json_text({**value, key: v})``
    for every ``v`` the encoder writes (with sorted keys each entry is written on its own,
    placed by its key alone). None when ``value`` has no ``key``, or when its text is not
    the encoder's (a value of another type, a non-finite float: the fallback's)."""
    if key not in value:
        return None
    try:
        text = _RECORD_JSON.encode({**value, key: AROUND_MARK})
    except (TypeError, ValueError):
        return None
    parts = text.split(_RECORD_JSON.encode(AROUND_MARK))
    if len(parts) != 2:  # the mark written elsewhere too (a value holding it)
        return None
    return parts[0], parts[1]


def text_around(
    base: Mapping[str, Any], key: str, entry: Any, around: tuple[str, str]
) -> dict[str, Any]:
    """``{**base, key: entry}``, built once, that :func:`json_text` writes as ``head`` +
    ``entry`` + ``tail`` (``around``: :func:`json_around` of a dict of the same keys and,
    but for ``key``, the same values) when ``entry`` is a list of finite floats only, each
    float's ``repr`` as the encoder writes it; else as any value (a :class:`TextAround`:
    equal to the plain dict, and a dict). It must not change after (the core's clause
    results do not; an entry added or removed is seen: then written by the encoder)."""
    out = TextAround(base)
    out[key] = entry
    out.around = (key, around[0], around[1], len(out))
    return out
