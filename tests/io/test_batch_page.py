"""The batch map page (worker.io.reports.page) on coordinates at the ends of float range.

Its pages in a real browser are in test_pages_in_browser.py (skipped without chromium).
"""

from __future__ import annotations

import re

import shapely

from tests.catalogue import NOW, active, batch_of, clause, contract_of
from worker.core.evaluate import evaluate
from worker.io.reports.page import render_batch_page


def test_coordinates_of_1e308_are_drawn_at_the_map_edges_never_as_nan() -> None:
    # a fresh-user finding: maxx - minx overflowed to inf and the SVG held cx="nan"
    geoms = [shapely.Point(-1e308, -1e308), shapely.Point(1e308, 1e308), shapely.Point(0, 0)]
    contract = contract_of(clause("valid", "validity"))
    batch = batch_of(geoms, crs="EPSG:3857")
    page = render_batch_page(batch, evaluate(batch, [active(contract)], now=NOW), [contract])
    assert not re.search(r"\bnan\b", page)
    centres = [(float(x), float(y)) for x, y in re.findall(r'cx="([-\d.]+)" cy="([-\d.]+)"', page)]
    assert centres == [(20.0, 540.0), (540.0, 20.0), (280.0, 280.0)]


def test_a_large_batch_draws_every_offender_and_a_thinned_sample_of_the_rest() -> None:
    # 300,000 points made a 39 MB page (a fresh-user finding)
    from worker.io.reports.batch_map import MAX_DRAWN_PASSING

    n = 2 * MAX_DRAWN_PASSING + 10
    geoms = [shapely.Point(i % 360 - 180, (i // 360) % 180 - 90) for i in range(n - 1)]
    geoms.append(shapely.Point(500, 0))  # the one outside the extent
    contract = contract_of(clause("ext", "extent", region=[-180, -90, 180, 90]))
    batch = batch_of(geoms)
    page = render_batch_page(batch, evaluate(batch, [active(contract)], now=NOW), [contract])
    drawn = re.findall(r'<circle class="feature" data-index="(\d+)"', page)
    assert len(drawn) == MAX_DRAWN_PASSING and drawn[0] == "0" and drawn[-1] == str(n - 2)
    assert 'class="feature offender" data-index="40009"' in page
    assert "20009 of 40009 passing features are left out of the map" in page
    small = batch_of(geoms[:100] + geoms[-1:])
    page = render_batch_page(small, evaluate(small, [active(contract)], now=NOW), [contract])
    assert len(re.findall(r'<circle class="feature" data-index=', page)) == 100
    assert "left out of the map" not in page


def test_a_ring_geos_refuses_is_drawn_open_as_sent_and_lines_are_never_filled() -> None:
    # the map drew GEOS's reading of an open ring: closed, a valid-looking square
    from tests.catalogue import polygon_wkb

    open_ring = polygon_wkb([(0.0, 0.0), (4.0, 0.0), (4.0, 4.0), (0.0, 4.0)])
    road = shapely.LineString([(5, 5), (8, 6)])
    contract = contract_of(clause("valid", "validity", max_invalid_fraction=0.0))
    batch = batch_of([open_ring, road])
    page = render_batch_page(batch, evaluate(batch, [active(contract)], now=NOW), [contract])
    ring = re.search(r'<path class="feature offender" data-index="0"[^>]*>', page)
    line = re.search(r'<path class="feature" data-index="1"[^>]*>', page)
    assert ring is not None and line is not None
    assert 'fill="none"' in ring.group(0) and 'fill="none"' in line.group(0)
    d = re.search(r'd="([^"]*)"', ring.group(0))
    assert d is not None and "Z" not in d.group(1) and d.group(1).count("L") == 3  # 4 points
