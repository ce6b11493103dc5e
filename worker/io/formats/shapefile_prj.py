"""A shapefile's ``.prj`` as the file's own CRS statement when GDAL made no CRS of it
(:func:`unread_prj`, read by :mod:`worker.io.formats.ogr`): GDAL drops a ``.prj`` it cannot
parse with a warning, and the batch would read as one that states no CRS."""

from __future__ import annotations

from pathlib import Path

from worker.io.formats.sidecars import open_sidecar

__all__ = ["MAX_PRJ_CHARS", "unread_prj"]


#: Most bytes of a .prj read when GDAL made no CRS of it (a WKT CRS is a few KiB); only
#: these are read, from a file or a zip member, whatever its size.
MAX_PRJ_CHARS = 64 * 1024


def unread_prj(path: Path, fmt: str, target: str) -> str | None:
    """The text of a shapefile's ``.prj`` (beside it, or beside it in the zip) when GDAL
    made no CRS of it: GDAL drops a .prj it cannot parse with a warning, and the file
    would read as one stating no CRS; its own statement is kept instead (a ``crs`` clause
    then says it cannot be resolved). None without a .prj, or an empty one."""
    if fmt == "ESRI Shapefile":
        member = None
    elif fmt == "zip" and target.lower().endswith(".shp"):
        member = target.removeprefix(f"/vsizip/{path.resolve()}/")
    else:
        return None
    with open_sidecar(path, member, ".prj") as fh:
        raw = b"" if fh is None else fh.read(MAX_PRJ_CHARS)
    text = raw.decode("utf-8", "replace").lstrip("\ufeff").strip()
    return text or None
