"""A GeoParquet chunk's WKB values (WkbTuple) are bytes objects built only when read: a
chunk of star-shaped polygons is judged from its Arrow buffers without building them, and
decides as the plain tuple of its values does (issue 27, stop 43)."""

from __future__ import annotations

import copy
import json
import operator
import pickle
from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.catalogue import batch_of
from tests.core.test_polygons_path import _batch_values, _ring_wkb, _star
from tests.fast_paths import general_facts
from worker.core.chunks import ChunkedBatch, evaluate_chunked
from worker.core.clauses.sample import take_features
from worker.core.contracts.parse import parse_contract
from worker.core.evaluate import evaluate
from worker.core.facts import polygons_mixed as polygons_module
from worker.core.facts.batch import BatchFacts
from worker.core.facts.wkb_arrow import WkbTuple, wkb_bytes
from worker.core.model import ActiveVersion, Batch
from worker.io.payloads import read_batch_file, read_batch_file_chunked

NOW = datetime(2026, 12, 4, 23, 0, tzinfo=timezone.utc)
CONTRACT = """layer: parcels
version: v1
cadence: PT6H
objective: 0.99
owner: tests
changelog: the peers benchmark's checks
clauses:
  - {name: extent, kind: extent, region: [-180.0, -90.0, 180.0, 90.0], min_fraction_inside: 0.9}
  - {name: geometry_types, kind: geometry_type, allowed: [Polygon]}
  - {name: valid, kind: validity, max_invalid_fraction: 0.0}
  - {name: size, kind: feature_count, min: 1, max: 100000}
"""


def test_a_wkb_tuple_builds_its_bytes_only_when_read() -> None:
    values = [b"ab", None, b"cde", b"", b"f"]
    array = pa.array(values, pa.binary()).slice(1)  # sliced: offsets do not start at 0
    wkb = WkbTuple(array)
    assert len(wkb) == 4 and bool(wkb)
    assert (wkb[0], wkb[1], wkb[-1], wkb[np.int64(2)]) == (None, b"cde", b"f", b"")
    assert wkb.take([3, 0, 1]) == (b"f", None, b"cde")
    with pytest.raises(IndexError):
        wkb[4]
    with pytest.raises(IndexError):
        wkb[-5]
    assert not wkb.built  # read one value at a time: nothing else built
    assert wkb == tuple(values[1:]) and wkb == WkbTuple(array) and wkb != (None,)
    assert wkb.built
    assert wkb[1:3] == (b"cde", b"")
    assert wkb + (b"x",) == (None, b"cde", b"", b"f", b"x")  # noqa: RUF005 (the operator)
    assert wkb * 1 == tuple(values[1:])
    assert hash(wkb) == hash(tuple(values[1:]))


def _polygons_file(path: Path) -> Path:
    rng = np.random.default_rng(43)
    # star rings among odd values (GEOS judges those); no null (an Arrow array with nulls
    # is read as the tuple of its values: wkb_rings.wkb_buffers)
    values = [v for v in _batch_values(7, 600) if v is not None]
    values += [_ring_wkb(_star(rng, 30, (12.0, 50.0), 0.01)) for _ in range(300)]
    values.insert(5, _ring_wkb(_star(rng, 30, (190.0, 50.0), 0.01)))  # outside the extent
    geo = {"version": "1.0.0", "primary_column": "geometry",
           "columns": {"geometry": {"encoding": "WKB", "geometry_types": []}}}  # fmt: skip
    table = pa.table({"geometry": pa.array(values, pa.binary())})
    pq.write_table(table.replace_schema_metadata({"geo": json.dumps(geo)}), path)
    return path


def test_a_chunk_of_star_polygons_is_judged_without_building_its_bytes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(polygons_module, "POLYGONS_WITHOUT_GEOMETRIES_MIN", 64)
    path = _polygons_file(tmp_path / "polygons.parquet")
    loaded = read_batch_file_chunked(path, layer="parcels", chunk_rows=256, data_time=NOW)
    assert isinstance(loaded, ChunkedBatch)
    seen: list[Batch] = []

    def chunks() -> list[Batch]:
        seen[:] = list(loaded.chunks())
        return seen

    versions = [ActiveVersion(parse_contract(CONTRACT), "enforcing")]
    chunked = evaluate_chunked(replace(loaded, chunks=chunks), versions, now=NOW)
    assert len(seen) == 4 and all(isinstance(c.geometries_wkb, WkbTuple) for c in seen)
    assert not any(c.geometries_wkb.built for c in seen)  # type: ignore[attr-defined]
    # the same decision as the plain tuple of the batch's values, read whole
    whole = read_batch_file(path, layer="parcels", data_time=NOW)
    plain = replace(whole, geometries_wkb=tuple(whole.geometries_wkb))
    assert chunked == evaluate(plain, versions, now=NOW)
    results = {c.name: c.result for c in chunked.verdicts[0].clauses}
    # the extent passes: a broken one's diagnosis reads the batch's sample (here every
    # row) in a second pass, which builds the values it reads
    assert (results["extent"], results["valid"], results["geometry_types"]) == (
        "pass",
        "break",
        "break",
    )


def test_the_rows_taken_of_a_wkb_tuple_are_its_values_at_those_rows() -> None:
    values = _batch_values(3, 40)
    whole = _batch(values)
    rows = np.array([0, 3, 4, len(values) - 1])
    taken = take_features(whole, rows)
    assert type(taken.geometries_wkb) is tuple
    assert taken.geometries_wkb == tuple(values[i] for i in rows.tolist())
    assert not whole.geometries_wkb.built  # type: ignore[attr-defined]


def test_the_bytes_of_a_wkb_tuple_are_counted_without_building_it() -> None:
    values = _batch_values(5, 20)
    wkb = WkbTuple(pa.array(values, pa.binary()))
    assert wkb_bytes(wkb) == wkb_bytes(tuple(values)) == sum(len(v) for v in values if v)
    assert not wkb.built


def _batch(values: list[bytes | None]) -> Batch:
    batch = batch_of([])
    return replace(batch, geometries_wkb=WkbTuple(pa.array(values, pa.binary())),
                   attributes=pa.table({"i": list(range(len(values)))}),
                   feature_count=len(values))  # fmt: skip


def test_the_geometries_of_a_chunks_plain_polygons_are_read_without_building_its_bytes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # a clause that asks for geometries (a region that is not a rectangle, a reprojection,
    # coverage) reads the plain rows' values through WkbTuple.take, not one at a time
    monkeypatch.setattr(polygons_module, "POLYGONS_WITHOUT_GEOMETRIES_MIN", 64)
    values = [v for v in _batch_values(11, 300) if v is not None]
    batch = _batch(values)
    facts = BatchFacts(batch)
    assert facts.mixed is not None  # the plain polygons' path
    got = facts.raw_geometries
    assert not batch.geometries_wkb.built  # type: ignore[attr-defined]
    want = general_facts(replace(batch, geometries_wkb=tuple(values)), ("raw_geometries",))
    assert [None if g is None else g.wkb for g in got] == [
        None if g is None else g.wkb for g in want.raw_geometries
    ]


_VALUES = (None, b"cde", b"", b"f")
#: Every Sequence operation (and tuple's own: hash, ordering, +, *), by name: each is run on
#: a plain tuple of ``_VALUES`` and on a WkbTuple of them, built and not.
_OPERATIONS: dict[str, Callable[[Any], object]] = {
    "len": len,
    "bool": bool,
    "iter": list,
    "reversed": lambda s: list(reversed(s)),
    **{f"[{i}]": (lambda s, i=i: s[i]) for i in range(-5, 5)},
    "[np.int64(2)]": lambda s: s[np.int64(2)],
    "[True]": lambda s: s[True],
    "['a']": lambda s: s["a"],
    "[1.0]": lambda s: s[1.0],
    "[None]": lambda s: s[None],
    **{
        f"[{k}]": (lambda s, k=k: s[k])
        for k in (
            slice(1, 3),
            slice(None, None, -1),
            slice(None, None, 2),
            slice(5, None),
            slice(-2, None),
            slice(0, 0),
        )
    },
    **{f"{v!r} in": (lambda s, v=v: v in s) for v in (b"cde", None, b"zz", 3)},
    "index(b'cde')": lambda s: s.index(b"cde"),
    "index(None)": lambda s: s.index(None),
    "index(b'zz')": lambda s: s.index(b"zz"),
    "index(b'f', 0, 2)": lambda s: s.index(b"f", 0, 2),
    "index(b'f', -1)": lambda s: s.index(b"f", -1),
    "count(None)": lambda s: s.count(None),
    "count(b'zz')": lambda s: s.count(b"zz"),
    "== tuple": lambda s: s == _VALUES,
    "!= tuple": lambda s: s != _VALUES,
    "== list": lambda s: s == list(_VALUES),
    "== other": lambda s: s == (None,),
    "hash": hash,
    **{
        f"{name} {other!r}": (lambda s, op=op, other=other: op(s, other))
        for name, op in (
            ("<", operator.lt),
            ("<=", operator.le),
            (">", operator.gt),
            (">=", operator.ge),
        )
        for other in (
            _VALUES,
            _VALUES[:2],
            (None, b"cdf"),
            (None, b"a", b"z"),
            (b"a",),
            list(_VALUES),
            None,
        )
    },
    **{
        f"{other!r} {name}": (lambda s, op=op, other=other: op(other, s))
        for name, op in (("<", operator.lt), (">=", operator.ge))
        for other in (_VALUES[:3], (None, b"d"), (b"a",))
    },
    "sorted": lambda s: sorted([(None, b"d"), s, _VALUES[:2]]),
    "max": lambda s: list(max(s, (None, b"cde", b"", b"e"))),
    "+ tuple": lambda s: s + (b"x",),  # noqa: RUF005 (the operator)
    "tuple +": lambda s: (b"x",) + s,  # noqa: RUF005
    "+ self": lambda s: s + s,
    "+ list": lambda s: s + [b"x"],  # noqa: RUF005
    "list +": lambda s: [b"x"] + s,  # noqa: RUF005
    "* 2": lambda s: s * 2,
    "2 *": lambda s: 2 * s,
    "* 0": lambda s: s * 0,
    "* -1": lambda s: s * -1,
    "* 'a'": lambda s: s * "a",
    "copy": lambda s: (copy.copy(s), type(copy.copy(s))),
    "pickle": lambda s: (pickle.loads(pickle.dumps(s)), type(pickle.loads(pickle.dumps(s)))),
    "Sequence": lambda s: isinstance(s, Sequence),
}

#: Python words these errors with the operand's type: ``'<' not supported between
#: instances of 'WkbTuple' and 'list'``, ``unsupported operand type(s) for +: 'WkbTuple' and
#: 'list'`` where a tuple's says ``can only concatenate tuple (not "list") to tuple``;
#: the same TypeError, named by Python.
_WORDED_BY_TYPE = {"+ list", "list +"} | {
    f"{n} {other!r}" for n in ("<", "<=", ">", ">=") for other in (list(_VALUES), None)
}
#: ``(b"a",) < wkb`` is answered by ``wkb > (b"a",)`` (a tuple cannot order a WkbTuple, so
#: Python asks the reflected method), whose TypeError of ``None`` against ``b"a"`` is worded
#: the other way round: "'>' not supported between instances of 'NoneType' and 'bytes'".
_WORDED_BY_TYPE |= {"(b'a',) <", "(b'a',) >="}


def _outcome(operation: Callable[[Any], object], seq: object) -> tuple[object, ...]:
    try:
        value = operation(seq)
    except Exception as exc:
        return type(exc), str(exc)
    if isinstance(value, tuple) and len(value) == 2 and value[1] in (tuple, WkbTuple):
        return "ok", value  # (a copy: its value and its type)
    return "ok", value, type(value)


@pytest.mark.parametrize("built", [False, True])
@pytest.mark.parametrize("name", list(_OPERATIONS))
def test_a_wkb_tuple_does_what_the_tuple_of_its_values_does(name: str, built: bool) -> None:
    wkb = WkbTuple(pa.array(_VALUES, pa.binary()))
    if built:
        assert wkb.values == _VALUES
    got, want = _outcome(_OPERATIONS[name], wkb), _outcome(_OPERATIONS[name], _VALUES)
    if name in _WORDED_BY_TYPE:
        assert got[0] is want[0] is TypeError
    else:
        assert got == want
    if name.startswith("[") and not name.startswith("[slice") and not built:
        assert not wkb.built  # (one value read by itself)
