"""Text and JSON output of ``contract publish``, ``promote`` and ``retire``.

The control plane returns values (:mod:`worker.control.results`); this module renders
them: the text lines the commands always printed, and the JSON documents of
docs/reference-json-output.md (each with ``lines``, the text output's lines, for display).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from worker.control.results import PromoteResult, PublishResult, RecordWritten, RetireResult

__all__ = [
    "promote_json",
    "promote_text",
    "publish_json",
    "publish_text",
    "records_json",
    "retire_json",
    "retire_text",
]


def records_json(records: tuple[RecordWritten, ...]) -> list[dict[str, Any]]:
    """``[{"key", "version", "mode", "state", "topic", "partition", "offset"}]``."""
    return [
        {
            "key": r.key,
            "version": r.version,
            "mode": r.mode,
            "state": r.state,
            "topic": r.topic,
            "partition": r.partition,
            "offset": r.offset,
        }
        for r in records
    ]


def _lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.strip()]


def publish_text(r: PublishResult) -> str:
    """The text output of ``contract publish``: the policy's message (a restore: one
    ``restored KEY at TOPIC[P]@O`` line per record), a ``wrote`` line per record, then a
    ``note:`` line per region crossing the antimeridian."""
    if r.outcome == "restored":
        head = [f"restored {w.key} at {w.at}" for w in r.records]
    else:
        head = [r.message, *(f"wrote {w.version} {w.mode}/{w.state} at {w.at}" for w in r.records)]
    return "\n".join([*head, *(f"note: {n}" for n in r.antimeridian)])


def publish_json(r: PublishResult) -> dict[str, Any]:
    """The JSON document of ``contract publish`` (docs/reference-json-output.md)."""
    return {
        "file": r.file,
        "dry_run": r.dry_run,
        "layer": r.layer,
        "version": r.version,
        "key": r.key,
        "digest": r.digest,
        "change_class": r.change_class,
        "predecessor": r.predecessor,
        "mode": r.mode,
        "outcome": r.outcome,
        "supersedes": list(r.supersedes),
        "records": records_json(r.records),
        "notes": list(r.notes),
        "warnings": list(r.warnings),
        "lines": _lines(publish_text(r)),
    }


def promote_text(r: PromoteResult) -> str:
    """The text output of ``contract promote``: the evidence (and its attainment warning),
    the promotion, a ``wrote`` line per record; a no-op is its one line."""
    from worker.io.reports.evidence import render_evidence_text

    if r.evidence is None:
        return r.message
    head = [render_evidence_text(r.evidence), *([r.warning] if r.warning else [])]
    wrote = [f"wrote {w.version} {w.mode}/{w.state} at {w.at}" for w in r.records]
    return "\n".join([*head, r.message, *wrote])


def promote_json(r: PromoteResult) -> dict[str, Any]:
    """The JSON document of ``contract promote``: ``evidence`` is None for a no-op, else
    its summary (span and cycles in seconds and cadence cycles, counts, attainment)."""
    from worker.io.reports.evidence import evidence_counts

    e = r.evidence
    evidence = None
    if e is not None:
        evidence = {
            "cadence": e.cadence,
            **evidence_counts(e),
            "would_reject": [p.batch_id for p in e.would_reject],
        }
    return {
        "layer": r.layer,
        "version": r.version,
        "key": r.key,
        "outcome": r.outcome,
        "from_mode": r.from_mode,
        "to_mode": r.to_mode,
        "evidence": evidence,
        "warning": r.warning,
        "supersedes": list(r.supersedes),
        "records": records_json(r.records),
        "lines": _lines(promote_text(r)),
    }


def retire_text(r: RetireResult) -> str:
    """The text output of ``contract retire``: one summary line."""
    stale = f" ({len(r.stale)} stale declaration(s) shown in consumers status)" if r.stale else ""
    by = f" by {r.retired_by}" if r.retired_by else ""
    path = ""
    if r.read_path is not None:
        path = (
            f"; its per-major read path {r.read_path} is no longer written (the topic is kept: "
            "delete it with your Kafka tooling when nothing needs its records)"
        )
    return (
        f"retired {r.layer} {r.major} ({', '.join(r.retired)}){by}: no consumer reads against "
        f"it{stale}{path}"
    )


def retire_json(r: RetireResult) -> dict[str, Any]:
    """The JSON document of ``contract retire``."""
    return {
        "layer": r.layer,
        "version": r.major,
        "retired": list(r.retired),
        "readers_left": r.readers_left,
        "stale": list(r.stale),
        "read_path": r.read_path,
        "retired_by": r.retired_by,
        "records": records_json(r.records),
        "lines": _lines(retire_text(r)),
    }
