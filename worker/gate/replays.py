"""Replays: the ``replay-of`` / ``replay-force`` headers, ``duplicate_replay``, the ledger.

``contract-gate quarantine replay`` writes a quarantined batch back to the batches topic
with a ``replay-of`` header naming the original. A batch is admitted once: the worker keeps
a :class:`~worker.core.replays.ReplayLedger` of the originals it admitted (filled at start
from the tail of the admitted topic: :func:`read_admitted_replays`), and
:func:`dedupe_replays` replaces a second admission, before it is produced, by a
``duplicate_replay`` quarantine record, unless its operator forced it (``replay-force:
1``). The ledger is added to only once a transaction committed
(:class:`worker.gate.checkpoint.Checkpoint`): an aborted one is consumed again.
"""

from __future__ import annotations

import logging
from dataclasses import replace
from datetime import datetime

from worker.core._util.text import clip
from worker.core.errors import BrokerError
from worker.core.replays import ReplayLedger
from worker.gate.records import (
    REPLAY_FORCE,
    REPLAY_OF,
    Outcome,
    Source,
    failed,
    quarantine_record,
)
from worker.kafka.admin import read_topic
from worker.kafka.settings import MAX_MESSAGE_BYTES, Settings, Topics

__all__ = [
    "REPLAY_FORCE",
    "REPLAY_OF",
    "admitted_originals",
    "dedupe_replays",
    "duplicate_replay",
    "read_admitted_replays",
    "replay_forced",
    "replay_of",
    "restore_ledger",
]

log = logging.getLogger(__name__)


def replay_forced(source: Source) -> bool:
    """Whether a consumed record carries ``replay-force: 1`` (:data:`REPLAY_FORCE`)."""
    return any(key == REPLAY_FORCE and value == b"1" for key, value in source.headers)


def replay_of(source: Source) -> str | None:
    """The ``replay-of`` header of a consumed record (the replayed original), or None."""
    for key, value in source.headers:
        if key == REPLAY_OF and value:
            return value.decode("utf-8", "replace")
    return None


def duplicate_replay(
    outcome: Outcome,
    original: str,
    topics: Topics,
    *,
    now: datetime,
    worker_id: str,
    max_record_bytes: int = MAX_MESSAGE_BYTES,
) -> Outcome:
    """The outcome of a replay whose original was already admitted: one quarantine
    record (``duplicate_replay``, at most ``max_record_bytes``: without the original when
    it would not fit), no evaluation records (the batch was judged already)."""
    decision = failed(
        "duplicate_replay",
        f"batch {outcome.batch_id or '?'} is a replay of {clip(original, 200)}, which was "
        "already admitted after another replay; a batch is admitted once",
    )
    record = quarantine_record(
        outcome.source,
        outcome.layer,
        outcome.batch_id,
        decision,
        topics,
        now,
        worker_id,
        max_record_bytes,
    )
    return replace(outcome, decision=decision, records=(record,))


def dedupe_replays(
    outcomes: list[Outcome],
    ledger: ReplayLedger,
    topics: Topics,
    *,
    now: datetime,
    worker_id: str,
    max_record_bytes: int = MAX_MESSAGE_BYTES,
) -> tuple[list[Outcome], list[str]]:
    """Replace the admission of a replay whose original was admitted already.

    Parameters
    ----------
    outcomes : list of Outcome
        One run, in order.
    ledger : ReplayLedger
        The originals admitted before this run (read, not changed).
    topics, now, worker_id, max_record_bytes
        As :func:`duplicate_replay`.

    Returns
    -------
    tuple of (list of Outcome, list of str)
        The outcomes, an admitted replay whose original is in ``ledger`` or admitted
        earlier in ``outcomes`` replaced by :func:`duplicate_replay` (unless forced:
        ``replay-force``); and the originals this run admits, in order.
    """
    admitted: list[str] = []
    out: list[Outcome] = []
    for outcome in outcomes:
        original = replay_of(outcome.source) if outcome.decision.admitted else None
        if original is None:
            out.append(outcome)
        elif (original in ledger or original in admitted) and not replay_forced(outcome.source):
            out.append(
                duplicate_replay(
                    outcome,
                    original,
                    topics,
                    now=now,
                    worker_id=worker_id,
                    max_record_bytes=max_record_bytes,
                )
            )
        else:
            admitted.append(original)
            out.append(outcome)
    return out, admitted


def admitted_originals(committed: list[Outcome]) -> list[str]:
    """The originals of the admitted replays among ``committed`` outcomes, in order."""
    originals = [replay_of(o.source) for o in committed if o.decision.admitted]
    return [r for r in originals if r is not None]


def read_admitted_replays(
    settings: Settings, tail_per_partition: int, timeout_s: float = 30.0
) -> list[str]:
    """``replay-of`` header values of the last ``tail_per_partition`` admitted records of
    each partition, oldest first (bounded however long the topic is).

    Raises
    ------
    BrokerError
        The topic is missing or EOF is not reached within ``timeout_s``.
    """
    found: list[str] = []
    for msg in read_topic(
        settings, settings.topics.admitted, tail=tail_per_partition, timeout_s=timeout_s
    ):
        for key, value in msg.headers() or ():
            if key == REPLAY_OF and value:
                found.append(value.decode("utf-8", "replace"))
    return found


def restore_ledger(
    ledger: ReplayLedger, settings: Settings, tail_per_partition: int, timeout_s: float
) -> int:
    """Fill ``ledger`` from the tail of the admitted topic (:func:`read_admitted_replays`).

    A failed read is logged at WARNING, never fatal: the ledger then starts empty.

    Returns
    -------
    int
        Originals read (0 when the topic was not read).
    """
    try:
        found = read_admitted_replays(settings, tail_per_partition, timeout_s=timeout_s)
    except BrokerError as exc:
        log.warning("replay ledger starts empty: the admitted topic was not read (%s)", exc)
        return 0
    ledger.add(found)
    return len(found)
