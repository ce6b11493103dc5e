"""Where the Confluent Schema Registry is and how to reach it, from the environment.

:class:`SchemaRegistrySettings` is :attr:`worker.kafka.settings.Settings.schema_registry`;
:func:`registry_settings_from_env` reads ``CONTRACT_GATE_SCHEMA_REGISTRY_*``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from worker.core.errors import ContractGateError

__all__ = ["SchemaRegistrySettings", "registry_settings_from_env"]


@dataclass(frozen=True)
class SchemaRegistrySettings:
    """Where the Confluent Schema Registry is and how to reach it (None in
    :attr:`Settings.schema_registry`: plain Avro, no framing).

    ``user_info`` (``user:password``, basic auth) is a secret: never printed, not in repr.
    Lookups are bounded: each HTTP request by ``timeout_s``, retried at most
    ``max_retries`` times (so a lookup against a dead registry ends within about
    ``(1 + max_retries) * timeout_s`` plus a second of backoff).
    """

    url: str
    user_info: str | None = field(default=None, repr=False)
    timeout_s: float = 5.0
    max_retries: int = 1

    def client_config(self) -> dict[str, Any]:
        """The configuration of ``confluent_kafka.schema_registry.SchemaRegistryClient``."""
        conf: dict[str, Any] = {
            "url": self.url,
            "timeout": self.timeout_s,
            "max.retries": self.max_retries,
            "retries.wait.ms": 200,
            "retries.max.wait.ms": 1000,
        }
        if self.user_info:
            conf["basic.auth.user.info"] = self.user_info
        return conf

    def describe(self) -> str:
        """The URL without any ``user:password@`` part, and whether basic auth is set."""
        from urllib.parse import urlsplit

        parts = urlsplit(self.url.split(",")[0].strip())
        host = parts.hostname or ""
        shown = f"{parts.scheme}://{host}" + (f":{parts.port}" if parts.port else "") + parts.path
        auth = self.user_info or "@" in parts.netloc
        return f"schema-registry={shown}" + (" auth=***" if auth else "")


def registry_settings_from_env(url: str, env: Mapping[str, str]) -> SchemaRegistrySettings:
    """Schema Registry settings of ``url`` with ``CONTRACT_GATE_SCHEMA_REGISTRY_*``.

    Parameters
    ----------
    url : str
        ``http://``, ``https://`` or ``mock://`` URL of the registry.
    env : Mapping[str, str]
        The environment: ``..._TIMEOUT_S`` (seconds, > 0, default 5) and
        ``..._BASIC_AUTH_USER_INFO`` (``user:password``).

    Returns
    -------
    SchemaRegistrySettings

    Raises
    ------
    ContractGateError
        A timeout that is not a number > 0, another URL scheme, user info without ``:``.
    """
    name = "CONTRACT_GATE_SCHEMA_REGISTRY_TIMEOUT_S"
    try:
        timeout = float(env.get(name) or 5.0)
    except ValueError:
        timeout = -1.0
    if not timeout > 0:
        raise ContractGateError(f"{name}={env.get(name)!r} is not a number of seconds > 0")
    if not url.startswith(("http://", "https://", "mock://")):
        raise ContractGateError(
            "--schema-registry-url / CONTRACT_GATE_SCHEMA_REGISTRY_URL must start with "
            "http:// or https:// (e.g. https://registry.example:8081)"
        )
    user_info = env.get("CONTRACT_GATE_SCHEMA_REGISTRY_BASIC_AUTH_USER_INFO") or None
    if user_info is not None and ":" not in user_info:
        raise ContractGateError(
            "CONTRACT_GATE_SCHEMA_REGISTRY_BASIC_AUTH_USER_INFO must be user:password"
        )
    return SchemaRegistrySettings(url=url, user_info=user_info, timeout_s=timeout)
