"""The frozen data of a drafted contract (pure): options, samples, clauses, notes.

Built by :func:`worker.core.contracts.draft.draft_contract`, rendered by
:mod:`worker.core.contracts.draft_yaml`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["Codes", "Draft", "DraftClause", "DraftOptions", "Fields", "Note", "SampleInfo"]


@dataclass(frozen=True)
class DraftOptions:
    """The flags of ``contract init``: ``margin`` a fraction (0.05 is 5 %), ``max_codes``
    the most distinct values a domain lists, ``cadence`` an ISO 8601 duration,
    ``objective`` a fraction in (0, 1]."""

    layer: str
    margin: float = 0.05
    max_codes: int = 50
    cadence: str = "PT6H"
    objective: float = 0.99
    owner: str = "unassigned"


@dataclass(frozen=True)
class SampleInfo:
    """One sample as read: its name (path or URI), the CRS its file states (text as
    read, None when it states none), its axis order and its feature count;
    ``crs_by_format`` when the CRS is its format's default (OGC:CRS84 where the format's
    rules say so when the file states none; see worker.io.formats) rather than written in
    the file."""

    name: str
    declared_crs: str | None
    axis_order: str
    features: int
    crs_by_format: bool = False


@dataclass(frozen=True)
class DraftClause:
    """One drafted clause: ``params`` are ``(key, value, comment)`` in the order written
    (comment None for none); ``comments`` go above the clause."""

    name: str
    kind: str
    params: tuple[tuple[str, Any, str | None], ...]
    comments: tuple[str, ...] = ()
    on_break: str = "halt"


@dataclass(frozen=True)
class Note:
    """A clause left out, with the comment lines saying why."""

    comments: tuple[str, ...]


@dataclass(frozen=True)
class Draft:
    """The draft document: ``header`` comment lines, the top-level fields, the clauses."""

    header: tuple[str, ...]
    layer: str
    cadence: str
    objective: float
    owner: str
    changelog: str
    clauses: tuple[DraftClause | Note, ...] = field(default_factory=tuple)


@dataclass(frozen=True)
class Codes:
    """A domain's ``values``: ``(code, meaning, comment)`` per code, in the order written
    (codes are str or int and keep their type)."""

    entries: tuple[tuple[str | int, str, str], ...]


@dataclass(frozen=True)
class Fields:
    """A schema's ``fields``: ``(name, type, nullable, comment)`` per field."""

    entries: tuple[tuple[str, str, bool, str], ...]
