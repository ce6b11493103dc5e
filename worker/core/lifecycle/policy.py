"""Lifecycle policy of docs/design.md section 5 (no Kafka): its records and its rules.

:class:`Published` is a contract version as its config record describes it,
:class:`PolicyDecision` the outcome of every lifecycle action; :func:`expected_version`
is the numbering rule, :func:`supersede` and :func:`supersession_keys` the supersession
rule. The decisions read them: publishing in :mod:`worker.core.lifecycle.publishing`,
promotion on evidence in :mod:`worker.core.lifecycle.promotion`, and the escalations of
``contract list`` in :mod:`worker.core.lifecycle.escalations`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from worker.core.contracts.classify import Classification, Difference
from worker.core.model import Contract

__all__ = [
    "PolicyDecision",
    "Published",
    "expected_version",
    "newest",
    "supersede",
    "supersession_keys",
]


@dataclass(frozen=True)
class Published:
    """A contract version as its config record describes it (lifecycle and provenance).

    ``supersedes`` holds the ``layer/version`` keys of the earlier revisions the record
    supersedes when applied (:class:`worker.core.lifecycle.registry.Registry`): the supersession
    travels in the new version's own record, one atomic change.
    """

    contract: Contract
    mode: str
    state: str
    change_class: str | None
    differences: tuple[Difference, ...]
    published_at: datetime
    published_by: str
    supersedes: tuple[str, ...] = ()

    @classmethod
    def from_record(cls, contract: Contract, record: Mapping[str, Any]) -> Published:
        """From a decoded ContractRecord (see :func:`worker.io.codec.decode_contract_record`)."""
        return cls(
            contract=contract,
            mode=record["mode"],
            state=record["state"],
            change_class=record.get("change_class"),
            differences=tuple(
                Difference(d["clause"], d["kind"], d["class"], d["reason"])
                for d in record.get("differences") or ()
            ),
            published_at=record["published_at"],
            published_by=record["published_by"],
            supersedes=tuple(record.get("supersedes") or ()),
        )

    def to_record(self) -> dict[str, Any]:
        """The ContractRecord fields (for :func:`worker.io.codec.encode_contract_record`)."""
        c = self.contract
        return {
            "layer": c.layer,
            "version": c.version,
            "document": c.text,
            "digest": c.digest,
            "mode": self.mode,
            "state": self.state,
            "change_class": self.change_class,
            "differences": [
                {"clause": d.clause, "kind": d.kind, "class": d.class_, "reason": d.reason}
                for d in self.differences
            ],
            "published_at": self.published_at,
            "published_by": self.published_by,
            "changelog": c.changelog,
            "supersedes": list(self.supersedes),
        }


@dataclass(frozen=True)
class PolicyDecision:
    """The outcome of a lifecycle action.

    ``action`` is ``write`` | ``noop`` | ``refuse``; ``writes`` are the records to produce,
    in order: the new or promoted version first, its ``supersedes`` naming the revisions it
    supersedes (a worker applies the supersession with this one record), then a
    ``superseded`` record for each of them (their own keys then say so too, so the state
    outlives the superseding record, and readers of the earlier schema learn it);
    ``message`` is readable text (several lines: the class and differences, then what
    happens). ``notes`` and ``warnings`` are the ``note:`` and ``warning:`` lines of
    ``message`` without their prefix, for structured output (``contract publish --format
    json``). A refusal names the ``field`` (flag, argument or contract field) to change
    and the ``fix``, for :class:`~worker.core.errors.PolicyError`'s own attributes.
    """

    action: str
    message: str
    classification: Classification | None = None
    predecessor: Published | None = None
    writes: tuple[Published, ...] = ()
    notes: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()
    field: str | None = None
    fix: str | None = None


def newest(versions: Iterable[Published]) -> Published | None:
    """The version of ``versions`` with the highest (major, minor), None when empty."""
    return max(versions, key=lambda p: (p.contract.major, p.contract.minor), default=None)


def expected_version(change_class: str, predecessor: Contract, known: Sequence[Published]) -> str:
    """The version number a change of ``change_class`` after ``predecessor`` must carry.

    Major -> the next major after every known major (``v8.0``); tightening, minor (and a
    ``none`` change of spelling) -> the predecessor's major, next minor (``v7.1``).
    """
    if change_class == "major":
        top = max([p.contract.major for p in known] + [predecessor.major])
        return f"v{top + 1}.0"
    return f"v{predecessor.major}.{predecessor.minor + 1}"


def supersede(
    known: Sequence[Published], major: int, below_minor: int, except_key: str
) -> tuple[Published, ...]:
    """The active revisions of ``major`` below ``below_minor`` (but ``except_key``), oldest
    first, as ``superseded`` records: what an enforcing revision supersedes."""
    return tuple(
        replace(p, state="superseded")
        for p in sorted(known, key=lambda p: p.contract.minor)
        if p.state == "active"
        and p.contract.major == major
        and p.contract.minor < below_minor
        and p.contract.key != except_key
    )


def supersession_keys(layer: Sequence[Published], new: Contract) -> tuple[str, ...]:
    """Every earlier revision of ``new``'s major that is not retired, oldest first.

    Cumulative (a v7.2 names v7.0 as well as v7.1), so the supersession stays whole when
    log compaction or a tombstone removes an intermediate revision's record.
    """
    return tuple(
        p.contract.key
        for p in sorted(layer, key=lambda p: p.contract.minor)
        if p.state != "retired"
        and p.contract.major == new.major
        and p.contract.minor < new.minor
        and p.contract.key != new.key
    )
