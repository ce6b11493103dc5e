"""Signed config records on a real broker (issue 30): contracts published signed with key
A, then a record under the enforcing version's document key forged with key B (or written
unsigned) that would demote v1.0 to observing. A fresh worker given A's public key refuses
it (``bad_signature`` / ``unsigned_record``), so the layer fails closed and the Atlantis
batch of the demo is quarantined (``contract_history_broken``), never admitted (compaction
is in tests/io/test_signed_config.py: a copy to a topic of another name cannot be used here,
the signature binds the topic's name). A worker without a verify key takes the forgery as
truth (the reason to set one, and the Kafka ACLs of docs/operations-topics.md)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from tests.integration.test_history_compaction import (
    ATLANTIS,
    LAYER,
    NOW,
    V1,
    V1_FILE,
    V11_FILE,
    _decision,
)
from tests.io.test_signing import ed25519_pair
from worker.cli.scenario import data_file
from worker.control.lifecycle import write_records
from worker.control.publish import publish_contract
from worker.core.lifecycle.policy import Published
from worker.core.lifecycle.registry import Registry, config_key
from worker.io.codec import decode_event, decode_quarantine
from worker.io.signing import RecordSigning, load_signing_key, load_verify_key
from worker.kafka.admin import produce_one, read_topic
from worker.kafka.config_topic import read_config
from worker.kafka.settings import Settings


def _forge(settings: Settings, signing: RecordSigning) -> str:
    """v1.0's document record again, demoted to observing, written with ``signing``."""
    head = read_config(settings, Registry()).head(LAYER)
    forged = Published(V1, "observing", "active", None, (), NOW, "mallory")
    write_records(
        settings.with_(signing=signing), (forged,), head=head, documents=frozenset({V1.key})
    )
    return config_key(V1)


def _quarantined(settings: Settings, batch_id: str, timeout_s: float = 30) -> dict[str, Any]:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        for msg in read_topic(settings, settings.topics.quarantine, timeout_s=10):
            rec = decode_quarantine(msg.value())
            if rec["batch_id"] == batch_id:
                return rec
        time.sleep(0.5)
    raise AssertionError(f"batch {batch_id} not quarantined within {timeout_s:g} s")


@pytest.mark.parametrize("forgery", ["signed with key B", "unsigned"])
def test_a_worker_with_the_public_key_fails_closed_on_a_forged_record(
    settings: Settings, start_worker: Any, tmp_path: Path, forgery: str
) -> None:
    (a_private, a_public), (b_private, _) = ed25519_pair(tmp_path, "a"), ed25519_pair(tmp_path, "b")
    publisher = settings.with_(signing=RecordSigning(signer=load_signing_key(a_private)))
    publish_contract(publisher, V1_FILE, mode="enforcing")
    publish_contract(publisher, V11_FILE, mode="observing")
    publish_contract(publisher, data_file("contracts/nyc_boroughs.v1.yaml"), mode="enforcing")
    verifying = RecordSigning(verifier=load_verify_key(a_public))
    assert read_config(settings.with_(signing=verifying), Registry()).breaks(LAYER) == ()

    mallory = RecordSigning(signer=load_signing_key(b_private) if "B" in forgery else None)
    key = _forge(settings, mallory)
    reason = "bad_signature" if "B" in forgery else "unsigned_record"

    # without a verify key the forgery is the truth: v1.0 observing, Atlantis would pass
    trusting = read_config(settings, Registry())
    assert [(v.contract.version, v.mode) for v in trusting.active(LAYER)] == [
        ("v1.0", "observing"),
        ("v1.1", "observing"),
    ]
    reg = read_config(settings.with_(signing=verifying), Registry())
    assert _decision(reg) == ("quarantined", "contract_history_broken")
    assert reg.breaks(LAYER)[0].startswith(f"{key}: a refused record ({reason}: ")
    assert [v.contract.version for v in reg.active("nyc_boroughs")] == ["v1.0"]

    worker = start_worker(settings.with_(signing=verifying))
    assert worker.pipeline.registry.breaks(LAYER)[0].startswith(f"{key}: a refused record")
    produce_one(settings, settings.topics.batches, ATLANTIS.key, ATLANTIS.value)
    batch_id = decode_event(ATLANTIS.value)["batch_id"]
    rec = _quarantined(settings, batch_id)
    assert rec["reason_code"] == "contract_history_broken"
    admitted = [m for m in read_topic(settings, settings.topics.admitted, timeout_s=10)]
    assert admitted == []
