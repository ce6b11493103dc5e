"""The operator page in headless Chromium on a real worker and broker (issue 29 part 2).

Two majors published, consumers declaring one by one: the page's migration counter steps
down and v1's retirement gate opens, as the DOM Chromium built says (after its script
polled ``/overview.json``), and a screenshot is taken. A quarantined batch's link leads to
its batch page with the map drawn from the original event. Skipped without chromium.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
import threading
import time
import urllib.request
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, replace
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pyarrow as pa
import pytest
from opentelemetry.sdk.metrics import MeterProvider

from tests.integration.test_consumers import _commit_offset, _contracts, _publish
from worker.cli.scenario import data_file
from worker.control.consumers import declare
from worker.gate.pipeline import Pipeline
from worker.io.codec import encode_batch
from worker.io.payloads import read_batch_file
from worker.kafka.admin import produce_one
from worker.kafka.settings import Settings
from worker.ops.http import GateHTTPServer
from worker.ops.metrics import GateMetrics
from worker.ops.migration_exporter import MigrationExporter
from worker.ops.operator import OverviewSource, RecentQuarantines

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--window-size=1280,1400"]  # fmt: skip
LAYER = "nyc_boroughs"
#: The status line as the page's script sets it after a poll of /overview.json.
LIVE = re.compile(r'<span id="status" class="ok">live: updated \d{4}-\d\d-\d\dT')


def chromium(url: str, tmp: Path, *extra: str, budget_ms: int = 4500) -> str:
    """What Chromium prints for ``url`` after ``budget_ms`` of virtual time (the page's
    script polls once in that time), with a fresh profile."""
    assert CHROMIUM is not None
    with tempfile.TemporaryDirectory(dir=tmp) as profile:
        done = subprocess.run(
            [CHROMIUM, *FLAGS, f"--user-data-dir={profile}",
             f"--virtual-time-budget={budget_ms}", *extra, url],
            capture_output=True, text=True, timeout=90,
        )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


@dataclass
class Served:
    url: str
    pipeline: Pipeline
    exporter: MigrationExporter


@pytest.fixture
def served(settings: Settings) -> Iterator[Served]:
    """A worker with its HTTP server, the operator page and a 1 s migration refresh."""
    recent = RecentQuarantines()
    meter = MeterProvider().get_meter("t")
    pipeline = Pipeline(settings, metrics=GateMetrics(meter), on_outcome=recent)
    server = GateHTTPServer(pipeline, host="127.0.0.1", port=0)
    exporter = MigrationExporter(settings, pipeline.registry, meter=meter, interval_s=1.0)
    server.migration = lambda: exporter.view
    server.operator = OverviewSource(pipeline, recent, lambda: exporter.view)
    stop = threading.Event()
    pipeline.start()
    thread = threading.Thread(target=pipeline.run, args=(stop,), daemon=True)
    thread.start()
    server.start()
    exporter.start()
    try:
        yield Served(f"http://127.0.0.1:{server.port}", pipeline, exporter)
    finally:
        exporter.stop()
        stop.set()
        thread.join(timeout=30)
        server.close()


def wait_for(predicate, timeout_s: float = 30.0) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout_s
    while not predicate():
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.2)


def ink_fraction(png: bytes) -> float:
    """The fraction of non-white bytes in the PNG's decoded scanlines (0: blank page)."""
    pos, idat = 8, b""
    while pos < len(png):
        length = int.from_bytes(png[pos : pos + 4], "big")
        if png[pos + 4 : pos + 8] == b"IDAT":
            idat += png[pos + 8 : pos + 8 + length]
        pos += 12 + length
    raw = zlib.decompress(idat)
    return sum(1 for b in raw[::7] if b < 0xF0) / len(raw[::7])


def v1_count(s: Served) -> int | None:
    row = s.exporter.view.count(LAYER, "v1")
    return None if row is None else row.count


def gate_in_dom(dom: str) -> tuple[int, str]:
    """(v1's count, v1's gate state) from the timeline's counter in the DOM."""
    m = re.search(r'class="counter" data-version="v1" data-count="(\d+)" data-gate="(\w+)"', dom)
    assert m is not None, dom[:3000]
    return int(m[1]), m[2]


def test_the_counter_steps_down_and_the_gate_opens_as_consumers_declare(
    settings: Settings, served: Served, tmp_path: Path
) -> None:
    v1, v2 = _contracts()
    silent = f"{settings.group_id}-etl-7"
    names = [f"{settings.group_id}-team-a", f"{settings.group_id}-team-b"]
    for name in names:
        declare(settings, name, LAYER, "v1", force=True)
    _commit_offset(settings, silent)  # reads the admitted topic, never declared
    _publish(settings, v1, v2)
    wait_for(lambda: v1_count(served) == 3)

    seen = []
    for step, name in enumerate([None, *names, silent]):
        if name is not None:
            declare(settings, name, LAYER, "v2")
            wait_for(lambda n=3 - step: v1_count(served) == n)
        dom = chromium(f"{served.url}/", tmp_path, "--dump-dom")
        assert LIVE.search(dom), dom[:400]  # the script polled /overview.json and redrew
        seen.append(gate_in_dom(dom))
        if step == 0:
            assert f"group unattributed:{silent}" in dom
            assert re.search(r'<tr data-version="v2.0" data-state="active">', dom)
    assert seen == [(3, "closed"), (2, "closed"), (1, "closed"), (0, "open")]
    assert "v1: no reader left: the retirement gate is open" in dom
    assert dom.count('data-event="promoted"') == 2  # from the records' Kafka timestamps
    shot = tmp_path / "page.png"
    chromium(f"{served.url}/", tmp_path, f"--screenshot={shot}", budget_ms=500)
    png = shot.read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 20_000
    assert ink_fraction(png) > 0.02  # drawn, not blank


def test_a_quarantined_batch_links_to_its_map(
    settings: Settings, served: Served, tmp_path: Path
) -> None:
    v1, _ = _contracts()
    _publish(settings, v1)
    wait_for(lambda: bool(served.pipeline.registry.active(LAYER)))
    nyc = read_batch_file(
        data_file("nyc_boroughs.parquet"),
        layer=LAYER,
        data_time=datetime.now(timezone.utc) - timedelta(minutes=5),
        batch_id="nyc",
    )
    table = nyc.attributes
    codes = pa.array([99] * table.num_rows, table.schema.field("BoroCode").type)
    table = table.set_column(table.schema.get_field_index("BoroCode"), "BoroCode", codes)
    wrong = replace(nyc, attributes=table, batch_id="nyc-bad-codes")  # codes 1..5 allowed
    produce_one(settings, settings.topics.batches, LAYER, encode_batch(wrong))
    wait_for(lambda: served.pipeline.batches_committed >= 1)

    dom = chromium(f"{served.url}/", tmp_path, "--dump-dom")
    assert "nyc-bad-codes" in dom and "v1.0:boro_code" in dom, dom[dom.find('id="quarantine"') :][
        :3000
    ]
    assert LIVE.search(dom)
    with urllib.request.urlopen(f"{served.url}/", timeout=10) as resp:  # what a browser
        off = resp.read().decode()  # with JavaScript off shows: the server's first view
    assert "nyc-bad-codes" in off and '<svg class="timeline"' in off and 'class="map"' in off
    assert '<span id="status" class="muted">rendered ' in off and not LIVE.search(off)
    pdf = tmp_path / "page.pdf"
    chromium(f"{served.url}/", tmp_path, f"--print-to-pdf={pdf}", "--no-pdf-header-footer")
    assert pdf.read_bytes()[:5] == b"%PDF-" and pdf.stat().st_size > 10_000  # prints
    link = re.search(r'<a class="map" href="([^"]+)">map</a>', dom)
    assert link is not None
    page = chromium(served.url + link[1], tmp_path, "--dump-dom", budget_ms=500)
    assert len(re.findall(r"<svg[^>]*class=\"map\"", page)) == 1
    assert "quarantined batch nyc-bad-codes" in page
    offenders = re.findall(r'class="feature offender" data-index="(\d+)"', page)
    assert sorted(map(int, offenders)) == list(range(nyc.attributes.num_rows))
