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
from collections.abc import Mapping
from typing import Any

import numpy as np

from worker.core._util.text import clip

__all__ = ["bounded_json_text", "dumps_json", "finite_json", "json_text"]


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


def json_text(value: Any) -> str | None:
    """Sorted-keys JSON text of ``value`` as records carry it (None stays None): plain
    :func:`json.dumps` for the finite JSON types the core builds, else :func:`dumps_json`
    with numpy scalars as Python numbers and anything else as its ``str``."""
    if value is None:
        return None
    try:  # values built by the core are finite JSON types already (finite_json)
        return json.dumps(value, sort_keys=True, ensure_ascii=False, allow_nan=False)
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
