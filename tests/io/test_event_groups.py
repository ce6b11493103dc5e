"""Several events' columns built at once (io.codec.event_groups): each event gets the
Batch, or the error, that decoding it alone gives."""

from __future__ import annotations

import dataclasses
from typing import Any

import pyarrow as pa

from tests.catalogue import PARIS, VALID_POLYGON, batch_of
from worker.core.columns import derive_schema
from worker.core.errors import DecodeError
from worker.core.model import Batch
from worker.io import codec
from worker.io.codec.event_groups import batches_from_events
from worker.io.codec.events import batch_from_event


def _record(n: int, codes: list[Any], day: list[Any] | None = None) -> dict[str, Any]:
    columns: dict[str, Any] = {"code": pa.array(codes, pa.string())}
    if day is not None:
        columns["day"] = pa.array(day, pa.date32())
    b = batch_of([PARIS if i % 2 else VALID_POLYGON for i in range(len(codes))],
                 attributes=pa.table(columns))  # fmt: skip
    return codec.decode_event(codec.encode_batch(dataclasses.replace(b, batch_id=f"b{n}")))


def _outcome(x: Batch | Exception) -> Any:
    return (type(x), str(x)) if isinstance(x, Exception) else x


def test_each_event_gets_what_it_gets_alone() -> None:
    records = [_record(0, ["a"]), _record(1, ["b", None, "c"]), _record(2, [], []),
               _record(3, ["d"], [None]), _record(4, ["e", "f"]),
               _record(5, ["g"], [19000])]  # fmt: skip
    records.append({**_record(6, ["h"]), "payload_uri": "file:///x"})  # both: an error
    wrong = _record(7, ["i"])
    wrong["features"]["columns"][0]["values"] = [3]  # an int in a string column
    records.append(wrong)
    alone: list[Any] = []
    for r in records:
        try:
            alone.append(batch_from_event(r))
        except DecodeError as exc:
            alone.append(exc)
    together = batches_from_events(records)
    assert [_outcome(x) for x in together] == [_outcome(x) for x in alone]
    assert together[1].attributes.column("code").to_pylist() == ["b", None, "c"]  # type: ignore[union-attr]
    assert together[1].attributes.column("code").null_count == 1  # type: ignore[union-attr]
    assert str(together[-1]) == "column 'code' of type string holds a int at row 0"


def test_a_bad_value_makes_every_event_of_its_columns_built_alone() -> None:
    records = [_record(0, ["a"]), _record(1, ["b", "c"])]
    records[1]["features"]["columns"][0]["values"] = ["b", 4]
    out = batches_from_events(records)
    assert isinstance(out[0], type(batch_from_event(records[0])))
    assert out[0].attributes.column("code").to_pylist() == ["a"]  # type: ignore[union-attr]
    assert str(out[1]) == "column 'code' of type string holds a int at row 1"


def _by_reference(n: int) -> dict[str, Any]:
    return {**_record(n, ["x"]), "features": None, "payload_uri": f"file:///b{n}.parquet"}


def test_derived_schemas_are_each_tables_own() -> None:
    """Each inline batch's ``schema_fields`` are ``derive_schema`` of its own table, nulls
    counted in its own rows (a null in one event's column, none in the next's, a whole
    group without nulls, a text-typed column, an event without rows); a batch by reference
    keeps the declared ones."""
    records = [_record(0, ["a"], [1]), _record(1, [None], [2]), _record(2, ["b", "c"], [None, 3]),
               _record(3, ["d"], [4]), _record(4, [], []), _record(5, ["e", None]),
               _record(6, ["f"]), _record(7, ["g", "h"]), _by_reference(8),
               _record(9, [None], [None])]  # fmt: skip
    mixed = _record(10, ["i"])
    mixed["features"]["columns"].append({"name": "extra", "type": "decimal", "values": ["1.5"]})
    records += [mixed, {**mixed, "batch_id": "b11"}]
    together = batches_from_events(records, derive_schemas=True)
    expected = []
    for r in records:
        alone = batch_from_event(r)
        if r["features"] is not None:
            alone = dataclasses.replace(alone, schema_fields=derive_schema(alone.attributes))
        expected.append(alone)
    assert together == expected
    nullable = [[f.nullable for f in b.schema_fields] for b in together]  # type: ignore[union-attr]
    assert nullable[:4] == [[False, False], [True, False], [False, True], [False, False]]
    assert nullable[9] == [True, True] and nullable[5:8] == [[True], [False], [False]]
    assert together[8].schema_fields == batch_from_event(records[8]).schema_fields  # type: ignore[union-attr]
    assert [f.type for f in together[10].schema_fields] == ["string", "decimal"]  # type: ignore[union-attr]
    # the first four events of one column set share one schema per nullability
    assert together[0].schema_fields is together[3].schema_fields  # type: ignore[union-attr]
