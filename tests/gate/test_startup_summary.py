"""The start-up line's summary of active versions names at most ten layers."""

from __future__ import annotations

from worker.cli.scenario import data_file
from worker.control.publish import contract_record
from worker.core.contracts.parse import parse_contract
from worker.core.lifecycle.registry import RecordingRegistry
from worker.gate.startup import SUMMARY_LAYERS, active_summary
from worker.io.codec import encode_contract_record
from worker.io.config_records import apply_config_value
from worker.io.contract_files import load_contract

V1 = load_contract(data_file("contracts/admin_boundaries.v1.yaml"))


def _registry(layers: int) -> RecordingRegistry:
    reg = RecordingRegistry()
    for i in range(layers):
        c = parse_contract(V1.text.replace("layer: admin_boundaries", f"layer: l{i:04d}"))
        value = encode_contract_record(contract_record(c, mode="enforcing"))
        assert apply_config_value(reg, f"{c.key}/{c.digest}", value).outcome == "added"
    return reg


def test_a_thousand_layers_make_one_short_line() -> None:
    summary = active_summary(_registry(1000))
    assert summary.count("/enforcing") == SUMMARY_LAYERS == 10
    assert summary.startswith("l0000: v1.0/enforcing, l0001: v1.0/enforcing")
    assert summary.endswith("l0009: v1.0/enforcing and 990 more layers")
    assert len(summary) < 300


def test_few_layers_are_all_named_and_none_is_said() -> None:
    assert active_summary(_registry(2)) == "l0000: v1.0/enforcing, l0001: v1.0/enforcing"
    assert active_summary(RecordingRegistry()) == "none"
