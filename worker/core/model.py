"""Frozen data model of the contract gate (pure: no Kafka, no OpenTelemetry SDK).

Conventions written down once:

* Coordinates are in the batch's declared CRS. ``axis_order`` says how the *stored* x/y
  are to be read: ``east_north`` means x is longitude/easting (RFC 7946, OGC:CRS84, and
  the traditional GIS order); ``north_east`` means x is latitude/northing (the EPSG
  authority order of EPSG:4326). Spatial clauses normalise to ``east_north`` before they
  measure.
* Times are timezone-aware ``datetime`` objects in UTC; durations carry ``_s`` (seconds).
* ``measured`` and ``expected`` of a :class:`ClauseResult` are JSON-compatible values
  (str, int, float, bool, None, lists and dicts of those) so they serialise unchanged to
  the evaluation and quarantine records and to ``contract-gate check --format json``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

import pyarrow as pa

from worker.core.offenders import Offenders

# AxisOrder, Mode, OnBreak, Result and State annotate the dataclasses below. AXIS_ORDERS and
# the three *_KEY names are transitional, not this module's face (not in __all__):
# io/formats/base.py, io/payloads/load.py and io/payloads/chunks.py still import them from
# here; once they import them from worker.core.vocab, they leave this import.
from worker.core.vocab import (  # noqa: F401
    AXIS_ORDERS,
    LOGICAL_TYPE_KEY,
    VALUE_KINDS_KEY,
    VALUE_TYPES_KEY,
    AxisOrder,
    Mode,
    OnBreak,
    Result,
    State,
)

__all__ = [
    "ActiveVersion",
    "Batch",
    "Clause",
    "ClauseResult",
    "Contract",
    "Decision",
    "FieldSpec",
    "QuarantineReason",
    "VersionVerdict",
    "stated",
]


@dataclass(frozen=True)
class FieldSpec:
    """One attribute field of a schema: name, logical type
    (:data:`worker.core.vocab.FIELD_TYPES`), nullability."""

    name: str
    type: str
    nullable: bool = False


@dataclass(frozen=True)
class Clause:
    """One clause of a contract version.

    ``params`` holds the kind-specific fields of docs/design.md section 3 exactly as written
    in the document (e.g. ``{"expect": "EPSG:2263"}`` for ``crs``,
    ``{"region": [...], "min_fraction_inside": 1.0}`` for ``extent``), already validated
    against ``schemas/contract.schema.json``. Durations stay ISO 8601 strings here.
    """

    name: str
    kind: str
    on_break: OnBreak = "halt"
    description: str | None = None
    params: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Contract:
    """One immutable contract version of a layer (docs/design.md section 3).

    ``major``/``minor`` come from ``version`` (``v7`` is ``v7.0``); ``version`` is kept in
    its canonical spelling ``v<major>.<minor>``. ``cadence_s`` is the ISO 8601 ``cadence``
    in seconds. ``digest`` is the sha256 (hex) of the canonical JSON of the parsed
    document, so formatting and key order do not change it. ``text`` is the source YAML.

    Review metadata (``contract review``, docs/design.md section 5), outside the digest and never
    a difference of its own: ``change`` is the class the author declares for the change
    from the layer's previous version (``major``, ``tightening``, ``minor``; review checks
    it against the computed class, which the config record carries); ``declared_mode``
    (document field ``mode``) is the mode the owner asks for and ``evidence`` the observing
    evidence behind an enforcing tightening (a repository path to ``contract evidence
    --format json`` output, or a URL). Declaring them on a published version (e.g. to
    promote it) is therefore not an edit in place. ``read_paths`` is ``shared`` (default)
    or ``per_major``: the worker then also writes each admitted batch to one topic per
    enforcing major whose verdict passed (part of the digest when ``per_major``).
    ``id_column`` (optional) names the attribute column whose values identify features in
    reports of offending features.
    """

    layer: str
    version: str
    major: int
    minor: int
    cadence: str
    cadence_s: float
    objective: float
    owner: str
    changelog: str
    clauses: tuple[Clause, ...]
    digest: str
    text: str = ""
    change: str | None = None
    declared_mode: str | None = None
    evidence: str | None = None
    read_paths: str = "shared"
    id_column: str | None = None

    @property
    def key(self) -> str:
        """Config topic key ``layer/version``."""
        return f"{self.layer}/{self.version}"

    def clause(self, name: str) -> Clause | None:
        """The clause called ``name``, or None."""
        for c in self.clauses:
            if c.name == name:
                return c
        return None


@dataclass(frozen=True)
class ActiveVersion:
    """A contract version with its lifecycle state, as carried by a config record."""

    contract: Contract
    mode: Mode = "enforcing"
    state: State = "active"


def stated(metadata_name: str, what: str) -> str:
    """``what`` (``edges``, ``orientation``) of a batch's geometry column metadata as
    messages name it: after its :attr:`Batch.metadata_name` (the reader's name for the
    metadata, e.g. ``"X edges"``), or alone when the batch has none."""
    return f"{metadata_name} {what}" if metadata_name else what


@dataclass(frozen=True)
class Batch:
    """A decoded batch: event metadata plus its features.

    ``geometries_wkb`` holds one WKB ``bytes`` (or None for a missing geometry) per
    feature; ``attributes`` is a pyarrow Table with one row per feature (same order).
    ``schema_fields`` is the schema the producer declared (or, for files, the one derived
    from the attribute table). ``feature_count`` is the producer's declared count; the
    facts use the actual number of geometries. ``geometry_errors`` maps the index of a
    feature whose geometry the reader could not write as WKB at all (its ``geometries_wkb``
    entry is None) to the parser's reason; such a feature counts as an invalid geometry.

    The geometry column metadata a file states that changes what the geometries mean
    rides along (defaults: what inline WKB means), named for messages by
    ``metadata_name`` (the reader's, see :mod:`worker.io.formats`): ``edges`` is ``planar``
    (straight lines in the CRS) or ``spherical`` (each edge the shorter great-circle arc);
    ``orientation`` is None (no assertion) or ``counterclockwise`` (exterior rings
    counterclockwise, interior rings clockwise); ``covering_bbox`` holds the file's bbox
    covering column (a ``covering.bbox`` of the file's metadata), one ``(xmin, ymin, xmax, ymax)``
    or None per feature, in the stored axis order, or None when the file has none.

    Feature ids name offending features in reports: ``id_column`` (a reader or CLI
    setting, ``check --id-column``) names an attribute column that holds them (it wins
    over the contract's ``id_column``); ``feature_ids`` are ids the file itself carries
    (a feature's ``id`` member, one per feature, None where absent).

    ``coordinate_bounds`` is the envelope (minx, miny, maxx, maxy, stored order, NaN
    ignored) of every coordinate of the features, when a reader had it without parsing
    geometries (a GeoArrow native column: min/max of its coordinate arrays);
    None when unknown. It may include values of null rows.
    """

    batch_id: str
    layer: str
    producer: str
    data_time: datetime
    produced_at: datetime
    declared_crs: str | None
    axis_order: AxisOrder
    schema_fields: tuple[FieldSpec, ...]
    feature_count: int
    geometries_wkb: Sequence[bytes | None]
    attributes: pa.Table
    payload_uri: str | None = None
    geometry_errors: Mapping[int, str] = field(default_factory=dict)
    edges: str = "planar"
    orientation: str | None = None
    covering_bbox: tuple[tuple[float, float, float, float] | None, ...] | None = None
    feature_ids: tuple[str | int | float | None, ...] | None = None
    id_column: str | None = None
    coordinate_bounds: tuple[float, float, float, float] | None = None
    #: set by a payload loader when the payload file states a CRS that is not the event's
    #: ``declared_crs`` (the sentence saying both); the crs clause then breaks with it
    crs_conflict: str | None = None
    #: what a file's metadata claims about its geometries, as written (``version``, the
    #: column's ``bbox`` and ``geometry_types``); no clause reads it, ``check`` compares it
    #: with the geometries (:mod:`worker.core.facts.claims`)
    file_claims: Mapping[str, Any] = field(default_factory=dict)
    #: the name of the metadata the file states ``edges``, ``orientation``, the covering
    #: column and ``file_claims`` in, from its reader, for messages ("<name> edges:
    #: spherical"); "" when none does (inline features): messages then say "the file's"
    metadata_name: str = ""
    #: what the file calls ``covering_bbox`` in messages, from its reader (a format's
    #: per-feature envelope); "" for a bbox covering column, named after ``metadata_name``
    covering_name: str = ""


@dataclass(frozen=True)
class ClauseResult:
    """The outcome of one clause against one batch.

    ``measured``/``expected`` are JSON-compatible values; ``message`` is one readable line;
    ``diagnoses`` are likely causes (e.g. "axis order looks swapped"). ``offenders`` are
    the features that broke a clause about features (extent, geometry_type, validity,
    domain, schema nulls), None for clauses about the batch as a whole or when none did.
    """

    name: str
    kind: str
    result: Result
    on_break: OnBreak
    measured: Any
    expected: Any
    message: str
    diagnoses: tuple[str, ...] = ()
    offenders: Offenders | None = None
    #: the gate's own failure (``"Type: message"`` of the exception inside the evaluator)
    #: when the clause could not be evaluated: not a verdict on the data (reason
    #: ``gate_error``); None for every evaluated clause
    gate_error: str | None = None

    @property
    def broke(self) -> bool:
        return self.result == "break"

    @property
    def halts(self) -> bool:
        """True when this result breaks a clause whose ``on_break`` is ``halt``, or the
        clause could not be evaluated (a gate error halts whatever ``on_break`` says:
        nothing unevaluated is admitted)."""
        return self.result == "break" and (self.on_break == "halt" or self.gate_error is not None)


@dataclass(frozen=True)
class VersionVerdict:
    """All clause results of one contract version for one batch.

    ``passed`` is True when no clause with ``on_break: halt`` broke (warn breaks are
    recorded but do not fail the version). Attainment counts passed verdicts.
    """

    layer: str
    version: str
    mode: Mode
    passed: bool
    clauses: tuple[ClauseResult, ...]

    @property
    def broken(self) -> tuple[ClauseResult, ...]:
        return tuple(c for c in self.clauses if c.broke)


@dataclass(frozen=True)
class QuarantineReason:
    """One reason a batch went to quarantine (a row of the quarantine record).

    ``code`` is a :class:`worker.core.vocab.ReasonCode` value; ``kind`` the kind of the
    broken clause (a ``contract_break``; None for the other codes).
    """

    code: str
    message: str
    version: str | None = None
    mode: str | None = None
    clause: str | None = None
    measured: Any = None
    expected: Any = None
    offenders: Offenders | None = None
    kind: str | None = None


@dataclass(frozen=True)
class Decision:
    """The routing decision for one batch: ``admitted`` or ``quarantined``.

    Quarantined exactly when an enforcing verdict has a broken halt clause (or when the
    batch could not be evaluated at all: see ``reasons``). ``diagnoses`` collects the
    diagnoses of every broken clause, deduplicated, in order.
    """

    decision: Literal["admitted", "quarantined"]
    verdicts: tuple[VersionVerdict, ...]
    reasons: tuple[QuarantineReason, ...] = ()
    diagnoses: tuple[str, ...] = ()

    @property
    def admitted(self) -> bool:
        return self.decision == "admitted"

    @property
    def enforcing_passed(self) -> tuple[str, ...]:
        """Versions (enforcing) that this batch passed."""
        return tuple(v.version for v in self.verdicts if v.mode == "enforcing" and v.passed)
