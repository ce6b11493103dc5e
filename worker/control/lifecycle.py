"""The config topic read as lifecycle records: every published version with its mode, state,
change class and provenance (for ``contract publish`` and ``promote``; ``list`` is
:mod:`worker.control.listing`)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING, Any

from worker.control.results import PromoteResult, RecordWritten
from worker.core.errors import PolicyError
from worker.core.lifecycle.policy import Published
from worker.core.lifecycle.registry import RecordingRegistry, config_key
from worker.io.codec import encode_contract_record
from worker.kafka.config_topic import read_config
from worker.kafka.config_writer import produce_config_record
from worker.kafka.settings import Settings

if TYPE_CHECKING:
    from worker.core.lifecycle.evidence import Evidence

__all__ = [
    "MAX_NOW_AHEAD",
    "canonical_version",
    "gather_evidence",
    "produce_records",
    "promote",
    "read_published",
    "write_records",
]

#: How far ``--now`` of ``contract promote`` may be ahead of the wall clock (the default
#: ``max_clock_skew`` of freshness clauses).
MAX_NOW_AHEAD = timedelta(minutes=5)


def read_published(settings: Settings, timeout_s: float = 30.0) -> RecordingRegistry:
    """The config topic read to partition EOF into a :class:`RecordingRegistry`."""
    return read_config(settings, RecordingRegistry(), timeout_s)


def lifecycle_record(
    p: Published, *, document: bool, builds_on: str | None, now: datetime, by: str
) -> tuple[str, dict[str, Any]]:
    """The config key and ContractRecord fields of one write (issue 30).

    ``document`` True: the document record (key ``layer/version/digest``, written once);
    else a state record of ``p``'s document (key ``layer/version/digest/mode-state``,
    empty document text, ``published_at``/``published_by`` of the change: ``now``,
    ``by``). Both name the key they build on (``builds_on``).
    """
    from worker.core.lifecycle.history import state_key

    c = p.contract
    if document:
        return config_key(c), {**p.to_record(), "record_kind": "document", "builds_on": builds_on}
    return state_key(c.key, c.digest, p.mode, p.state), {
        **p.to_record(),
        "document": "",
        "changelog": "",
        "differences": [],
        "published_at": now,
        "published_by": by,
        "record_kind": "state",
        "builds_on": builds_on,
    }


def write_records(
    settings: Settings,
    records: tuple[Published, ...],
    *,
    head: str | None = None,
    documents: frozenset[str] = frozenset(),
) -> list[str]:
    """:func:`produce_records`, one summary line per record
    (``wrote layer/vM.N mode/state at TOPIC[P]@O``)."""
    written = produce_records(settings, records, head=head, documents=documents)
    return [f"wrote {r.version} {r.mode}/{r.state} at {r.at}" for r in written]


def produce_records(
    settings: Settings,
    records: tuple[Published, ...],
    *,
    head: str | None = None,
    documents: frozenset[str] = frozenset(),
) -> tuple[RecordWritten, ...]:
    """Produce each record to the config topic in order; returns where each one went.

    A record whose ``layer/version`` is in ``documents`` is written as the version's
    document record, every other one as a state record of its document
    (:func:`lifecycle_record`); the first builds on ``head`` (the key of the layer's last
    record, :meth:`~worker.core.lifecycle.registry.Registry.head`), each next one on the
    record before it.

    Raises
    ------
    BrokerError
        A record is not delivered.
    """
    import getpass

    now, by = datetime.now(timezone.utc), getpass.getuser()
    written = []
    for p in records:
        key, record = lifecycle_record(
            p, document=p.contract.key in documents, builds_on=head, now=now, by=by
        )
        partition, offset = produce_config_record(settings, key, encode_contract_record(record))
        head = key
        topic = settings.topics.contracts
        written.append(
            RecordWritten(key, p.contract.key, p.mode, p.state, topic, partition, offset)
        )
    return tuple(written)


def canonical_version(text: str) -> str:
    """``v7`` -> ``v7.0``, ``7.1`` -> ``v7.1``.

    Raises
    ------
    PolicyError
        Not a ``v<major>.<minor>`` version.
    """
    import re

    m = re.fullmatch(r"v?(\d+)(?:\.(\d+))?", text.strip())
    if m is None:
        raise PolicyError(
            f"{text!r} is not a version; write v<major>.<minor>, e.g. v7.1",
            field="version",
            fix="write v<major>.<minor>, e.g. v7.1",
        )
    return f"v{int(m.group(1))}.{int(m.group(2) or 0)}"


def _find(registry: RecordingRegistry, layer: str, version: str) -> Published:
    key = f"{layer}/{canonical_version(version)}"
    found = next((p for p in registry.published(layer) if p.contract.key == key), None)
    if found is None:
        known = ", ".join(p.contract.version for p in registry.published(layer)) or "none"
        raise PolicyError(
            f"{key} is not published (versions of {layer}: {known})",
            field="version",
            fix=f"give one of the published versions of {layer}: {known}",
        )
    return found


def gather_evidence(
    settings: Settings, layer: str, version: str, now: datetime, timeout_s: float = 60.0
) -> Evidence:
    """The :class:`Evidence` of a published version from the evaluations topic."""
    from worker.core.lifecycle.evidence import summarise
    from worker.kafka.evaluations import read_evaluations

    target = _find(read_published(settings, timeout_s), layer, version)
    return summarise(target.contract, read_evaluations(settings, layer, timeout_s), now)


def promote(
    settings: Settings,
    layer: str,
    version: str,
    *,
    now: datetime,
    yes: bool = False,
    confirm: Callable[[str], bool] | None = None,
) -> PromoteResult:
    """Promote an observing version to enforcing (docs/design.md section 5); returns what
    it did (:class:`~worker.control.results.PromoteResult`: the evidence, the records).

    Refused while its evidence (first to last evaluation) spans less than one cadence
    cycle (the message says how much is missing), and when ``now`` is more than
    :data:`MAX_NOW_AHEAD` ahead of the wall clock (``--now`` is for tests and replays of
    the past, not for skipping the wait). Asks ``confirm`` (a question: the evidence, the
    batches it would have rejected, a warning line when its attainment is below its
    objective -> bool) unless ``yes``; then writes it enforcing and supersedes the earlier
    active revisions of its major.

    Raises
    ------
    PolicyError
        Unknown version, not observing/active, ``now`` in the future, too little
        evidence, not confirmed.
    """
    from worker.core.lifecycle.evidence import attainment_warning, summarise
    from worker.core.lifecycle.promotion import decide_promotion
    from worker.io.reports.evidence import render_evidence_text
    from worker.kafka.evaluations import read_evaluations

    wall = datetime.now(timezone.utc)
    if now - wall > MAX_NOW_AHEAD:
        raise PolicyError(
            f"--now {now.isoformat()} is {(now - wall).total_seconds() / 3600:.1f} h ahead of "
            f"the wall clock ({wall.isoformat(timespec='seconds')}): refused for promote; "
            "--now is for tests and replays of the past",
            field="--now",
            fix="leave --now out, or give a time no later than the wall clock",
        )

    registry = read_published(settings)
    target = _find(registry, layer, version)
    key = target.contract.key
    known = registry.published(layer)
    if target.mode == "enforcing" or target.state != "active":
        d = decide_promotion(key, known=known, span_s=0, confirmed=False)
        if d.action == "noop":
            return PromoteResult(
                layer, target.contract.version, key, "no-op", "enforcing", "enforcing", d.message
            )
        raise PolicyError(d.message, field=d.field, fix=d.fix)
    evidence = summarise(target.contract, read_evaluations(settings, layer), now)
    report = render_evidence_text(evidence)
    warning = attainment_warning(evidence)
    if warning:
        report += "\n" + warning
    d = decide_promotion(key, known=known, span_s=evidence.span_s, confirmed=True)
    if d.action == "refuse":
        raise PolicyError(f"{d.message}\n{report}", field=d.field, fix=d.fix)
    if not yes:
        question = f"{report}\npromote {key} to enforcing? [y/N] "
        if confirm is None or not confirm(question):
            raise PolicyError(
                f"{key}: promotion not confirmed (answer y, or pass --yes)",
                field="--yes",
                fix="answer y, or pass --yes",
            )
    written = produce_records(settings, d.writes, head=registry.head(layer))
    return PromoteResult(
        layer,
        target.contract.version,
        key,
        "promoted",
        target.mode,
        "enforcing",
        d.message,
        evidence,
        warning,
        tuple(p.contract.version for p in d.writes[1:]),
        written,
    )
