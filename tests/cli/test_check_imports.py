"""`contract-gate check` imports only what it uses (issue 27: imports were 27% of `check`
on 1,000,000 points): no Kafka client, no telemetry, no pandas (which pyarrow imports on
its first Python list when installed, though the gate never makes a pandas object), no
cryptography (config-record signatures), no other command's module and none of the
gate's Kafka modules (Kafka settings, signing). Run in a fresh interpreter, as the command
runs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from worker.cli.commands import COMMANDS

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "worker" / "data"
#: Packages `check` must not import, and why each would be there.
NOT_IMPORTED = ("confluent_kafka", "opentelemetry", "pandas", "cryptography")
#: Modules of the gate (and their submodules) `check` of a GeoParquet file must not
#: import: the other commands (each command imports its own module only), the Kafka layer
#: and the other formats' reading (GeoJSON's parsers, shapefiles' DBF encodings).
NOT_IMPORTED_GATE = (
    *(f"worker.cli.commands.{c}" for c in COMMANDS if c != "check"),
    "worker.kafka",
    "worker.io.signing",
    "worker.ops",
    "worker.io.formats.geojson_",
    "worker.io.formats.strict_json",
    "worker.io.formats.dbf_encoding",
)

#: Runs `check` in-process and prints its exit code and the top-level modules imported.
PROBE = """import json, sys
from worker.cli.main import main
code = main(sys.argv[1:])
print(json.dumps([code, sorted(sys.modules)]), file=sys.stderr)
"""


def _modules_after(*argv: str) -> tuple[int, set[str]]:
    """The exit code of ``argv`` run in a fresh interpreter and every module it imported."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    run = subprocess.run(
        [sys.executable, "-c", PROBE, *argv],
        capture_output=True,
        text=True,
        env=env,
        check=False,
        timeout=120,
    )
    code, modules = json.loads(run.stderr.strip().splitlines()[-1])
    return code, set(modules)


@pytest.mark.parametrize(
    ("batch", "contract"),
    [
        ("nyc_boroughs.parquet", "nyc_boroughs.v1.yaml"),  # read in chunks, on the pool
        ("admin_boundaries.parquet", "admin_boundaries.v1.yaml"),
    ],
)
def test_check_imports_no_kafka_telemetry_pandas_or_cryptography(batch: str, contract: str) -> None:
    code, modules = _modules_after(
        "check", str(DATA / batch), "--contract", str(DATA / "contracts" / contract),
        "--format", "json", "--now", "2026-11-29T07:00:00Z",
    )  # fmt: skip
    assert code in (0, 1)  # a decision was printed (2 would be an error)
    packages = {m.split(".")[0] for m in modules}
    assert {"worker", "pyarrow", "shapely", "numpy"} <= packages  # the probe sees imports
    assert "worker.cli.commands.check" in modules
    assert packages.isdisjoint(NOT_IMPORTED), sorted(packages & set(NOT_IMPORTED))
    gate = sorted(m for m in modules if m.startswith(NOT_IMPORTED_GATE))
    assert not gate, gate


def test_pyarrow_still_converts_to_pandas_after_the_probe_is_skipped() -> None:
    """The skipped probe answers "no pandas" only while pandas is not imported: an explicit
    conversion imports it and works (in a fresh interpreter, pandas being installed)."""
    pytest.importorskip("pandas")
    script = (
        "import sys\n"
        "from worker.core._util.arrow import skip_pandas_probe\n"
        "skip_pandas_probe()\n"
        "import pyarrow as pa\n"
        "t = pa.schema([('a', pa.int64())]).empty_table()\n"
        "assert 'pandas' not in sys.modules\n"
        "print(pa.table({'a': [1, 2]}).to_pandas()['a'].sum())\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    run = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=env, check=True
    )
    assert run.stdout.strip() == "3"
