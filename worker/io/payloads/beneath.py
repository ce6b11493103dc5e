"""Files opened beneath a directory's descriptor, so that the file checked is the file read.

A path checked and then opened by name is two lookups: between them a process that can
write inside a payload root can swap a directory of the path for a symbolic link to
another place (``renameat2(RENAME_EXCHANGE)`` makes the swap atomic), and the second
lookup reads a file outside the root (issue 31: 80 of 3000 opens read such a file). Here
the root is opened once as a directory descriptor, the file is resolved relative to it
and never by its full name again.

:func:`open_beneath` resolves it with ``openat2(2)`` and ``RESOLVE_BENEATH``
(:mod:`worker.io.payloads.openat2`) where the kernel has it, else with a walk one component
at a time (:mod:`worker.io.payloads.walk`); either way the file is confirmed to be a
regular file on its descriptor and read within the size ``fstat`` gave
(:mod:`worker.io.payloads.verified`). Readers that need a path (GDAL: a format's
sidecar files, or a database opened by name) get :func:`verified_copies`: private copies of the
verified descriptors' bytes, bounded, in a directory only this process may read.

Failures raise :class:`worker.core.errors.PayloadError` subclasses with the quarantine
reasons of docs/design.md section 6: ``payload_not_allowed`` (leaves the directory, a symbolic
link where none may be, not a regular file), ``payload_unavailable`` (missing, permission
denied; transient for other I/O errors), ``payload_too_large`` (copies above their limit),
``payload_corrupt`` (truncated or changed while copied). Messages name the payload, never
a byte of the file nor the target of a link.
"""

from __future__ import annotations

import errno
import os
import shutil
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from pathlib import Path

from worker.core._util.text import clip
from worker.core.errors import (
    PayloadCorrupt,
    PayloadNotAllowed,
    PayloadTooLarge,
    PayloadUnavailable,
)
from worker.io.payloads.openat2 import (
    _O_CLOEXEC,
    _O_DIRECTORY,
    _O_NOFOLLOW,
    _O_PATH,
    _READ_FLAGS,
    RESOLVE_BENEATH,
    RESOLVE_NO_MAGICLINKS,
    RESOLVE_NO_SYMLINKS,
    _openat2,
    openat2_available,
)
from worker.io.payloads.verified import VerifiedFile, _require_regular, _verified
from worker.io.payloads.walk import _NoSuchFile, _open_error, _walk

__all__ = ["open_beneath", "open_directory", "open_in_root", "verified_copies"]

#: ``openat2`` answers EAGAIN when a rename raced a ``..`` lookup: tries before giving up.
_EAGAIN_TRIES = 8
#: Bytes copied per ``pread`` by :func:`verified_copies`.
_COPY_CHUNK = 1024 * 1024


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
        more than :data:`~worker.io.payloads.walk.MAX_SYMLINKS` links, or not a regular
        file (a directory, FIFO, device, socket or link: refused before it is opened for
        reading).
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
        except OSError as exc:  # opening for reading checks the file's mode (O_PATH did not)
            raise _open_error(name, exc) from None
    finally:
        os.close(first)
    return _verified(name, fd, (st.st_dev, st.st_ino))


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
        reader's ``sidecars``, see :mod:`worker.io.formats`); a missing one is left out,
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
