"""Config-topic records (Avro ContractRecord bytes) applied to a registry.

The one place where the bytes of ``gis.contract.contracts`` meet the pure
:class:`~worker.core.lifecycle.registry.Registry`: a record that does not decode is an
``invalid_record`` rejection (never an exception), a null value is a tombstone.
"""

from __future__ import annotations

from worker.core.errors import ContractGateError
from worker.core.lifecycle.registry import ConfigEvent, Registry
from worker.io.codec import decode_contract_record

__all__ = ["apply_config_value"]


def apply_config_value(registry: Registry, key: str | None, value: bytes | None) -> ConfigEvent:
    """Decode one config-topic value and apply it (``value`` None is a tombstone).

    Returns the registry's :class:`~worker.core.lifecycle.registry.ConfigEvent`; an undecodable
    value
    gives ``outcome="rejected"``, ``reason="invalid_record"`` with the decoder's reason.
    """
    if value is None:
        return registry.apply(key, None)
    try:
        record = decode_contract_record(value)
    except ContractGateError as exc:
        return registry.reject(key, str(exc), "invalid_record")
    return registry.apply(key, record)
