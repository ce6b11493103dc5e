"""Clauses evaluated over a group of small batches: measured together, rendered once (pure).

A poll batch of one-feature events evaluated each event's clauses alone: nine measures
and nine renders per event, most of them giving the same result event after event.
:class:`GroupEvaluation` holds what the batches of one group (one layer, one version set,
one geometry metadata: :mod:`worker.core.evaluate_group`) share:

* the first pass's tallies of each clause whose kind measures a group at once
  (:attr:`~worker.core.clauses.base.ClauseKind.measure_group`: masks over the group's
  concatenated features, counted per batch), each batch's tally what ``measure`` gives it
  alone; a batch the kind leaves out (None) is measured alone;
* the rendered results: a result rendered from a tally and facts metadata
  (:attr:`~worker.core.clauses.base.ClauseKind.render_key`) equal to another batch's is
  that batch's result, the same object (results are never modified once made).

A kind's ``measure_group`` gives batches of equal tallies one tally object
(:func:`~worker.core.clauses.group_tallies.shared_tallies`): :meth:`GroupEvaluation.measure`
keys each object once
(:func:`~worker.core.clauses.tally.tally_key`, interned to a number), so a batch's
result is found by that number and its render key, without walking its tally (the
per-event tally, its key and the result's key were a quarter of a one-feature event's
clause evaluation).

A contract's results for a batch are found by one key when two or more of its clauses are
numbered (:meth:`GroupEvaluation.results`: their numbers and render keys): a batch whose
key an earlier batch had takes that batch's results of those clauses (the objects their
own path gives it), and only its other clauses (the extent's) are evaluated: a kind's
``group_pass`` first (the extent's kept pass with the batch's bounds, without the
tally, render and their checks: about 4% of a one-feature event's loop).

Every result is thus the one the batch gets alone (``tests/core/test_shared_facts.py``
compares the tallies kind by kind, ``tests/gate/test_route_group.py`` the records).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from itertools import repeat
from operator import is_

import numpy as np

from worker.core.clauses.base import ClauseKind, GroupPass
from worker.core.clauses.tally import Tally, tally_key
from worker.core.facts.batch import BatchFacts
from worker.core.model import ActiveVersion, Clause, ClauseResult, Contract

#: ``evaluate_clause(clause, contract, facts, now, group)``: one clause's result within a
#: group, never raising (:func:`worker.core.evaluate.evaluate_clause`, passed in: this
#: module is below it).
EvaluateClause = Callable[[Clause, Contract, BatchFacts, datetime, "GroupEvaluation"], ClauseResult]
#: :meth:`GroupEvaluation.results`' key of a batch: (contract id, now, the render keys and
#: the tally numbers of the contract's numbered clauses)
_Key = tuple[int, datetime, tuple[Hashable, ...], tuple[int | None, ...]]

__all__ = ["GroupEvaluation"]


@dataclass
class GroupEvaluation:
    """What the batches of one group share while evaluated at one ``now`` (see the
    module's docstring); :attr:`index` is the batch being evaluated."""

    rendered: dict[Hashable, ClauseResult] = field(default_factory=dict)
    tallies: dict[tuple[int, int], list[Tally | None]] = field(default_factory=dict)
    index: int = 0
    #: per clause measured with the group, each batch's tally's number (equal numbers:
    #: equal :func:`tally_key`), None for a batch measured alone or an unshared tally
    numbers: dict[tuple[int, int], list[int | None]] = field(default_factory=dict)
    _numbered: dict[Hashable, int] = field(default_factory=dict)
    #: per contract (id) measured with the group: its shared clauses (:class:`_Plan`)
    _plans: dict[int, _Plan] = field(default_factory=dict)
    #: per :meth:`results` key: an earlier batch's results of a contract's clauses
    _kept: dict[_Key, tuple[ClauseResult, ...]] = field(default_factory=dict)
    #: the last key :meth:`results` found in :attr:`_kept`, and its results
    _last: tuple[_Key | None, tuple[ClauseResult, ...] | None] = (None, None)

    def measure(
        self,
        kinds: dict[str, ClauseKind],
        versions: Sequence[ActiveVersion],
        group: BatchFacts,
        starts: np.ndarray,
        now: datetime,
    ) -> None:
        """The tallies of every clause of the active ``versions`` whose kind measures a
        group, over ``group`` (the batches' features one after the other, batch ``i`` at
        rows ``starts[i]`` to ``starts[i + 1]``); a kind that raises leaves every batch to
        its own ``measure`` (whose error is the batch's own, as alone)."""
        for v in versions:
            if v.state != "active":
                continue
            for c in v.contract.clauses:
                kind = kinds.get(c.kind)
                if kind is None or kind.measure_group is None:
                    continue
                try:
                    tallies = list(kind.measure_group(c, v.contract, group, starts, now))
                except Exception:  # each batch's own measure meets (and reports) it, as alone
                    continue
                # the clause and contract are held alive by the versions: ids not reused
                self.tallies[(id(c), id(v.contract))] = tallies
                if kind.render_key is not None and kind.second_pass is None:
                    self.numbers[(id(c), id(v.contract))] = self._numbers(tallies)
            self._plan(kinds, v.contract)

    def _plan(self, kinds: dict[str, ClauseKind], contract: Contract) -> None:
        """Keep ``contract``'s :class:`_Plan` when two or more of its clauses are numbered
        (:attr:`numbers`)."""
        clauses = contract.clauses
        ats = [(id(c), id(contract)) for c in clauses]
        shared = tuple(j for j, at in enumerate(ats) if at in self.numbers)
        if len(shared) < 2:
            return
        self._plans[id(contract)] = _Plan(
            shared=shared,
            ats=tuple(ats[j] for j in shared),
            own=tuple(
                (j, ats[j], kinds[c.kind].group_pass if c.kind in kinds else None)
                for j, c in enumerate(clauses)
                if j not in shared
            ),
            render_keys=tuple(kinds[clauses[j].kind].render_key for j in shared),  # type: ignore[misc]
            rows=list(zip(*(self.numbers[ats[j]] for j in shared), strict=True)),
        )

    def results(
        self, contract: Contract, facts: BatchFacts, now: datetime, evaluate: EvaluateClause
    ) -> tuple[ClauseResult, ...]:
        """The results of ``contract``'s clauses for batch :attr:`index` (``facts``): each
        ``evaluate(clause, contract, facts, now, self)`` (:meth:`evaluate`, within the
        gate's last resort).

        A batch whose numbered clauses (:class:`_Plan`) all have a number and a render key
        equal to an earlier batch's takes that batch's results of those clauses, found by
        one key: the objects :meth:`evaluate` gives it (kept in :attr:`rendered` under
        the clause's number and render key, and never replaced), which are kept only when
        each is that object (not a gate error, made anew per call). Only its other clauses
        (the extent's, each batch's own bounds) are evaluated (nine calls per event, each
        with its own keys, were a fifth of a one-feature event's evaluation)."""
        clauses = contract.clauses
        plan = self._plans.get(id(contract))
        key = None if plan is None else plan.key(contract, facts, now, self.index)
        last, kept = self._last  # most batches: the last key found, equal (not hashed)
        if key != last:
            kept = None if key is None else self._kept.get(key)
            if kept is not None:
                self._last = (key, kept)
        if plan is None or key is None or kept is None:
            out = tuple(evaluate(c, contract, facts, now, self) for c in clauses)
            if plan is not None and key is not None and self._are_kept(plan, key, out):
                self._kept[key] = out
            return out
        if not plan.own:
            return kept
        made = list(kept)
        for j, at, passing in plan.own:
            c = clauses[j]
            found = None if passing is None else self._passed(passing, at, c, contract, facts)
            made[j] = evaluate(c, contract, facts, now, self) if found is None else found
        return tuple(made)

    def _passed(
        self,
        passing: GroupPass,
        at: tuple[int, int],
        clause: Clause,
        contract: Contract,
        facts: BatchFacts,
    ) -> ClauseResult | None:
        """The kind's :attr:`~ClauseKind.group_pass` of batch :attr:`index` from its tally
        measured with the group, or None (none measured or kept; or it raised: the batch's
        own evaluation meets it, as alone): the result :meth:`evaluate` gives it."""
        tallies = self.tallies.get(at)
        tally = None if tallies is None else tallies[self.index]
        if tally is None:
            return None
        try:
            return passing(clause, contract, facts, tally)
        except Exception:
            return None

    def _are_kept(self, plan: _Plan, key: _Key, out: tuple[ClauseResult, ...]) -> bool:
        """Whether each of ``out``'s results of ``plan``'s numbered clauses is the one
        :attr:`rendered` keeps for ``key``'s number and render key."""
        _, now, reads, row = key
        for j, at, read, number in zip(plan.shared, plan.ats, reads, row, strict=True):
            if self.rendered.get((at, now, read, number)) is not out[j]:
                return False
        return True

    def _numbers(self, tallies: list[Tally | None]) -> list[int | None]:
        """The number of each of ``tallies`` (see :attr:`numbers`), keyed once per tally
        object (the objects are held by :attr:`tallies`: ids not reused); one object for
        every batch (a group passing the clause) is found in C, then keyed once."""
        if len(tallies) > 1 and all(map(is_, tallies, repeat(tallies[0]))):
            return self._numbers(tallies[:1]) * len(tallies)
        of_object: dict[int, int | None] = {}
        out: list[int | None] = []
        for t in tallies:
            if t is None:
                out.append(None)
                continue
            if id(t) not in of_object:
                frozen = tally_key(t)
                of_object[id(t)] = (
                    None
                    if frozen is None
                    else self._numbered.setdefault(frozen, len(self._numbered))
                )
            out.append(of_object[id(t)])
        return out

    def evaluate(
        self, kind: ClauseKind, clause: Clause, contract: Contract, facts: BatchFacts, now: datetime
    ) -> ClauseResult:
        """:meth:`ClauseKind.evaluate` of batch :attr:`index` (``facts``): its tally from
        the group's when measured there, its result the one rendered for an earlier batch
        from an equal tally and equal :attr:`~ClauseKind.render_key`, else rendered (and
        kept for the next batches)."""
        at = (id(clause), id(contract))
        numbers = self.numbers.get(at)
        number = None if numbers is None else numbers[self.index]
        if number is None:  # measured alone (or unshared): its tally, then its number
            of_group = self.tallies.get(at)
            measured = None if of_group is None else of_group[self.index]
            tally = kind.tally(clause, contract, facts, now, measured)
            frozen = tally_key(tally) if kind.render_key is not None else None
            if frozen is None:
                return kind.render(clause, contract, facts, tally, now)
            number = self._numbered.setdefault(frozen, len(self._numbered))
        else:  # the tally measured with the group is the batch's (no second pass: measure)
            tally = self.tallies[at][self.index]  # type: ignore[assignment]
        reads = None if kind.render_key is None else kind.render_key(facts)
        if reads is None:
            return kind.render(clause, contract, facts, tally, now)
        key = (at, now, reads, number)
        result = self.rendered.get(key)
        if result is None:
            result = self.rendered[key] = kind.render(clause, contract, facts, tally, now)
        return result


@dataclass(frozen=True)
class _Plan:
    """A contract's clauses measured with a group and numbered (:attr:`GroupEvaluation.
    numbers`): their positions (``shared``), their :attr:`GroupEvaluation.rendered` keys'
    head (``ats``), their kinds' render keys, each batch's row of their numbers; ``own``
    the contract's other clauses: position, key head, the kind's ``group_pass``."""

    shared: tuple[int, ...]
    ats: tuple[tuple[int, int], ...]
    own: tuple[tuple[int, tuple[int, int], GroupPass | None], ...]
    render_keys: tuple[Callable[[BatchFacts], Hashable | None], ...]
    rows: list[tuple[int | None, ...]]

    def key(self, contract: Contract, facts: BatchFacts, now: datetime, index: int) -> _Key | None:
        """``(contract id, now, render keys, numbers)`` of batch ``index`` (``facts``), or
        None when one of its numbered clauses has no number or render key (or its render
        key raised: :meth:`GroupEvaluation.evaluate` meets it, as alone)."""
        row = self.rows[index]
        if None in row:
            return None
        try:
            reads = tuple([read(facts) for read in self.render_keys])
        except Exception:
            return None
        if None in reads:
            return None
        return id(contract), now, reads, row
