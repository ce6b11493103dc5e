"""A process that exits right after reading a GeoParquet file exits with its own status.

``pq.read_table`` on a Python file object (local payloads are opened as one) pre-buffered
in Arrow's background threads; a read still calling into Python when the interpreter
exited ended inside Arrow (``terminate called without an active exception``, SIGABRT):
``check`` on a file it then refused exited 134 instead of 2 in about 1 run of 5 (a
fresh-user finding). Each trial is one short process, as the fault shows only at exit.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = """
import sys
from worker.core.errors import PayloadError
from worker.io.payloads import read_batch_file
try:
    read_batch_file(sys.argv[1], layer="x")
except PayloadError:
    sys.exit(2)
"""


def test_exit_status_after_a_refused_geoparquet_file_is_never_an_abort(tmp_path: Path) -> None:
    path = tmp_path / "no_geo.parquet"
    table = pa.table({"n": list(range(1000)), "s": [f"v{i}" for i in range(1000)]})
    pq.write_table(table.replace_schema_metadata({b"geo": b"{}"}), path, row_group_size=100)
    runs = [
        subprocess.run([sys.executable, "-c", SCRIPT, str(path)], cwd=ROOT, capture_output=True)
        for _ in range(8)
    ]
    codes = [r.returncode for r in runs]
    said = [r.stderr.decode(errors="replace")[-300:] for r in runs if r.returncode != 2]
    assert codes == [2] * 8, said  # 134 (SIGABRT) in about 1 of 5 before
