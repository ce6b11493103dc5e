"""A window's batch (worker.core.event_batches): the events whose columns are built together
hold their rows as windows of the joined table, cut on first read, and a group of
consecutive windows gets its attribute rows as one slice of that table; every table,
batch and decision is what each event gives alone."""

from __future__ import annotations

import copy
import dataclasses
import pickle
from datetime import timedelta
from typing import Any

import pyarrow as pa
import pytest

from benchmarks.broker import make_events
from benchmarks.common import NOW
from tests.catalogue import active
from worker.cli.scenario import data_file
from worker.core.evaluate import evaluate
from worker.core.evaluate_group import evaluate_group
from worker.core.event_batches import Rows, RowsBatch, event_batch, joined_attributes
from worker.core.facts.shared import SharedFacts, group_attributes
from worker.core.model import Batch
from worker.io import codec
from worker.io.codec.event_groups import batches_from_events
from worker.io.codec.events import batch_from_event
from worker.io.contract_files import load_contract

CLOCK = NOW + timedelta(seconds=60)


@pytest.fixture(scope="module")
def records() -> list[dict[str, Any]]:
    """40 one-feature events of the benchmark, then one of 3 features, then 19 more."""
    values = make_events(1, 40) + make_events(3, 1) + make_events(1, 19)
    return [codec.decode_event(v) for v in values]


def _windows(records: list[dict[str, Any]]) -> list[Batch]:
    out = batches_from_events(records, derive_schemas=True)
    assert all(isinstance(b, Batch) for b in out)
    return out  # type: ignore[return-value]


def _alone(r: dict[str, Any], like: Batch) -> Batch:
    """The event decoded alone, with the schema the window's batch derived."""
    return dataclasses.replace(batch_from_event(r), schema_fields=like.schema_fields)


def test_each_event_holds_a_window_cut_on_first_read_to_its_own_table(
    records: list[dict[str, Any]],
) -> None:
    batches = _windows(records)
    assert all(type(b) is RowsBatch and b.rows is not None for b in batches)
    whole = batches[0].rows.table  # type: ignore[union-attr]
    assert all(b.rows.table is whole for b in batches)  # type: ignore[union-attr]
    assert [b.rows.start for b in batches[39:42]] == [39, 40, 43]  # type: ignore[union-attr]
    for r, b in zip(records, batches, strict=True):
        alone = _alone(r, b)
        assert b == alone and alone == b  # every field, the table by its rows and schema
        assert b.rows is None  # cut by the comparison, kept
        assert b.attributes.equals(alone.attributes, check_metadata=True)
        assert b.attributes.num_rows == len(b.geometries_wkb)


def test_a_window_batch_copies_pickles_and_replaces_as_a_batch(
    records: list[dict[str, Any]],
) -> None:
    b = _windows(records)[40]
    for made in (pickle.loads(pickle.dumps(b)), copy.copy(b), copy.deepcopy(b)):
        assert type(made) is Batch and made == b
    other = dataclasses.replace(b, batch_id="other")
    assert other.batch_id == "other" and other.attributes.equals(b.attributes)
    assert b != dataclasses.replace(b, feature_count=7)
    with pytest.raises(dataclasses.FrozenInstanceError):
        b.attributes = pa.table({})  # type: ignore[misc]
    with pytest.raises(TypeError):
        hash(b)


def test_consecutive_windows_are_joined_as_one_slice_of_their_table(
    records: list[dict[str, Any]],
) -> None:
    batches = _windows(records)
    own = [_alone(r, b).attributes for r, b in zip(records, batches, strict=True)]
    for a, z in [(0, 60), (1, 60), (5, 45)]:
        joined = joined_attributes(batches[a:z])
        assert joined is not None and joined.column(0).num_chunks == 1  # 40 before
        assert joined.equals(pa.concat_tables(own[a:z]), check_metadata=True)
        shared = group_attributes(SharedFacts(batches[a:z]).facts)
        assert shared is not None and shared.equals(joined, check_metadata=True)
    # not consecutive, a window cut already, or another table: the tables joined, as before
    for made in (
        batches[::2],
        [batches[3], batches[2]],
        [*batches[:2], _alone(records[2], batches[2])],
    ):
        joined = joined_attributes(made)
        assert joined is not None and joined.column(0).num_chunks == len(made)
        assert joined.equals(pa.concat_tables([b.attributes for b in made]), check_metadata=True)
    fresh = _windows(records)
    fresh[4].attributes  # noqa: B018 - cut
    cut = joined_attributes(fresh[:8])
    assert cut is not None and cut.column(0).num_chunks == 8
    # a window whose rows are not its batch's features is not taken as the batch's
    bad = RowsBatch(**{**{f.name: getattr(fresh[9], f.name) for f in dataclasses.fields(Batch)},
                       "attributes": Rows(fresh[10].rows.table, 10, 2)})  # type: ignore[union-attr]  # fmt: skip
    assert joined_attributes([fresh[9], bad]) is None  # rows then counted: 2 for 1 feature


def test_a_group_of_windows_decides_each_event_as_alone(records: list[dict[str, Any]]) -> None:
    versions = [active(load_contract(data_file("contracts/admin_boundaries.v1.yaml")))]
    batches = _windows(records)
    grouped = evaluate_group(batches, versions, now=CLOCK)
    alone = [
        evaluate(_alone(r, b), versions, now=CLOCK) for r, b in zip(records, batches, strict=True)
    ]
    assert [repr(d) for d in grouped] == [repr(d) for d in alone]


def test_an_event_batch_is_the_batch_its_fields_make(records: list[dict[str, Any]]) -> None:
    for r in records[:3]:
        made = batch_from_event(r)
        assert type(made) is Batch
        values = {f.name: getattr(made, f.name) for f in dataclasses.fields(Batch)}
        assert vars(made) == values  # every field written, nothing else
        assert made == Batch(**values) and repr(made) == repr(Batch(**values))
    given = {k: v for k, v in values.items() if k not in ("geometry_errors", "file_claims")}
    a, b = event_batch(**given), event_batch(**given)
    assert a == Batch(**given) and a.geometry_errors == {} and a.file_claims == {}
    assert a.geometry_errors is not b.geometry_errors  # each default factory called anew
    window = event_batch(**{**given, "attributes": Rows(values["attributes"], 0, 1)})
    assert type(window) is RowsBatch and "attributes" not in vars(window)
    assert window == Batch(**given)
    with pytest.raises(dataclasses.FrozenInstanceError):
        a.layer = "other"  # type: ignore[misc]
    for wrong in ({**given, "layers": "x"}, {k: v for k, v in given.items() if k != "layer"},
                  {**{k: v for k, v in given.items() if k != "layer"}, "layers": "x"}):  # fmt: skip
        with pytest.raises(TypeError, match="Batch takes its fields"):
            event_batch(**wrong)
