"""Input formats: one reader module per file format, registered once in :data:`FORMATS`.

Each module exposes a ``READER`` (:class:`~worker.io.formats.base.Reader`: magic-byte
``sniff``, ``default_limit_bytes``, ``read``, ``chunks``). Dispatch
(:func:`worker.io.payloads.base.sniff_format`), the size limits of
:class:`~worker.io.payloads.policy.PayloadPolicy`, ``--max-payload-bytes``, the help texts
and the "the formats read are ..." messages read this table: adding a format is one module
and one line here. Every reader returns the canonical batch
(:func:`~worker.io.formats.base.canonical_table`).

Output formats are registered here too: :data:`OFFENDERS_FILE`, the writer of the
offenders file (``check --offenders``, ``quarantine show``). Outside this package no
module names a format (``tests/test_architecture.py`` greps for them); see
``docs/architecture-formats.md``.
"""

from __future__ import annotations

from pathlib import Path

from worker.io.formats import geojson, geoparquet, offenders_file, ogr
from worker.io.formats.base import FeatureData, Reader, canonical_table, derive_schema
from worker.io.formats.offenders_file import OffendersFile

__all__ = [
    "FORMATS",
    "OFFENDERS_FILE",
    "FeatureData",
    "OffendersFile",
    "Reader",
    "batch_files",
    "canonical_table",
    "derive_schema",
    "formats_named",
    "formats_read",
]

#: Every reader by name, in the order files are sniffed and formats named.
FORMATS: dict[str, Reader] = {
    r.name: r
    for r in (
        geoparquet.READER,
        geojson.READER,
        ogr.READER,
    )
}

#: The writer of the offenders file (``check --offenders``, ``quarantine show``).
OFFENDERS_FILE: OffendersFile = offenders_file.WRITER


def batch_files(directory: Path, stem: str) -> list[Path]:
    """The files of ``directory`` named ``stem`` with a suffix of a reader of
    :data:`FORMATS` (e.g. a shipped batch file found by its layer's name), sorted."""
    suffixes = {s for r in FORMATS.values() for s in r.suffixes}
    return sorted(p for p in directory.glob(f"{stem}.*") if p.suffix.lower() in suffixes)


def formats_named(
    *, chunked: bool = False, by_reference: bool = False, local_only: bool = False
) -> str:
    """The formats of the registry as a phrase (``A, B or C``), for help texts: only the
    ones read in chunks (``chunked``), read by reference (``by_reference``) or read only
    from a local file (``local_only``)."""
    names = [
        d
        for r in FORMATS.values()
        if (r.chunked or not chunked)
        and (r.by_reference or not by_reference)
        and (not r.by_reference or not local_only)
        for d in r.described
    ]
    return ", ".join(names[:-1]) + f" or {names[-1]}" if len(names) > 1 else names[0]


def formats_read(by_reference: bool = False) -> str:
    """``the formats read are A, B and C`` (only the by-reference ones if asked)."""
    names = [d for r in FORMATS.values() if r.by_reference or not by_reference for d in r.described]
    listed = ", ".join(names[:-1]) + f" and {names[-1]}" if len(names) > 1 else names[0]
    return f"the formats read {'by reference ' if by_reference else ''}are {listed}"
