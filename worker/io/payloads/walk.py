"""The walk that resolves a path beneath a directory where ``openat2(2)`` does not work.

One component at a time, each opened with ``openat(2)`` relative to the descriptor of the
one before, ``O_PATH | O_NOFOLLOW`` (a symbolic link is never followed by the kernel;
where links may be followed, its target is read with ``readlinkat(2)`` and walked the
same way, ``..`` popping back to a descriptor already held, never above the directory; an
absolute target leaves it and is refused; at most :data:`MAX_SYMLINKS` links, the
kernel's ``MAXSYMLINKS`` of path_resolution(7)). Also the ``errno`` of a resolution,
either way, as the :class:`worker.core.errors.PayloadError` it means.
"""

from __future__ import annotations

import errno
import os
import stat

from worker.core.errors import PayloadError, PayloadNotAllowed, PayloadUnavailable
from worker.io.payloads.openat2 import _O_CLOEXEC, _O_NOFOLLOW, _O_PATH

__all__ = ["MAX_SYMLINKS"]

#: Symbolic links followed in one resolution at most (MAXSYMLINKS, path_resolution(7)).
MAX_SYMLINKS = 40


class _NoSuchFile(PayloadUnavailable):
    """A file or directory of the path does not exist (not transient)."""


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
