"""Ctrl-C as a shell user expects it: one line ``interrupted`` on stderr, exit status 130
(128 + SIGINT), within :data:`INTERRUPT_GRACE_S` plus half a second, and no traceback.

Python turns SIGINT into :class:`KeyboardInterrupt` only when the main thread next runs
bytecode, and a C call (librdkafka's ``flush``, a GEOS or Arrow kernel) can hold it much
longer, or end in ``SystemError: ... returned NULL`` when the interrupt lands inside a
callback. So :class:`Interrupts` does two things:

* :meth:`Interrupts.exit_status` maps whatever the command raised once SIGINT arrived to
  status 130 (the normal path: the command unwinds, its ``finally`` blocks stop what it
  started, :func:`worker.cli.main.main` prints the line);
* a watcher thread reads the interpreter's signal wake-up socket
  (:func:`signal.set_wakeup_fd`, written by the C-level handler however busy the main
  thread is) and, when the command has not ended :data:`INTERRUPT_GRACE_S` seconds after
  the signal, stops the embedded brokers this process started
  (:func:`worker.kafka.embedded.stop_started_brokers`), prints the line and ends the
  process with ``os._exit(130)``.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import sys
import threading
from collections.abc import Iterator
from typing import TextIO

__all__ = ["EXIT_INTERRUPTED", "INTERRUPT_GRACE_S", "LINE", "Interrupts"]

#: Exit status after Ctrl-C: 128 + SIGINT, as a shell reports a process killed by it.
EXIT_INTERRUPTED = 128 + signal.SIGINT

#: Seconds a command has, after SIGINT, to unwind on its own before the process ends.
INTERRUPT_GRACE_S = 1.5

#: The line printed on stderr after Ctrl-C.
LINE = "interrupted"


class Interrupts:
    """SIGINT bookkeeping of one command run (see the module docstring).

    Parameters
    ----------
    grace_s : float
        Seconds after SIGINT before the watcher ends the process (status 130).
    stream : TextIO, optional
        Where the line goes (``sys.stderr`` at the time it is printed by default).
    """

    def __init__(self, grace_s: float = INTERRUPT_GRACE_S, stream: TextIO | None = None) -> None:
        self.grace_s = grace_s
        self.stream = stream
        self.received = threading.Event()
        self._said = False
        self._lock = threading.Lock()

    def mark(self) -> None:
        """Record that SIGINT arrived (a command's own SIGINT handler calls this)."""
        self.received.set()

    def say(self, wait_s: float | None = None) -> None:
        """Print the line, once per run whoever calls it first (main thread or watcher).

        The line is printed while the lock is held, so a caller that finds it already
        said knows it is out: the watcher, which ends the process with ``os._exit`` right
        after, must not end it between the main thread's claim and its print (seen once
        under load: status 130 and no line). ``wait_s`` bounds the wait for the lock; a
        print stuck longer than that (stderr blocked) is bypassed by writing the line
        straight to file descriptor 2.
        """
        acquired = self._lock.acquire(timeout=-1 if wait_s is None else wait_s)
        try:
            if self._said and acquired:
                return
            self._said = True
            if not acquired:
                with contextlib.suppress(OSError):
                    os.write(2, (LINE + "\n").encode())
                return
            stream = self.stream or sys.stderr
            with contextlib.suppress(Exception):  # stderr closed: the status still says it
                # on a terminal, a progress line may be half drawn: erase it (ECMA-48 EL)
                start = "\r\x1b[K" if stream.isatty() else ""
                # one write, newline included: print() writes the end apart, and a log
                # record of another thread landed between them ("interrupted2026-...")
                stream.write(start + LINE + "\n")
                stream.flush()
        finally:
            if acquired:
                self._lock.release()

    def exit_status(self, exc: BaseException | None) -> int | None:
        """130 (after printing the line) when ``exc`` is a :class:`KeyboardInterrupt`, or
        anything raised (or nothing) after SIGINT arrived; None otherwise."""
        if isinstance(exc, KeyboardInterrupt) or self.received.is_set():
            self.received.set()
            self.say()
            return EXIT_INTERRUPTED
        return None

    @contextlib.contextmanager
    def watching(self) -> Iterator[Interrupts]:
        """Watch for SIGINT while the body runs (main thread only; elsewhere a no-op).

        The interpreter's wake-up fd is pointed at a socket pair for the duration and
        restored afterwards, so in-process callers (the tests) see no lasting change. After
        SIGINT the watcher outlives the body: if the interpreter's exit hangs (a thread
        still in a C call), the process still ends with status 130 when the grace period
        is over.
        """
        if threading.current_thread() is not threading.main_thread():
            yield self
            return
        reader, writer = socket.socketpair()
        writer.setblocking(False)
        try:
            previous = signal.set_wakeup_fd(writer.fileno(), warn_on_full_buffer=False)
        except ValueError:  # not the main interpreter
            reader.close()
            writer.close()
            yield self
            return
        previous_handler = signal.getsignal(signal.SIGINT)
        if previous_handler is signal.default_int_handler:
            signal.signal(signal.SIGINT, self._on_sigint)
        done = threading.Event()
        watcher = threading.Thread(
            target=self._watch, args=(reader, done), name="sigint-watcher", daemon=True
        )
        watcher.start()
        try:
            yield self
        finally:
            signal.set_wakeup_fd(previous)
            if signal.getsignal(signal.SIGINT) == self._on_sigint:
                signal.signal(signal.SIGINT, previous_handler)
            if not self.received.is_set():  # else the watcher keeps its deadline (above)
                done.set()
                with contextlib.suppress(OSError):
                    writer.send(b"\0")  # wakes the watcher, which sees ``done`` and returns
                watcher.join(timeout=1.0)
                writer.close()
                reader.close()

    def _on_sigint(self, signum: int, frame: object) -> None:
        """Python's own SIGINT handler, which also marks the run as interrupted first, so
        an exception a C call makes of the KeyboardInterrupt (``SystemError: ... returned
        NULL``) still maps to status 130 whatever the watcher thread has seen yet."""
        self.mark()
        raise KeyboardInterrupt

    def _watch(self, reader: socket.socket, done: threading.Event) -> None:
        """Wait for SIGINT's byte on the wake-up socket, then for the grace period."""
        while not done.is_set():
            try:
                data = reader.recv(64)
            except OSError:
                return
            if not data or done.is_set():
                return
            if signal.SIGINT in data:
                self.mark()
                if not done.wait(self.grace_s):
                    self._force_exit()
                return

    def _force_exit(self) -> None:
        """The command did not end in time: stop our brokers, say the line, exit 130."""
        from worker.kafka.embedded import stop_started_brokers

        # at most 0.35 s of the half second the bound leaves after the grace period (0.3 s
        # each, plus the killed broker's wait, ended a loaded suite's demo after 2.03 s)
        with contextlib.suppress(Exception):
            stop_started_brokers(timeout_s=0.15)
        self.say(wait_s=0.2)  # returns once the line is out, whoever printed it
        with contextlib.suppress(Exception):
            sys.stdout.flush()
        os._exit(EXIT_INTERRUPTED)
