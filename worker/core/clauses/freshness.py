"""Kind ``freshness``: the batch's data time is recent enough, and not too far in the
future (pure; metadata only).

Age = ``now`` - data time, in seconds (negative: in the future); naive times are UTC.
Durations are ISO 8601 (:func:`worker.core._util.durations.parse_duration_s`).
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from worker.core._util.durations import parse_duration_s, readable_duration
from worker.core.clauses.base import ClauseKind, clause_result
from worker.core.clauses.diff import Diff
from worker.core.clauses.group_tallies import empty_tallies
from worker.core.clauses.tally import Tally
from worker.core.facts.batch import BatchFacts
from worker.core.model import Clause, ClauseResult, Contract

__all__ = ["KIND", "Params", "age_words"]


@dataclass(frozen=True)
class Params:
    """``max_age`` and ``max_clock_skew`` (how far in the future the data time may be):
    ISO 8601 durations as written."""

    max_age: str
    max_clock_skew: str = "PT5M"


def measure(clause: Clause, contract: Contract, facts: BatchFacts, now: datetime) -> Tally:
    """Nothing per feature: the clause reads the batch's data time."""
    return {}


def render(
    clause: Clause, contract: Contract, facts: BatchFacts, tally: Tally, now: datetime
) -> ClauseResult:
    """``measured`` is the age in seconds (negative: in the future).

    Raises
    ------
    ValueError
        A duration that does not parse (the contract checks refuse those at load).
    """
    p: Params = KIND.params(clause)
    max_age_s, skew_s = parse_duration_s(p.max_age), parse_duration_s(p.max_clock_skew)
    data_time = facts.batch.data_time
    if data_time.tzinfo is None:  # naive times are taken as UTC (the model's convention)
        data_time = data_time.replace(tzinfo=timezone.utc)
    if now.tzinfo is None:
        now = now.replace(tzinfo=timezone.utc)
    age_s = (now - data_time).total_seconds()
    ok = age_s <= max_age_s and -age_s <= skew_s
    expected = {"max_age": p.max_age, "max_clock_skew": p.max_clock_skew}
    where = "in the future" if age_s < 0 else "old"
    span_s = abs(age_s)
    exact = f"{span_s:.0f} s; " if span_s >= 120 else ""
    message = (
        f"data time {data_time.isoformat()} is {_span(span_s)} {where} ({exact}expected age "
        f"<= {_seconds(max_age_s)}, future skew <= {_seconds(skew_s)})"
    )
    return clause_result(clause, ok, age_s, expected, message)


def _span(span_s: float) -> str:
    """``"26 s"``, ``"14 min"``, ``"2.0 h"``, ``"2.5 days"``: the head of a freshness
    message, which one-line listings (``quarantine tail``) show."""
    return f"{span_s:.0f} s" if span_s < 120 else readable_duration(span_s)


def _seconds(span_s: float) -> str:
    """``"172804 s = 2.0 days"``: seconds, and from 2 minutes on the span in minutes,
    hours or days too ("172804 s old" was printed for two days)."""
    if span_s >= 120:
        return f"{span_s:.0f} s = {readable_duration(span_s)}"
    return f"{span_s:.0f} s"


def compare(old: Params, new: Params, diff: Diff) -> None:
    """Shorter durations are stricter (compared in seconds, shown as written)."""
    diff.bound("max_age", old.max_age, new.max_age, stricter_when="lower", convert=parse_duration_s)
    diff.bound(
        "max_clock_skew",
        old.max_clock_skew,
        new.max_clock_skew,
        stricter_when="lower",
        convert=parse_duration_s,
    )


def age_words(age_s: float) -> str:
    """A measured age in seconds as words: ``7200 s old`` or ``30 s in the future``."""
    return f"{age_s:.0f} s old" if age_s >= 0 else f"{-age_s:.0f} s in the future"


def brief(measured: Any) -> str:
    """Nothing shorter than the message's head, which names the data time and its age in
    readable units (``data time 2020-01-01T00:00:00+00:00 is 2524.5 days old``)."""
    return ""


def render_key(facts: BatchFacts) -> Hashable:
    """What ``render`` reads of the facts: the data time as written (its offset, and naive
    or not, told apart: equal instants of two offsets read differently). Two keys are
    equal exactly when the data times' ``isoformat()`` texts are (the text names the
    instant's fields and the offset; a naive time's offset is None, and a naive and an
    aware time never compare equal), at a fifth of the cost of writing the text."""
    t = facts.batch.data_time
    return t, t.utcoffset()


KIND = ClauseKind("freshness", Params, measure, render, compare, brief, render_key=render_key,
                  measure_group=empty_tallies)  # fmt: skip
