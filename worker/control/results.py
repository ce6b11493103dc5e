"""What ``contract publish``, ``promote`` and ``retire`` did, as values (not text).

The control plane returns these frozen dataclasses; the command line renders them as its
text lines or as one JSON document (:mod:`worker.cli.lifecycle_output`). Every field is a
value the control plane computed (the policy's decision, the evidence, the retirement
gate's migration row, the offsets the broker acknowledged), never parsed back from text.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from worker.core.lifecycle.evidence import Evidence

__all__ = ["PromoteResult", "PublishResult", "RecordWritten", "RetireResult"]


@dataclass(frozen=True)
class RecordWritten:
    """One ContractRecord produced to the config topic.

    ``key`` is the record's config key (``layer/version/digest[/mode-state]``), ``version``
    the ``layer/vM.N`` it is about, ``mode``/``state`` what it says; ``topic``,
    ``partition`` and ``offset`` where the broker acknowledged it.
    """

    key: str
    version: str
    mode: str
    state: str
    topic: str
    partition: int
    offset: int

    @property
    def at(self) -> str:
        """Where it went, as ``TOPIC[PARTITION]@OFFSET``."""
        return f"{self.topic}[{self.partition}]@{self.offset}"


@dataclass(frozen=True)
class PublishResult:
    """The outcome of ``contract publish`` (:func:`worker.control.publish.publish_contract`).

    ``outcome`` is ``published``, ``no-op`` (same version, same document), ``dry-run``
    (``--dry-run`` of a publication: ``records`` empty), ``restored`` (records of this
    document a broken history missed, written again) or ``dry-run-restore``; a refusal is raised
    (:class:`worker.core.errors.PolicyError`), never returned. ``change_class`` is
    ``major``/``tightening``/``minor``/``none`` against ``predecessor``, ``first`` for the
    layer's first version, None for a no-op or a restore. ``supersedes`` lists the
    versions (``vM.N``) it supersedes (or would, in a dry run). ``message`` is the policy's
    text (classification, then what happens; ``note:``/``warning:`` lines included);
    ``dry_run`` whether ``--dry-run`` was asked (nothing is written, whatever the outcome);
    ``notes`` the ``note:`` lines (superseded trials, then regions crossing the
    antimeridian) and ``warnings`` the ``warning:`` lines, without their prefix;
    ``antimeridian`` the notes of regions crossing the antimeridian alone (the text output
    prints them last).
    """

    file: str
    layer: str
    version: str
    key: str
    digest: str
    change_class: str | None
    mode: str
    outcome: str
    dry_run: bool
    predecessor: str | None
    supersedes: tuple[str, ...]
    message: str
    records: tuple[RecordWritten, ...] = ()
    notes: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()
    antimeridian: tuple[str, ...] = ()


@dataclass(frozen=True)
class PromoteResult:
    """The outcome of ``contract promote`` (:func:`worker.control.lifecycle.promote`).

    ``outcome`` is ``promoted`` or ``no-op`` (already enforcing: ``evidence`` None, no
    records); refusals are raised. ``from_mode``/``to_mode`` are the modes before and
    after; ``supersedes`` the revisions (``vM.N``) written superseded; ``warning`` the
    attainment warning (:func:`worker.core.lifecycle.evidence.attainment_warning`) or
    None; ``message`` the policy's line.
    """

    layer: str
    version: str
    key: str
    outcome: str
    from_mode: str
    to_mode: str
    message: str
    evidence: Evidence | None = None
    warning: str | None = None
    supersedes: tuple[str, ...] = ()
    records: tuple[RecordWritten, ...] = ()


@dataclass(frozen=True)
class RetireResult:
    """The outcome of ``contract retire`` (:func:`worker.control.retirement.retire`).

    ``major`` is the label retired (``v1``), ``retired`` its active revisions now retired
    (``vM.N``). The retirement gate's state when it passed: ``readers_left`` declared +
    unattributed consumers reading against it (0: else it is refused), ``stale`` consumer
    names whose declaration is stale (not counted). ``read_path`` is the per-major admitted
    topic no longer written, or None for a shared topic; ``retired_by`` the name given.
    """

    layer: str
    major: str
    retired: tuple[str, ...]
    readers_left: int
    stale: tuple[str, ...]
    read_path: str | None
    retired_by: str | None
    records: tuple[RecordWritten, ...] = ()
