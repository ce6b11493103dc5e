"""What every payload opening shares: the opened payload, its format, its size checks.

The format comes from the first and last bytes, asked of every reader of
:data:`worker.io.formats.FORMATS` (:func:`sniff_format`); the size is checked against
the limit of the format before any content is read. Error texts carry no AWS credential
of the environment (:func:`_scrub`).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

import pyarrow as pa

from worker.core.errors import PayloadCorrupt, PayloadTooLarge, PayloadUnavailable
from worker.io.formats import FORMATS, formats_read
from worker.io.formats.base import scrub as _scrub
from worker.io.payloads.policy import MIB, PayloadPolicy

if TYPE_CHECKING:
    from worker.io.formats.base import Reader

__all__ = [
    "OpenedPayload",
    "sniff_format",
]


#: Bytes read to recognise the format.
_HEAD_BYTES = 4096


@dataclass
class OpenedPayload:
    """An opened payload: its URI (credentials masked), format (the ``name`` of its
    reader in :data:`~worker.io.formats.FORMATS`), size (bytes), modification time (UTC,
    None when unknown), a pyarrow random-access file positioned anywhere and, for a
    local file, its real path (for readers that hand GDAL a path).

    Read it with :meth:`read_all` or hand :attr:`file` to pyarrow: never more than
    :attr:`size` bytes, the figure checked against the limit."""

    uri: str
    format: str
    size: int
    mtime: datetime | None
    file: pa.NativeFile
    path: str | None = None

    @property
    def reader(self) -> Reader:
        """The reader of :attr:`format`."""
        return FORMATS[self.format]

    def read_all(self) -> bytes:
        """The whole payload: at most :attr:`size` bytes.

        Raises
        ------
        PayloadCorrupt
            Fewer bytes than the size (the file was truncated meanwhile).
        PayloadUnavailable
            An I/O error (transient).
        """
        try:
            self.file.seek(0)
            data = self.file.read(self.size)
        except OSError as exc:
            raise PayloadUnavailable(
                f"{self.uri}: read failed ({_scrub(exc)})", transient=True
            ) from None
        if len(data) < self.size:
            raise PayloadCorrupt(
                f"{self.uri}: truncated while being read ({len(data)} of {self.size} bytes)",
                fix="read the file again once it is written whole",
            )
        return bytes(data)


def sniff_format(head: bytes, tail: bytes, size: int, name: str) -> str:
    """The format (a reader's ``name``) from the first and last bytes: the first reader
    of :data:`~worker.io.formats.FORMATS` that recognises them. Every reader is asked,
    so one may refuse a file its name claims (a name with its suffix but not its magic)
    magic) whatever the order.

    Parameters
    ----------
    head, tail : bytes
        The first bytes (up to 4096) and the last 4 bytes of the payload.
    size : int
        Total size (bytes).
    name : str
        URI or path, for messages and the readers that look at a suffix.

    Raises
    ------
    PayloadCorrupt
        A reader refused the file (truncated, a name without its magic), or no reader
        recognises it; the message names the formats read.
    """
    claims = [r.name for r in FORMATS.values() if r.sniff(head, tail, name)]
    if claims:
        return claims[0]
    magic = "; ".join(r.magic for r in FORMATS.values())
    raise PayloadCorrupt(
        f"{name}: not a JSON document nor any other format read ({magic}); {formats_read()}",
        fix=f"give a batch file in a format read: {formats_read()}",
    )


def _check_size_and_format(name: str, size: int, file: pa.NativeFile, policy: PayloadPolicy) -> str:
    """The format, after checking the size against the limits; reads at most 4096 + 4
    bytes."""
    largest = max(policy.limits.values())
    if size == 0:
        raise PayloadCorrupt(
            f"{name}: an empty file (0 bytes)", fix="give a batch file with features"
        )
    try:
        file.seek(0)
        head = file.read(min(size, _HEAD_BYTES))
        tail = b""
        if size >= 8:
            file.seek(size - 4)
            tail = file.read(4)
        file.seek(0)
    except OSError as exc:
        raise PayloadUnavailable(f"{name}: read failed ({_scrub(exc)})", transient=True) from None
    try:
        fmt = sniff_format(bytes(head), bytes(tail), size, name)
    except PayloadCorrupt:
        if size > largest:  # neither format: the size is the plainer reason
            raise PayloadTooLarge(
                f"{name}: {_too_large(size, largest, 'any payload')}",
                field="--max-payload-bytes",
                fix=_TOO_LARGE_FIX,
            ) from None
        raise
    limit = policy.limit(fmt)
    if size > limit:
        raise PayloadTooLarge(
            f"{name}: {_too_large(size, limit, FORMATS[fmt].title)}",
            field="--max-payload-bytes",
            fix=_TOO_LARGE_FIX,
        )
    return fmt


def _bytes(size: int) -> str:
    """``size`` in bytes and, from 1 KiB, in the largest binary unit it reaches:
    ``512 bytes``, ``2048 bytes (2.0 KiB)``, ``... (2.0 GiB)`` (a 1 KiB limit read
    "0.0 MiB")."""
    for unit, scale in (("GiB", 1024**3), ("MiB", MIB), ("KiB", 1024)):
        if size >= scale:
            return f"{size} bytes ({size / scale:.1f} {unit})"
    return f"{size} bytes"


#: The fix of a payload above its size limit (:class:`PayloadTooLarge`).
_TOO_LARGE_FIX = "raise --max-payload-bytes (CONTRACT_GATE_MAX_PAYLOAD_BYTES) or split the batch"


def _too_large(size: int, limit: int, what: str) -> str:
    return (
        f"{_bytes(size)}, above the limit of {_bytes(limit)} for {what}; raise "
        "--max-payload-bytes "
        "(CONTRACT_GATE_MAX_PAYLOAD_BYTES) or split the batch"
    )
