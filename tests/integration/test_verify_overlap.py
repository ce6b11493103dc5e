"""``contract-gate verify overlap`` against a real broker and a real worker (issue 5).

The situation of the seed: admin_boundaries v1.0 enforcing, an identical twin v1.1 and a
stricter v1.2 observing; real batches routed by a worker; a consumer group that commits
offsets on the admitted topic without declaring, and one that declared.
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from tests.integration.test_consumers import _commit_offset
from tests.integration.test_lifecycle import V1, V1_1, variant, wait_evidence, world
from worker.cli.main import main
from worker.cli.scenario import data_file
from worker.control.consumers import declare
from worker.control.publish import publish_batch, publish_contract
from worker.kafka.settings import Settings

pytestmark = pytest.mark.integration


def verify(settings: Settings, capsys: Any, layer: str, *extra: str) -> tuple[int, str]:
    argv = ["verify", "overlap", layer, *extra, "--bootstrap-servers", settings.bootstrap_servers]
    argv += ["--group-id", settings.group_id]
    argv += [f"--{name}-topic={topic}" for name, topic in settings.topics.__dict__.items()]
    capsys.readouterr()
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out + err


def test_verify_overlap_on_a_live_cluster(
    settings: Settings, start_worker: Any, tmp_path: Path, capsys: Any
) -> None:
    now = datetime.now(timezone.utc)
    publish_contract(settings, V1, mode="enforcing")
    twin = variant(V1, tmp_path, "v1.1", ("First contract", "Identical twin of the first contract"))
    assert "change class minor" in publish_contract(settings, twin, mode="observing").message
    stricter = variant(V1_1, tmp_path, "v1.2")
    assert (
        "change class tightening" in publish_contract(settings, stricter, mode="observing").message
    )
    publish_contract(settings, data_file("contracts/nyc_boroughs.v1.yaml"), mode="enforcing")

    code, out = verify(settings, capsys, "roads")
    assert code == 2 and "layer 'roads' has no active contract version" in out

    # no batch yet: the twin and the stricter version have shown nothing, which is no
    # failure, and nothing was verified: INCONCLUSIVE, its own exit code 3
    code, out = verify(settings, capsys, "admin_boundaries")
    assert code == 3, out
    assert out.strip().endswith(
        "result: INCONCLUSIVE (nothing verified: no applicable check; 2 inconclusive, "
        "2 not applicable)"
    )
    assert (
        "INCONCLUSIVE  identical twin: v1.1 (observing) twin of v1.0 (enforcing): "
        "not applicable yet: no batch"
    ) in out
    assert (
        "INCONCLUSIVE  stricter observing: v1.2 (observing), a tightening of v1.0 (enforcing)"
    ) in out
    assert "N/A   undeclared reader" in out

    silent = f"{settings.group_id}-downstream-silent"
    declared = f"{settings.group_id}-downstream-declared"
    _commit_offset(settings, silent)
    _commit_offset(settings, declared)
    declare(settings, declared, "admin_boundaries", "v1")

    worker = start_worker(settings)
    for b in [
        world("w1", now),
        world("w2", now, without_seven_seas=True),
        world("w3", now),
        world("w4-stale", now - timedelta(days=2)),  # v1.0 and its twin break freshness
    ]:
        publish_batch(settings, b)
    for version in ("v1.0", "v1.1", "v1.2"):
        assert wait_evidence(settings, version, 4, now).evaluated == 4
    assert worker.pipeline.batches_committed == 4

    code, out = verify(settings, capsys, "admin_boundaries")
    assert code == 0, out
    lines = out.splitlines()
    assert lines[0] == (
        "verify overlap admin_boundaries: active v1.0 enforcing, v1.1 observing, v1.2 observing"
    )
    assert lines[1] == (
        "  PASS  identical twin: v1.1 (observing) twin of v1.0 (enforcing): 4 batch(es) "
        "evaluated by both; attainment 0.750 (3/4) vs 0.750 (3/4); 0 judged differently"
    )
    assert lines[2] == (
        "  PASS  stricter observing: v1.2 (observing), a tightening of v1.0 (enforcing): "
        "4 batch(es) evaluated, 3 breach(es), 2 of them admitted, 1 quarantined by an "
        "enforcing version; 0 quarantine(s) attributable to v1.2"
    )
    assert lines[3] == (
        f"  PASS  undeclared reader: groups with offsets on the admitted topic: "
        f"1 undeclared group(s) counted "
        f"against v1.0, the oldest active version: {silent}"
    )
    assert lines[4] == (
        "  N/A   major overlap: no major overlap: one major version is active (an overlap "
        "needs two)"
    )
    assert lines[5] == "result: PASS (3 of 3 applicable check(s) pass)"

    code, out = verify(settings, capsys, "admin_boundaries", "--format", "json")
    assert code == 0, out
    doc = json.loads(out)
    checks = {c["check"]: c for c in doc["checks"]}
    assert checks["stricter_observing"]["figures"]["admitted_with_breach"] == ["w1", "w3"]
    assert checks["undeclared_reader"]["figures"]["groups"] == {silent: "v1.0"}
    assert doc["result"] == "pass" and doc["passed"] == 3

    # a layer without twin or stricter version: both not applicable, with the reason;
    # neither group declared for it, so both count against its oldest version
    code, out = verify(settings, capsys, "nyc_boroughs")
    assert code == 0, out
    assert "N/A   identical twin: no twin: no two active versions have the same clauses" in out
    assert "N/A   stricter observing: no stricter observing version" in out
    both = f"{declared}, {silent}"
    assert f"2 undeclared group(s) counted against v1.0, the oldest active version: {both}" in out
    assert out.strip().endswith("result: PASS (1 of 1 applicable check(s) pass)")
