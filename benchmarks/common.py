"""Shared pieces: real inputs, timing, rows of figures and their table."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import datetime, timedelta, timezone

import numpy as np
import pyarrow as pa
import shapely

from worker.cli.scenario import data_file
from worker.core.model import Batch
from worker.io.payloads import read_batch_file

NOW = datetime.now(timezone.utc)


@dataclass(frozen=True)
class Row:
    """One figure against its floor: ``ratio = value / floor`` for throughputs (higher is
    better, PASS when >= target) or a cost ratio (lower is better, PASS when <= target).
    Without a floor (``floor`` None) the value itself is compared with the target."""

    name: str
    value: float
    floor: float | None
    unit: str
    target: float
    higher_is_better: bool = True
    note: str = ""

    @property
    def ratio(self) -> float:
        return self.value / self.floor if self.floor else self.value

    @property
    def passed(self) -> bool:
        r = self.ratio
        return r >= self.target if self.higher_is_better else r <= self.target


#: Width of the benchmark-name column (every name fits).
NAME_WIDTH = 64


def render(rows: list[Row]) -> str:
    """The figures table (plain text, aligned)."""
    head = (
        f"{'benchmark':<{NAME_WIDTH}} {'gate':>10} {'floor':>10} {'unit':<10} {'ratio':>6} "
        f"{'target':>8} verdict"
    )
    lines = [head, "-" * len(head)]
    for r in rows:
        floor = f"{r.floor:10.1f}" if r.floor is not None else f"{'':>10}"
        # a figure without a floor is compared with its target as it is: no ratio
        ratio = f"{r.ratio:6.2f}" if r.floor is not None else f"{'':>6}"
        cmp = ">=" if r.higher_is_better else "<="
        lines.append(
            f"{r.name:<{NAME_WIDTH}} {r.value:10.1f} {floor} {r.unit:<10} {ratio} "
            f"{cmp + format(r.target, 'g'):>8} {'PASS' if r.passed else 'FAIL'}"
            + (f"  ({r.note})" if r.note else "")
        )
    return "\n".join(lines)


def interleaved_median_s(fns: list[Callable[[], object]], repeat: int) -> list[float]:
    """Median wall time of each of ``fns`` (seconds) over ``repeat`` rounds, each round
    timing every function once in turn, after one warm-up of each. The ratios of these
    medians are side by side: a slow spell of a shared machine falls on every function
    of a round, not on the block of one (timed one block after the other, the cost of 2
    versions / 1 read 1.23 in a run where 4 versions / 1 read 1.10)."""
    for fn in fns:
        fn()
    times: list[list[float]] = [[] for _ in fns]
    for _ in range(repeat):
        for fn, out in zip(fns, times, strict=True):
            t0 = time.perf_counter()
            fn()
            out.append(time.perf_counter() - t0)
    return [statistics.median(t) for t in times]


def world(data_age_s: float = 300.0) -> Batch:
    """The 177 Natural Earth 1:110m countries (shipped GeoParquet), EPSG:4326."""
    return read_batch_file(
        data_file("admin_boundaries.parquet"),
        layer="admin_boundaries",
        crs="EPSG:4326",
        data_time=NOW - timedelta(seconds=data_age_s),
    )


def take(batch: Batch, index: np.ndarray, batch_id: str) -> Batch:
    """The features at ``index`` (repeats allowed) as a new batch."""
    wkb = tuple(batch.geometries_wkb[i] for i in index)
    return replace(
        batch,
        batch_id=batch_id,
        geometries_wkb=wkb,
        attributes=batch.attributes.take(pa.array(index)),
        feature_count=len(wkb),
    )


def countries(batch: Batch, n: int, start: int = 0, batch_id: str = "b") -> Batch:
    """``n`` countries from ``start``, cycling through the 177."""
    return take(batch, (np.arange(n) + start) % batch.feature_count, batch_id)


def with_geometries(batch: Batch, geoms: np.ndarray) -> Batch:
    """``batch`` with its geometries replaced (same count)."""
    wkb = tuple(bytes(g) for g in shapely.to_wkb(geoms))
    return replace(batch, geometries_wkb=wkb, feature_count=len(wkb))
