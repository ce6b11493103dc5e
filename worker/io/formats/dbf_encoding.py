"""The text encoding of a shapefile's DBF, decided by the rule GDAL's regular API follows.

GDAL's Shapefile driver (https://gdal.org/en/stable/drivers/vector/shapefile.html,
"Encoding"): the code page named by the ``.cpg`` file beside the ``.dbf``, else the
language driver id (LDID, byte 29 of the DBF header, dBase III+/IV file structure), else
no recoding, which pyogrio, geopandas and Fiona take as ISO-8859-1. The gate judges the
text that these GDAL-based consumers receive, so it reads the DBF the same way and says
which rule decided (:class:`TextEncoding`); where no ``.cpg`` decided and the bytes are
also valid UTF-8, it suggests adding one (UTF-8 written without a ``.cpg`` is the common
mistake: GDAL then shows ``ForÃªt`` for ``Forêt``).
"""

from __future__ import annotations

import codecs
from dataclasses import dataclass
from pathlib import Path

from worker.core._util.text import clip
from worker.core.errors import PayloadCorrupt
from worker.io.formats.sidecars import open_sidecar

__all__ = ["TextEncoding", "UnknownCodePage", "dbf_encoding"]

#: The encoding GDAL-based readers assume when neither a .cpg nor the LDID names one.
DEFAULT_ENCODING = "ISO-8859-1"
#: Record bytes read to say whether the text is also valid UTF-8 (a sample, at most).
SAMPLE_BYTES = 16 * 1024 * 1024

#: LDID (DBF header byte 29) -> encoding, as GDAL's OGRShapeLayer::ConvertCodePage maps
#: it (the dBase/ArcGIS language driver table); an LDID outside it is not recoded.
LDID_ENCODINGS: dict[int, str] = {
    1: "CP437", 2: "CP850", 3: "CP1252", 4: "CP10000", 8: "CP865", 10: "CP850",
    11: "CP437", 13: "CP437", 14: "CP850", 15: "CP437", 16: "CP850", 17: "CP437",
    18: "CP850", 19: "CP932", 20: "CP850", 21: "CP437", 22: "CP850", 23: "CP865",
    24: "CP437", 25: "CP437", 26: "CP850", 27: "CP437", 28: "CP863", 29: "CP850",
    31: "CP852", 34: "CP852", 35: "CP852", 36: "CP860", 37: "CP850", 38: "CP866",
    55: "CP850", 64: "CP852", 77: "CP936", 78: "CP949", 79: "CP950", 80: "CP874",
    87: "ISO-8859-1", 88: "CP1252", 89: "CP1252", 100: "CP852", 101: "CP866",
    102: "CP865", 103: "CP861", 104: "CP895", 105: "CP620", 106: "CP737", 107: "CP857",
    108: "CP863", 120: "CP950", 121: "CP949", 122: "CP936", 123: "CP932", 124: "CP874",
    134: "CP737", 135: "CP852", 136: "CP857", 150: "CP10007", 151: "CP10029",
    200: "CP1250", 201: "CP1251", 202: "CP1254", 203: "CP1253", 204: "CP1257",
}  # fmt: skip


class UnknownCodePage(PayloadCorrupt):
    """A ``.cpg`` file naming an encoding no reader knows."""


@dataclass(frozen=True)
class TextEncoding:
    """How a DBF's text is decoded: ``encoding`` (a GDAL/iconv name), the ``rule`` that
    decided it (a sentence), whether a ``.cpg`` decided (``from_cpg``), whether the
    records hold bytes beyond ASCII (``non_ascii``: else the encoding changes nothing)
    and whether those are also valid UTF-8 (``also_utf8``)."""

    encoding: str
    rule: str
    from_cpg: bool
    non_ascii: bool
    also_utf8: bool

    def note(self, shp: str) -> str | None:
        """The warning for a reader of ``shp``, or None when a ``.cpg`` decided or the
        text is ASCII (every encoding reads it alike)."""
        if self.from_cpg or not self.non_ascii:
            return None
        cpg = Path(shp).with_suffix(".cpg").name
        text = (
            f"{shp}: text decoded as {self.encoding} ({self.rule}), as GDAL-based readers "
            "(ogr2ogr, QGIS, geopandas with pyogrio) decode it"
        )
        if self.also_utf8:
            return text + (
                f"; its bytes are also valid UTF-8: if the text is UTF-8, add {cpg} holding UTF-8"
            )
        return text + f"; add {cpg} naming the encoding to make it explicit"


def cpg_encoding(text: str) -> str | None:
    """The encoding a ``.cpg`` text names, as GDAL's ConvertCodePage reads it: a number
    from 437 to 950 or 1250 to 1258 is a Windows code page (``CP1252``), ``8859x`` or
    ``8859-x`` is ISO-8859-x, ``UTF-8...`` is UTF-8, anything else is taken as an encoding
    name (``Big5``, ``UTF8``); and 65001 (Windows' UTF-8 code page) is UTF-8. None when
    empty."""
    t = text.strip().strip("\x00").strip()
    if not t:
        return None
    number = int(t) if t.isdigit() else -1
    if 437 <= number <= 950 or 1250 <= number <= 1258:
        return f"CP{number}"
    if number == 65001:
        return "UTF-8"
    if t.upper().startswith("8859"):
        return "ISO-8859-" + t[4:].removeprefix("-")
    if t.upper().startswith("UTF-8"):
        return "UTF-8"
    return t


def dbf_encoding(path: Path, member: str | None = None) -> TextEncoding | None:
    """The encoding of the DBF beside the shapefile ``path`` (or beside the ``.shp``
    ``member`` of the zip ``path``), or None when it has no DBF.

    Raises
    ------
    UnknownCodePage
        The ``.cpg`` names an encoding that is not known (its text is named).
    """
    target = str(path) if member is None else f"{path}/{member}"
    dbf, cpg = _sidecar(path, member, ".dbf"), _sidecar(path, member, ".cpg")
    if dbf is None:
        return None
    head, sample = dbf
    non_ascii = not sample.isascii()
    also_utf8 = non_ascii and _utf8(sample)
    if cpg is not None and (named := cpg_encoding(cpg[0].decode("latin-1"))) is not None:
        try:
            codecs.lookup(named)
        except LookupError:
            raise UnknownCodePage(
                f"{target}: the .cpg file names the encoding {clip(named, 40)!r}, which is "
                "not known; write a known one in it (e.g. UTF-8, ISO-8859-1, 1252)"
            ) from None
        return TextEncoding(named, f"the .cpg file says {clip(named, 40)}", True, non_ascii,
                            also_utf8)  # fmt: skip
    ldid = head[29] if len(head) > 29 else 0
    if ldid in LDID_ENCODINGS:
        enc = LDID_ENCODINGS[ldid]
        rule = f"no .cpg file; the DBF's language driver id (LDID) is {ldid}, {enc}"
        return TextEncoding(enc, rule, False, non_ascii, also_utf8)
    why = "is 0, naming none" if ldid == 0 else f"is {ldid}, not in the LDID table"
    rule = f"no .cpg file and the DBF's language driver id (LDID) {why}: GDAL's default"
    return TextEncoding(DEFAULT_ENCODING, rule, False, non_ascii, also_utf8)


def _utf8(sample: bytes) -> bool:
    try:  # incremental: a character cut at the sample's end is not an error
        codecs.getincrementaldecoder("utf-8")().decode(sample, final=False)
    except UnicodeDecodeError:
        return False
    return True


def _sidecar(path: Path, member: str | None, suffix: str) -> tuple[bytes, bytes] | None:
    """``(first 32 bytes, record sample)`` of the file beside the shapefile with
    ``suffix`` (either case), or None when there is none."""
    with open_sidecar(path, member, suffix) as fh:
        if fh is None:
            return None
        head = fh.read(32)
        if member is None:  # a file: to the header's end, as written
            fh.seek(_header_length(head))
        else:  # a zip member is read forward only
            fh.read(max(0, _header_length(head) - len(head)))
        return head, fh.read(SAMPLE_BYTES)


def _header_length(head: bytes) -> int:
    """Where the records start: the DBF header length (bytes 8-9, little-endian)."""
    return int.from_bytes(head[8:10], "little") if len(head) >= 10 else len(head)
