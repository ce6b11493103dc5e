"""Retirement of a major contract version: only when no consumer reads against it.

DESIGN.md section 5: ``contract retire LAYER vN`` needs declared + unattributed consumers
on ``vN`` at zero; otherwise it is refused, naming the stragglers. There is no date-based
retirement. Retiring writes each active revision's ContractRecord again with state
``retired``: the record stays in the config topic's history, and every worker stops
evaluating the version as soon as it reads the record.
"""

from __future__ import annotations

from datetime import timedelta

from worker.codec import encode_contract_record
from worker.consumers import DEFAULT_STALE_AFTER, migration_view
from worker.errors import PolicyError
from worker.kafka import Settings, produce_one
from worker.migration import major_label, parse_version
from worker.publish import contract_record, read_registry

__all__ = ["retire"]


def retire(
    settings: Settings,
    layer: str,
    version: str,
    *,
    retired_by: str | None = None,
    stale_after: timedelta = DEFAULT_STALE_AFTER,
) -> str:
    """Retire every active revision of the major of ``version`` (``v1`` or ``v1.1``: major 1).

    Returns a one-line summary.

    Raises
    ------
    PolicyError
        The major is not active, it is the layer's only active major, or consumers
        (declared or unattributed) still read against it; the message names them.
    KafkaError
        The config topic, the consumers topic or the admin API cannot be read, or the
        record is not delivered.
    """
    major = parse_version(version)[0]
    label = major_label(major)
    registry = read_registry(settings)
    active = registry.active(layer)
    targets = [v for v in active if v.contract.major == major]
    if not targets:
        listed = ", ".join(v.contract.version for v in active) or "none"
        raise PolicyError(f"{layer} {label} is not active (active versions: {listed})")
    if len(targets) == len(active):
        raise PolicyError(
            f"{layer} {label} is the only active major of {layer}; publish its successor "
            "and migrate the consumers before retiring it"
        )
    view = migration_view(settings, registry=registry, stale_after=stale_after)
    row = view.count(layer, label)
    if row is not None and row.count:
        names = ", ".join(f"{r.name} ({r.kind})" for r in row.stragglers)
        raise PolicyError(
            f"retirement of {layer} {label} refused: {row.count} consumer(s) still read "
            f"against it: {names}. Each must move to a newer version and declare it "
            "(contract-gate consumers declare CONSUMER LAYER VERSION); there is no "
            "date-based retirement"
        )
    retired = []
    for v in targets:
        record = contract_record(v.contract, mode=v.mode, state="retired", published_by=retired_by)
        value = encode_contract_record(record)
        produce_one(settings, settings.topics.contracts, v.contract.key, value)
        retired.append(v.contract.version)
    stale = ""
    if row is not None and row.stale:
        stale = f" ({len(row.stale)} stale declaration(s) shown in consumers status)"
    return f"retired {layer} {label} ({', '.join(retired)}): no consumer reads against it{stale}"
