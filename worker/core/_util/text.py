"""Bounds on values echoed from untrusted input into records, logs and messages (pure).

A producer controls attribute values, config documents and payload bytes; any of them may
be megabytes long. Whatever the gate repeats of them (a measured value, a parser's
message, a rejected document) goes through :func:`clip` so that a record or log line has
a known maximum size and says how much was left out.
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["MAX_ECHO_CHARS", "MAX_NAME_CHARS", "clip", "clip_strings", "one_line"]

#: Default longest echo of an untrusted value, in characters.
MAX_ECHO_CHARS = 1000
#: Longest name (a consumer group id, a publisher, a layer) shown in a line of text.
MAX_NAME_CHARS = 120
#: C0 and C1 control characters, DEL included: a newline forges a line of a listing, an
#: ESC starts a terminal escape sequence.
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def clip(text: str, max_chars: int = MAX_ECHO_CHARS) -> str:
    """``text`` itself when at most ``max_chars`` long, else its head and a marker.

    The marker names the original length: ``"abc... [clipped: 10485760 chars in all]"``.
    The result is at most ``max_chars + 40`` characters long.

    Raises
    ------
    ValueError
        ``max_chars`` below 1.
    """
    if max_chars < 1:
        raise ValueError(f"max_chars must be at least 1, got {max_chars}")
    if len(text) <= max_chars:
        return text
    return f"{text[:max_chars]}... [clipped: {len(text)} chars in all]"


def clip_strings(value: Any, max_chars: int = MAX_ECHO_CHARS) -> Any:
    """``value`` (a JSON-like structure of dicts, lists, tuples and scalars) with every
    string in it, keys included, :func:`clip`-ped to ``max_chars``; other values as they
    are. A measured value echoes the batch's own values (a domain clause's unknown codes):
    ``check`` prints it whole, so it is bounded where it is made, as the worker's records
    are."""
    if isinstance(value, str):
        return clip(value, max_chars)
    if isinstance(value, dict):
        return {clip_strings(k, max_chars): clip_strings(v, max_chars) for k, v in value.items()}
    if type(value) in (list, tuple):  # a named tuple or other subclass is left as it is
        return type(value)(clip_strings(v, max_chars) for v in value)
    return value


def one_line(value: Any, max_chars: int = MAX_NAME_CHARS) -> str:
    """A value a producer controls, fit for one line of text a terminal shows: decoded
    (bytes as UTF-8, undecodable bytes replaced), every control character escaped as
    ``\\xNN`` (``"a\\nb"`` -> ``"a\\x0ab"``), then :func:`clip`-ped to ``max_chars``.

    JSON renderings do not need it (JSON escapes control characters itself).

    Raises
    ------
    ValueError
        ``max_chars`` below 1.
    """
    text = value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)
    return clip(_CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text), max_chars)
