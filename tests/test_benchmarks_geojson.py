"""The ``geojson`` benchmark group (issue 27) at a tiny size: both reads find every feature
of the seeded file, and the rows carry the two targets."""

from __future__ import annotations

import json
from pathlib import Path

from benchmarks import geojson_read


def test_the_seeded_file_is_geojson_of_the_peers_polygons(tmp_path: Path) -> None:
    path = tmp_path / "p.geojson"
    assert geojson_read.write_geojson(path, 50) == 50
    doc = json.loads(path.read_text())
    assert len(doc["features"]) == 50
    assert {f["geometry"]["type"] for f in doc["features"]} <= {"Polygon", "MultiPolygon"}
    assert list(doc["features"][0]["properties"]) == [
        "id", "code", "name", "population", "measured_m"
    ]  # fmt: skip
    assert not path.with_suffix(".parquet").exists()


def test_quick_run_reads_every_feature_with_both_tools() -> None:
    rows = geojson_read.run(quick=True, features=300)
    ratio, rss = rows
    assert ratio.unit == "s" and ratio.floor is not None and ratio.floor > 0
    assert ratio.target == 1.2 and not ratio.higher_is_better
    assert rss.unit == "MiB" and 20 < rss.value < 400 and rss.target == 400
