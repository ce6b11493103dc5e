"""Files opened beneath a directory's descriptor, so that the file checked is the file read.

A path checked and then opened by name is two lookups: between them a process that can
write inside a payload root can swap a directory of the path for a symbolic link to
another place (``renameat2(RENAME_EXCHANGE)`` makes the swap atomic), and the second
lookup reads a file outside the root (issue 31: 80 of 3000 opens read such a file). Here
the root is opened once as a directory descriptor, the file is resolved relative to it
and never by its full name again:

- with ``openat2(2)`` (Linux 5.6+, called through ``syscall(2)`` by ctypes) and
  ``RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS`` (plus ``RESOLVE_NO_SYMLINKS`` where no
  symbolic link may be followed): the kernel refuses any resolution that leaves the
  directory (``EXDEV``) or meets a refused link (``ELOOP``);
- without it (an older kernel, a seccomp filter answering ``ENOSYS`` or ``EPERM``): a walk
  one component at a time, each opened with ``openat(2)`` relative to the descriptor of
  the one before, ``O_PATH | O_NOFOLLOW`` (a symbolic link is never followed by the
  kernel; where links may be followed, its target is read with ``readlinkat(2)`` and
  walked the same way, ``..`` popping back to a descriptor already held, never above the
  directory; an absolute target leaves it and is refused; at most 40 links, the kernel's
  ``MAXSYMLINKS`` of path_resolution(7)).

Either way the last component is opened with ``O_PATH`` (nothing of it is opened yet: a
FIFO or a device is never opened), its type taken with ``fstat(2)`` on that descriptor
(a regular file only) and then opened for reading through that very descriptor
(``/proc/self/fd/N``, the same inode; where ``/proc`` is not mounted, a second resolution
beneath the directory with ``O_RDONLY | O_NONBLOCK | O_NOFOLLOW`` whose ``(st_dev,
st_ino)`` must be the first one's). The size is taken from ``fstat`` on the descriptor
read, and every read is bounded by it (:class:`BoundedReader`): a file that grows while
it is read is read as it was opened. Readers that need a path (GDAL: a shapefile's
sidecars, SQLite for a GeoPackage) get :func:`verified_copies`: private copies of the
verified descriptors' bytes, bounded, in a directory only this process may read.

Failures raise :class:`worker.core.errors.PayloadError` subclasses with the quarantine
reasons of DESIGN.md section 6: ``payload_not_allowed`` (leaves the directory, a symbolic
link where none may be, not a regular file), ``payload_unavailable`` (missing, permission
denied; transient for other I/O errors), ``payload_too_large`` (copies above their limit),
``payload_corrupt`` (truncated or changed while copied). Messages name the payload, never
a byte of the file nor the target of a link.
"""

from __future__ import annotations

import ctypes
import errno
import io
import os
import platform
import shutil
import stat
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

import pyarrow as pa

from worker.core._util.text import clip
from worker.core.errors import (
    PayloadCorrupt,
    PayloadError,
    PayloadNotAllowed,
    PayloadTooLarge,
    PayloadUnavailable,
)

__all__ = [
    "BoundedReader",
    "VerifiedFile",
    "open_beneath",
    "open_directory",
    "open_in_root",
    "openat2_available",
    "verified_copies",
]

#: ``resolve`` flags of ``struct open_how`` (linux/openat2.h).
RESOLVE_NO_MAGICLINKS = 0x02
RESOLVE_NO_SYMLINKS = 0x04
RESOLVE_BENEATH = 0x08

#: ``openat2`` system call number: 437 wherever the table is the unified one (Linux 5.6+);
#: other machines take the walk.
_SYS_OPENAT2 = {"x86_64": 437, "aarch64": 437, "arm64": 437, "riscv64": 437, "ppc64le": 437}

#: Symbolic links followed in one resolution at most (MAXSYMLINKS, path_resolution(7)).
MAX_SYMLINKS = 40
#: ``openat2`` answers EAGAIN when a rename raced a ``..`` lookup: tries before giving up.
_EAGAIN_TRIES = 8
#: Bytes copied per ``pread`` by :func:`verified_copies`.
_COPY_CHUNK = 1024 * 1024

_O_PATH: int = getattr(os, "O_PATH", 0)
_O_CLOEXEC: int = getattr(os, "O_CLOEXEC", 0)
_O_NOFOLLOW: int = getattr(os, "O_NOFOLLOW", 0)
_O_DIRECTORY: int = getattr(os, "O_DIRECTORY", 0)
_READ_FLAGS = os.O_RDONLY | os.O_NONBLOCK | _O_CLOEXEC | getattr(os, "O_NOCTTY", 0)


class _NoSuchFile(PayloadUnavailable):
    """A file or directory of the path does not exist (not transient)."""


class _OpenHow(ctypes.Structure):
    _fields_ = [
        ("flags", ctypes.c_uint64),
        ("mode", ctypes.c_uint64),
        ("resolve", ctypes.c_uint64),
    ]


#: None: not probed yet; a test sets False to exercise the walk.
_openat2_usable: bool | None = None
_libc: ctypes.CDLL | None = None


def _openat2(dir_fd: int, path: str, flags: int, resolve: int) -> int:
    """``openat2(dir_fd, path, {flags, 0, resolve})``: the descriptor, or ``OSError``."""
    global _libc
    number = _SYS_OPENAT2.get(platform.machine().lower())
    if number is None:
        raise OSError(errno.ENOSYS, "openat2 not known on this machine")
    if _libc is None:
        _libc = ctypes.CDLL(None, use_errno=True)
    how = _OpenHow(flags, 0, resolve)
    fd = int(
        _libc.syscall(
            ctypes.c_long(number),
            ctypes.c_int(dir_fd),
            ctypes.c_char_p(os.fsencode(path)),
            ctypes.byref(how),
            ctypes.c_size_t(ctypes.sizeof(how)),
        )
    )
    if fd < 0:
        code = ctypes.get_errno()
        raise OSError(code, os.strerror(code))
    return fd


def openat2_available() -> bool:
    """Whether ``openat2(2)`` with ``RESOLVE_BENEATH`` works here (probed once: ``ENOSYS``
    from an older kernel or ``EPERM`` from a seccomp filter mean no)."""
    global _openat2_usable
    if _openat2_usable is None:
        if not _O_PATH:
            _openat2_usable = False
            return False
        try:
            os.close(_openat2(-100, "/", _O_PATH | _O_DIRECTORY | _O_CLOEXEC, RESOLVE_BENEATH))
        except OSError as exc:
            # "/" is absolute: RESOLVE_BENEATH refuses it with EXDEV, which proves the call
            _openat2_usable = exc.errno == errno.EXDEV
        else:  # pragma: no cover - a kernel that ignored RESOLVE_BENEATH
            _openat2_usable = False
    return _openat2_usable


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


def open_directory(path: str | Path, name: str) -> int:
    """A descriptor of the directory ``path`` (followed as named: an operator's root or
    directory), for :func:`open_beneath`.

    Raises
    ------
    PayloadUnavailable
        It is missing, not a directory, or cannot be opened.
    """
    try:
        return os.open(path, os.O_RDONLY | _O_DIRECTORY | _O_CLOEXEC)
    except OSError as exc:
        if exc.errno in (errno.ENOENT, errno.ENOTDIR):
            raise _NoSuchFile(
                f"{name}: no such file (its directory {clip(str(path), 200)} does not exist "
                "or is not a directory)"
            ) from None
        raise PayloadUnavailable(
            f"{name}: its directory cannot be opened ({exc.strerror or exc})",
            transient=exc.errno not in (errno.EACCES, errno.EPERM),
        ) from None


def open_in_root(root: str, real: str, name: str) -> VerifiedFile:
    """The regular file at the real path ``real`` opened beneath the payload root
    directory ``root``, following no symbolic link (both were resolved by the caller's
    check: a link found now was put there after it, and is refused).

    Raises
    ------
    PayloadNotAllowed, PayloadUnavailable
        As :func:`open_beneath`; ``real`` not under ``root``.
    """
    base = root.rstrip("/") + "/"
    if not real.startswith(base):
        raise PayloadNotAllowed(f"{name}: not under its payload root")
    dir_fd = open_directory(root, name)
    try:
        return open_beneath(dir_fd, real[len(base) :], name, symlinks=False)
    finally:
        os.close(dir_fd)


def open_beneath(dir_fd: int, relpath: str, name: str, *, symlinks: bool) -> VerifiedFile:
    """Open the regular file ``relpath`` beneath the directory of ``dir_fd``, for reading.

    Parameters
    ----------
    dir_fd : int
        Descriptor of the directory nothing may be resolved outside of.
    relpath : str
        Relative path (``/``-separated) beneath it.
    name : str
        The payload's URI or path, for messages.
    symlinks : bool
        Whether symbolic links that stay beneath the directory are followed
        (``RESOLVE_BENEATH``); False refuses every link (``RESOLVE_NO_SYMLINKS``, and
        ``O_NOFOLLOW`` for the last component).

    Returns
    -------
    VerifiedFile
        The descriptor opened ``O_RDONLY | O_NONBLOCK | O_CLOEXEC``, confirmed by
        ``fstat`` to be a regular file.

    Raises
    ------
    PayloadNotAllowed
        Resolution leaves the directory (``..`` above it, an absolute or escaping link:
        ``EXDEV`` of openat2), a symbolic link where none may be followed (``ELOOP``),
        more than :data:`MAX_SYMLINKS` links, or not a regular file (a directory, FIFO,
        device, socket or link: refused before it is opened for reading).
    PayloadUnavailable
        No such file, permission denied; transient for other I/O errors (and openat2's
        ``EAGAIN`` after retries).
    """
    if not relpath or relpath.startswith("/") or "\x00" in relpath:
        raise PayloadNotAllowed(f"{name}: not a relative path beneath its directory")
    if not _O_PATH:  # not Linux: the walk, opening the last component for reading
        return _verified(name, _walk(dir_fd, relpath, name, symlinks, _READ_FLAGS), None)
    first = _resolve(dir_fd, relpath, name, symlinks, _O_PATH | _O_CLOEXEC)
    try:
        st = os.fstat(first)
        _require_regular(name, st.st_mode)
        try:  # the same inode, through the descriptor checked
            fd = os.open(f"/proc/self/fd/{first}", _READ_FLAGS)
        except FileNotFoundError:  # no /proc: resolve again, and compare the inode
            fd = _resolve(dir_fd, relpath, name, symlinks, _READ_FLAGS)
    finally:
        os.close(first)
    return _verified(name, fd, (st.st_dev, st.st_ino))


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


def _resolve(dir_fd: int, relpath: str, name: str, symlinks: bool, flags: int) -> int:
    """The descriptor of ``relpath`` beneath ``dir_fd`` opened with ``flags`` (the last
    component never followed when ``symlinks`` is False): openat2 where it works, else
    the walk."""
    if not openat2_available():
        return _walk(dir_fd, relpath, name, symlinks, flags)
    resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS
    if not symlinks:
        resolve |= RESOLVE_NO_SYMLINKS
        flags |= _O_NOFOLLOW
    for _ in range(_EAGAIN_TRIES):
        try:
            return _openat2(dir_fd, relpath, flags, resolve)
        except OSError as exc:
            if exc.errno == errno.EAGAIN:
                continue
            raise _open_error(name, exc) from None
    raise PayloadUnavailable(
        f"{name}: its directory kept changing while being resolved", transient=True
    )


def _walk(dir_fd: int, relpath: str, name: str, symlinks: bool, flags: int) -> int:
    """``relpath`` resolved one component at a time beneath ``dir_fd`` (see the module
    docstring); the last component opened with ``flags | O_NOFOLLOW``."""
    todo = list(reversed(relpath.split("/")))
    held = [os.dup(dir_fd)]  # the directories walked through, innermost last
    hops = 0
    step = (_O_PATH or os.O_RDONLY) | _O_NOFOLLOW | _O_CLOEXEC
    try:
        while todo:
            part = todo.pop()
            if part in ("", "."):
                continue
            if part == "..":
                if len(held) == 1:
                    raise _leaves(name)
                os.close(held.pop())
                continue
            last = not any(p not in ("", ".") for p in todo)
            try:
                fd = os.open(part, (flags | _O_NOFOLLOW) if last else step, dir_fd=held[-1])
            except OSError as exc:
                if exc.errno != errno.ELOOP or not symlinks:
                    raise _open_error(name, exc) from None
                fd = os.open(part, step, dir_fd=held[-1])  # the link itself, to read
            try:
                mode = os.fstat(fd).st_mode
                if stat.S_ISLNK(mode):
                    if not symlinks:
                        raise _symlink(name)
                    hops += 1
                    if hops > MAX_SYMLINKS:
                        raise PayloadNotAllowed(f"{name}: too many symbolic links in its path")
                    target = os.readlink("", dir_fd=fd) if _O_PATH else ""
                    if not target:
                        target = os.readlink(part, dir_fd=held[-1])
                    if target.startswith("/"):
                        raise _leaves(name)
                    todo.extend(reversed(target.split("/")))
                    continue
            except OSError as exc:
                os.close(fd)
                raise _open_error(name, exc) from None
            except BaseException:
                os.close(fd)
                raise
            if last:
                return fd
            if not stat.S_ISDIR(mode):
                os.close(fd)
                raise _NoSuchFile(f"{name}: no such file (a component is not a directory)")
            held.append(fd)
        raise PayloadNotAllowed(f"{name}: is a directory; only regular files are read")
    finally:
        for fd in held:
            os.close(fd)


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


def _leaves(name: str) -> PayloadNotAllowed:
    return PayloadNotAllowed(
        f"{name}: resolves outside its payload root or directory (a symbolic link or '..' "
        "leading out of it, possibly swapped in while it was opened); not read"
    )


def _symlink(name: str) -> PayloadNotAllowed:
    return PayloadNotAllowed(
        f"{name}: a symbolic link appeared in its path after it was checked (swapped in "
        "while it was opened); not followed"
    )


def _open_error(name: str, exc: OSError) -> PayloadError:
    if exc.errno == errno.EXDEV:
        return _leaves(name)
    if exc.errno == errno.ELOOP:
        return _symlink(name)
    if exc.errno in (errno.ENOENT, errno.ENOTDIR):
        return _NoSuchFile(f"{name}: no such file")
    if exc.errno in (errno.EACCES, errno.EPERM):
        return PayloadUnavailable(f"{name}: permission denied")
    if exc.errno == errno.ENXIO:  # a socket
        return PayloadNotAllowed(f"{name}: is not a regular file; only regular files are read")
    return PayloadUnavailable(f"{name}: cannot open ({exc.strerror or exc})", transient=True)


@contextmanager
def verified_copies(
    directory: Path, main: str, sidecars: Sequence[str], max_bytes: int, name: str
) -> Iterator[tuple[Path, VerifiedFile]]:
    """Private copies of ``main`` and of those ``sidecars`` that exist, each opened
    beneath ``directory`` (symbolic links followed only while they stay in it) and copied
    from its verified descriptor, for a reader that needs a path (GDAL).

    Parameters
    ----------
    directory : Path
        The directory of the file (an operator's path, followed as named; or a root).
    main : str
        The file's path relative to it.
    sidecars : sequence of str
        Paths (relative to ``directory``) of the files the reader opens beside it (a
        shapefile's ``.shx``, ``.dbf``, ``.prj``, ``.cpg``); a missing one is left out,
        as the reader would find it.
    max_bytes : int
        Largest total of the copies (bytes): checked on the ``fstat`` sizes before any
        byte is copied, and no more than those sizes is ever read.
    name : str
        The file's URI or path, for messages.

    Yields
    ------
    tuple of (Path, VerifiedFile)
        The copy of ``main`` (its sidecars beside it, same base names) in a directory made by
        ``tempfile.mkdtemp`` (mode 0700), removed with the copies when the block ends;
        and the verified original (its modification time, size).

    Raises
    ------
    PayloadNotAllowed, PayloadUnavailable
        As :func:`open_beneath`, for the file or any sidecar.
    PayloadTooLarge
        The file and its sidecars together above ``max_bytes``.
    PayloadCorrupt
        A file shorter than its size, or written while it was copied (its size or
        modification time changed): the copy would not be one state of it.
    """
    with ExitStack() as stack:
        dir_fd = open_directory(directory, name)
        stack.callback(os.close, dir_fd)
        opened: list[tuple[str, VerifiedFile]] = []
        first = open_beneath(dir_fd, main, name, symlinks=True)
        stack.callback(first.close)
        opened.append((main, first))
        for side in dict.fromkeys(s for s in sidecars if s != main):
            try:
                vf = open_beneath(dir_fd, side, f"{name} (its sidecar {side})", symlinks=True)
            except _NoSuchFile:
                continue
            stack.callback(vf.close)
            opened.append((side, vf))
        total = sum(vf.size for _, vf in opened)
        if total > max_bytes:
            raise PayloadTooLarge(
                f"{name}: {total} bytes with its sidecars, above the limit of {max_bytes} "
                "bytes; raise --max-payload-bytes (CONTRACT_GATE_MAX_PAYLOAD_BYTES)"
            )
        private = tempfile.mkdtemp(prefix="contract-gate-verified-")
        stack.callback(shutil.rmtree, private, True)
        for file_name, vf in opened:
            _copy(vf, os.path.join(private, os.path.basename(file_name)))
        yield Path(private, os.path.basename(main)), first


def _copy(vf: VerifiedFile, target: str) -> None:
    """The ``vf.size`` bytes of ``vf`` into a new file ``target`` (never more)."""
    out = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _O_NOFOLLOW | _O_CLOEXEC, 0o600)
    try:
        done = 0
        while done < vf.size:
            try:
                chunk = os.pread(vf.fd, min(_COPY_CHUNK, vf.size - done), done)
            except OSError as exc:
                raise PayloadUnavailable(
                    f"{vf.name}: read failed ({exc.strerror or exc})", transient=True
                ) from None
            if not chunk:
                raise PayloadCorrupt(
                    f"{vf.name}: truncated while being read ({done} of {vf.size} bytes)"
                )
            view = memoryview(chunk)
            while view:
                view = view[os.write(out, view) :]
            done += len(chunk)
    finally:
        os.close(out)
    if vf.changed():
        raise PayloadCorrupt(
            f"{vf.name}: written while being read (its size or modification time changed); "
            "publish a batch's files before announcing it"
        )
