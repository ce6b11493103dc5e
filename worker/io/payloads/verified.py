"""A regular file verified on its descriptor, and a reader bounded by its size.

The last component of a payload's path is opened with ``O_PATH`` (a FIFO or a device is
never opened), its type taken with ``fstat(2)`` on that descriptor (a regular file only)
and then opened for reading through that very descriptor (see
:func:`worker.io.payloads.beneath.open_beneath`). The size is taken from ``fstat`` on the
descriptor read, and every read is bounded by it (:class:`BoundedReader`): a file that
grows while it is read is read as it was opened.
"""

from __future__ import annotations

import io
import os
import stat
from dataclasses import dataclass, field
from datetime import datetime, timezone

import pyarrow as pa

from worker.core.errors import PayloadNotAllowed

__all__ = ["BoundedReader", "VerifiedFile"]


@dataclass
class VerifiedFile:
    """A regular file opened beneath a directory: its descriptor (read-only, owned here),
    its identity and size as ``fstat`` gave them on that descriptor, and ``name`` (the URI
    or path, for messages)."""

    name: str
    fd: int
    size: int
    mtime: datetime
    identity: tuple[int, int, int, int] = field(repr=False)

    def changed(self) -> bool:
        """Whether the file's size or modification time differs from when it was opened
        (``fstat`` on the descriptor): it was written meanwhile."""
        st = os.fstat(self.fd)
        return (st.st_size, st.st_mtime_ns) != self.identity[2:]

    def arrow_file(self) -> pa.PythonFile:
        """A pyarrow file reading this descriptor, bounded by :attr:`size`; it owns the
        descriptor from now on (closing it closes the descriptor)."""
        fd, self.fd = self.fd, -1
        return pa.PythonFile(BoundedReader(fd, self.size), mode="r")

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


class BoundedReader(io.RawIOBase):
    """A read-only, seekable view of ``size`` bytes of descriptor ``fd`` (``pread(2)``):
    the end is ``size`` whatever the file has become, so no read goes beyond the figure
    checked against the limit."""

    def __init__(self, fd: int, size: int) -> None:
        super().__init__()
        self._fd, self._size, self._pos = fd, size, 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._pos

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self._pos, io.SEEK_END: self._size}[whence]
        self._pos = max(0, base + offset)
        return self._pos

    def read(self, size: int | None = -1) -> bytes:
        left = self._size - self._pos
        n = left if size is None or size < 0 else min(size, left)
        if n <= 0:
            return b""
        data = os.pread(self._fd, n, self._pos)
        self._pos += len(data)
        return data

    def readall(self) -> bytes:
        return self.read(-1)

    def readinto(self, buffer: bytearray | memoryview) -> int:  # type: ignore[override]
        data = self.read(len(buffer))
        buffer[: len(data)] = data
        return len(data)

    def close(self) -> None:
        if not self.closed and self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
        super().close()


def _verified(name: str, fd: int, expected: tuple[int, int] | None) -> VerifiedFile:
    try:
        st = os.fstat(fd)
        _require_regular(name, st.st_mode)
        if expected is not None and (st.st_dev, st.st_ino) != expected:
            raise PayloadNotAllowed(f"{name}: replaced by another file while being opened")
    except BaseException:
        os.close(fd)
        raise
    mtime = datetime.fromtimestamp(st.st_mtime, tz=timezone.utc)
    return VerifiedFile(
        name, fd, st.st_size, mtime, (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)
    )


def _require_regular(name: str, mode: int) -> None:
    if stat.S_ISREG(mode):
        return
    kinds = [
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISLNK, "a symbolic link"),
    ]
    kind = next((k for check, k in kinds if check(mode)), "not a regular file")
    raise PayloadNotAllowed(f"{name}: is {kind}; only regular files are read")
