"""Stop 38: the last round's fast paths against their general paths on hostile generated
inputs (what held; the findings have tests of their own).

- ``identity_memo`` keyed by ``id``: an object freed and another allocated at its address
  never gets the first one's answer, one argument or several, shared or per thread, and
  across the clear of a full cache.
- The little-endian MultiPolygon short path of the WKB pre-check: MultiPolygons built part
  by part (rings of 0 to 5 points, empty parts, holes) with a count field or a header byte
  set to an extreme value, cut or padded: whatever the path accepts, the walk accepts to
  the same byte, and :func:`wkb_problem` answers as the walk alone does.
"""

from __future__ import annotations

import gc
import struct

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.catalogue import batch_of
from tests.core.test_polygons_path import _odd_values, _ring_wkb, _star
from tests.fast_paths import assert_same_facts, general_facts
from worker.core._util.memo import identity_memo
from worker.core.facts import polygons_mixed as polygons_module
from worker.core.facts import wkb_check as wkb
from worker.core.facts.batch import BatchFacts
from worker.core.facts.wkb_check import wkb_problem
from worker.core.facts.wkb_multipolygon import NDR_MULTIPOLYGON, ndr_multipolygon


class _Box:
    """A value whose answer depends on its content, not its identity."""

    __slots__ = ("value",)

    def __init__(self, value: int) -> None:
        self.value = value


@pytest.mark.parametrize("per_thread", [False, True])
@pytest.mark.parametrize("arity", [1, 2])
def test_an_id_reused_after_a_free_never_gets_the_freed_objects_answer(
    per_thread: bool, arity: int
) -> None:
    calls: list[int] = []

    @identity_memo(maxsize=8, per_thread=per_thread)
    def answer(*boxes: _Box) -> int:
        calls.append(1)
        return sum(b.value for b in boxes)

    other = _Box(1000)
    seen_ids: set[int] = set()
    for n in range(400):  # allocated and freed in turn: CPython reuses the freed addresses
        box = _Box(n)
        seen_ids.add(id(box))
        args = (box,) if arity == 1 else (box, other)
        assert answer(*args) == n + (0 if arity == 1 else 1000)
        assert answer(*args) == n + (0 if arity == 1 else 1000)  # a hit: the same object
        del box, args
        gc.collect(0)
    # the memo kept the objects it holds alive, so their ids were not handed out again
    # while cached; after each clear (every 8 entries), freed addresses came back
    assert len(calls) == 400
    assert len(seen_ids) < 400  # addresses were reused: the case under test happened


def _ring(points: int) -> bytes:
    return struct.pack("<I", points) + b"".join(
        struct.pack("<dd", float(i), float(i * i % 7)) for i in range(points)
    )


def _polygon(rings: list[int]) -> bytes:
    return b"\x01\x03\x00\x00\x00" + struct.pack("<I", len(rings)) + b"".join(map(_ring, rings))


_PARTS = st.lists(st.lists(st.integers(0, 5), max_size=3), max_size=4)
_EXTREMES = st.sampled_from([0, 1, 2, 3, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFF, 0x10, 0x100])


@given(_PARTS, st.lists(st.tuples(st.integers(0, 10**6), _EXTREMES), max_size=2),
       st.lists(st.tuples(st.integers(0, 10**6), st.integers(0, 255)), max_size=2),
       st.integers(-40, 40), st.booleans())  # fmt: skip
@settings(max_examples=2500, deadline=None)
def test_the_multipolygon_short_path_accepts_only_what_the_walk_accepts(
    parts: list[list[int]],
    counts: list[tuple[int, int]],
    edits: list[tuple[int, int]],
    cut: int,
    other_part: bool,
) -> None:
    body = [_polygon(r) for r in parts]
    if other_part and body:  # a big-endian or 3D part among them: the general path's
        body[0] = b"\x01\xe9\x03\x00\x00" + body[0][5:]  # an ISO Polygon Z header
    data = bytearray(NDR_MULTIPOLYGON + struct.pack("<I", len(parts)) + b"".join(body))
    for at, value in counts:  # a u32 count or type set to an extreme value
        at %= max(1, len(data) - 3)
        data[at : at + 4] = struct.pack("<I", value)
    for at, value in edits:
        data[at % len(data)] = value
    value = bytes(data[: len(data) + cut] if cut < 0 else data + b"\x00" * cut)
    if len(value) < 9 or not value.startswith(NDR_MULTIPOLYGON):
        return
    end = ndr_multipolygon(value)
    try:
        walked: int | None = wkb.walk(value, wkb.DEFAULT_MAX_DEPTH)
        reason = None
    except wkb.WkbRefused as exc:
        walked, reason = None, f"WKB rejected before parsing: {exc}"
    if end is not None:
        assert end == walked
    if walked is not None:  # sound: bytes after its end (``cut`` > 0) are the fault
        reason = wkb.trailing_reason(walked, len(value))
    assert wkb_problem(value) == reason


@given(st.integers(256, 700), st.integers(0, 2**32 - 1), st.sampled_from(["even", "odd", "mixed"]),
       st.sampled_from(["EPSG:4326", "EPSG:3857"]))  # fmt: skip
@settings(max_examples=40, deadline=None)
def test_the_star_ring_probe_never_changes_a_fact(n: int, seed: int, where: str, crs: str) -> None:
    """The probe of 64 evenly spaced rows (batches of 256 rows or more) decides only whether
    the star-ring path is tried: batches whose probed rows are stars and the others not
    (or the reverse, or a mix) give every fact of the general path."""
    rng = np.random.default_rng(seed)
    probed = set(np.linspace(0, n - 1, 64).astype(np.int64).tolist())
    odd = _odd_values(rng)
    values: list[bytes | None] = []
    for i in range(n):
        star = (where == "mixed" and bool(rng.integers(2))) or (i in probed) == (where == "even")
        if star:
            ring = _star(rng, int(rng.integers(5, 40)), (rng.uniform(-170, 170),
                         rng.uniform(-80, 80)), rng.uniform(0.001, 2))  # fmt: skip
            values.append(_ring_wkb(ring))
        else:
            values.append(odd[int(rng.integers(len(odd)))])
    batch = batch_of(values, crs=crs)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(polygons_module, "POLYGONS_WITHOUT_GEOMETRIES_MIN", 64)
        fast = BatchFacts(batch)
        general = general_facts(batch)
        assert_same_facts(fast, general)
