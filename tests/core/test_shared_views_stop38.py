"""Stop 38: a group's facts primed as views (SharedFacts.prime) are read by every clause
kind and never written: with every view made read-only, so that a write raises (and an
evaluator's exception becomes a gate error, which the comparison would show), each batch's
decision is still the one it gets alone, over both axis orders, the small batches of every
odd geometry and groups of unequal sizes (views cut one by one) or of one size (one
reshape)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from tests.catalogue import NOW, active
from tests.core.test_shared_facts import EVERYTHING, _batches, _small_batches
from worker.core.evaluate import evaluate
from worker.core.evaluate_group import evaluate_group
from worker.core.facts import shared as shared_module


@pytest.mark.parametrize("which", ["mixed_sizes", "mixed_sizes_north_east", "one_size"])
def test_primed_views_are_never_written(monkeypatch: pytest.MonkeyPatch, which: str) -> None:
    cut = vars(shared_module)["_views"]  # the cut the views come from
    made: list[np.ndarray] = []

    def read_only(values: np.ndarray, starts: np.ndarray, size: int | None) -> list[Any]:
        views = cut(values, starts, size)
        for v in views:
            v.setflags(write=False)
        made.extend(views)
        return views

    monkeypatch.setattr(shared_module, "_views", read_only)
    batches = {
        "mixed_sizes": lambda: _batches(),
        "mixed_sizes_north_east": lambda: _batches("north_east"),
        "one_size": _small_batches,
    }[which]()
    versions = [active(EVERYTHING), active(EVERYTHING, mode="observing")]
    grouped = evaluate_group(batches, versions, now=NOW)
    assert grouped == [evaluate(b, versions, now=NOW) for b in batches]
    assert len(made) > 20  # the views were made, and read only
    errors = {c.gate_error for d in grouped for v in d.verdicts for c in v.clauses}
    assert not any("read-only" in str(e) for e in errors), errors


def _empty_batch() -> Any:
    import dataclasses

    import pyarrow as pa

    from tests.catalogue import batch_of
    from worker.core.columns import derive_schema

    t = pa.table({"code": pa.array([], pa.string()), "fid": pa.array([], pa.string())})
    b = batch_of([], attributes=t, schema_fields=derive_schema(t))
    return dataclasses.replace(b, batch_id="e", id_column="fid", data_time=NOW)


@pytest.mark.parametrize("where", [(1,), (1, 3), (0, 1, 2)], ids=str)
def test_a_group_with_batches_of_no_feature_decides_each_as_alone(where: tuple[int, ...]) -> None:
    """Batches of no feature among a group's (equal starts: empty views, an index owned by
    the batch after them) are decided as alone, and so are the others."""
    batches = _small_batches()[:4]
    for i in where:
        batches.insert(i, _empty_batch())
    versions = [active(EVERYTHING), active(EVERYTHING, mode="observing")]
    assert evaluate_group(batches, versions, now=NOW) == [
        evaluate(b, versions, now=NOW) for b in batches
    ]
