"""What every clause kind shares (pure): the :class:`ClauseKind` record, results, offenders.

A clause kind is one module of this package defining ``Params``, ``measure``, ``render``,
``compare``, ``brief`` and ``KIND = ClauseKind(...)``, registered by one line in
:data:`worker.core.clauses.KINDS`. Evaluation, chunked evaluation, classification, the
contract checks' hint and the reports read that table.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, NamedTuple

import numpy as np
from pyproj import CRS

from worker.core._util.jsonsafe import finite_clipped, finite_json
from worker.core._util.text import MAX_ECHO_CHARS, clip
from worker.core.clauses.diff import Diff
from worker.core.clauses.tally import Tally
from worker.core.facts.batch import BatchFacts
from worker.core.model import Clause, ClauseResult, Contract
from worker.core.offenders import Offender, Offenders, offender_limit
from worker.core.spatial.units import coordinate_units

__all__ = ["MAX_OFFENDER_VALUE_CHARS", "Brief", "Check", "ClauseKind", "Compare", "GroupPass",
           "KeptOf", "Measure", "MeasureGroup", "Render", "RenderKey", "SecondPass",
           "clause_result", "count_phrase", "crs_units", "offenders_of", "percents",
           "round10"]  # fmt: skip

#: ``measure(clause, contract, facts, now)``: the mergeable tally of one chunk's features
#: (:mod:`worker.core.clauses.tally`; a kind that reads only the batch's metadata measures
#: an empty one).
Measure = Callable[[Clause, Contract, BatchFacts, datetime], Tally]
#: ``render(clause, contract, facts, tally, now)``: the result from the tally merged over
#: every chunk; ``facts`` may hold no features (chunked evaluation): only their metadata.
Render = Callable[[Clause, Contract, BatchFacts, Tally, datetime], ClauseResult]
#: ``compare(old, new, diff)``: the differences between two ``Params`` of one kind,
#: recorded on ``diff`` (:class:`worker.core.clauses.diff.Diff`) with their class.
Compare = Callable[[Any, Any, Diff], None]
#: ``brief(measured)``: a few words saying what broke, for one-line listings; ``""``
#: when the kind has nothing shorter to say than the result's message.
Brief = Callable[[Any], str]
#: ``render_key(facts)``: everything ``render`` reads of ``facts`` (their metadata) as a
#: hashable key: results rendered from equal tallies (:func:`~worker.core.clauses.tally.tally_key`)
#: and equal keys are equal, so one is rendered for every event of a group that has them;
#: None when this batch's result is rendered on its own.
RenderKey = Callable[[BatchFacts], Hashable | None]
#: ``measure_group(clause, contract, group, starts, now)``: the first pass's tally of each
#: batch of a group whose features ``group`` holds one after the other (batch ``i``: rows
#: ``starts[i]`` to ``starts[i + 1]``; int (B + 1,); see
#: :class:`~worker.core.facts.shared.SharedFacts`), each what ``measure`` gives on that
#: batch alone, or None for a batch left to ``measure`` (e.g. one that offends: its
#: offenders are named from its own facts).
MeasureGroup = Callable[[Clause, Contract, BatchFacts, np.ndarray, datetime], "list[Tally | None]"]
#: ``group_pass(clause, contract, facts, tally)``: the result :meth:`ClauseKind.evaluate`
#: gives a batch of a group whose ``measure_group`` tally is ``tally`` (not None), found
#: without rendering it (from an earlier batch's), or None: then evaluated.
GroupPass = Callable[[Clause, Contract, BatchFacts, Tally], ClauseResult | None]
#: ``check(clause)``: what the JSON Schema cannot say of one clause as written (a mapping
#: of the document): ``(path within the clause, problem, fix)``, or None when it is sound.
Check = Callable[[Mapping[str, Any]], "tuple[list[str | int], str, str] | None"]


class KeptOf(NamedTuple):
    """Where the rows a :class:`SecondPass`'s ``measure_rows`` measures were kept: of
    consecutive chunks of ``of`` features in all, in a batch whose first pass merged the
    clause's tally to ``first`` (as ``measure``'s)."""

    of: int
    first: Tally


@dataclass(frozen=True)
class SecondPass:
    """A second pass over the features, wanted after the merged tally of the first.

    ``wanted(clause, tally)`` tells whether it is (e.g. an extent clause broke);
    ``measure(clause, contract, facts, now, first)`` gives the tally of one chunk, merged
    into the first pass's tally before rendering; ``first`` is that tally, merged over
    every chunk, and holds the batch's feature count as ``count`` (what the result will
    say decides what is worth measuring: the extent's diagnoses name a candidate CRS only
    when most features are outside).

    A kind whose second pass reads only some rows (the extent's evenly spaced sample) may
    name them, so that the first pass keeps them while it holds each chunk and the batch
    is not read again (:mod:`worker.core.chunks`): ``rows(offset, count, total)`` gives
    those of a chunk (int (M,), ascending, 0-based within the chunk of ``count`` features
    starting at batch index ``offset``), and ``measure_rows(clause, contract, facts, now,
    kept)`` the chunk's tally from ``facts`` holding those rows alone, of a chunk of
    ``kept.of`` features (:class:`KeptOf`): the tally ``measure`` gives on the whole chunk.
    The rows kept of consecutive chunks may be measured at once, ``of`` their chunks'
    features: the tally is then the merge of theirs (the extent's readings are counts per
    feature and "every" tests).
    """

    wanted: Callable[[Clause, Tally], bool]
    measure: Callable[[Clause, Contract, BatchFacts, datetime, Tally], Tally]
    rows: Callable[[int, int, int], np.ndarray] | None = None
    measure_rows: Callable[[Clause, Contract, BatchFacts, datetime, KeptOf], Tally] | None = None


@dataclass(frozen=True)
class ClauseKind:
    """One clause kind: what a contract's clause of this kind means and how it is judged.

    Attributes
    ----------
    name : str
        The ``kind`` of the contract document (and of its ``$defs/kind_<name>`` entry in
        ``schemas/contract.schema.json``).
    Params : type
        Frozen dataclass of the clause's parameters, built as ``Params(**clause.params)``
        (the JSON Schema has checked their shapes), once per clause (:meth:`params`).
    measure, render : callable
        See :data:`Measure` and :data:`Render`; a whole batch is the one-chunk case.
    compare : callable
        See :data:`Compare`: every field of ``Params`` is compared there.
    brief : callable
        See :data:`Brief`.
    essential : bool
        A clause every reader relies on (the CRS, the axis order): removing it, adding the
        first one to a contract, or turning it from ``halt`` to ``warn`` is a major change.
    leads : int or None
        Rank among the structural faults whose breaks lead the quarantine reasons (0
        first); None for the others, which follow in version and clause order.
    second_pass : SecondPass or None
        A second pass over the features some results need (the extent's diagnoses).
    check : Check or None
        The kind's checks of a clause as written that the JSON Schema cannot express
        (``min`` <= ``max``, unique field names), run when a contract is parsed.
    render_key : RenderKey or None
        See :data:`RenderKey`; None (the default) when a result is never shared: each
        batch's is rendered on its own (:mod:`worker.core.clauses.grouped`).
    measure_group : MeasureGroup or None
        See :data:`MeasureGroup`; None (the default): each batch of a group is measured
        on its own.
    group_pass : GroupPass or None
        See :data:`GroupPass`; None (the default): each batch's result is evaluated.
    """

    name: str
    Params: type[Any]
    measure: Measure
    render: Render
    compare: Compare
    brief: Brief
    essential: bool = False
    leads: int | None = None
    second_pass: SecondPass | None = None
    check: Check | None = None
    render_key: RenderKey | None = None
    measure_group: MeasureGroup | None = None
    group_pass: GroupPass | None = None

    def params(self, clause: Clause) -> Any:
        """``clause``'s :attr:`Params`, built on first use and kept on the clause.

        Raises
        ------
        TypeError
            A parameter the kind does not know, or a required one missing (a clause
            built by hand: parsed documents are checked against the JSON Schema).
        """
        cached = clause.__dict__.get(_PARAMS)
        if cached is None or type(cached) is not self.Params:
            cached = self.Params(**clause.params)
            # as functools.cached_property does on a frozen dataclass: the clause is
            # immutable, so its parameters are too
            clause.__dict__[_PARAMS] = cached
        return cached

    def evaluate(
        self, clause: Clause, contract: Contract, facts: BatchFacts, now: datetime
    ) -> ClauseResult:
        """``clause`` over a whole batch: measure, the second pass if wanted, render."""
        return self.render(clause, contract, facts, self.tally(clause, contract, facts, now), now)

    def tally(
        self,
        clause: Clause,
        contract: Contract,
        facts: BatchFacts,
        now: datetime,
        measured: Tally | None = None,
    ) -> Tally:
        """``clause``'s tally of a whole batch: ``measured`` (the first pass's tally, when
        measured with a group: :attr:`measure_group`) or else measured here, with the
        second pass if wanted."""
        tally = self.measure(clause, contract, facts, now) if measured is None else measured
        if self.second_pass is not None and self.second_pass.wanted(clause, tally):
            tally = {**tally, **self.second_pass.measure(clause, contract, facts, now, tally)}
        return tally


#: Where :meth:`ClauseKind.params` keeps a clause's Params (in the clause's ``__dict__``).
_PARAMS = "_kind_params"

#: Longest echo of one offending feature's text value (a domain code, a GEOS reason).
MAX_OFFENDER_VALUE_CHARS = 200


def clause_result(
    clause: Clause,
    ok: bool,
    measured: Any,
    expected: Any,
    message: str,
    diagnoses: Any = (),
    offenders: Offenders | None = None,
    *,
    expected_is_finite: bool = False,
) -> ClauseResult:
    """The :class:`ClauseResult` of ``clause``: ``measured`` made finite JSON with its
    strings clipped, ``expected`` made finite JSON unless ``expected_is_finite`` (a value
    built once per clause and shared, read only, by its results: a domain of 100,000 codes
    was copied and walked on every event)."""
    return ClauseResult(
        name=clause.name,
        kind=clause.kind,
        result="pass" if ok else "break",
        on_break=clause.on_break,
        measured=finite_clipped(measured, MAX_ECHO_CHARS),  # the batch's values, bounded
        expected=expected if expected_is_finite else finite_json(expected),
        message=message,
        diagnoses=tuple(diagnoses),
        offenders=offenders,
    )


def offenders_of(
    facts: BatchFacts,
    contract: Contract,
    mask: np.ndarray,
    value: Callable[[int], Any],
    measure: str,
) -> Offenders | None:
    """The offending features of ``mask`` (bool (N,)): the first :data:`MAX_OFFENDERS` in
    batch order, every one within :func:`~worker.core.offenders.every_offender` (indices
    counting from :attr:`BatchFacts.offset`) with their feature ids
    (:meth:`BatchFacts.feature_ids` with the contract's ``id_column``) and ``value(index)``
    (JSON-compatible; text clipped to :data:`MAX_OFFENDER_VALUE_CHARS`, and so is a text
    id: a producer's id of 100,000 characters was echoed whole into every report line and
    record naming the feature), and the total. None when no feature offends."""
    m = np.asarray(mask, dtype=bool)
    # a 1-D mask's nonzero() is flatnonzero's result without its dispatch (called by every
    # clause on every event)
    idx = m.nonzero()[0] if m.ndim == 1 else np.flatnonzero(m)
    if idx.size == 0:
        return None
    ids = facts.feature_ids(contract.id_column)
    feats = []
    for i in idx[: offender_limit()]:
        v = value(int(i))
        if isinstance(v, str):
            v = clip(v, MAX_OFFENDER_VALUE_CHARS)
        fid = ids[int(i)]
        if isinstance(fid, str):
            fid = clip(fid, MAX_OFFENDER_VALUE_CHARS)
        feats.append(Offender(facts.offset + int(i), fid, finite_json(v)))
    return Offenders(int(idx.size), tuple(feats), measure)


def crs_units(crs: CRS | None) -> str:
    """The unit of a CRS's coordinates in words, from its axes: ``degrees`` (``grads``
    for a geographic CRS in grads) or the first axis's unit (``metre``, ``US survey
    foot``); ``CRS units`` when unknown (:func:`worker.core.spatial.units.coordinate_units`)."""
    return coordinate_units(crs)


def round10(v: float) -> float:
    return float(f"{v:.10g}")


def count_phrase(n: int, what: str) -> str:
    return f"{n} {'feature' if n == 1 else 'features'} {what}"


def percents(value: float, bound: float) -> tuple[str, str]:
    """``value`` and ``bound`` (fractions) as percentages, one decimal, with more decimals
    (up to 6) while a different value would read the same as its bound: a 1-in-3,000
    break read "0.0%, expected <= 0.0%", and 299,999 of 300,000 "100.0% ... expected >=
    100.0%". Equal fractions read equal; a value that still reads
    as its bound at 6 decimals keeps that reading."""
    for digits in range(1, 7):
        shown, limit = f"{value:.{digits}%}", f"{bound:.{digits}%}"
        if value == bound or shown != limit:
            return shown, limit
    return shown, limit
