"""Stop 39: DecisionLog keeps each entry's time as read and formats it when shown, and
walks a decision's clauses once. Its snapshot is the entries the per-event formatting
gave, on real routed outcomes: admitted, quarantined for a broken clause (stale data),
and quarantined for a reason without a clause (undecodable)."""

from __future__ import annotations

import itertools
from dataclasses import replace
from datetime import datetime, timedelta, timezone
from typing import Any

from tests.gate.test_route import NOW, WORLD, go
from worker.gate.route import Outcome
from worker.io import codec
from worker.ops.decision_log import DecisionLog


def _entry_as_before(outcome: Outcome, at: datetime) -> dict[str, Any]:
    """The entry DecisionLog built per event before stop 39 (time formatted at once)."""
    d = outcome.decision
    broken = sorted(
        {f"{r.version}:{r.clause}" for r in d.reasons if r.clause}
        | {f"{v.version}:{c.name}" for v in d.verdicts for c in v.broken}
    )
    return {
        "time": at.isoformat(),
        "batch_id": outcome.batch_id,
        "layer": outcome.layer_label,
        "decision": d.decision,
        "broken": broken,
        "reasons": sorted({r.code for r in d.reasons}),
        "diagnoses": list(d.diagnoses),
    }


def test_the_snapshot_is_the_entries_formatted_per_event() -> None:
    stale = replace(WORLD, batch_id="stale", data_time=NOW - timedelta(days=2))
    outcomes = [
        go(codec.encode_batch(WORLD)),
        go(codec.encode_batch(stale)),
        go(b"\x00not avro"),
        go(codec.encode_batch(WORLD)),
    ]
    assert [o.decision.decision for o in outcomes] == [
        "admitted",
        "quarantined",
        "quarantined",
        "admitted",
    ]
    base = datetime(2026, 12, 4, 13, tzinfo=timezone(timedelta(hours=1)))
    times = [base + timedelta(microseconds=n) for n in range(len(outcomes))]
    ticks = iter(times)
    log = DecisionLog(maxlen=3, clock=lambda: next(ticks))
    for outcome in outcomes:
        log(outcome)
    entries, counts = log.snapshot()
    want = [_entry_as_before(o, t) for o, t in zip(outcomes, times, strict=True)][::-1][:3]
    assert entries == want
    assert [list(e) for e in entries] == [list(w) for w in want]  # the keys' order too
    assert entries[0]["time"] == "2026-12-04T13:00:00.000003+01:00"
    assert entries[2]["broken"] and entries[2]["reasons"]  # the stale batch's clauses
    assert entries[1]["broken"] == [] and entries[1]["reasons"]  # undecodable: no clause
    assert counts["admin_boundaries"]["admitted"] == 2
    assert sum(itertools.chain.from_iterable(c.values() for c in counts.values())) == 4


def _routed() -> list[Outcome]:
    stale = replace(WORLD, batch_id="stale", data_time=NOW - timedelta(days=2))
    one = [codec.encode_batch(WORLD), codec.encode_batch(stale), b"\x00not avro"]
    return [go(one[i % 3]) for i in range(7)]


def _ticking() -> Any:
    ticks = itertools.count()
    base = datetime(2026, 12, 4, 15, tzinfo=timezone.utc)
    return lambda: base + timedelta(seconds=next(ticks))


def test_many_keeps_what_the_calls_for_each_outcome_keep() -> None:
    """A run's outcomes at once (``many``) leave the entries and counts of one call per
    outcome, runs shorter and longer than the log; each kept entry's time is its own
    read, in order (only the entries kept are built, so fewer reads)."""
    outcomes = _routed()
    for maxlen in (2, 5, 7, 20):
        one_by_one = DecisionLog(maxlen=maxlen, clock=_ticking())
        at_once = DecisionLog(maxlen=maxlen, clock=_ticking())
        for run in (outcomes[:3], outcomes[3:], outcomes):
            for outcome in run:
                one_by_one(outcome)
            at_once.many(run)
        (want, want_counts), (got, got_counts) = one_by_one.snapshot(), at_once.snapshot()
        assert got_counts == want_counts and sum(got_counts["admin_boundaries"].values()) == 14
        assert [{**e, "time": None} for e in got] == [{**e, "time": None} for e in want]
        assert len(got) == min(maxlen, 14)
        times = [e["time"] for e in got]
        assert times == sorted(times, reverse=True) and len(set(times)) == len(times)


def test_report_decisions_and_fan_out_give_a_run_at_once() -> None:
    """``report_decisions`` hands a run to ``on_outcome.many`` when there is one;
    ``fan_out`` passes it on to each callback, at once or one outcome at a time."""
    from worker.core.lifecycle.registry import RecordingRegistry
    from worker.gate.housekeeping import NullInstruments, report_decisions
    from worker.ops.operator import fan_out

    outcomes = _routed()
    log, alone, seen = DecisionLog(clock=_ticking()), DecisionLog(clock=_ticking()), []
    report_decisions(NullInstruments(), RecordingRegistry(), outcomes, fan_out(log, seen.append))
    for outcome in outcomes:
        alone(outcome)
    assert seen == outcomes
    assert log.snapshot()[1] == alone.snapshot()[1]
    assert [e["batch_id"] for e in log.snapshot()[0]] == [o.batch_id for o in outcomes][::-1]
