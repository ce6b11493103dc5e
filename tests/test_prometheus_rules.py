"""deploy/prometheus: the retirement-gate rules pass `promtool check rules` and their tests."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

RULES = Path(__file__).resolve().parent.parent / "deploy" / "prometheus"
PROMTOOL = shutil.which("promtool")


def test_rules_define_the_gate_and_the_straggler_alert() -> None:
    doc = yaml.safe_load((RULES / "contract-gate-rules.yml").read_text())
    rules = [r for g in doc["groups"] for r in g["rules"]]
    assert {r.get("record") or r.get("alert") for r in rules} == {
        "gis:consumers_on_major:count",
        "gis:contract_retirement_gate:consumers",
        "ContractMigrationStragglers",
        "ContractHistoryBroken",
        "ContractGateErrors",
    }
    gate = next(r for r in rules if r.get("alert") == "ContractGateErrors")
    assert "gis_contract_gate_errors_total" in gate["expr"]
    broken = next(r for r in rules if r.get("alert") == "ContractHistoryBroken")
    assert broken["expr"].strip() == "max by (layer) (gis_contract_config_history_broken) > 0"
    alert = next(r for r in rules if r.get("alert"))
    assert alert["for"] == "12h"  # two cadence cycles of PT6H


@pytest.mark.skipif(PROMTOOL is None, reason="promtool not installed (apt-get install prometheus)")
@pytest.mark.parametrize(
    "args",
    [
        ["check", "rules", "contract-gate-rules.yml"],
        ["test", "rules", "contract-gate-rules.test.yml"],
    ],
)
def test_promtool(args: list[str]) -> None:
    assert PROMTOOL is not None
    done = subprocess.run(
        [PROMTOOL, *args], cwd=RULES, capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr
