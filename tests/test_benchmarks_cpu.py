"""The scale-out benchmark's CPU accounting (benchmarks/cpu.py) reads real /proc figures."""

from __future__ import annotations

import os
import time

from benchmarks.cpu import CpuSnapshot, broker_pid, main_thread_s, process_cpu_s


def _spin(seconds: float) -> None:
    end = time.process_time() + seconds
    while time.process_time() < end:
        pass


def test_a_window_counts_this_process_cpu_and_its_main_thread() -> None:
    pid = os.getpid()  # this process stands for a worker: it spins on its main thread
    start = CpuSnapshot.take(time.monotonic(), [pid], None)
    _spin(0.3)
    window = CpuSnapshot.take(time.monotonic(), [pid], None).since(start, events=300)
    (worker_s,) = window.workers_s
    (main_on_s, _delay_s) = window.mains_s[0]
    assert 0.25 <= worker_s <= window.wall_s + 0.05
    assert 0.25 <= main_on_s <= worker_s + 0.02  # /proc/stat ticks are 10 ms
    assert window.bench_s >= 0.25  # the same process, counted as the benchmark too
    assert window.broker_s is None
    assert 0.9 <= window.ms_per_event(worker_s) <= 1000 * window.wall_s / 300 + 0.2
    line = window.describe()
    assert "workers" in line and "benchmark" in line and "broker" not in line


def test_process_figures_of_a_process_that_is_gone_are_zero() -> None:
    assert process_cpu_s(2**22 + 1) == 0.0  # above the kernel's pid_max default
    assert main_thread_s(2**22 + 1) == (0.0, 0.0)
    assert process_cpu_s(os.getpid()) > 0.0


def test_no_local_broker_listens_on_an_unused_address() -> None:
    assert broker_pid("127.0.0.1:1") is None
