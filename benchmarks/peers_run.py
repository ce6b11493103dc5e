"""Run one tool as a process of its own and measure it (the ``peers`` group, issue 27):
wall time, peak RSS and CPU time of that process alone, and the JSON its stdout ends with."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

__all__ = ["LAUNCHER", "Measured", "run_measured"]

#: Runs one command and writes its wall time (s), peak RSS (KiB) and CPU time (user +
#: system, s) to a file. A process spawned by this benchmark's own (large) Python process
#: would report that process's RSS as its peak when it is smaller (Linux keeps
#: ``ru_maxrss`` across the fork and exec), so a small launcher spawns it: the peak it
#: reports is the tool's (at least the launcher's own 10 MiB).
LAUNCHER = """import os, sys, time
t0 = time.perf_counter()
pid = os.posix_spawn(sys.argv[2], sys.argv[2:], os.environ)
_, status, usage = os.wait4(pid, 0)
with open(sys.argv[1], "w") as out:
    out.write(f"{time.perf_counter() - t0} {usage.ru_maxrss} {usage.ru_utime + usage.ru_stime}")
sys.exit(os.waitstatus_to_exitcode(status))
"""


@dataclass(frozen=True)
class Measured:
    """One process's run (:func:`run_measured`): wall time (s), peak RSS (KiB, that
    process alone), CPU time (user + system, s, that process and the threads it ran) and
    the JSON object its stdout ends with."""

    wall_s: float
    rss_kib: int
    cpu_s: float
    doc: dict[str, int]


def run_measured(argv: list[str], env: dict[str, str] | None = None) -> Measured:
    """Run ``argv`` as a process of its own, measured through :data:`LAUNCHER`
    (``wait4`` of that process alone), with ``env`` added to this process's environment.

    Raises
    ------
    RuntimeError
        The process exited 2 or more (``check`` exits 1 for a quarantined batch), or
        printed no JSON; its stderr's tail is in the message.
    """
    env = {**os.environ, **(env or {}), "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    with tempfile.TemporaryDirectory(prefix="peers-run-") as scratch:
        figures = Path(scratch) / "figures"
        launch = [sys.executable, "-S", "-c", LAUNCHER, str(figures), *argv]
        run = subprocess.run(launch, env=env, capture_output=True, text=True, check=False)
        text = figures.read_text() if figures.is_file() else ""
    if run.returncode not in (0, 1) or not text or not run.stdout.strip():
        raise RuntimeError(f"{' '.join(argv[1:5])} exited {run.returncode}: {run.stderr[-2000:]}")
    wall_s, rss_kib, cpu_s = text.split()
    return Measured(float(wall_s), int(rss_kib), float(cpu_s), _last_json(run.stdout))


def _last_json(text: str) -> dict[str, int]:
    """Counts in the last JSON document of ``text``: a tool's line, or check's decision."""
    from benchmarks.peers_tools import gate_counts

    start = text.find("{")
    doc = json.loads(text[start:])
    return gate_counts(doc) if "versions" in doc else doc
