"""What every payload opening shares: the opened payload, its format, its size checks.

The format comes from the magic bytes (Parquet: ``PAR1`` at both ends; GeoJSON: a JSON
text starting with ``{`` or ``[``); the size is checked against the limit of the format
before any content is read. Error texts carry no AWS credential of the environment
(:func:`_scrub`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow as pa

from worker.core._util.text import clip
from worker.core.errors import (
    PayloadCorrupt,
    PayloadError,
    PayloadTooLarge,
    PayloadUnavailable,
)

if TYPE_CHECKING:
    pass
from worker.io.payloads.policy import MIB, Format, PayloadPolicy

__all__ = [
    "OpenedPayload",
    "parquet_read_error",
    "sniff_format",
]


#: Bytes read to recognise the format.
_HEAD_BYTES = 4096


@dataclass
class OpenedPayload:
    """An opened payload: its URI (credentials masked), format, size (bytes), modification
    time (UTC, None when unknown) and a pyarrow random-access file positioned anywhere.

    Read it with :meth:`read_all` (GeoJSON) or hand :attr:`file` to pyarrow (Parquet):
    never more than :attr:`size` bytes, the figure checked against the limit."""

    uri: str
    format: Format
    size: int
    mtime: datetime | None
    file: pa.NativeFile

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
                f"{self.uri}: truncated while being read ({len(data)} of {self.size} bytes)"
            )
        return bytes(data)


def sniff_format(head: bytes, tail: bytes, size: int, name: str) -> Format:
    """The format from the magic bytes: ``PAR1`` at the start (and end) is Parquet; a JSON
    text (after an optional UTF-8 BOM and whitespace) starting with ``{`` or ``[`` is
    GeoJSON. The name only sharpens the message when it claims Parquet.

    Parameters
    ----------
    head, tail : bytes
        The first bytes (up to 4096) and the last 4 bytes of the payload.
    size : int
        Total size (bytes).
    name : str
        URI or path, for messages and the ``.parquet`` suffix.

    Raises
    ------
    PayloadCorrupt
        Parquet without its closing magic (truncated), a ``.parquet``/``.geoparquet`` name
        without the PAR1 magic, or neither format.
    """
    if head.startswith(b"PAR1"):
        if size < 12 or tail != b"PAR1":
            raise PayloadCorrupt(
                f"{name}: not a readable Parquet file (truncated or corrupt: it starts with "
                "the PAR1 magic bytes but does not end with them)"
            )
        return "parquet"
    if name.lower().rstrip("/").endswith((".parquet", ".geoparquet")):
        raise PayloadCorrupt(
            f"{name}: not a Parquet file (the file does not start with the PAR1 magic bytes)"
        )
    text = head.removeprefix(b"\xef\xbb\xbf").lstrip(b" \t\r\n")
    if text[:1] in (b"{", b"[") or (not text and size > len(head)):
        return "geojson"
    raise PayloadCorrupt(
        f"{name}: not a JSON document (neither Parquet, which starts with the PAR1 magic "
        "bytes, nor GeoJSON, a JSON object starting with '{'); the formats read are GeoJSON, "
        "GeoParquet, Shapefile (.shp, or a .zip holding one), GeoPackage (.gpkg) and "
        "FlatGeobuf (.fgb)"
    )


def _check_size_and_format(
    name: str, size: int, file: pa.NativeFile, policy: PayloadPolicy
) -> Format:
    """The format, after checking the size against the limits; reads at most 4096 + 4
    bytes."""
    largest = max(policy.max_parquet_bytes, policy.max_geojson_bytes)
    if size == 0:
        raise PayloadCorrupt(f"{name}: an empty file (0 bytes)")
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
            raise PayloadTooLarge(f"{name}: {_too_large(size, largest, 'any payload')}") from None
        raise
    limit = policy.limit(fmt)
    if size > limit:
        what = "Parquet" if fmt == "parquet" else "GeoJSON"
        raise PayloadTooLarge(f"{name}: {_too_large(size, limit, what)}")
    return fmt


def _bytes(size: int) -> str:
    """``size`` in bytes and, from 1 KiB, in the largest binary unit it reaches:
    ``512 bytes``, ``2048 bytes (2.0 KiB)``, ``... (2.0 GiB)`` (a 1 KiB limit read
    "0.0 MiB")."""
    for unit, scale in (("GiB", 1024**3), ("MiB", MIB), ("KiB", 1024)):
        if size >= scale:
            return f"{size} bytes ({size / scale:.1f} {unit})"
    return f"{size} bytes"


def _too_large(size: int, limit: int, what: str) -> str:
    return (
        f"{_bytes(size)}, above the limit of {_bytes(limit)} for {what}; raise "
        "--max-payload-bytes "
        "(CONTRACT_GATE_MAX_PAYLOAD_BYTES) or split the batch"
    )


_SECRET_ENV = ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN")


def _scrub(exc: BaseException) -> str:
    """An error text, clipped, with the environment's AWS credentials masked."""
    text = " ".join(str(exc).split())
    for var in _SECRET_ENV:
        secret = os.environ.get(var)
        if secret and len(secret) >= 4:
            text = text.replace(secret, "***")
    return clip(text, 300)


def parquet_read_error(name: Path | str, exc: BaseException) -> PayloadError:
    """The error for a failed Parquet read: :class:`PayloadUnavailable` (transient) when
    the storage failed (an S3/network error), else :class:`PayloadCorrupt` (not Parquet,
    truncated, a bad footer or page)."""
    text = _scrub(exc)
    if isinstance(exc, OSError) and ("AWS Error" in text or "curl" in text.lower()):
        return PayloadUnavailable(f"{name}: read failed ({text})", transient=True)
    return PayloadCorrupt(f"{name}: not a readable Parquet file ({text})")
