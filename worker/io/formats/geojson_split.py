"""Where a GeoJSON file's features array starts and ends, and its features parsed by
simdjson a piece at a time (:mod:`.geojson_stream`).

The split is found without reading the file whole: the first ``"features": [`` of the
first :data:`EDGE_BYTES` whose text before it, with ``[]`` and the file's end after it,
reads as a strict JSON document; the end is the first ``]`` of the last
:data:`EDGE_BYTES` (from the end) leaving a text that closes that document. A ``]``
inside the features array never does (its closers are unbalanced), and a wrong split
makes simdjson refuse a piece, so the file goes to the whole read, which judges it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any, cast

import pyarrow as pa
import simdjson

from worker.io.formats.geojson_fast import Geometries
from worker.io.formats.strict_json import loads_strict

__all__ = [
    "EDGE_BYTES",
    "MAX_END_TRIES",
    "PIECE_BYTES",
    "Unstreamable",
    "edges",
    "feature_parts",
    "pieces",
    "split",
]

#: Bytes at each end of the file searched for the start and the end of the features array.
EDGE_BYTES = 1024 * 1024
#: Bytes of the file parsed at a time (about; a piece ends between two features).
PIECE_BYTES = 2 * 1024 * 1024
#: A piece grows past this without a cut that parses (one feature this large, or a piece
#: simdjson refuses: NaN, a number out of range...): the file is read whole (refused above
#: 256 MiB). Bounds the parses a refused piece costs.
MAX_PIECE_BYTES = 32 * 1024 * 1024
#: Candidate cuts tried per piece before it grows.
CUT_TRIES = 8
#: Candidate ends of the features array tried (each parses the text around it): a member
#: after the features holding thousands of arrays made the split quadratic (64,000 of them
#: about an hour); past this many (for each candidate start) the file is read whole.
MAX_END_TRIES = 64

_FEATURES = re.compile(rb'"features"\s*:\s*\[')
_CLOSE = re.compile(rb"\](?=\s*(?:,\s*\"|\}))")
_SURROGATE = re.compile(rb"\\u[dD][89a-fA-F]")


class Unstreamable(Exception):
    """The streamed pass cannot establish a rule of the whole read: read it whole."""


def edges(file: pa.NativeFile, size: int) -> tuple[bytes, bytes]:
    file.seek(0)
    head = file.read(min(size, EDGE_BYTES))
    file.seek(max(0, size - EDGE_BYTES))
    return head, file.read(min(size, EDGE_BYTES))


def split(head: bytes, tail: bytes, size: int) -> tuple[int, int, dict[str, Any]] | None:
    """``(start, end, doc)``: the offsets of the features array's ``[`` and ``]`` and the
    document with an empty features array, or None when no split reads as strict JSON.

    A ``]`` inside the features array never leaves a text after it that closes the
    document (its closers are unbalanced), so the first one from the end that does is
    the array's end; a wrong split makes the streamed pass refuse the file (the whole
    read then judges it)."""
    text = head.removeprefix(b"\xef\xbb\xbf").lstrip(b" \t\r\n")
    if text[:1] != b"{" or _SURROGATE.search(head) or _SURROGATE.search(tail):
        return None
    tail_at = size - len(tail)
    for found in list(_FEATURES.finditer(head))[:8]:
        start = found.end() - 1
        best: tuple[int, dict[str, Any]] | None = None
        misses = 0
        closes = list(_CLOSE.finditer(tail))[::-1][:MAX_END_TRIES]
        for close in closes:
            end = tail_at + close.start()
            if end <= start:
                break
            doc = _doc(head[:start] + b"[]" + tail[close.start() + 1 :])
            if doc is not None:
                best, misses = (end, doc), 0
            elif best is not None:
                misses += 1
                if misses >= 16:
                    break
        if best is not None:
            return start, best[0], best[1]
    return None


def _doc(text: bytes) -> dict[str, Any] | None:
    try:
        doc = loads_strict(text)
    except (ValueError, RecursionError):  # NotStrictJson, JSONDecodeError, Unicode
        return None
    if not isinstance(doc, dict) or doc.get("features") != []:
        return None
    return doc


def pieces(file: pa.NativeFile, start: int, end: int) -> Iterator[Any]:
    """The features array between the offsets ``start`` (its ``[``) and ``end`` (its
    ``]``) parsed by simdjson about :data:`PIECE_BYTES` at a time: each piece is cut
    after a ``}`` followed by ``,`` and ``{`` and parsed as an array; a cut inside a
    feature leaves its brackets unbalanced and fails to parse, so the cut moves to an
    earlier candidate (:data:`CUT_TRIES` at most) or the piece grows. Yields each
    piece's array (valid until the next is asked for).

    Raises Unstreamable: no cut found in :data:`MAX_PIECE_BYTES`, a piece simdjson
    refuses, a ``\\u`` escape of a surrogate."""
    file.seek(start + 1)
    left = end - start - 1
    buf = b""
    while True:
        block = file.read(min(PIECE_BYTES, left)) if left > 0 else b""
        left -= len(block)
        if _SURROGATE.search(buf[-6:] + block):
            raise Unstreamable("a surrogate escape")
        buf += block
        if left <= 0:
            yield _parse(buf)
            return
        found = _cut(buf)
        if found is None:
            if len(buf) > MAX_PIECE_BYTES:
                raise Unstreamable("no feature boundary")
            continue
        cut, array = found
        yield array
        del array
        buf = buf[cut + 1 :]


def _parse(piece: bytes) -> Any:
    try:
        return simdjson.Parser().parse(b"[" + piece + b"]")
    except (ValueError, RuntimeError) as exc:
        raise Unstreamable(str(exc)) from None


def _cut(buf: bytes) -> tuple[int, Any] | None:
    """The last ``,`` of ``buf`` between two features and the array before it."""
    at, tries = len(buf), 0
    while tries < CUT_TRIES:
        at = buf.rfind(b",", 0, at)
        if at < 0:
            return None
        before, after = buf[max(0, at - 64) : at].rstrip(), buf[at + 1 : at + 65].lstrip()
        if before.endswith(b"}") and after[:1] == b"{":
            tries += 1
            try:
                return at, _parse(buf[:at])
            except Unstreamable:
                continue
    return None


def _unique(value: Any) -> None:
    """Raise Unstreamable when an object in ``value`` (a simdjson value) repeats a
    member name (simdjson keeps both; the whole read refuses the file)."""
    stack = [value]
    while stack:
        node = stack.pop()
        if isinstance(node, simdjson.Object):
            keys = list(node.keys())
            if len(set(keys)) != len(keys):
                raise Unstreamable("a repeated member name")
            children = (node[k] for k in keys)  # proxies (values() gives Python values)
            stack.extend(v for v in children if isinstance(v, _CONTAINERS))
        elif isinstance(node, simdjson.Array):
            stack.extend(v for v in node if isinstance(v, _CONTAINERS))


_CONTAINERS = (simdjson.Object, simdjson.Array)
#: Feature members checked on their own (the others are walked for repeated names).
_PLAIN_MEMBERS = frozenset(("type", "geometry", "properties", "id"))


def feature_parts(
    feat: Any,
    geoms: Geometries,
    props: list[dict[str, Any]],
    texts: list[bytes],
    ids: list[str | None],
) -> None:
    """Check one feature (a simdjson object) and add its parts (raises Unstreamable
    where the whole read refuses the file)."""
    keys = set(feat.keys())
    if len(keys) != len(feat) or feat.get("type") != "Feature":
        raise Unstreamable("not a Feature")
    for key in keys - _PLAIN_MEMBERS:
        _unique(feat[key])
    p = feat.get("properties")
    if p is None:
        props.append({})
        texts.append(b"{}")
    elif isinstance(p, simdjson.Object):
        values = p.as_dict()
        if len(values) != len(p) or any(isinstance(v, dict | list) for v in values.values()):
            _unique(p)
        props.append(values)
        texts.append(cast(bytes, p.mini))  # bytes (the stubs say str)
    else:
        raise Unstreamable("properties not an object")
    g = feat.get("geometry")
    geoms.add(g)
    if geoms.count - 1 in geoms.slow:
        _unique(g)
    fid = feat.get("id")
    if isinstance(fid, _CONTAINERS):
        _unique(fid)
    ok = isinstance(fid, str | int | float) and not isinstance(fid, bool)
    ids.append(json.dumps(fid) if ok else None)
