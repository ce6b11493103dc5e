"""Evaluate every active contract version against one batch and decide its route (pure).

The batch facts are built once; every active version's clauses read the same
:class:`worker.core.facts.batch.BatchFacts`. A verdict passes when no clause with ``on_break: halt``
broke; the batch is quarantined exactly when an *enforcing* verdict failed. Observing
versions are measured and reported but never change the decision.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime
from operator import attrgetter
from typing import TYPE_CHECKING

from worker import __version__
from worker.core._util.gcpause import collector_paused
from worker.core._util.text import clip
from worker.core.clauses import KINDS
from worker.core.clauses.validity import KIND as VALIDITY
from worker.core.errors import ContractError
from worker.core.facts.batch import BatchFacts
from worker.core.model import (
    ActiveVersion,
    Batch,
    Clause,
    ClauseResult,
    Contract,
    Decision,
    QuarantineReason,
    VersionVerdict,
)
from worker.core.vocab import ReasonCode

if TYPE_CHECKING:
    from worker.core.clauses.grouped import GroupEvaluation

__all__ = [
    "decide",
    "error_result",
    "evaluate",
    "evaluate_clause",
    "evaluate_versions",
    "failed_result",
    "inapplicable_result",
    "reads_validity",
    "recorded",
]


#: Clause kinds whose breaks lead the quarantine reasons, in this order (each kind's
#: :attr:`~worker.core.clauses.base.ClauseKind.leads`: validity, geometry_type, crs,
#: axis_order, schema); a stable sort keeps version and clause order within a kind and for
#: every other kind.
STRUCTURAL_FIRST = {k.name: k.leads for k in KINDS.values() if k.leads is not None}
_RESULT = attrgetter("result")


def evaluate_clause(
    clause: Clause,
    contract: Contract,
    facts: BatchFacts,
    now: datetime,
    group: GroupEvaluation | None = None,
) -> ClauseResult:
    """Run one clause through its kind (:data:`worker.core.clauses.KINDS`): measure the
    batch, then render the result; an unknown kind or an exception becomes a break, never
    a crash. ``group``: what the batches of a group evaluated at one ``now`` share (their
    tallies measured together, their equal results rendered once:
    :class:`~worker.core.clauses.grouped.GroupEvaluation`), the batch evaluated its
    :attr:`~worker.core.clauses.grouped.GroupEvaluation.index`.

    The gate error (:func:`failed_result`, reason ``gate_error``) is a last resort for
    bugs, missing kernels and contract values the schema let through; the kinds report
    ordinary failures of the data themselves.
    """
    kind = KINDS.get(clause.kind)
    try:
        if kind is None:
            raise ValueError(f"unknown clause kind {clause.kind!r}")
        if group is None:
            return kind.evaluate(clause, contract, facts, now)
        return group.evaluate(kind, clause, contract, facts, now)
    except Exception as exc:  # last resort: one clause must not crash the batch
        return error_result(clause, exc)


def error_result(clause: Clause, exc: Exception | str) -> ClauseResult:
    """The result of a clause whose evaluation raised ``exc`` (or ``"Type: message"``): a
    :class:`~worker.core.errors.ContractError` is the contract's (:func:`inapplicable_result`:
    no replay fixes it), anything else a gate error (:func:`failed_result`)."""
    if isinstance(exc, ContractError):
        return inapplicable_result(clause, exc)
    return failed_result(clause, exc if isinstance(exc, str) else f"{type(exc).__name__}: {exc}")


def inapplicable_result(clause: Clause, error: ContractError) -> ClauseResult:
    """The break of a clause the contract cannot apply to this batch (an extent region
    crossing the antimeridian, with no crs clause, read in the batch's projected CRS):
    the clause's verdict, with its ``on_break``, naming what to fix in the contract. Not a
    gate error: a replay of the same batch under the same contract breaks again."""
    fix = f"; {error.fix}" if error.fix else ""
    message = clip(f"the contract cannot be applied to this batch: {error}{fix}", 1000)
    return _unmeasured_break(clause, message)


def failed_result(clause: Clause, error: str) -> ClauseResult:
    """The result of a clause whose evaluation raised ``error`` (``"Type: message"``): a
    gate error (:attr:`ClauseResult.gate_error`, reason ``gate_error``), not a verdict on
    the data. It halts an enforcing version whatever ``on_break`` says, so the batch is
    quarantined (nothing is lost) and replayed once the gate is fixed."""
    message = (
        f"gate error (contract-gate {__version__}): {error}; the gate failed, not the "
        "data: the batch is quarantined, replay it once the gate is fixed"
    )
    return _unmeasured_break(clause, message, gate_error=clip(error, 500))


def _unmeasured_break(clause: Clause, message: str, gate_error: str | None = None) -> ClauseResult:
    """A break of ``clause`` that measured nothing (its evaluation could not run)."""
    return ClauseResult(
        name=clause.name,
        kind=clause.kind,
        result="break",
        on_break=clause.on_break,
        measured=None,
        expected=dict(clause.params),
        message=message,
        gate_error=gate_error,
    )


def reads_validity(versions: Sequence[ActiveVersion]) -> bool:
    """Whether a contract of ``versions`` has a validity clause (then
    :func:`evaluate_versions` computes the batch's validity before any clause)."""
    return any(c.kind == VALIDITY.name for v in versions for c in v.contract.clauses)


def evaluate_versions(
    facts: BatchFacts,
    versions: Sequence[ActiveVersion],
    now: datetime,
    group: GroupEvaluation | None = None,
    *,
    validity_first: bool | None = None,
) -> tuple[VersionVerdict, ...]:
    """One verdict per version in state ``active`` (others are skipped), in input order;
    ``group`` as :func:`evaluate_clause`'s; ``validity_first`` :func:`reads_validity` of
    ``versions`` when the caller has it (a group's batches: once per group)."""
    verdicts = []
    if validity_first is None:
        validity_first = reads_validity(versions)
    if validity_first:
        # validity first, whatever the clause order: its GEOS pass also tells which
        # features may have non-finite coordinates (BatchFacts.has_nonfinite); an error
        # here is the validity clause's to report, as a break
        try:  # noqa: SIM105 - contextlib.suppress: a context manager per event, 0.25 us
            facts.is_valid  # noqa: B018 - computes and caches the fact
        except Exception:
            pass
    for v in versions:
        if v.state != "active":
            continue
        contract = v.contract
        if group is None:
            results = tuple(evaluate_clause(c, contract, facts, now) for c in contract.clauses)
        else:  # the results an earlier batch of the group shares, the others evaluated
            results = group.results(contract, facts, now, evaluate_clause)
        verdicts.append(version_verdict(v, results))
    return tuple(verdicts)


def version_verdict(v: ActiveVersion, clauses: tuple[ClauseResult, ...]) -> VersionVerdict:
    """The verdict of version ``v`` from its clause results, in its clauses' order: it
    passes unless a clause halts (a break with ``on_break: halt``)."""
    # halts only if broken: most verdicts break nothing, told by one scan in C
    passed = "break" not in map(_RESULT, clauses) or not any(
        r.halts for r in clauses if r.result == "break"
    )
    c = v.contract
    return VersionVerdict(c.layer, c.version, v.mode, passed, clauses)  # (fields in order)


def evaluate(
    batch: Batch,
    versions: Sequence[ActiveVersion],
    *,
    now: datetime,
    facts: BatchFacts | None = None,
) -> Decision:
    """Evaluate ``batch`` against every active version and decide its route.

    Parameters
    ----------
    batch : worker.core.model.Batch
        The decoded batch.
    versions : sequence of ActiveVersion
        The versions of the batch's layer; only those in state ``active`` are evaluated.
    now : datetime
        Timezone-aware evaluation time (freshness is measured against it).
    facts : BatchFacts, optional
        The facts of ``batch``, when the caller reads them too (``check`` compares the
        file's metadata claims with them); default built here.

    Returns
    -------
    Decision
        ``quarantined`` iff an enforcing verdict failed; one ``contract_break`` reason per
        broken halt clause of an enforcing version, structural faults first
        (:data:`STRUCTURAL_FIRST`: validity, geometry_type, crs, axis_order, schema), then
        in version and clause order; diagnoses of every broken clause of
        every evaluated version, deduplicated in order. With no active version the batch is
        admitted with no verdicts (routing of layers without contracts is the caller's).
    """
    if facts is None:
        facts = BatchFacts(batch)
    with collector_paused():  # the batch's geometries are built and freed within
        return decide(evaluate_versions(facts, versions, now))


def decide(verdicts: tuple[VersionVerdict, ...]) -> Decision:
    """The decision of a batch's verdicts (see :func:`evaluate`)."""
    # the broken results in version and clause order: a halt and a diagnosis are a break's
    broke = [(v, r) for v in verdicts for r in v.clauses if r.result == "break"]
    if not broke:  # most batches: nothing to sort, no reason, no diagnosis
        return Decision("admitted", verdicts)
    broken = [(v, r) for v, r in broke if v.mode == "enforcing" and r.halts]
    # the structural fault leads (dlq.reason, dlq.message): a geometry that cannot be read
    # also fails extent and coverage, but what the producer must fix is the geometry
    # a gate error leads all: the record's reason_code then tells operators, not the
    # producer, to act
    broken.sort(
        key=lambda vr: (
            -1
            if vr[1].gate_error is not None
            else STRUCTURAL_FIRST.get(vr[1].kind, len(STRUCTURAL_FIRST))
        )
    )
    reasons = tuple(
        QuarantineReason(
            code=ReasonCode.GATE_ERROR if r.gate_error is not None else ReasonCode.CONTRACT_BREAK,
            message=r.message,
            version=v.version,
            mode=v.mode,
            clause=r.name,
            kind=r.kind,
            measured=r.measured,
            expected=r.expected,
            offenders=r.offenders,
        )
        for v, r in broken
    )
    diagnoses = tuple(dict.fromkeys(d for _, r in broke for d in r.diagnoses))
    return Decision(
        decision="quarantined" if reasons else "admitted",
        verdicts=verdicts,
        reasons=reasons,
        diagnoses=diagnoses,
    )


def recorded(decision: Decision) -> Decision:
    """``decision`` as a record holds it: every clause result (and reason) names only the
    first :data:`~worker.core.offenders.MAX_OFFENDERS` offenders, the totals kept; the
    inverse of evaluating within :func:`~worker.core.offenders.every_offender`."""
    verdicts = tuple(
        replace(
            v,
            clauses=tuple(
                replace(c, offenders=c.offenders.first() if c.offenders else None)
                for c in v.clauses
            ),
        )
        for v in decision.verdicts
    )
    return replace(decision, verdicts=verdicts, reasons=_reasons_cut(decision))


def _reasons_cut(decision: Decision) -> tuple[QuarantineReason, ...]:
    return tuple(
        replace(r, offenders=r.offenders.first() if r.offenders else None) for r in decision.reasons
    )
