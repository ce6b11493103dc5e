"""``openat2(2)`` through ctypes, and the ``open`` flags the payload openers share.

``openat2`` (Linux 5.6+) is called through ``syscall(2)``. With ``RESOLVE_BENEATH |
RESOLVE_NO_MAGICLINKS`` (plus ``RESOLVE_NO_SYMLINKS`` where no symbolic link may be
followed) the kernel refuses any resolution that leaves the directory (``EXDEV``) or meets
a refused link (``ELOOP``). Where it does not work (an older kernel, a seccomp filter
answering ``ENOSYS`` or ``EPERM``, a Python built without ctypes),
:mod:`worker.io.payloads.walk` replaces it. ctypes is imported on the first call only.
"""

from __future__ import annotations

import errno
import functools
import os
import platform
from typing import Any

__all__ = [
    "RESOLVE_BENEATH",
    "RESOLVE_NO_MAGICLINKS",
    "RESOLVE_NO_SYMLINKS",
    "openat2_available",
]

#: ``resolve`` flags of ``struct open_how`` (linux/openat2.h).
RESOLVE_NO_MAGICLINKS = 0x02
RESOLVE_NO_SYMLINKS = 0x04
RESOLVE_BENEATH = 0x08

#: ``openat2`` system call number: 437 wherever the table is the unified one (Linux 5.6+);
#: other machines take the walk.
_SYS_OPENAT2 = {"x86_64": 437, "aarch64": 437, "arm64": 437, "riscv64": 437, "ppc64le": 437}

_O_PATH: int = getattr(os, "O_PATH", 0)
_O_CLOEXEC: int = getattr(os, "O_CLOEXEC", 0)
_O_NOFOLLOW: int = getattr(os, "O_NOFOLLOW", 0)
_O_DIRECTORY: int = getattr(os, "O_DIRECTORY", 0)
_READ_FLAGS = os.O_RDONLY | os.O_NONBLOCK | _O_CLOEXEC | getattr(os, "O_NOCTTY", 0)


#: None: not probed yet; a test sets False to exercise the walk.
_openat2_usable: bool | None = None


@functools.cache
def _ctypes() -> tuple[Any, Any, type]:
    """ctypes, the process's C library (errno kept) and ``struct open_how``; ``OSError``
    (ENOSYS) where ctypes cannot be imported (a Python built without libffi)."""
    try:
        import ctypes  # optional: absent from a Python built without libffi
    except ImportError:
        raise OSError(errno.ENOSYS, "openat2 needs ctypes, which this Python lacks") from None

    class OpenHow(ctypes.Structure):
        _fields_ = [
            ("flags", ctypes.c_uint64),
            ("mode", ctypes.c_uint64),
            ("resolve", ctypes.c_uint64),
        ]

    return ctypes, ctypes.CDLL(None, use_errno=True), OpenHow


def _openat2(dir_fd: int, path: str, flags: int, resolve: int) -> int:
    """``openat2(dir_fd, path, {flags, 0, resolve})``: the descriptor, or ``OSError``."""
    number = _SYS_OPENAT2.get(platform.machine().lower())
    if number is None:
        raise OSError(errno.ENOSYS, "openat2 not known on this machine")
    ctypes, libc, open_how = _ctypes()
    how = open_how(flags, 0, resolve)
    fd = int(
        libc.syscall(
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
