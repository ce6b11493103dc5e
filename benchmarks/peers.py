"""The ``peers`` group (issue 27): the gate against what a data engineer runs instead.

On the seeded GeoParquet batches of :mod:`benchmarks.peers_data` (polygons and points, the
extent broken by 1% of the features), each tool of :mod:`benchmarks.peers_tools` runs the
same five checks as a whole process of its own, in interleaved rounds (every tool once per
round, so a slow spell of the shared machine falls on all of them): DuckDB with the spatial
extension, geopandas, a per-feature shapely loop, the gate's ``check`` command and the
worker's streamed payload path, each of the last two also with a contract whose extent
allows 2% outside (passes: no diagnosis). Per tool: the median wall time (s), the largest
peak RSS of the process (MiB, ``ru_maxrss`` from ``wait4``), the ratio to DuckDB's time
and its counts; every tool's counts must equal the generator's (the truth: a feature on the
extent's edge is inside). Targets: the gate's time at most 1.0x DuckDB's on the polygons
and 1.2x on the points, peak RSS at most 400 MiB, a broken extent at most 1.1x a passing one
(the fastest run of each: :func:`_broken_note` says why).

The gate's packages are compiled to bytecode before the first round
(:func:`compile_bytecode`), as installing them from a wheel does: a session run with
``PYTHONDONTWRITEBYTECODE`` and the editable install otherwise compiled the ``worker``
package again in every ``check`` process (0.1-0.15 s of CPU in a 1.2 s check of the
points), a cost DuckDB's installed package does not pay.

A peer whose package is not installed (``pip install -e '.[bench]'``) is skipped with a
line that says so, and the rows that compare with it are left out; the gate's own rows
(counts, RSS, broken / passing) are always there.
"""

from __future__ import annotations

import compileall
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from importlib.util import find_spec
from pathlib import Path

from benchmarks.common import Row
from benchmarks.peers_data import CODES, EXTENT, Truth, write_batch
from benchmarks.peers_run import run_measured
from benchmarks.peers_spec import LIMIT_ENV

#: Default number of features of each batch (issue 27's 1,000,000), and the quick one.
FEATURES = 1_000_000
QUICK_FEATURES = 3_000
#: Where full-size batches are kept between runs (regenerated when absent).
DATA_DIR_ENV = "BENCH_PEERS_DIR"
MIB = 1024 * 1024
#: Peer tools and the packages each needs (the bench extra).
NEEDS = {"duckdb": ("duckdb", "duckdb_extension_spatial"), "geopandas": ("geopandas",)}
TARGET_TIME = {"polygons": 1.0, "points": 1.2}
#: The batches, in the order they run (``--peers-batches`` picks some).
BATCHES = ("polygons", "points")
TARGET_RSS_MIB = 400.0
TARGET_BROKEN = 1.1
#: The packages a gate tool's process imports from this checkout (:func:`compile_bytecode`).
GATE_PACKAGES = ("worker", "benchmarks")


def contract_text(allowed: str, min_fraction_inside: float) -> str:
    """The layer owner's contract: the five checks, the clauses named as
    :func:`benchmarks.peers_tools.gate_counts` reads them."""
    codes = ", ".join(f"{c}: {c}" for c in CODES)
    return f"""layer: parcels
version: v1
cadence: PT6H
objective: 0.99
owner: bench
changelog: the peers benchmark's contract (issue 27)
clauses:
  - {{name: extent, kind: extent, region: {list(EXTENT)},
     min_fraction_inside: {min_fraction_inside}}}
  - {{name: geometry_types, kind: geometry_type, allowed: [{allowed}]}}
  - {{name: valid, kind: validity, max_invalid_fraction: 0.0}}
  - {{name: code, kind: domain, column: code, values: {{{codes}}}}}
  - {{name: size, kind: feature_count, min: 1, max: 100000000}}
"""


@dataclass
class Runs:
    """One tool's runs on one batch: wall times (s), peak RSS (KiB), its counts, and the
    CPU time (user + system, s) of each run's process."""

    seconds: list[float]
    rss_kib: list[int]
    counts: dict[str, int]
    cpu_s: list[float] = field(default_factory=list)

    @property
    def median_s(self) -> float:
        return statistics.median(self.seconds)

    @property
    def fastest_s(self) -> float:
        """The fastest run's wall time (s): what the broken / passing rows compare
        (:func:`rows`)."""
        return min(self.seconds)

    @property
    def median_cpu_s(self) -> float | None:
        """The median CPU time (s), None when no run recorded one."""
        return statistics.median(self.cpu_s) if self.cpu_s else None

    @property
    def rss_mib(self) -> float:
        return max(self.rss_kib) / 1024


def _argv(name: str, path: Path, allowed: str, contracts: dict[str, Path]) -> list[str]:
    contract = contracts["passing" if name.endswith(" passing") else "broken"]
    py = sys.executable
    tool = name.removesuffix(" passing")
    if tool == "check":
        cli = [py, "-m", "worker.cli.main", "check", str(path), "--contract", str(contract)]
        return [*cli, "--format", "json"]
    if tool == "gate-stream":
        return [py, "-m", "benchmarks.peers_tools", tool, str(path), allowed, str(contract)]
    return [py, "-m", "benchmarks.peers_tools", tool, str(path), allowed]


def tools_available() -> tuple[list[str], list[str]]:
    """The tools to run, and a line per peer skipped because its package is missing."""
    tools, skipped = [], []
    for tool in ("duckdb", "geopandas", "shapely-loop"):
        missing = [m for m in NEEDS.get(tool, ()) if find_spec(m) is None]
        if missing:
            skipped.append(f"skipped {tool}: {', '.join(missing)} not installed "
                           "(pip install -e '.[bench]')")  # fmt: skip
        else:
            tools.append(tool)
    return [*tools, "check", "check passing", "gate-stream", "gate-stream passing"], skipped


def batch_file(folder: Path, what: str, n: int) -> tuple[Path, Truth]:
    """The seeded batch (``polygons`` or ``points``) of ``n`` features in ``folder``,
    written unless a previous run left it (with its truth beside it)."""
    path = folder / f"peers-{what}-{n}.parquet"
    truth_file = path.with_suffix(".truth.json")
    if path.is_file() and truth_file.is_file():
        return path, Truth(**json.loads(truth_file.read_text("utf-8")))
    t0 = time.monotonic()
    truth = write_batch(path, n, polygons=what == "polygons")
    truth_file.write_text(json.dumps(truth.__dict__), "utf-8")
    size_mib = path.stat().st_size / MIB
    print(f"  wrote {path} ({size_mib:.0f} MiB) in {time.monotonic() - t0:.0f} s", file=sys.stderr)
    return path, truth


def compile_bytecode(root: Path | None = None, packages: Sequence[str] = GATE_PACKAGES) -> bool:
    """Write the bytecode of ``packages`` (folders under ``root``, default this checkout)
    to their ``__pycache__`` folders, as ``pip`` does when it installs a wheel; Python
    reads it even with ``PYTHONDONTWRITEBYTECODE`` set (which only stops it writing).
    A module whose bytecode is older than its source is compiled again, so this is safe
    to run before every measurement. False when a module did not compile."""
    base = Path(__file__).resolve().parents[1] if root is None else root
    return all(bool(compileall.compile_dir(base / p, quiet=1)) for p in packages)


def measure(folder: Path, what: str, n: int, rounds: int) -> tuple[dict[str, Runs], Truth]:
    """Every available tool on one batch, ``rounds`` interleaved rounds.

    Raises
    ------
    RuntimeError
        A tool failed (:func:`~benchmarks.peers_run.run_measured`), or counted differently
        in two rounds.
    """
    path, truth = batch_file(folder, what, n)
    allowed = "Polygon" if what == "polygons" else "Point"
    contracts = {}
    for name, fraction in (("broken", 1.0), ("passing", 0.98)):
        contracts[name] = folder / f"peers-{what}-{name}.yaml"
        contracts[name].write_text(contract_text(allowed, fraction), "utf-8")
    tools, _ = tools_available()
    env = limit_env(path)
    compile_bytecode()
    runs: dict[str, Runs] = {tool: Runs([], [], {}) for tool in tools}  # the table's order
    for r in range(rounds):
        for tool in round_order(tools, r):
            got = run_measured(_argv(tool, path, allowed, contracts), env)
            counts, had = got.doc, runs[tool]
            if had.seconds and counts != had.counts:  # the same file and tool: a bug
                raise RuntimeError(f"{tool} counted {counts} in round {r + 1}, {had.counts} before")
            had.counts = counts
            had.seconds.append(got.wall_s)
            had.rss_kib.append(got.rss_kib)
            had.cpu_s.append(got.cpu_s)
            print(f"  {what} round {r + 1}: {tool} {got.wall_s:.2f} s, CPU {got.cpu_s:.2f} s, "
                  f"{got.rss_kib / 1024:.0f} MiB", file=sys.stderr, flush=True)  # fmt: skip
    return runs, truth


def limit_env(path: Path) -> dict[str, str]:
    """The environment the tools run with on ``path``: the gate's payload size limit
    (:data:`~benchmarks.peers_spec.LIMIT_ENV`) raised to the file's size in bytes when the
    file is over the gate's default for its format (a line says so); else nothing."""
    from worker.io.formats import FORMATS

    size, default = path.stat().st_size, FORMATS["parquet"].default_limit_bytes
    if size <= default:
        return {}
    print(f"  {path.name} is {size / 1024**3:.1f} GiB, over the gate's default payload limit "
          f"({default / 1024**3:.0f} GiB): the gate's runs get {LIMIT_ENV}={size}",
          file=sys.stderr, flush=True)  # fmt: skip
    return {LIMIT_ENV: str(size)}


def round_order(tools: Sequence[str], r: int) -> list[str]:
    """The order of ``tools`` in round ``r`` (0 first): as given in even rounds; in odd
    rounds each gate tool's passing run goes before its broken one. The broken run always
    came right after the peers (the broken / passing ratio of a 0.55 s ``check`` of the
    points read 0.72-1.22 over the day, on a cost of 2-3 ms), so neither run holds a place
    of its own in every round."""
    order = list(tools)
    if r % 2:
        for i, tool in enumerate(order[:-1]):
            if order[i + 1] == f"{tool} passing":
                order[i], order[i + 1] = order[i + 1], tool
    return order


def _differences(counts: dict[str, int], truth: Truth) -> list[str]:
    """What a tool's counts get wrong, in words (the truth: an edge feature is inside)."""
    out = []
    for key, want in truth.checks().items():
        got = counts.get(key)
        if got == want:
            continue
        why = ""
        if key == "outside" and got == want + truth.edge:
            why = f": it counts the {truth.edge} features on the extent's edge, which are inside"
        out.append(f"{key} {got}, truth {want}{why}")
    return out


def report(what: str, n: int, runs: dict[str, Runs], truth: Truth) -> str:
    """The table of one batch: per tool, median wall time, ratio to DuckDB, peak RSS and
    counts; then the truth and every disagreement in words."""
    keys = list(truth.checks())
    duck = runs.get("duckdb")
    head = f"{'tool':<22} {'wall s':>8} {'/DuckDB':>8} {'RSS MiB':>8} " + " ".join(
        f"{k:>10}" for k in keys
    )
    lines = [f"peers, {n} {what}:", head, "-" * len(head)]
    notes = []
    for tool, r in [*runs.items(), ("truth (generator)", None)]:
        counts = truth.checks() if r is None else r.counts
        cells = " ".join(f"{counts[k]:>10}" for k in keys)
        if r is None:
            lines.append(f"{tool:<22} {'':>8} {'':>8} {'':>8} {cells}")
            continue
        ratio = f"{r.median_s / duck.median_s:8.2f}" if duck else f"{'-':>8}"
        lines.append(f"{tool:<22} {r.median_s:8.2f} {ratio} {r.rss_mib:8.0f} {cells}")
        notes += [f"  {tool} disagrees: {d}" for d in _differences(r.counts, truth)]
    return "\n".join([*lines, *(notes or ["  every tool finds the truth's counts"])])


def rows(what: str, n: int, runs: dict[str, Runs], truth: Truth) -> list[Row]:
    """The targets of one batch as rows (those against DuckDB only when it ran)."""
    out = []
    duck = runs.get("duckdb")
    for tool, label in (("check", "gate check"), ("gate-stream", "gate streamed")):
        r, passing = runs[tool], runs[f"{tool} passing"]
        if duck is not None:
            name = f"peers: {label} / DuckDB spatial, {n} {what}"
            out.append(Row(name, r.median_s, duck.median_s, "s", TARGET_TIME[what],
                           higher_is_better=False))  # fmt: skip
        rss = max(r.rss_mib, passing.rss_mib)
        out.append(Row(f"peers: {label} peak RSS, {n} {what}", rss, None, "MiB",
                       TARGET_RSS_MIB, higher_is_better=False))  # fmt: skip
        out.append(Row(f"peers: broken/passing extent, {label}, {n} {what}", r.fastest_s,
                       passing.fastest_s, "s", TARGET_BROKEN, higher_is_better=False,
                       note=_broken_note(r, passing)))  # fmt: skip
    wrong = [t for t, r in runs.items() if _differences(r.counts, truth)]
    out.append(Row(f"peers: tools whose counts differ from the truth, {what}", len(wrong), None,
                   "tools", 0, higher_is_better=False, note=", ".join(wrong)))  # fmt: skip
    return out


def _broken_note(broken: Runs, passing: Runs) -> str:
    """The broken / passing row's note: how many runs of each it took the fastest of, the
    ratio of their median wall times, and that of their median CPU (user + system s of
    each process) when the runs recorded it.

    The row compares the fastest run of each (as the ``scale-out`` row takes the faster
    of its runs), not the medians: it is one tool on one file, and on this machine the
    noise only adds. A process that touches fresh memory now and then spends 0.1-0.7 s
    more in the kernel, whatever it runs: the VM hands freed pages back to its host at
    once (virtio-balloon free page reporting, ``page_reporting_order`` 9,
    ``min_free_ms`` 0), and touching them again costs a fault on the host. A numpy
    process that only fills 128 MB three times spent 0.05-0.08 s of system time in 22 of
    30 runs, 0.10-0.13 s in 3 and 0.16-0.71 s in 5 (docs/performance.md, stop 44). On a 0.5 s
    ``check`` of the points such a spike is 20-90% of the run against the 10% bound,
    while the diagnosis costs 2-3 ms; the fastest run is the one the spikes missed. A
    real cost of the diagnosis is in every broken run, the fastest too."""
    n = min(len(broken.seconds), len(passing.seconds))
    parts = [
        f"fastest of {n} runs each; medians {broken.median_s:.2f} / {passing.median_s:.2f} s"
        f" = {broken.median_s / passing.median_s:.2f}"
    ]
    b, p = broken.median_cpu_s, passing.median_cpu_s
    if b is not None and p is not None and p > 0:
        parts.append(f"CPU {b:.2f} / {p:.2f} s = {b / p:.2f}")
    return "; ".join(parts)


def run(
    quick: bool,
    features: int | None = None,
    rounds: int | None = None,
    batches: Sequence[str] = BATCHES,
) -> list[Row]:
    """The ``peers`` group: the ``batches`` (default both, :data:`BATCHES`) of ``features``
    (default :data:`FEATURES`, quick :data:`QUICK_FEATURES`) in ``rounds`` interleaved
    rounds (default 3, quick 1); prints each batch's table and the machine's load
    averages; returns the target rows (of the batches run)."""
    n = features or (QUICK_FEATURES if quick else FEATURES)
    rounds = rounds or (1 if quick else 3)
    _, skipped = tools_available()
    for line in skipped:
        print(f"peers: {line}", flush=True)
    out: list[Row] = []
    with tempfile.TemporaryDirectory(prefix="peers-") as scratch:
        kept = os.environ.get(DATA_DIR_ENV)
        folder = Path(scratch if quick or not kept else kept)
        folder.mkdir(parents=True, exist_ok=True)
        for what in [b for b in BATCHES if b in batches]:
            before = os.getloadavg()
            runs, truth = measure(folder, what, n, rounds)
            after = os.getloadavg()
            print(report(what, n, runs, truth))
            print(f"  {rounds} round(s); load average (1, 5, 15 min) before "
                  f"{_load(before)}, after {_load(after)}", flush=True)  # fmt: skip
            out += rows(what, n, runs, truth)
    return out


def _load(avg: tuple[float, float, float]) -> str:
    return " ".join(f"{a:.2f}" for a in avg)
