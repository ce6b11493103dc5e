"""The batch map page (worker.io.batch_page) on coordinates at the ends of float range.

Its pages in a real browser are in test_pages_in_browser.py (skipped without chromium).
"""

from __future__ import annotations

import re

import shapely

from tests.catalogue import NOW, active, batch_of, clause, contract_of
from worker.core.evaluate import evaluate
from worker.io.batch_page import render_batch_page


def test_coordinates_of_1e308_are_drawn_at_the_map_edges_never_as_nan() -> None:
    # a fresh-user finding: maxx - minx overflowed to inf and the SVG held cx="nan"
    geoms = [shapely.Point(-1e308, -1e308), shapely.Point(1e308, 1e308), shapely.Point(0, 0)]
    contract = contract_of(clause("valid", "validity"))
    batch = batch_of(geoms, crs="EPSG:3857")
    page = render_batch_page(batch, evaluate(batch, [active(contract)], now=NOW), [contract])
    assert not re.search(r"\bnan\b", page)
    centres = [(float(x), float(y)) for x, y in re.findall(r'cx="([-\d.]+)" cy="([-\d.]+)"', page)]
    assert centres == [(20.0, 540.0), (540.0, 20.0), (280.0, 280.0)]
