"""A shapefile's sidecar files (``.dbf``, ``.prj``, ``.cpg``), found as GDAL's shapefile
driver finds them: beside the ``.shp`` with the suffix in either case, or beside the
``.shp`` member of a zip (names compared without case). One place for the lookup the
readers of :mod:`worker.io.formats.dbf_encoding`, :mod:`.dbf_types` and
:mod:`.shapefile_prj` share."""

from __future__ import annotations

import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

__all__ = ["open_sidecar"]


@contextmanager
def open_sidecar(path: Path, member: str | None, suffix: str) -> Iterator[IO[bytes] | None]:
    """The sidecar with ``suffix`` (``.dbf``; ``.DBF`` too) of the shapefile ``path``, or
    of the ``.shp`` ``member`` of the zip ``path``, open for reading (binary); None when
    there is none. Nothing is read: the caller bounds what it reads."""
    if member is None:
        for candidate in (path.with_suffix(suffix), path.with_suffix(suffix.upper())):
            if candidate.is_file():
                with candidate.open("rb") as fh:
                    yield fh
                return
        yield None
        return
    stem = member[: -len(Path(member).suffix)] if Path(member).suffix else member
    with zipfile.ZipFile(path) as z:
        name = {n.lower(): n for n in z.namelist()}.get(f"{stem}{suffix}".lower())
        if name is None:
            yield None
            return
        with z.open(name) as fh:
            yield fh
