"""Stop 38: a Python without ctypes (built without libffi: ``import ctypes`` raises
ImportError; none of the gate's dependencies needs it). ctypes only serves optional
speed-ups and hardening that have a fallback (glibc's malloc thresholds, ``openat2``):
without it every command still starts, ``check`` decides as with it, and a payload under
a root is opened by the walk."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

#: The child: ctypes made unimportable before any gate module is imported.
_CHILD = """
import sys
sys.modules["_ctypes"] = None
try:
    import ctypes
except ImportError:
    pass
else:
    raise SystemExit("ctypes still importable")
from worker.core._util.malloc import keep_freed_memory
from worker.io.payloads.open import open_payload
from worker.io.payloads.openat2 import openat2_available
from worker.io.payloads.policy import PayloadPolicy
from worker.cli.main import main

assert keep_freed_memory() is False
assert openat2_available() is False
root = sys.argv[1]
policy = PayloadPolicy.from_strings([root])
with open_payload(root + "/nyc_boroughs.parquet", policy) as opened:
    print("opened", opened.format, opened.size)
sys.exit(main(["check", root + "/nyc_boroughs.parquet", "--quiet",
               "--contract", "worker/data/contracts/nyc_boroughs.v1.yaml",
               "--data-time", "2026-11-29T06:00:00Z", "--now", "2026-11-29T08:00:00Z"]))
"""


def test_every_command_starts_and_check_decides_without_ctypes(tmp_path: Path) -> None:
    data = Path("worker/data/nyc_boroughs.parquet")
    (tmp_path / data.name).write_bytes(data.read_bytes())
    run = subprocess.run(
        [sys.executable, "-c", _CHILD, str(tmp_path)], capture_output=True, text=True, timeout=120
    )
    assert run.returncode == 0, run.stderr[-2000:]
    assert f"opened parquet {data.stat().st_size}" in run.stdout
    assert "admitted" in run.stdout.lower()
