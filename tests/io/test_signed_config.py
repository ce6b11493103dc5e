"""Signed config records (issue 30): with a verify key an unsigned or wrongly signed record
is refused (``unsigned_record``, ``bad_signature``) and breaks its layer's history, live
and after compaction; without one, signatures are ignored as before."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from tests.core.test_history import LAYER, V1, Log, atlantis, compact, demo, write
from tests.io.test_signing import ed25519_pair, hmac_file
from worker.core.lifecycle.registry import Registry, config_key
from worker.io.config_records import apply_config_value
from worker.io.signing import RecordSigning, SigningKey, VerifyKey, load_signing_key
from worker.io.signing import load_verify_key as verify_key_of
from worker.kafka.memory import MemoryMessage
from worker.kafka.settings import Settings, Topics

TOPIC = Topics().contracts
Signed = list[tuple[str, bytes | None, list[tuple[str, bytes | None]]]]


def sign(log: Log, key: SigningKey | None) -> Signed:
    """The records with the header `contract publish --signing-key` writes (None: unsigned)."""
    return [(k, v, [key.header(TOPIC, k, v)] if key else []) for k, v in log]


def registry(records: Signed, verifier: VerifyKey | None) -> Registry:
    reg = Registry()
    for key, value, headers in records:
        apply_config_value(reg, key, value, verifier=verifier, topic=TOPIC, headers=headers)
    return reg


def keys(tmp_path: Path, kind: str) -> tuple[SigningKey, SigningKey, VerifyKey]:
    """(A's signing key, B's signing key, A's verify key)."""
    if kind == "hmac":
        a = hmac_file(tmp_path)
        b = hmac_file(tmp_path, b"b" * 40, "b.secret")
        return load_signing_key(a), load_signing_key(b), verify_key_of(a)
    (a_private, a_public), (b_private, _) = (
        ed25519_pair(tmp_path, "a"),
        ed25519_pair(tmp_path, "b"),
    )
    return load_signing_key(a_private), load_signing_key(b_private), verify_key_of(a_public)


@pytest.mark.parametrize("kind", ["ed25519", "hmac"])
def test_a_signed_history_behaves_as_an_unsigned_one(tmp_path: Path, kind: str) -> None:
    a, _, verifier = keys(tmp_path, kind)
    for records in (sign(demo(), a), sign(compact(demo()), a)):
        reg = registry(records, verifier)
        assert atlantis(reg) == ("quarantined", "contract_break")
        assert reg.breaks(LAYER) == ()


@pytest.mark.parametrize("kind", ["ed25519", "hmac"])
@pytest.mark.parametrize("forgery", ["key B", "unsigned"])
def test_a_forged_record_under_the_enforcing_key_breaks_the_layer(
    tmp_path: Path, kind: str, forgery: str
) -> None:
    a, b, verifier = keys(tmp_path, kind)
    signed = sign(demo(), a)
    forged: Log = []
    write(forged, V1, "observing", document=True)  # v1.0 demoted: Atlantis would pass
    key, value = forged[0]
    assert key == config_key(V1)  # the enforcing version's document key
    signed.append((key, value, [b.header(TOPIC, key, value)] if forgery == "key B" else []))
    reason = "bad_signature" if forgery == "key B" else "unsigned_record"
    live = registry(signed, verifier)
    last = {k: i for i, (k, _, _) in enumerate(signed)}
    compacted = [r for i, r in enumerate(signed) if last[r[0]] == i]
    for reg in (live, registry(compacted, verifier)):
        assert atlantis(reg) == ("quarantined", "contract_history_broken")
        assert reg.breaks(LAYER)[0] == (
            f"{key}: a refused record ({reason}: config record admin_boundaries/v1.0: "
            + (
                f"{verifier.algorithm} signature does not match this topic, key and value "
                f"under the key of {verifier.source} (signed by another key, or altered))"
                if forgery == "key B"
                else f"no contract-gate-signature header: this worker accepts only config "
                f"records signed with the {verifier.algorithm} key of {verifier.source})"
            )
        )
        assert reg.breaks(LAYER)[1].endswith(f"builds on {key}, which is not on the topic")
    # without a verify key signatures are not looked at: the forgery is the truth
    unverified = registry(signed, None)
    assert [(v.contract.version, v.mode) for v in unverified.active(LAYER)] == [
        ("v1.0", "observing"),
        ("v1.1", "observing"),
    ]


def test_an_unsigned_tombstone_is_refused_and_a_replayed_signature_too(tmp_path: Path) -> None:
    a, _, verifier = keys(tmp_path, "ed25519")
    reg = registry(sign(demo(), a), verifier)
    event = apply_config_value(reg, config_key(V1), None, verifier=verifier, topic=TOPIC)
    assert (event.outcome, event.reason) == ("rejected", "unsigned_record")
    # v1.1's genuine signed record replayed under v1.0's key: the key is signed too
    log = demo()
    (k0, _), (k1, v1_1) = log[0], log[1]
    replayed = apply_config_value(
        registry(sign(log, a), verifier),
        k0,
        v1_1,
        verifier=verifier,
        topic=TOPIC,
        headers=[a.header(TOPIC, k1, v1_1)],
    )
    assert (replayed.outcome, replayed.reason) == ("rejected", "bad_signature")


def test_the_worker_logs_and_counts_a_bad_signature(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader

    from worker.gate.pipeline import Pipeline
    from worker.ops.metrics import GateMetrics

    a, b, verifier = keys(tmp_path, "ed25519")
    reader = InMemoryMetricReader()
    metrics = GateMetrics(MeterProvider(metric_readers=[reader]).get_meter("test"))
    pipeline = Pipeline(Settings(signing=RecordSigning(verifier=verifier)), metrics=metrics)
    for key, value, headers in sign(demo(), a):
        pipeline.config.apply(MemoryMessage.of(TOPIC, key=key, value=value, headers=headers))
    key, value = demo()[0]
    with caplog.at_level(logging.WARNING, logger="worker.kafka.config_topic"):
        event = pipeline.config.apply(
            MemoryMessage.of(TOPIC, key=key, value=value, headers=[b.header(TOPIC, key, value)])
        )
    assert (event.outcome, event.reason) == ("rejected", "bad_signature")
    # WARNING and above: an earlier test may have left the worker's loggers at INFO
    (line,) = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert line.startswith(
        f"config record {key} rejected (bad_signature): config record admin_boundaries/v1.0: "
        "ed25519 signature does not match this topic, key and value under the key of "
    )
    assert line.endswith("layer admin_boundaries fails closed (contract_history_broken)")
    counted = {}
    data = reader.get_metrics_data()
    for rm in data.resource_metrics if data else []:
        for sm in rm.scope_metrics:
            for m in sm.metrics:
                counted[m.name] = [(dict(p.attributes), p.value) for p in m.data.data_points]
    assert counted["gis.contract.config_rejections_total"] == [
        ({"layer": "admin_boundaries", "reason": "bad_signature"}, 1)
    ]


def test_without_a_verify_key_the_follower_ignores_headers() -> None:
    from worker.gate.pipeline import Pipeline

    pipeline = Pipeline(Settings())
    for key, value in demo():
        bogus = [("contract-gate-signature", b"ed25519:AAAA")]
        assert pipeline.config.apply(MemoryMessage.of(TOPIC, key=key, value=value, headers=bogus))
    assert atlantis(pipeline.registry) == ("quarantined", "contract_break")
    assert pipeline.registry.breaks(LAYER) == ()
