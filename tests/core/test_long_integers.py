"""Integer literals longer than Python converts, in contracts (stop 39, a new user's attempts).

Python refuses to read an integer of more than 4,300 digits (CVE-2020-10735); a contract
holding one was refused with Python's own hint, "use sys.set_int_max_str_digits() to
increase the limit", which is advice to the gate's developers, not to a contract's author.
The same was true of a GeoJSON batch (``tests/io/test_huge_integers.py``). Every place a
number appears in a contract, from a file or from the config topic, now says what is wrong.
"""

from __future__ import annotations

import pytest

from tests.catalogue import NOW
from worker.core.contracts.parse import parse_contract
from worker.core.errors import ContractError
from worker.core.lifecycle.registry import RecordingRegistry
from worker.io.codec import encode_contract_record
from worker.io.config_records import apply_config_value

BIG = "9" * 5000
BASE = "layer: t\nversion: v1\ncadence: P1D\nobjective: 0.9\nowner: me\nchangelog: t\nclauses:\n"
COUNT = "  - {name: n, kind: feature_count, min: 1}\n"
DOCS = {
    "objective": BASE.replace("objective: 0.9", f"objective: {BIG}") + COUNT,
    "feature_count max": BASE + f"  - {{name: n, kind: feature_count, min: 1, max: {BIG}}}\n",
    "feature_count min, negative": BASE + f"  - {{name: n, kind: feature_count, min: -{BIG}}}\n",
    "extent region": BASE + f"  - {{name: e, kind: extent, region: [0, 0, {BIG}, 1]}}\n",
    "coverage expected_features": (
        BASE + f"  - {{name: c, kind: coverage, min_fraction: 1.0, expected_features: {BIG}}}\n"
    ),
}


@pytest.mark.parametrize("where", list(DOCS))
def test_a_contract_file_with_one_is_refused_in_words(where: str) -> None:
    with pytest.raises(ContractError) as info:
        parse_contract(DOCS[where])
    message = str(info.value)
    assert "an integer of more than 4300 digits" in message
    assert "set_int_max_str_digits" not in message


@pytest.mark.parametrize("where", list(DOCS))
def test_a_config_record_with_one_is_rejected_in_words(where: str) -> None:
    record = {
        "layer": "t", "version": "v1.0", "document": DOCS[where], "digest": "0" * 64,
        "mode": "enforcing", "state": "active", "published_at": NOW, "published_by": "me",
        "changelog": "t",
    }  # fmt: skip
    event = apply_config_value(
        RecordingRegistry(), "t/v1.0/" + "0" * 64, encode_contract_record(record)
    )
    assert event.outcome == "rejected" and event.reason == "invalid_contract"
    assert "an integer of more than 4300 digits" in event.message
    assert "set_int_max_str_digits" not in event.message
