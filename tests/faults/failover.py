"""Failover takeover time: two workers, one SIGKILLed, with and without static membership.

The time measured runs from the SIGKILL until the survivor has decided (committed an
admitted or quarantine record for) the first event placed, right after the kill, on a
partition the killed worker owned. A SIGKILLed member sends no LeaveGroup, so in both
modes the group coordinator notices it only after ``session.timeout.ms``; static
membership (KIP-345, ``group.instance.id``) changes what happens on a restart of the same
instance (it gets its partitions back without a rebalance) and on a clean stop (a static
member does not leave the group, so its partitions also wait for the session timeout).
"""

from __future__ import annotations

import ast
import re
import signal
import time
from pathlib import Path

from tests.faults.suite import (
    PARTITIONS,
    Row,
    Worker,
    _judge,
    lab,
    nyc_event,
    outputs,
    wait_decided,
)
from worker.kafka.admin import produce_one, read_topic
from worker.kafka.settings import Settings

#: How long the static-membership run waits for the survivor before restarting the
#: killed instance (Tansu 0.6 never hands a dead static member's partitions over).
STATIC_WAIT_S = 15.0
_LINE = re.compile(r" (assigned|revoked) (\[.*\])\s*$")


def owned(log: Path) -> set[int]:
    """Partitions a worker owns now, replayed from its ``assigned``/``revoked`` log lines
    (``assigned`` logs the whole set after the change, ``revoked`` the partitions lost)."""
    parts: set[int] = set()
    for line in log.read_text(errors="replace").splitlines():
        m = _LINE.search(line)
        if not m:
            continue
        changed = {p for _, p in ast.literal_eval(m.group(2))}
        parts = changed if m.group(1) == "assigned" else parts - changed
    return parts


def settled(workers: list[Worker], timeout_s: float) -> list[set[int]]:
    """Each worker's partitions once together they own every partition exactly once
    (the same for 2 s), or raises TimeoutError."""
    deadline = time.monotonic() + timeout_s
    stable_since, last = 0.0, None
    while time.monotonic() < deadline:
        sets = [owned(w.log) for w in workers]
        full = sorted(p for s in sets for p in s) == list(range(PARTITIONS))
        if full and all(sets) and sets == last:
            if time.monotonic() - stable_since >= 2:
                return sets
        else:
            stable_since = time.monotonic()
        last = sets
        time.sleep(0.2)
    raise TimeoutError(f"the group did not settle in {timeout_s:.0f} s: {last}")


def first_decided(settings: Settings, placed: list[tuple[int, int]], timeout_s: float) -> float:
    """``time.monotonic()`` when the first of ``placed`` was seen admitted (the events
    placed are admitted batches). A fresh reader each 0.2 s: on Tansu, a read_committed
    reader that is already at the end does not see later transactional records."""
    wanted = set(placed)
    deadline = time.monotonic() + timeout_s
    start: dict[int, int] = {}
    while time.monotonic() < deadline:
        for msg in read_topic(settings, settings.topics.admitted, start=start, timeout_s=30):
            start[int(msg.partition())] = int(msg.offset()) + 1
            h = {k: (v or b"").decode() for k, v in msg.headers() or ()}
            if (int(h["source-partition"]), int(h["source-offset"])) in wanted:
                return time.monotonic()
        time.sleep(0.2)
    raise TimeoutError(f"no event of the killed worker's partitions decided in {timeout_s} s")


def takeover(bootstrap: str, static: bool) -> Row:
    """Two workers; once the group settled, SIGKILL the one owning more partitions, place
    one event on each of its partitions, and time the first decision of them: by the
    survivor, or (static membership, when the survivor has not taken over within
    :data:`STATIC_WAIT_S`) by the killed instance restarted with the same instance id."""
    mode = "static membership" if static else "dynamic membership"
    row = Row(f"failover after SIGKILL, {mode}")
    extra = ("--static-membership",) if static else ()
    with lab(bootstrap) as running:
        s, t = running.settings, running.settings.topics
        names = ["a", "b"]
        workers = [running.start_worker(n, *extra) for n in names]
        sets = settled(workers, 90)
        victim = 0 if len(sets[0]) >= len(sets[1]) else 1
        survivor = workers[1 - victim]
        events = [nyc_event(f"f{p}") for p in sorted(sets[victim])]
        killed_at = time.monotonic()
        workers[victim].stop(signal.SIGKILL)
        placed = [
            produce_one(s, t.batches, "nyc_boroughs", e, partition=p)
            for p, e in zip(sorted(sets[victim]), events, strict=True)
        ]
        wait_s = STATIC_WAIT_S if static else 120
        try:
            seen_at = first_decided(s, placed, wait_s - (time.monotonic() - killed_at))
            row.note = f"survivor took over {seen_at - killed_at:.1f} s after the kill"
        except TimeoutError:
            restarted_at = time.monotonic()
            running.start_worker(names[victim], *extra)  # same instance id
            try:
                seen_at = first_decided(s, placed, STATIC_WAIT_S)
                row.note = (
                    f"no takeover by the survivor in {wait_s:.0f} s; the same instance "
                    f"restarted decided {seen_at - restarted_at:.1f} s after its start"
                )
            except TimeoutError:
                # Tansu 0.6: a dead static member's partitions are never handed over, and
                # the rebalance its restart starts does not complete: a broker limitation
                # measured here, not a verdict on the gate
                row.informational = True
                row.decide_s = time.monotonic() - killed_at
                row.note = (
                    f"no takeover by the survivor in {wait_s:.0f} s, nor by the same instance "
                    f"restarted, in {STATIC_WAIT_S:.0f} s more (the group stays in rebalance)"
                )
                row.peak_rss_mib = running.peak_rss_mib()
                row.stayed_up = survivor.alive()
                _judge(row, placed, outputs(s))
                return row
        row.decide_s = seen_at - killed_at
        got, _ = wait_decided(running, placed, 60)
        row.peak_rss_mib = running.peak_rss_mib()
        row.stayed_up = survivor.alive()
        _judge(row, placed, got)
        row.ok = row.lost == 0 and row.duplicated == 0 and row.stayed_up
    return row
