"""The exception tree of the contract gate.

Every error the package raises on purpose derives from :class:`ContractGateError`;
errors of foreign libraries (confluent-kafka, fastavro, pyproj, pyarrow, YAML) are
translated at the module that calls them, so callers catch one root::

    ContractGateError
    ├── ContractError            a contract document is unreadable or invalid
    ├── BatchError               a batch (event, file, payload) cannot be read
    │   ├── DecodeError          bytes are not a valid Avro record of the expected schema
    │   └── PayloadError         a payload_uri / batch file cannot be loaded
    │       ├── PayloadNotAllowed    outside the payload roots, not a regular file
    │       ├── PayloadUnavailable   missing, unreachable, access denied
    │       ├── PayloadCorrupt       truncated, wrong magic bytes, not parseable
    │       └── PayloadTooLarge      above the size limit of its format
    ├── CrsError                 a CRS string cannot be resolved by pyproj
    ├── PolicyError              a lifecycle rule refuses the operation (publish, promote, retire)
    ├── VersionMismatchError     an admitted record was not admitted under the reader's version
    ├── SigningKeyError          a config-record signing or verify key file is unusable
    └── BrokerError              the broker refused or failed an operation
        ├── BrokerUnavailable    no broker could be reached or started
        ├── BrokerConfigError    a client setting was refused (unknown property, bad value)
        ├── BrokerTimeout        an operation did not complete within its timeout
        ├── InstanceFenced       another instance took over this transactional or instance id
        └── SchemaRegistryFailure  the Schema Registry refused a request or is unreachable

:class:`BrokerError` was called ``KafkaError`` (a name that shadowed
``confluent_kafka.KafkaError``); the old name still resolves, with a
:class:`DeprecationWarning`, for one release. :func:`worker.kafka.clients.map_kafka_errors`
translates confluent-kafka's exceptions into this branch.
"""

from __future__ import annotations

import warnings

__all__ = [
    "BatchError",
    "BrokerConfigError",
    "BrokerError",
    "BrokerTimeout",
    "BrokerUnavailable",
    "ContractError",
    "ContractGateError",
    "CrsError",
    "DecodeError",
    "InstanceFenced",
    "PayloadCorrupt",
    "PayloadError",
    "PayloadNotAllowed",
    "PayloadTooLarge",
    "PayloadUnavailable",
    "PolicyError",
    "SchemaRegistryFailure",
    "SigningKeyError",
    "VersionMismatchError",
]


class ContractGateError(Exception):
    """Root of every error raised on purpose by this package.

    Parameters
    ----------
    *args
        The message (one line for an operator: what is wrong, where, the fix), as for
        :class:`Exception`.
    field : str, optional
        The field, flag or argument the error is about (``clauses[0].region``, ``--crs``),
        when the raiser knows it; the command line's ``--format json`` error document
        carries it (:func:`worker.cli.output.error_document`); the message text is the
        same with or without it.
    fix : str, optional
        What to do about it, when the raiser states it apart from the message.
    """

    def __init__(self, *args: object, field: str | None = None, fix: str | None = None) -> None:
        super().__init__(*args)
        self.field = field
        self.fix = fix


class ContractError(ContractGateError):
    """A contract document cannot be read or fails validation.

    The message names the file (when there is one), the field path and the fix.
    """


class BatchError(ContractGateError):
    """A batch cannot be read: bad event bytes, an unreadable file or payload."""


class DecodeError(BatchError):
    """Bytes are not a valid Avro record of the expected schema."""


class PayloadError(BatchError):
    """A batch's ``payload_uri`` (or a batch file given to the CLI) cannot be loaded.

    ``reason`` is the quarantine reason code the worker records (docs/design.md section 6):
    ``payload_error`` for content that is readable but not a usable batch (no geometry
    column, a bad CRS member); the subclasses name the other failures. Messages carry the
    URI and the reason, never the payload's content.
    """

    reason = "payload_error"


class PayloadNotAllowed(PayloadError):
    """The URI is outside every configured payload root (``--payload-root``), no root is
    configured, the scheme is not ``file``/``s3``, or the target is not a regular file."""

    reason = "payload_not_allowed"


class PayloadUnavailable(PayloadError):
    """The payload is missing, unreachable or access is denied.

    ``transient`` is True for failures worth retrying (network errors, throttling, I/O
    errors); a missing object or a denial is not retried.
    """

    reason = "payload_unavailable"

    def __init__(
        self,
        message: str,
        *,
        transient: bool = False,
        field: str | None = None,
        fix: str | None = None,
    ) -> None:
        super().__init__(message, field=field, fix=fix)
        self.transient = transient


class PayloadCorrupt(PayloadError):
    """The bytes are not a file of the claimed format: empty, truncated, wrong magic bytes,
    not parseable in the format its magic bytes or name claim."""

    reason = "payload_corrupt"


class PayloadTooLarge(PayloadError):
    """The payload is larger than the limit of its format (``--max-payload-bytes``); the
    message names both figures."""

    reason = "payload_too_large"


class CrsError(ContractGateError):
    """A CRS definition (EPSG code, WKT, ESRI WKT, PROJJSON) cannot be resolved."""


class PolicyError(ContractGateError):
    """A lifecycle rule of docs/design.md section 5 refuses the requested operation."""


class VersionMismatchError(ContractGateError):
    """A record of the admitted topic was not admitted under the version its reader expects."""


class SigningKeyError(ContractGateError):
    """A ``--signing-key`` / ``--verify-key`` file cannot be read or holds no usable key
    (the message names the flag, the file and the fix; never the key)."""


class BrokerError(ContractGateError):
    """The broker refused or failed an operation (translated from confluent-kafka).

    Parameters
    ----------
    message : str
        What failed, for an operator: the operation, the topic, librdkafka's reason.
    code : int, optional
        librdkafka's error code (``confluent_kafka.KafkaError.code()``: negative for
        errors of the client itself, positive for the broker's); None for errors that did
        not come from the client.
    detail : str, optional
        librdkafka's own text of the error, without any context of ours.
    fatal, retriable, txn_requires_abort : bool
        As librdkafka flags the error: the client is unusable; the operation may be
        retried; the open transaction must be aborted (and may then be retried).
    field, fix : str, optional
        As for :class:`ContractGateError`.
    """

    def __init__(
        self,
        message: str,
        *,
        code: int | None = None,
        detail: str | None = None,
        fatal: bool = False,
        retriable: bool = False,
        txn_requires_abort: bool = False,
        field: str | None = None,
        fix: str | None = None,
    ) -> None:
        super().__init__(message, field=field, fix=fix)
        self.code = code
        self.detail = detail
        self.fatal = fatal
        self.retriable = retriable
        self.txn_requires_abort = txn_requires_abort


class BrokerUnavailable(BrokerError):
    """No broker is reachable and none could be started."""


class BrokerConfigError(BrokerError):
    """A client setting was refused by librdkafka: an unknown property or a bad value
    (``--kafka-property``, ``CONTRACT_GATE_KAFKA_*``)."""


class BrokerTimeout(BrokerError):
    """A broker operation did not complete within its timeout."""


class InstanceFenced(BrokerError):
    """Another instance took over this worker's ``transactional.id`` or
    ``group.instance.id``: this one must stop (it is a zombie)."""


class SchemaRegistryFailure(BrokerError):
    """The Schema Registry refused a request (HTTP status in the message) or could not be
    reached; credentials of its URL are never part of the message."""


#: Old names kept for one release: name -> (new class, the new name).
_DEPRECATED = {"KafkaError": (BrokerError, "BrokerError")}


def __getattr__(name: str) -> type[BrokerError]:
    """Resolve a deprecated name (``KafkaError``) to its new class, with a warning.

    Raises
    ------
    AttributeError
        For any other unknown name, as for every module.
    """
    if name in _DEPRECATED:
        cls, new = _DEPRECATED[name]
        warnings.warn(
            f"worker.core.errors.{name} is deprecated: use {new} (it no longer shadows "
            f"confluent_kafka.{name})",
            DeprecationWarning,
            stacklevel=2,
        )
        return cls
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
