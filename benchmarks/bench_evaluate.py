"""Evaluation cost on real data: facts computed once versus once per version.

Prints, for the shipped layers, the median wall time of one batch evaluated against N
active versions (N = 1, 2, 4, 8 copies of the layer's contract, alternating enforcing and
observing) with the shared facts of :func:`worker.core.evaluate.evaluate`, and the same work
with facts rebuilt per version (what a naive implementation does), and their ratio in
the same run. Run: ``python benchmarks/bench_evaluate.py [--repeat N]``.
"""

from __future__ import annotations

import argparse
import statistics
import time
from dataclasses import replace
from datetime import datetime, timedelta, timezone

from worker.cli.scenario import data_file
from worker.core.evaluate import evaluate
from worker.core.model import ActiveVersion
from worker.io.contract_files import load_contract
from worker.io.features import read_batch_file

NOW = datetime.now(timezone.utc)
LAYERS = (
    ("admin_boundaries", "admin_boundaries.parquet", "EPSG:4326", "admin_boundaries.v1.yaml"),
    ("nyc_boroughs", "nyc_boroughs.parquet", "EPSG:2263", "nyc_boroughs.v1.yaml"),
)


def median_s(fn, repeat: int) -> float:  # type: ignore[no-untyped-def]
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    print(
        f"{'layer':<17} {'versions':>8} {'shared facts ms':>16} {'per-version ms':>15} {'ratio':>6}"
    )
    for layer, data, crs, contract_file in LAYERS:
        batch = read_batch_file(
            data_file(data), layer=layer, crs=crs, data_time=NOW - timedelta(hours=1)
        )
        contract = load_contract(data_file(f"contracts/{contract_file}"))
        for n in (1, 2, 4, 8):
            versions = [
                ActiveVersion(
                    replace(contract, version=f"v{i + 1}.0", major=i + 1),
                    "enforcing" if i % 2 == 0 else "observing",
                )
                for i in range(n)
            ]
            shared = median_s(lambda b=batch, vs=versions: evaluate(b, vs, now=NOW), args.repeat)
            # a fresh Batch object per version: nothing cached is reused across versions
            naive = median_s(
                lambda b=batch, vs=versions: [evaluate(replace(b), [v], now=NOW) for v in vs],
                args.repeat,
            )
            print(
                f"{layer:<17} {n:>8} {shared * 1000:>16.1f} {naive * 1000:>15.1f} "
                f"{naive / shared:>6.2f}"
            )


if __name__ == "__main__":
    main()
