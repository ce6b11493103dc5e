"""Run ``contract-gate`` as a real process in its own process group and press Ctrl-C the
way a terminal does (SIGINT to the whole foreground group): shared by the interrupt tests."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


@dataclass
class Interrupted:
    """What the interrupted command left: status, seconds from SIGINT to exit, output."""

    status: int
    seconds: float
    stdout: str
    stderr: str


class Command:
    """``python -m worker ARGS`` started in a new process group, its output collected."""

    def __init__(self, *args: str, env: dict[str, str] | None = None) -> None:
        full_env = {**os.environ, "PYTHONPATH": str(ROOT), **(env or {})}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "worker", *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=full_env,
            start_new_session=True,  # its own group: SIGINT to the group is a terminal's ^C
        )
        self.out: list[str] = []
        self.err: list[str] = []
        self._readers = [
            threading.Thread(target=self._read, args=(self.proc.stdout, self.out), daemon=True),
            threading.Thread(target=self._read, args=(self.proc.stderr, self.err), daemon=True),
        ]
        for r in self._readers:
            r.start()

    @staticmethod
    def _read(stream: object, into: list[str]) -> None:
        for line in iter(stream.readline, b""):  # type: ignore[attr-defined]
            into.append(line.decode("utf-8", "replace"))

    def wait_for(self, text: str, timeout_s: float) -> None:
        """Wait until ``text`` is in the output so far (stdout or stderr)."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if any(text in line for line in self.out + self.err):
                return
            if self.proc.poll() is not None:
                break
            time.sleep(0.05)
        self.kill()
        raise AssertionError(f"{text!r} not seen; stdout {self.out[-5:]}, stderr {self.err[-5:]}")

    def interrupt(self, timeout_s: float = 10.0) -> Interrupted:
        """SIGINT to the process group; wait for the process (killed after ``timeout_s``)."""
        started = time.monotonic()
        os.killpg(self.proc.pid, signal.SIGINT)
        try:
            self.proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            self.kill()
        seconds = time.monotonic() - started
        self._close()
        return Interrupted(self.proc.returncode, seconds, "".join(self.out), "".join(self.err))

    def kill(self) -> None:
        """End the process by its own id (a test that failed part way)."""
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=10)
        self._close()

    def _close(self) -> None:
        for r in self._readers:
            r.join(timeout=5)
        for stream in (self.proc.stdout, self.proc.stderr):
            if stream is not None:
                stream.close()


def assert_interrupted(result: Interrupted) -> None:
    """One line ``interrupted``, status 130, within 2 s, no traceback."""
    lines = result.stderr.splitlines()
    assert lines.count("interrupted") == 1, result.stderr[-2000:]
    assert "Traceback" not in result.stderr, result.stderr[-2000:]
    assert "SystemError" not in result.stderr, result.stderr[-2000:]
    assert result.status == 130, (result.status, result.stderr[-2000:])
    assert result.seconds < 2.0, result.seconds


def tansu_processes_on(port: int) -> list[str]:
    """Command lines of running Tansu processes listening on ``port`` (from /proc)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmd = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
            state = (entry / "stat").read_text().split()[2]
        except OSError:
            continue
        if "tansu" in cmd and f":{port} " in cmd + " " and state != "Z":
            found.append(f"{entry.name} {cmd}")
    return found
