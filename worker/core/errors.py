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
    └── KafkaError               the broker refused or failed an operation
        └── BrokerUnavailable    no broker could be reached or started
"""

from __future__ import annotations

__all__ = [
    "BatchError",
    "BrokerUnavailable",
    "ContractError",
    "ContractGateError",
    "CrsError",
    "DecodeError",
    "KafkaError",
    "PayloadCorrupt",
    "PayloadError",
    "PayloadNotAllowed",
    "PayloadTooLarge",
    "PayloadUnavailable",
    "PolicyError",
    "VersionMismatchError",
]


class ContractGateError(Exception):
    """Root of every error raised on purpose by this package."""


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

    ``reason`` is the quarantine reason code the worker records (DESIGN.md section 6):
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

    def __init__(self, message: str, *, transient: bool = False) -> None:
        super().__init__(message)
        self.transient = transient


class PayloadCorrupt(PayloadError):
    """The bytes are not a file of the claimed format: empty, truncated, wrong magic bytes,
    not parseable as JSON or Parquet."""

    reason = "payload_corrupt"


class PayloadTooLarge(PayloadError):
    """The payload is larger than the limit of its format (``--max-payload-bytes``); the
    message names both figures."""

    reason = "payload_too_large"


class CrsError(ContractGateError):
    """A CRS definition (EPSG code, WKT, ESRI WKT, PROJJSON) cannot be resolved."""


class PolicyError(ContractGateError):
    """A lifecycle rule of DESIGN.md section 5 refuses the requested operation."""


class VersionMismatchError(ContractGateError):
    """A record of the admitted topic was not admitted under the version its reader expects."""


class KafkaError(ContractGateError):
    """The broker refused or failed an operation (translated from confluent-kafka)."""


class BrokerUnavailable(KafkaError):
    """No broker is reachable and none could be started."""
