"""Write one record to the config topic, signed when the settings hold a signing key.

Every writer of ``gis.contracts`` (``contract publish``, ``promote``, ``retire``, the
restore of a broken history) goes through :func:`produce_config_record`, so none of them
can forget the signature a worker with ``--verify-key`` requires (issue 30).
"""

from __future__ import annotations

from worker.kafka.admin import produce_one
from worker.kafka.settings import Settings

__all__ = ["produce_config_record"]


def produce_config_record(settings: Settings, key: str, value: bytes | None) -> tuple[int, int]:
    """Produce ``key``/``value`` to ``settings.topics.contracts``; returns
    ``(partition, offset)``.

    With ``settings.signing.signer`` (``--signing-key`` / ``CONTRACT_GATE_SIGNING_KEY_FILE``)
    the record carries the ``contract-gate-signature`` header over the topic, the key's
    UTF-8 bytes and the value (:func:`worker.io.signing.signed_bytes`); without one it is
    written unsigned, as before.

    Raises
    ------
    BrokerError
        As :func:`worker.kafka.admin.produce_one`.
    """
    topic, signer = settings.topics.contracts, settings.signing.signer
    headers: list[tuple[str, str | bytes | None]] | None = None
    if signer is not None:
        headers = [signer.header(topic, key.encode("utf-8"), value)]
    return produce_one(settings, topic, key, value, headers=headers)
