"""Evaluation records of one layer, read from ``gis.contract.evaluations`` (the evidence store).

:func:`read_evaluations` scans the topic with a group-less reader to partition EOF (never a
ListOffsets figure alone, docs/design.md section 8) and keeps the records of one layer.
"""

from __future__ import annotations

from typing import Any

from worker.core.errors import ContractGateError
from worker.io.codec import decode_evaluation
from worker.kafka.admin import read_topic
from worker.kafka.schema_registry import plain_value
from worker.kafka.settings import Settings

__all__ = ["read_evaluations", "read_recent_evaluations"]


def read_evaluations(
    settings: Settings, layer: str, timeout_s: float = 60.0
) -> list[dict[str, Any]]:
    """Every evaluation record of ``layer`` on the evaluations topic, read to partition EOF.

    Raises
    ------
    BrokerError
        The topic is missing or EOF is not reached on every partition within ``timeout_s``.
    """
    out: list[dict[str, Any]] = []
    for msg in read_topic(settings, settings.topics.evaluations, timeout_s=timeout_s):
        key = msg.key()
        if key is not None and key.decode("utf-8", "replace") != layer:
            continue
        try:
            record = decode_evaluation(plain_value(settings, msg.topic(), msg.value()))
        except ContractGateError:
            continue  # not ours to judge here; the evidence counts decodable records
        if record["layer"] == layer:
            out.append(record)
    return out


def read_recent_evaluations(
    settings: Settings, tail_per_partition: int, timeout_s: float = 30.0
) -> list[dict[str, Any]]:
    """The last ``tail_per_partition`` evaluation records of each partition, decoded.

    For rebuilding SLO windows at start: the window holds at most a bounded number of
    verdicts per series, so the tail is enough and the read stays bounded however long
    the topic is. Undecodable records are skipped.

    Raises
    ------
    BrokerError
        The topic is missing or EOF is not reached within ``timeout_s``.
    """
    out: list[dict[str, Any]] = []
    for msg in read_topic(
        settings, settings.topics.evaluations, tail=tail_per_partition, timeout_s=timeout_s
    ):
        try:
            out.append(decode_evaluation(plain_value(settings, msg.topic(), msg.value())))
        except ContractGateError:
            continue
    return out
