"""The demo's per-batch table names the broken clause and what was measured on every row."""

from __future__ import annotations

import io

from worker.cli.demo import DemoResult, _print_tables
from worker.cli.scenario import DemoEvent


def test_admitted_row_names_the_observing_break_and_quarantined_row_the_geos_reason() -> None:
    real = DemoEvent("ab-real", "admin_boundaries", b"", "b-real", "")
    bowtie = DemoEvent("ab-self-intersecting", "admin_boundaries", b"", "b-bow", "")
    result = DemoResult()
    result.decisions = {(0, 1): "admitted", (0, 2): "quarantined"}
    result.admitted_headers = {
        (0, 1): {"contract-versions-enforced": "v1.0", "contract-versions-observing": "v1.1=break"}
    }
    result.quarantine = {
        (0, 2): {
            "reasons": [
                {
                    "code": "contract_break",
                    "version": "v1.0",
                    "clause": "valid",
                    "kind": "validity",
                    "measured": {
                        "invalid": 1,
                        "invalid_fraction": 0.1,
                        "reasons": [{"index": 4, "reason": "Self-intersection[0 -17.15]"}],
                    },
                    "message": "1 of 39 geometries invalid",
                }
            ],
            "diagnoses": [],
        }
    }
    domain = {"unknown": ["Seven seas (open ocean)"], "unknown_count": 1, "null_count": 0}
    result.evaluations = [
        {
            "batch_id": "b-real",
            "layer": "admin_boundaries",
            "version": "v1.1",
            "mode": "observing",
            "passed": False,
            "clauses": [
                {"name": "continent", "kind": "domain", "result": "break", "measured": domain}
            ],
        }
    ]
    out = io.StringIO()
    _print_tables([(real, (0, 1)), (bowtie, (0, 2))], result, out)
    rows = out.getvalue().splitlines()
    real_row = next(r for r in rows if r.strip().startswith("ab-real"))
    assert real_row.endswith(
        "passed v1.0; v1.1 (observing) broke continent (unknown 'Seven seas (open ocean)')"
    )
    bow_row = next(r for r in rows if r.strip().startswith("ab-self-intersecting"))
    assert bow_row.endswith("v1.0 broke valid (1 invalid: Self-intersection[0 -17.15])")
