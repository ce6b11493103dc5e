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

__all__ = ["dumps_json", "finite_json"]


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
