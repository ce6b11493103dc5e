"""A moto S3 server on a free loopback port, for tests of ``s3://`` payloads.

Started as a subprocess (``python -m moto.server``), ended by its own pid. The fixture
sets the standard AWS environment (endpoint, region, test credentials) the gate reads.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

#: Test credentials; the secret doubles as a marker that must never be printed.
ACCESS_KEY = "AKIATESTGATE0001"
SECRET_KEY = "s3cr3t-Never-Printed-7b1f"


@dataclass(frozen=True)
class S3Server:
    """A running moto server: its endpoint URL and process."""

    endpoint: str
    process: subprocess.Popen[bytes]

    def env(self) -> dict[str, str]:
        """The AWS environment pointing at this server."""
        return {
            "AWS_ENDPOINT_URL": self.endpoint,
            "AWS_ACCESS_KEY_ID": ACCESS_KEY,
            "AWS_SECRET_ACCESS_KEY": SECRET_KEY,
            "AWS_REGION": "us-east-1",
            "AWS_EC2_METADATA_DISABLED": "true",
        }


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_moto(timeout_s: float = 30.0) -> S3Server:
    """Start ``python -m moto.server`` on a free loopback port; wait until it accepts."""
    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), 0.2).close()
            return S3Server(f"http://127.0.0.1:{port}", proc)
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                stop_moto(proc)
                raise RuntimeError(f"moto server did not start on port {port}") from None
            time.sleep(0.05)


def stop_moto(proc: subprocess.Popen[bytes]) -> None:
    """End the server by its own pid."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)


def make_bucket(name: str) -> None:
    """Create bucket ``name`` on the server the environment points at (the gate's own
    filesystem never creates buckets)."""
    import os
    from urllib.parse import urlparse

    from pyarrow import fs

    url = urlparse(os.environ["AWS_ENDPOINT_URL"])
    s3 = fs.S3FileSystem(
        endpoint_override=url.netloc,
        scheme=url.scheme,
        region=os.environ.get("AWS_REGION", "us-east-1"),
        allow_bucket_creation=True,
    )
    s3.create_dir(name)


@pytest.fixture(scope="module")
def moto_server() -> Iterator[S3Server]:
    """A moto S3 server for the module."""
    server = start_moto()
    try:
        yield server
    finally:
        stop_moto(server.process)


@pytest.fixture
def s3_env(moto_server: S3Server, monkeypatch: pytest.MonkeyPatch) -> S3Server:
    """The AWS environment of :func:`moto_server` set for one test."""
    for key, value in moto_server.env().items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("AWS_ENDPOINT_URL_S3", raising=False)
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    return moto_server
