"""Publishing to the gate: contract versions to the config topic, batches to the input topic."""

from __future__ import annotations

import getpass
from datetime import datetime, timezone
from pathlib import Path

from worker.codec import encode_batch, encode_contract_record
from worker.config_topic import ConfigFollower
from worker.contracts import load_contract
from worker.errors import PolicyError
from worker.features import read_batch_file
from worker.kafka import Settings, produce_one
from worker.model import AxisOrder, Batch, Contract
from worker.registry import Registry

__all__ = [
    "contract_record",
    "publish_batch",
    "publish_batch_file",
    "publish_contract",
    "read_registry",
]


def read_registry(settings: Settings, timeout_s: float = 30.0) -> Registry:
    """The config topic read to its end into a fresh :class:`Registry`."""
    registry = Registry()
    follower = ConfigFollower(settings, registry)
    try:
        follower.bootstrap(timeout_s)
    finally:
        follower.close()
    return registry


def contract_record(
    contract: Contract,
    *,
    mode: str,
    state: str = "active",
    change_class: str | None = None,
    published_by: str | None = None,
    published_at: datetime | None = None,
) -> dict[str, object]:
    """The ContractRecord (as a dict for :func:`worker.codec.encode_contract_record`)."""
    return {
        "layer": contract.layer,
        "version": contract.version,
        "document": contract.text,
        "digest": contract.digest,
        "mode": mode,
        "state": state,
        "change_class": change_class,
        "differences": [],
        "published_at": published_at or datetime.now(timezone.utc),
        "published_by": published_by or getpass.getuser(),
        "changelog": contract.changelog,
    }


def publish_contract(
    settings: Settings,
    path: str | Path,
    *,
    mode: str = "enforcing",
    published_by: str | None = None,
) -> str:
    """Publish a contract file as a new version; returns a one-line summary.

    A version already published with the same document is a no-op; with a different
    document it is refused (DESIGN.md section 5: published versions are immutable).

    Raises
    ------
    ContractError
        The file is not a valid contract.
    PolicyError
        Edit in place of a published version.
    KafkaError
        The config topic cannot be read or written.
    """
    contract = load_contract(path)
    known = read_registry(settings).get(contract.key)
    if known is not None:
        if known.contract.digest == contract.digest:
            return f"{contract.key} is already published with this document (no-op)"
        raise PolicyError(
            f"{contract.key} is already published with another document (digest "
            f"{known.contract.digest[:12]}, this file {contract.digest[:12]}): edit in place "
            "refused; give the change a new version number"
        )
    value = encode_contract_record(contract_record(contract, mode=mode, published_by=published_by))
    partition, offset = produce_one(settings, settings.topics.contracts, contract.key, value)
    return (
        f"published {contract.key} ({mode}) digest {contract.digest[:12]} "
        f"at {settings.topics.contracts}[{partition}]@{offset}"
    )


def publish_batch(
    settings: Settings, batch: Batch, *, payload_uri: str | None = None
) -> tuple[int, int]:
    """Publish one batch-arrival event keyed by layer; returns ``(partition, offset)``."""
    value = encode_batch(batch, inline=payload_uri is None, payload_uri=payload_uri)
    return produce_one(settings, settings.topics.batches, batch.layer, value)


def publish_batch_file(
    settings: Settings,
    path: str | Path,
    *,
    layer: str,
    crs: str | None = None,
    axis_order: AxisOrder | None = None,
    data_time: datetime | None = None,
    batch_id: str | None = None,
    producer: str = "contract-gate-cli",
    by_reference: bool = False,
) -> str:
    """Read a GeoJSON/GeoParquet file and publish it as a batch-arrival event."""
    batch = read_batch_file(
        path,
        layer=layer,
        crs=crs,
        axis_order=axis_order,
        data_time=data_time,
        batch_id=batch_id,
        producer=producer,
    )
    uri = Path(path).resolve().as_uri() if by_reference else None
    partition, offset = publish_batch(settings, batch, payload_uri=uri)
    return (
        f"published batch {batch.batch_id} ({len(batch.geometries_wkb)} features, layer {layer}) "
        f"to {settings.topics.batches}[{partition}]@{offset}"
    )
