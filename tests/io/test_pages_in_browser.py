"""The HTML pages (batch map page, quarantine record page, evidence page) opened in a real
browser: headless Chromium from Debian (`apt-get install chromium`) dumps the DOM it built
and takes a screenshot. Skipped, saying why, where chromium is not installed."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import tempfile
from datetime import timedelta
from pathlib import Path

import pytest
import shapely

from tests.catalogue import BOWTIE, NOW, PARIS, VALID_POLYGON, active, batch_of, clause, contract_of
from worker.core.evaluate import evaluate
from worker.core.lifecycle.evidence import summarise
from worker.core.offenders import every_offender
from worker.io import codec
from worker.io.reports.evidence import render_evidence_html
from worker.io.reports.page import render_batch_page, render_record_page

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = pytest.mark.skipif(
    CHROMIUM is None, reason="chromium is not installed (Debian: apt-get install -y chromium)"
)
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--window-size=1100,1600",
]


def browse(page: Path, tmp: Path) -> tuple[str, bytes]:
    """(DOM as Chromium built it, PNG screenshot) of ``page``, each with a fresh profile."""
    assert CHROMIUM is not None
    out = []
    for extra in (["--dump-dom"], [f"--screenshot={tmp / 'shot.png'}"]):
        with tempfile.TemporaryDirectory(dir=tmp) as profile:
            done = subprocess.run(
                [CHROMIUM, *FLAGS, f"--user-data-dir={profile}", *extra, page.as_uri()],
                capture_output=True,
                text=True,
                timeout=120,
            )
        assert done.returncode == 0, done.stderr[-2000:]
        out.append(done.stdout)
    png = (tmp / "shot.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    return out[0], png


CONTRACT = contract_of(
    clause("srid", "crs", expect="EPSG:4326"),
    clause("europe", "extent", region=[-10.0, 40.0, 10.0, 55.0]),
    clause("valid", "validity"),
)
FAR = shapely.box(100.0, 10.0, 101.0, 11.0)


def test_check_page_maps_offenders_by_clause_and_the_extent_region(tmp_path: Path) -> None:
    batch = batch_of([PARIS, FAR, shapely.affinity.translate(BOWTIE, 2, 45)])
    decision = evaluate(batch, [active(CONTRACT)], now=NOW)
    page = tmp_path / "check.html"
    page.write_text(render_batch_page(batch, decision, [CONTRACT], title="t"), encoding="utf-8")
    dom, png = browse(page, tmp_path)
    assert len(re.findall(r"<svg[^>]*class=\"map\"", dom)) == 1
    assert len(re.findall(r'class="region" data-clause="v1.0:europe"', dom)) == 1
    offenders = re.findall(
        r'class="feature offender" data-index="(\d+)" data-clause="([^"]+)"', dom
    )
    assert sorted(offenders) == [("1", "v1.0:europe"), ("2", "v1.0:valid")]
    assert len(re.findall(r'class="feature" data-index="0"', dom)) == 1  # Paris broke nothing
    assert "BROKEN: <b>europe</b>" in dom and "Self-intersection" in dom
    assert "Decision: the batch is quarantined." in dom
    assert len(png) > 10_000


def test_quarantine_record_page_draws_the_batch_from_the_original_event(tmp_path: Path) -> None:
    batch = batch_of([PARIS, FAR, VALID_POLYGON])
    decision = evaluate(batch, [active(CONTRACT)], now=NOW)
    data = codec.encode_quarantine(
        decision,
        batch_id="b-1",
        layer="parcels",
        source_topic="gis.batches",
        source_partition=0,
        source_offset=1,
        original=codec.encode_batch(batch),
        quarantined_at=NOW,
        worker_id="w",
    )
    record = codec.decode_quarantine(data)
    page = tmp_path / "record.html"
    page.write_text(render_record_page(codec.decode_batch(record["original"]), record), "utf-8")
    dom, _png = browse(page, tmp_path)
    assert 'class="region" data-clause="v1.0:europe"' in dom
    offenders = re.findall(r'class="feature offender" data-index="(\d+)"', dom)
    assert offenders == ["1", "2"]
    assert "<td>v1.0:europe</td><td>1</td>" in dom


def test_evidence_page_shows_close_evaluations_apart_and_the_breach_rate(tmp_path: Path) -> None:
    from tests.core.test_evidence import V1_1, record

    t0 = 0.0
    records = [record(f"c{i}", t0 + i * 11 / 3600, i % 2 == 0) for i in range(4)]
    e = summarise(V1_1, records, now=records[0]["evaluated_at"] + timedelta(hours=6))
    page = tmp_path / "evidence.html"
    page.write_text(render_evidence_html(e), encoding="utf-8")
    dom, png = browse(page, tmp_path)
    xs = [float(x) for x in re.findall(r'<circle class="(?:pass|breach)" cx="([\d.]+)"', dom)]
    assert len(xs) == 4 and len(set(xs)) == 4
    assert len(re.findall(r'class="bar"', dom)) >= 1
    assert "continent (domain, halts): column 'continent'" in dom
    assert len(png) > 5_000


EUROPE_ONLY = """layer: admin_boundaries
version: v1
cadence: P1D
objective: 0.99
owner: qa
changelog: the shipped 177 countries against a Europe-only box; Asia outside the domain
clauses:
  - {name: srid, kind: crs, expect: "EPSG:4326"}
  - {name: europe, kind: extent, region: [-25, 34, 45, 72], min_fraction_inside: 1.0}
  - name: continent
    kind: domain
    column: continent
    values: {Africa: a, Europe: e, North America: n, Oceania: o, South America: s,
             Antarctica: x, "Seven seas (open ocean)": y}
"""
COUNTRIES = str(Path(__file__).parents[2] / "worker" / "data" / "admin_boundaries.parquet")
TIMES = ["--data-time", "2026-11-29T06:00:00Z", "--now", "2026-11-29T07:00:00Z"]


def _offenders_drawn(dom: str) -> dict[int, str]:
    found = re.findall(r'class="feature offender" data-index="(\d+)" data-clause="([^"]+)"', dom)
    return {int(i): labels for i, labels in found}


def test_check_page_colours_every_offender_beyond_the_first_100(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from worker.cli.main import main
    from worker.core.model import ActiveVersion
    from worker.io.contract_files import load_contract
    from worker.io.payloads import read_batch_file
    from worker.io.reports.offenders import broken_clauses

    contract = tmp_path / "europe.yaml"
    contract.write_text(EUROPE_ONLY, encoding="utf-8")
    countries = COUNTRIES
    page, offenders = tmp_path / "check.html", tmp_path / "offenders.geojson"
    argv = ["check", countries, "--contract", str(contract), "--html", str(page)]
    assert main([*argv, "--offenders", str(offenders), *TIMES]) == 1
    err = capsys.readouterr().err
    assert f"wrote 141 offending features to {offenders}\n" in err  # nothing left out
    written = json.loads(offenders.read_text(encoding="utf-8"))["contract_gate"]["clauses"]
    assert [(c["clause"], c["total"], c["written"], c.get("note")) for c in written] == [
        ("v1.0:europe", 138, 138, None),
        ("v1.0:continent", 47, 47, None),
    ]
    # the offenders as the core finds them, every one, from the file read again
    batch = read_batch_file(countries, layer="admin_boundaries")
    v = ActiveVersion(load_contract(contract), "enforcing")
    with every_offender():
        decision = evaluate(batch, [v], now=NOW)
    expected = {
        b.label: {f["index"] for f in b.offenders["features"]} for b in broken_clauses(decision)
    }
    assert len(expected["v1.0:europe"]) == 138 and len(expected["v1.0:continent"]) == 47
    australia = batch.attributes.column("name").to_pylist().index("Australia")
    assert australia in expected["v1.0:europe"]
    dom, _png = browse(page, tmp_path)
    drawn = _offenders_drawn(dom)
    assert len(drawn) == len(expected["v1.0:europe"] | expected["v1.0:continent"]) == 141
    for label, indices in expected.items():
        assert {i for i, labels in drawn.items() if label in labels.split()} == indices
    both = expected["v1.0:europe"] & expected["v1.0:continent"]
    assert len(both) == 44 and all(drawn[i] == "v1.0:europe v1.0:continent" for i in both)
    assert drawn[australia] == "v1.0:europe"
    rings = re.findall(r'class="marker" data-index="(\d+)" data-clause="([^"]+)"', dom)
    assert len(rings) == 138 + 47  # one ring per broken clause of each feature
    assert "not drawn as offenders" not in dom and "grey features broke nothing," in dom
    assert len(re.findall(r'class="feature" data-index="\d+"', dom)) == 177 - 141
    # the table lists the first 100 of a clause, the map every one
    assert "... and 38 more (every one is on the map)" in dom


def test_record_page_says_how_many_offenders_the_record_leaves_out(tmp_path: Path) -> None:
    from worker.io.contract_files import load_contract
    from worker.io.formats.offenders_file import offenders_collection
    from worker.io.payloads import read_batch_file
    from worker.io.reports.offenders import offenders_of_record, unwritten_line

    contract = tmp_path / "europe.yaml"
    contract.write_text(EUROPE_ONLY, encoding="utf-8")
    batch = read_batch_file(COUNTRIES, layer="admin_boundaries")
    decision = evaluate(batch, [active(load_contract(contract))], now=NOW)
    data = codec.encode_quarantine(
        decision,
        batch_id="b-1",
        layer="admin_boundaries",
        source_topic="gis.batches",
        source_partition=0,
        source_offset=1,
        original=codec.encode_batch(batch),
        quarantined_at=NOW,
        worker_id="w",
    )
    record = codec.decode_quarantine(data)
    page = tmp_path / "record.html"
    page.write_text(render_record_page(codec.decode_batch(record["original"]), record), "utf-8")
    dom, _png = browse(page, tmp_path)
    drawn = _offenders_drawn(dom)
    europe = {i for i, labels in drawn.items() if "v1.0:europe" in labels.split()}
    assert len(europe) == 100  # what the record holds
    assert "v1.0:europe: 138 offend, 100 recorded, 38 not drawn as offenders" in dom
    assert "grey features broke nothing recorded," in dom
    assert "v1.0:continent: 47 offend," not in dom  # all 47 recorded
    broken = offenders_of_record(record["reasons"])
    doc = offenders_collection(batch, broken)
    notes = {c["clause"]: c.get("note") for c in doc["contract_gate"]["clauses"]}
    assert notes == {
        "v1.0:europe": "138 offend, 100 recorded, 38 not written",
        "v1.0:continent": None,
    }
    assert unwritten_line(broken) == " (v1.0:europe: 138 offend, 100 recorded, 38 not written)"


#: Appended to a page under test: Chromium lays the page out, this script writes the
#: bounding box of every timeline label into the DOM, and --dump-dom returns it.
MEASURE = """<script>
const boxes = {};
for (const el of document.querySelectorAll("svg.timeline text[class^=label-]")) {
  const r = el.getBoundingClientRect();
  boxes[el.getAttribute("class")] = [r.left, r.top, r.right, r.bottom];
}
const out = document.createElement("pre");
out.id = "boxes";
out.textContent = JSON.stringify(boxes);
document.body.appendChild(out);
</script>"""


def _intersect(a: list[float], b: list[float]) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


@pytest.mark.parametrize("after_s", [60.0, 3 * 3600.0, 6 * 3600.0, 9 * 3600.0])
def test_evidence_page_now_label_overlaps_no_other_label(tmp_path: Path, after_s: float) -> None:
    # issue 28 §4: with "now" just after the first evaluation the "now" label was drawn on
    # the start date; measured here as Chromium lays the page out
    import json

    from tests.core.test_evidence import V1_1, record

    records = [record("c0", 0.0, True), record("c1", 10 / 3600, False)]
    now = records[0]["evaluated_at"] + timedelta(seconds=after_s)
    page = tmp_path / "evidence.html"
    html = render_evidence_html(summarise(V1_1, records, now=now))
    page.write_text(html.replace("</body>", MEASURE + "</body>"), encoding="utf-8")
    dom, _png = browse(page, tmp_path)
    found = re.search(r'<pre id="boxes">([^<]*)</pre>', dom)
    assert found is not None, "the measuring script did not run"
    boxes = json.loads(found.group(1))
    assert sorted(boxes) == ["label-cycle", "label-now", "label-start"]
    assert all(b[2] - b[0] > 5 and b[3] - b[1] > 5 for b in boxes.values())  # drawn, not empty
    assert not _intersect(boxes["label-now"], boxes["label-start"])
    assert not _intersect(boxes["label-now"], boxes["label-cycle"])
    # the label stays next to its line
    now_x = float(re.search(r'<line x1="([\d.]+)"[^>]*stroke="#000"', dom).group(1))  # type: ignore[union-attr]
    svg_left = boxes["label-start"][0] - 50  # the start label sits at the 50 px pad
    near = min(
        abs(boxes["label-now"][0] - svg_left - now_x), abs(boxes["label-now"][2] - svg_left - now_x)
    )
    assert near <= 6, (near, boxes)
