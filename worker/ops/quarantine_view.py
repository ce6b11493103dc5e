"""Text renderings of quarantined batches: one line, a table, the whole entry.

What ``contract-gate quarantine tail`` and ``show`` print; every cell and value an
operator sees is clipped and stripped of control characters (:data:`MAX_CELL_CHARS`).
"""

from __future__ import annotations

import re
import textwrap
from collections.abc import Iterable, Iterator, Mapping
from datetime import datetime, timezone
from typing import Any

from worker.core._util.jsonsafe import dumps_json
from worker.core._util.text import one_line
from worker.gate.route import REPLAY_OF
from worker.io.reports.text import brief, offender_lines
from worker.ops.quarantine import QuarantineEntry, _when

__all__ = [
    "FOLLOW_WIDTHS",
    "MAX_CELL_CHARS",
    "TABLE_HEAD",
    "follow_rows",
    "render_entry",
    "render_line",
    "table_row",
    "table_rows",
]


def _broken(record: dict[str, Any]) -> list[str]:
    return [
        f"{r['version']}:{r['clause']}" if r.get("clause") else r["code"] for r in record["reasons"]
    ] or [record["reason_code"]]


def render_line(entry: QuarantineEntry) -> str:
    """One readable line: time, layer, batch id, what broke, diagnoses, coordinates."""
    if entry.record is None:
        return (
            f"?  {_text(entry.layer or '-')}  {_text(entry.batch_id or '-')}  undecodable "
            f"record: {entry.error}"
        )
    r = entry.record
    replay = "  replay" if entry.headers.get(REPLAY_OF) else ""
    line = (
        f"{_when(entry)}  {_text(entry.layer or '-')}  {_text(entry.batch_id or '-')}{replay}  "
        f"{', '.join(_broken(r))}"
    )
    if r["diagnoses"]:
        line += f"  [{'; '.join(r['diagnoses'])}]"
    return f"{line}  ({entry.partition}@{entry.offset})"


def _what(record: Mapping[str, Any]) -> str:
    """What broke, in words: ``v1.0:valid (1 invalid: Self-intersection[0.5 0.5])``, or the
    reason code and the head of its message."""
    parts = []
    for r in record["reasons"]:
        if r.get("clause"):
            said = brief(r.get("kind"), r.get("measured"), r["message"], 60)
            parts.append(f"{r['version']}:{r['clause']} ({said})")
        else:
            # the batch id is in its own column: show why, not "payload of batch <id> ..."
            message = re.sub(
                r"^(payload of )?batch \S+ (cannot be loaded: )?", "", str(r["message"])
            )
            parts.append(f"{r['code']} ({brief(None, None, message, 100)})")
    return "; ".join(parts) or record["reason_code"]


#: The header of ``quarantine tail``'s table; the last column is never padded.
TABLE_HEAD = ("quarantined at", "layer", "batch", "replay", "record", "what broke")
#: Widths of the padded columns with ``--follow``, where rows print as records arrive and
#: cannot be aligned to later ones: an ISO time to the second with offset, 24 characters
#: of layer, a UUID, ``replay``, a partition@offset; a longer cell widens its own row only.
FOLLOW_WIDTHS = (25, 24, 36, 6, 10)


def table_row(e: QuarantineEntry) -> tuple[str, str, str, str, str, str]:
    """One row of ``quarantine tail``'s table (columns of :data:`TABLE_HEAD`): time,
    layer, batch id, ``replay`` when the batch is a replay (header ``replay-of``), record
    coordinates ``partition@offset``, what broke in words with measured values, diagnoses."""
    if e.record is None:
        return (
            "?",
            _text(e.layer or "-"),
            _text(e.batch_id or "-"),
            "",
            f"{e.partition}@{e.offset}",
            f"undecodable record: {e.error}",
        )
    replay = "replay" if e.headers.get(REPLAY_OF) else ""
    what = _what(e.record)
    if e.record["diagnoses"]:
        what += f"  [{'; '.join(e.record['diagnoses'])}]"
    return (
        _when(e),
        _text(e.layer or "-"),
        _text(e.batch_id or "-"),
        replay,
        f"{e.partition}@{e.offset}",
        what,
    )


def _joined(row: tuple[str, ...], widths: Iterable[int]) -> str:
    return "  ".join(c.ljust(w) for c, w in zip(row[:5], widths, strict=True)) + "  " + row[5]


def table_rows(entries: Iterable[QuarantineEntry]) -> list[str]:
    """``quarantine tail``'s lines for ``entries``: a header, then one row per entry
    (:func:`table_row`) ordered by quarantine time across partitions (records without a
    readable time last), columns aligned; empty without entries."""
    rows = [table_row(e) for e in sorted(entries, key=_sort_key)]
    if not rows:
        return []
    widths = [max(len(r[i]) for r in [TABLE_HEAD, *rows]) for i in range(5)]
    return [_joined(r, widths) for r in [TABLE_HEAD, *rows]]


def follow_rows(entries: Iterable[QuarantineEntry]) -> Iterator[str]:
    """``quarantine tail --follow``'s lines: the same header and columns as
    :func:`table_rows`, padded to :data:`FOLLOW_WIDTHS`, one row as each record arrives."""
    yield _joined(TABLE_HEAD, FOLLOW_WIDTHS)
    for e in entries:
        yield _joined(table_row(e), FOLLOW_WIDTHS)


#: Characters of a layer or batch id shown in a table cell (both are a producer's).
MAX_CELL_CHARS = 64


def _text(value: Any) -> str:
    """A producer's value fit for one table cell: decoded, control characters escaped
    (``\\x0a``: a newline or NUL in a forged layer broke the table and reached the
    terminal), clipped to :data:`MAX_CELL_CHARS`."""
    return one_line(value, MAX_CELL_CHARS)


def _sort_key(entry: QuarantineEntry) -> tuple[int, datetime, int, int]:
    at = entry.record.get("quarantined_at") if entry.record else None
    if not isinstance(at, datetime):
        return (1, datetime.min.replace(tzinfo=timezone.utc), entry.partition, entry.offset)
    at = at if at.tzinfo else at.replace(tzinfo=timezone.utc)
    return (0, at, entry.partition, entry.offset)


def _value(v: Any) -> str:
    return dumps_json(v, sort_keys=True, default=str)


def render_entry(entry: QuarantineEntry) -> str:
    """The full record: source, every reason with measured versus expected, diagnoses."""
    if entry.record is None:
        return f"{entry.coordinates}: undecodable quarantine record: {entry.error}"
    r = entry.record
    lines = [
        f"batch {one_line(entry.batch_id or '-')} of layer {one_line(entry.layer or '-')}: "
        f"quarantined {_when(entry)} by {one_line(r['worker_id'])} ({r['reason_code']})",
        f"  record:   {entry.coordinates}",
        f"  source:   {r['source_topic']}[{r['source_partition']}]@{r['source_offset']}, "
        + (
            f"original {len(r['original'])} bytes (replayable)"
            if r["original"]
            else "original not carried (too large or empty): not replayable"
        ),
    ]
    if r["diagnoses"]:
        lines.append(f"  diagnoses: {'; '.join(r['diagnoses'])}")
    lines.append("  reasons:")
    for reason in r["reasons"]:
        head = (
            f"{reason['version']} ({reason['mode']}) {reason['clause']}"
            if reason.get("clause")
            else reason["code"]
        )
        lines.extend(_wrap(f"{head}: {reason['message']}", "    ", "      "))
        if isinstance(reason.get("offenders"), dict):
            for line in offender_lines(reason["offenders"], kind=_kind(reason)):
                lines.extend(_wrap(line, "      ", "        "))
        if reason.get("measured") is not None or reason.get("expected") is not None:
            lines.append(f"      measured: {_value(reason['measured'])}")
            lines.append(f"      expected: {_value(reason['expected'])}")
    return "\n".join(lines)


def _kind(reason: Mapping[str, Any]) -> str:
    """The clause kind of a reason as the record carries it (``""`` for a record written
    before reasons carried their kind, or a reason that is no clause's)."""
    return str(reason.get("kind") or "")


def _wrap(text: str, first: str, rest: str) -> list[str]:
    return textwrap.wrap(
        text,
        100,
        initial_indent=first,
        subsequent_indent=rest,
        break_long_words=False,
        break_on_hyphens=False,
    ) or [first]
