"""Where a machine's CPU goes during a timed window (Linux ``/proc``): each worker process,
the embedded broker, the benchmark's own process and the whole machine.

Used by the ``scale-out`` group (issue 27): two worker processes can only be 1.7x one when
the machine gives them the CPU, and the broker on the same cores takes its share per event.
A :class:`CpuSnapshot` is taken at each end of the window; :meth:`CpuSnapshot.since` gives
the :class:`CpuShare` of the window. Figures are CPU seconds (user + system, all threads).
"""

from __future__ import annotations

import os
import resource
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "CpuShare",
    "CpuSnapshot",
    "broker_pid",
    "machine_busy_s",
    "main_thread_s",
    "process_cpu_s",
]

_TCK = os.sysconf("SC_CLK_TCK")


def process_cpu_s(pid: int) -> float:
    """CPU seconds (user + system, every thread) process ``pid`` has used so far; 0.0 when
    it has gone (its ``/proc`` entry is read once)."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return 0.0
    fields = text.rsplit(")", 1)[1].split()  # the name in parentheses may hold spaces
    return (int(fields[11]) + int(fields[12])) / _TCK


def main_thread_s(pid: int) -> tuple[float, float]:
    """``(on_cpu, run_delay)`` seconds of the main thread of process ``pid`` so far, from
    ``/proc/PID/task/PID/schedstat``: its time on a CPU, and its time runnable but waiting
    for one (the CPU was busy with other threads); (0.0, 0.0) when it has gone. The rest of
    a window is the thread's sleep: waiting for the broker, a lock or a timer."""
    try:
        on_ns, delay_ns, _slices = Path(f"/proc/{pid}/task/{pid}/schedstat").read_text().split()
    except (OSError, ValueError):
        return 0.0, 0.0
    return int(on_ns) / 1e9, int(delay_ns) / 1e9


def self_cpu_s() -> float:
    """CPU seconds (user + system, every thread: librdkafka's too) of this process."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def machine_busy_s() -> tuple[float, float]:
    """``(busy, steal)`` CPU seconds of the whole machine since boot, from ``/proc/stat``:
    busy is user + nice + system + irq + softirq (every process, this session's or not),
    steal the time the hypervisor gave another guest."""
    first = Path("/proc/stat").read_text().splitlines()[0].split()
    user, nice, system, _idle, _iowait, irq, softirq, steal = (int(v) for v in first[1:9])
    return (user + nice + system + irq + softirq) / _TCK, steal / _TCK


def broker_pid(bootstrap_servers: str) -> int | None:
    """Process id of the local broker listening on ``bootstrap_servers`` (the embedded
    Tansu broker is started with ``--listener-url tcp://HOST:PORT``); None for any other
    broker (a remote cluster, a container)."""
    address = bootstrap_servers.split(",")[0].strip()
    wanted = f"tcp://{address}".encode()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"broker" in argv and wanted in argv:
            return int(entry.name)
    return None


@dataclass(frozen=True)
class CpuShare:
    """CPU seconds spent in one window of ``wall_s`` seconds in which ``events`` events
    were decided. ``others_s``: the machine's busy time not in the workers, the broker or
    the benchmark (other sessions, the kernel's own threads)."""

    wall_s: float
    events: int
    workers_s: tuple[float, ...]
    broker_s: float | None
    bench_s: float
    busy_s: float
    steal_s: float
    #: each worker's main thread: (on a CPU, waiting for one), seconds (the rest: asleep)
    mains_s: tuple[tuple[float, float], ...] = ()

    @property
    def others_s(self) -> float:
        """Busy CPU seconds of the machine outside the processes measured here."""
        return max(0.0, self.busy_s - sum(self.workers_s) - (self.broker_s or 0.0) - self.bench_s)

    def cores(self, cpu_s: float) -> float:
        """``cpu_s`` over the window, in cores."""
        return cpu_s / self.wall_s if self.wall_s > 0 else float("nan")

    def ms_per_event(self, cpu_s: float) -> float:
        """``cpu_s`` per decided event, in milliseconds."""
        return 1000.0 * cpu_s / self.events if self.events else float("nan")

    def _thread(self, on_s: float, delay_s: float) -> str:
        """``on/waiting/asleep`` of one thread, fractions of the window."""
        on, delay = self.cores(on_s), self.cores(delay_s)
        return f"{on:.2f}/{delay:.2f}/{max(0.0, 1.0 - on - delay):.2f}"

    def describe(self) -> str:
        """One line: cores and CPU ms per event of each part, the machine's busy cores."""
        parts = [("workers", sum(self.workers_s))]
        if self.broker_s is not None:
            parts.append(("broker", self.broker_s))
        parts += [("benchmark", self.bench_s), ("others", self.others_s)]
        each = ", ".join(
            f"{name} {self.cores(s):.2f} ({self.ms_per_event(s):.2f} ms/event)" for name, s in parts
        )
        workers = "+".join(f"{self.cores(s):.2f}" for s in self.workers_s)
        mains = ", ".join(self._thread(on, delay) for on, delay in self.mains_s)
        main_ms = self.ms_per_event(sum(on for on, _ in self.mains_s))
        return (f"cores: {each}; machine busy {self.cores(self.busy_s):.2f}, steal "
                f"{self.cores(self.steal_s):.2f}; each worker {workers}, its main thread "
                f"({main_ms:.2f} ms/event in all) on a CPU/waiting/asleep {mains}")  # fmt: skip


@dataclass(frozen=True)
class CpuSnapshot:
    """CPU seconds used so far by the workers, the broker, this process and the machine."""

    at_s: float
    workers_s: tuple[float, ...]
    broker_s: float | None
    bench_s: float
    busy_s: float
    steal_s: float
    mains_s: tuple[tuple[float, float], ...] = ()

    @classmethod
    def take(cls, at_s: float, workers: list[int], broker: int | None) -> CpuSnapshot:
        """A snapshot at monotonic time ``at_s`` of the worker process ids ``workers``
        and the broker's (None: not measured)."""
        busy, steal = machine_busy_s()
        return cls(at_s, tuple(process_cpu_s(p) for p in workers),
                   None if broker is None else process_cpu_s(broker), self_cpu_s(), busy,
                   steal, tuple(main_thread_s(p) for p in workers))  # fmt: skip

    def since(self, start: CpuSnapshot, events: int) -> CpuShare:
        """The window from ``start`` to this snapshot, in which ``events`` were decided."""
        broker = None
        if self.broker_s is not None and start.broker_s is not None:
            broker = self.broker_s - start.broker_s
        workers = tuple(b - a for a, b in zip(start.workers_s, self.workers_s, strict=True))
        mains = tuple((b[0] - a[0], b[1] - a[1])
                      for a, b in zip(start.mains_s, self.mains_s, strict=True))  # fmt: skip
        return CpuShare(self.at_s - start.at_s, events, workers, broker,
                        self.bench_s - start.bench_s, self.busy_s - start.busy_s,
                        self.steal_s - start.steal_s, mains)  # fmt: skip
