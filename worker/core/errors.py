"""The exception tree of the contract gate.

Every error the package raises on purpose derives from :class:`ContractGateError`;
errors of foreign libraries (confluent-kafka, fastavro, pyproj, pyarrow, YAML) are
translated at the module that calls them, so callers catch one root::

    ContractGateError
    ├── ContractError            a contract document is unreadable or invalid
    ├── BatchError               a batch (event, file, payload) cannot be read
    │   ├── DecodeError          bytes are not a valid Avro record of the expected schema
    │   └── PayloadError         a payload_uri / batch file cannot be loaded
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
    "PayloadError",
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
    """A batch's ``payload_uri`` (or a batch file given to the CLI) cannot be loaded."""


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
