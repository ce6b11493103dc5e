"""The replay ledger: admitted originals remembered, bounded, oldest forgotten first."""

from __future__ import annotations

import pytest

from worker.core.replays import ReplayLedger


def test_ledger_remembers_and_forgets_the_oldest_beyond_its_bound() -> None:
    ledger = ReplayLedger(max_entries=3)
    ledger.add(["b1", "b2"])
    assert "b1" in ledger and "b3" not in ledger
    ledger.add(["b3", "b1", "b4"])  # b1 admitted again: most recent now, b2 is the oldest
    assert len(ledger) == 3
    assert "b2" not in ledger and {"b1", "b3", "b4"} == {
        b for b in ("b1", "b3", "b4") if b in ledger
    }
    with pytest.raises(ValueError, match="max_entries must be at least 1"):
        ReplayLedger(0)
