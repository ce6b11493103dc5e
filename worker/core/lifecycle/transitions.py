"""The lifecycle marks of a contract version on the overlap timeline (pure).

When a version was published, promoted, superseded and retired, from what the config
topic holds: the document record's ``published_at``, and the Kafka timestamps of the state
records (kept by :meth:`worker.core.lifecycle.registry.Registry.stamp`): each state record
has a key of its own, so compaction keeps every transition's time.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from worker.core.lifecycle.history import parse_history_key
from worker.core.lifecycle.policy import Published

__all__ = ["EVENTS", "Mark", "supersessions", "transition_marks"]

#: Lifecycle events of a version, in the order they happen.
EVENTS = ("published", "promoted", "superseded", "retired")


@dataclass(frozen=True)
class Mark:
    """One lifecycle event of a version: ``event`` (one of :data:`EVENTS`) at ``at`` (UTC),
    or ``at`` None when the state says it happened but no record time is known."""

    event: str
    at: datetime | None


def transition_marks(
    published: Published, stamps: Mapping[str, datetime], superseded_at: datetime | None
) -> tuple[Mark, ...]:
    """The lifecycle marks of one version: publication from its record's ``published_at``,
    promotion and retirement from the timestamps of its state records (``stamps``: config
    key -> Kafka timestamp), supersession from the record that superseded it."""
    vkey = published.contract.key
    at: dict[str, datetime] = {}
    for key, when in stamps.items():
        hk = parse_history_key(key)
        if hk is None or hk.vkey != vkey or hk.state is None:
            continue
        event = "retired" if hk.state == "retired" else None
        if hk.state == "active" and hk.mode == "enforcing":
            event = "promoted"
        if event is not None and (event not in at or when < at[event]):
            at[event] = when
    marks = [Mark("published", published.published_at)]
    if published.mode == "enforcing":
        marks.append(Mark("promoted", at.get("promoted", published.published_at)))
    if published.state == "superseded" or superseded_at is not None:
        marks.append(Mark("superseded", superseded_at))
    if published.state == "retired":
        marks.append(Mark("retired", at.get("retired")))
    return tuple(marks)


def supersessions(
    known: Sequence[Published], stamps: Mapping[str, datetime]
) -> dict[str, datetime]:
    """``layer/version`` -> time of the record (of a later version) that superseded it:
    the earliest timestamp under that version's keys, else its ``published_at``."""
    out: dict[str, datetime] = {}
    for p in known:
        if not p.supersedes:
            continue
        times = [t for k, t in stamps.items() if k.startswith(f"{p.contract.key}/")]
        when = min(times) if times else p.published_at
        for target in p.supersedes:
            out[target] = min(when, out.get(target, when))
    return out
