"""The gate's vocabularies, written once: modes, states, axis orders, field types, reason codes.

Pure names and tuples of names (no logic): the ``Literal`` types the frozen dataclasses of
:mod:`worker.core.model` are annotated with, the tuples a contract or an event is checked
against, the arrow field metadata keys readers set on a column read as text, and
:class:`ReasonCode`, why a batch went to quarantine.
"""

from __future__ import annotations

from enum import Enum
from typing import Literal

__all__ = [
    "AXIS_ORDERS",
    "BATCH_ONLY_FIELD_TYPES",
    "FIELD_TYPES",
    "LOGICAL_TYPE_KEY",
    "MODES",
    "STATES",
    "VALUE_KINDS_KEY",
    "VALUE_TYPES_KEY",
    "AxisOrder",
    "Mode",
    "OnBreak",
    "ReasonCode",
    "Result",
    "State",
]

Mode = Literal["enforcing", "observing"]
State = Literal["active", "superseded", "retired"]
OnBreak = Literal["halt", "warn"]
Result = Literal["pass", "break"]
AxisOrder = Literal["east_north", "north_east"]

MODES: tuple[str, ...] = ("enforcing", "observing")
STATES: tuple[str, ...] = ("active", "superseded", "retired")
AXIS_ORDERS: tuple[str, ...] = ("east_north", "north_east")

#: Logical attribute types of a schema field, the names a contract's schema clause may use.
#: Arrow integer types of any width map to ``integer``, floating types to ``double``,
#: string/large_string to ``string``; ``decimal``, ``time`` and ``duration`` are the arrow
#: types of those names; ``struct``, ``list`` (list, large_list, fixed_size_list) and ``map``
#: are nested columns (e.g. a file's bbox covering column, a struct).
FIELD_TYPES: tuple[str, ...] = (
    "string",
    "integer",
    "double",
    "boolean",
    "timestamp",
    "date",
    "binary",
    "decimal",
    "time",
    "duration",
    "struct",
    "list",
    "map",
)
#: Types a batch field can have that no contract can name, so the schema clause breaks on
#: such a field whenever it lists it (and passes it as an extra with ``allow_extra``):
#: ``mixed`` is a property whose values have different JSON types (``42`` and ``"n/a"``),
#: read as text; ``other`` an arrow type with no logical equivalent (e.g. a union).
BATCH_ONLY_FIELD_TYPES: tuple[str, ...] = ("mixed", "other")
#: Arrow field metadata keys that readers set on a column read as text: its logical type
#: (:data:`FIELD_TYPES` or :data:`BATCH_ONLY_FIELD_TYPES`) and, for ``mixed``, the JSON
#: types of its values, comma-separated (e.g. ``integer,string``).
LOGICAL_TYPE_KEY = b"contract_gate.logical_type"
VALUE_TYPES_KEY = b"contract_gate.value_types"
#: Arrow field metadata key of a column read as text: the JSON type of each row's value,
#: one ASCII letter per row (``s`` string, ``i`` integer, ``d`` double, ``b`` boolean,
#: ``l`` list, ``o`` object, ``n`` null), so a clause can tell the string ``"1"`` from the
#: number ``1`` written as text (no coercion between strings and numbers).
VALUE_KINDS_KEY = b"contract_gate.value_kinds"


class ReasonCode(str, Enum):
    """Why a batch went to quarantine: the record's ``reason_code`` and each reason's
    ``code`` (``schemas/quarantine_record.avsc`` documents the same list).

    A ``str`` enum whose ``str()`` and f-string are the value (as ``enum.StrEnum``, which
    Python 3.10 lacks): records, headers (``dlq.reason``) and metrics carry the value.
    """

    #: an enforcing version's clause with ``on_break: halt`` broke
    CONTRACT_BREAK = "contract_break"
    #: the batch-arrival event does not decode
    DECODE_ERROR = "decode_error"
    #: the batch's layer has no active contract version
    NO_ACTIVE_CONTRACT = "no_active_contract"
    #: the payload by reference cannot be loaded (no more specific reason)
    PAYLOAD_ERROR = "payload_error"
    #: the payload URI is outside the worker's payload roots
    PAYLOAD_NOT_ALLOWED = "payload_not_allowed"
    #: the payload is missing or its store unreachable (after retries)
    PAYLOAD_UNAVAILABLE = "payload_unavailable"
    #: the payload is not a readable file of its format
    PAYLOAD_CORRUPT = "payload_corrupt"
    #: the payload is larger than its format's limit
    PAYLOAD_TOO_LARGE = "payload_too_large"
    #: an admitted event larger than the admitted topic takes
    RECORD_TOO_LARGE = "record_too_large"
    #: the output records cannot be encoded
    ENCODE_ERROR = "encode_error"
    #: a replay of a batch already admitted
    DUPLICATE_REPLAY = "duplicate_replay"
    #: the layer's contract history on the config topic is broken (fails closed)
    CONTRACT_HISTORY_BROKEN = "contract_history_broken"
    #: the gate failed evaluating a clause of an enforcing version (an exception inside an
    #: evaluator: a missing kernel, a library error), not the data: quarantined so nothing
    #: is lost, replayed once the gate is fixed; the message names the library's error and
    #: the gate version
    GATE_ERROR = "gate_error"

    def __str__(self) -> str:
        return str(self.value)
