"""The clause entries of EvaluationRecords written once per result object
(``RecordParts.items`` of ``events._clause_bytes``): an entry is used only for the very
object it was made from, the kept entries are bounded, and routing threads writing at once
get fastavro's bytes."""

from __future__ import annotations

import io
import threading
from collections.abc import Callable
from dataclasses import replace

import fastavro

from worker.core.model import ClauseResult
from worker.io.codec import avro
from worker.io.codec.avro import MOST_KEPT_ITEMS as _MOST_ITEMS
from worker.io.codec.events import _EVALUATION_PARTS, _clause_bytes, _clause_entry

_ITEMS = _EVALUATION_PARTS.kept_items


def _clause_items(clauses: list[ClauseResult], write: Callable = _clause_bytes) -> list[bytes]:
    return _EVALUATION_PARTS.items(clauses, write)


def _item(c: ClauseResult) -> bytes:
    """fastavro's encoding of the clause entry of ``c``, the whole item in one call."""
    out = io.BytesIO()
    items = next(f for f in avro.EVALUATION_RECORD["fields"] if f["name"] == "clauses")
    fastavro.schemaless_writer(out, items["type"]["items"], _clause_entry(c))
    return out.getvalue()


def _extent(i: int) -> ClauseResult:
    measured = {"bounds": [i + 0.5, -1.25, i + 2.0, 3.0], "features": 1, "fraction_inside": 1.0}
    return ClauseResult("extent", "extent", "pass", "halt", measured, None, "all 1 inside")


def test_an_entry_made_from_another_object_is_not_used() -> None:
    a, b = _extent(1), _extent(2)
    _ITEMS[id(b)] = (a, _item(a))  # as if b had a's address after a was freed
    assert _clause_items([b]) == [_item(b)] != [_item(a)]
    assert _ITEMS[id(b)][0] is b


def test_results_shared_and_own_are_encoded_once_and_kept_bounded() -> None:
    shared = replace(_extent(0), name="shared", measured={"bounds": None})
    written: list[ClauseResult] = []

    def counting(c: ClauseResult) -> bytes:
        written.append(c)
        return _clause_bytes(c)

    _ITEMS.clear()
    assert _clause_items([shared, shared], counting) == [_item(shared)] * 2
    assert written == [shared]
    assert _clause_items([shared], counting) == [_item(shared)] and written == [shared]  # kept
    own = [_extent(i) for i in range(3 * _MOST_ITEMS)]
    for c in own:
        assert _clause_items([shared, c], counting) == [_item(shared), _item(c)]
        assert len(_ITEMS) <= _MOST_ITEMS
    assert written[1:4] == own[:3] and len(written) >= len(own) + 1


def test_threads_encoding_at_once_get_fastavros_bytes() -> None:
    results = [_extent(i) for i in range(400)]
    expected = [_item(c) for c in results]
    _ITEMS.clear()
    got: dict[int, list[list[bytes]]] = {}

    def run(t: int) -> None:
        got[t] = [_clause_items(results[i : i + 3]) for i in range(0, 400, 3) for _ in range(3)]

    threads = [threading.Thread(target=run, args=(t,)) for t in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(timeout=60)
    want = [expected[i : i + 3] for i in range(0, 400, 3) for _ in range(3)]
    assert all(got[t] == want for t in range(4))
