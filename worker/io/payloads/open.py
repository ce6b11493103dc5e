"""Bounded opening of a payload, local or in S3, and bounded retries of transient failures.

A producer names a batch's features by ``payload_uri``; the worker reads that URI only
when it lies under a configured payload root
(:class:`~worker.io.payloads.policy.PayloadPolicy`): ``file:///dir/``
(a local directory) or ``s3://bucket/prefix/`` (objects under a key prefix, read through
pyarrow's S3 filesystem). Local paths are normalised (``..`` and symlinks resolved with
``os.path.realpath``) before the check, kernel and device filesystems (``/proc``,
``/sys``, ``/dev``) are never read, and only regular files are opened: the type is taken
with ``lstat`` before ``open`` (a FIFO or a device is never opened, so no call can block
on it) and confirmed with ``fstat`` on the descriptor opened with ``O_NOFOLLOW`` and
``O_NONBLOCK``. The size is checked against the limit of the format before any content is
read, the format comes from the readers' magic-byte sniffs
(:func:`~worker.io.payloads.base.sniff_format`), and every read is bounded by the size
checked.

Failures raise the :class:`worker.core.errors.PayloadError` subclasses whose ``reason`` is
the quarantine reason: ``payload_not_allowed``, ``payload_unavailable`` (transient ones
are retried a bounded number of times by :func:`with_retries`), ``payload_corrupt``,
``payload_too_large``. Messages carry the URI (credentials in it masked) and the reason,
never the payload's content nor the AWS credentials of the environment.
"""

from __future__ import annotations

import errno
import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar
from urllib.parse import unquote, urlparse

import pyarrow as pa

from worker.core._util.text import clip
from worker.core.errors import (
    PayloadNotAllowed,
    PayloadUnavailable,
)

if TYPE_CHECKING:
    pass
from worker.io.payloads.base import OpenedPayload, _check_size_and_format
from worker.io.payloads.beneath import open_in_root
from worker.io.payloads.policy import _KERNEL_DIRS, PayloadPolicy, _in_kernel_dir, _outside, _redact
from worker.io.payloads.s3 import _open_s3
from worker.io.payloads.verified import _require_regular

__all__ = [
    "local_file_path",
    "open_payload",
    "with_retries",
]


T = TypeVar("T")


@contextmanager
def open_payload(uri: str, policy: PayloadPolicy) -> Iterator[OpenedPayload]:
    """Open the payload at ``uri`` under ``policy``: allow-list, type, size and format
    checked before any content is read.

    Parameters
    ----------
    uri : str
        ``file:///abs/path``, an absolute path, ``s3://bucket/key``, or (only with
        ``policy.roots`` None) a relative path.
    policy : PayloadPolicy
        Roots and limits.

    Yields
    ------
    OpenedPayload
        Closed when the block ends.

    Raises
    ------
    PayloadNotAllowed, PayloadUnavailable, PayloadTooLarge, PayloadCorrupt
        See the module docstring.
    """
    name = clip(_redact(uri), 500)
    parsed = urlparse(uri)
    if parsed.username or parsed.password:
        raise PayloadNotAllowed(
            f"{name}: credentials in a payload URI are not accepted (the worker uses the "
            "AWS environment's)",
            field="payload_uri",
            fix="remove the credentials from the URI: the worker uses the AWS environment's",
        )
    if parsed.scheme == "s3":
        opened = _open_s3(name, parsed.netloc, unquote(parsed.path).lstrip("/"), policy)
    else:
        opened = _open_local(name, _local_path(name, uri, policy), policy)
    try:
        yield opened
    finally:
        opened.file.close()


def with_retries(attempt: Callable[[], T], policy: PayloadPolicy) -> T:
    """``attempt()``, tried again after a transient :class:`PayloadUnavailable`, at most
    ``policy.attempts`` times in all, waiting ``backoff_s``, ``2 * backoff_s``, ... between.

    Raises
    ------
    PayloadError
        The last failure; a transient one says how many attempts were made.
    """
    wait = policy.backoff_s
    for n in range(1, max(1, policy.attempts) + 1):
        try:
            return attempt()
        except PayloadUnavailable as exc:
            if not exc.transient or n >= policy.attempts:
                if exc.transient and n > 1:
                    raise PayloadUnavailable(f"{exc} (after {n} attempts)") from None
                raise
            time.sleep(wait)
            wait *= 2
    raise AssertionError("unreachable")  # pragma: no cover


def local_file_path(uri: str) -> Path | None:
    """The local path that ``uri`` names: a ``file://`` URI (percent-decoded) or a plain
    path; None for any other scheme (``s3://``). No policy is checked here
    (:func:`open_payload` does that)."""
    if uri.startswith("file://"):
        return Path(unquote(urlparse(uri).path))
    return None if "://" in uri else Path(uri)


def _local_path(name: str, uri: str, policy: PayloadPolicy) -> str:
    """The real path of a file URI or path, checked against the file roots."""
    parsed = urlparse(uri)
    if parsed.scheme == "file":
        if parsed.netloc not in ("", "localhost"):
            raise PayloadNotAllowed(f"{name}: file URI on a remote host {parsed.netloc!r}")
        if parsed.query or parsed.fragment:
            raise PayloadNotAllowed(f"{name}: a file URI with a query or fragment")
        path = unquote(parsed.path)
    elif parsed.scheme and len(parsed.scheme) > 1:  # one letter: a Windows drive
        raise PayloadNotAllowed(
            f"{name}: unsupported payload URI scheme {parsed.scheme!r}: use file:// or s3://",
            field="payload_uri",
            fix="use file:// or s3://",
        )
    else:
        path = uri
    if "\x00" in path or not path:
        raise PayloadNotAllowed(
            f"{name}: an empty path or one with a NUL byte",
            field="payload_uri",
            fix="give the path of the file",
        )
    if policy.roots is not None and not os.path.isabs(path):
        raise PayloadNotAllowed(
            f"{name}: a relative path; payload URIs must be absolute (file:///dir/file or "
            "s3://bucket/key) and under a payload root",
            field="payload_uri",
            fix="give an absolute path (file:///dir/file) or s3://bucket/key under a payload root",
        )
    real = _resolved(name, path)
    if _in_kernel_dir(real):
        raise PayloadNotAllowed(
            f"{name}: lies in a kernel or device file system ({', '.join(_KERNEL_DIRS)}), "
            "never read"
        )
    if policy.roots is not None and not any(r.covers_path(real) for r in policy.roots):
        raise PayloadNotAllowed(
            f"{name}: {_outside(policy)}",
            field="--payload-root",
            fix="put the file under a payload root, or add its directory with --payload-root "
            "(CONTRACT_GATE_PAYLOAD_ROOTS)",
        )
    return real


def _resolved(name: str, path: str) -> str:
    """``path`` with every symbolic link resolved (``os.path.realpath``); a link left is a
    loop of links."""
    try:
        real = os.path.realpath(path)
    except OSError:  # a link of the path replaced while being read (issue 31)
        raise PayloadNotAllowed(f"{name}: its path changed while being resolved") from None
    if os.path.islink(real):  # realpath followed every link that resolves: a loop
        raise PayloadNotAllowed(
            f"{name}: a symbolic link that does not resolve (a loop of links)",
            fix="give the path of the file itself, or fix the link",
        )
    return real


def _open_local(name: str, real: str, policy: PayloadPolicy) -> OpenedPayload:
    if policy.roots is not None:  # opened beneath the root's descriptor (issue 31)
        root = next(r for r in policy.roots if r.covers_path(real))
        verified = open_in_root(root.location, real, name)
        file = verified.arrow_file()
        try:
            fmt = _check_size_and_format(name, verified.size, file, policy)
        except BaseException:
            file.close()
            raise
        return OpenedPayload(name, fmt, verified.size, verified.mtime, file)
    try:
        before = os.lstat(real)
    except OSError as exc:
        raise _unavailable(name, exc) from None
    _require_regular(name, before.st_mode)
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0)
    flags |= getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(real, flags)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise PayloadNotAllowed(f"{name}: became a symbolic link while opened") from None
        raise _unavailable(name, exc) from None
    try:
        st = os.fstat(fd)
        _require_regular(name, st.st_mode)
        if (st.st_dev, st.st_ino) != (before.st_dev, before.st_ino):
            raise PayloadNotAllowed(f"{name}: replaced by another file while being opened")
        file = _native_file(fd, st)
        if file is None:
            file = pa.PythonFile(os.fdopen(fd, "rb", buffering=0), mode="r")
        else:
            os.close(fd)  # the native file has its own descriptor of the same file
    except BaseException:
        os.close(fd)
        raise
    try:
        fmt = _check_size_and_format(name, st.st_size, file, policy)
    except BaseException:
        file.close()
        raise
    mtime = datetime.fromtimestamp(st.st_mtime, tz=timezone.utc)
    return OpenedPayload(name, fmt, st.st_size, mtime, file, path=real)


def _native_file(fd: int, st: os.stat_result) -> pa.NativeFile | None:
    """The file open as ``fd`` (of status ``st``) read by Arrow's own file class, or None
    where it cannot be (no ``/proc``). Arrow reads it without the GIL; through a Python
    file object it took the GIL for every read and built a bytes object of each 8 MiB
    buffer (0.5 to 0.8 s of the GIL in a ``check`` of 1,000,000 polygons, issue 27).
    Opened through ``/proc/self/fd``, which names the very file ``fd`` holds, not a path
    looked up again; its device and inode are checked all the same."""
    try:
        native = pa.OSFile(f"/proc/self/fd/{fd}")
    except (OSError, pa.ArrowException):
        return None
    same = os.fstat(native.fileno())
    if (same.st_dev, same.st_ino) != (st.st_dev, st.st_ino):
        native.close()
        return None
    return native


def _unavailable(name: str, exc: OSError) -> PayloadUnavailable:
    if exc.errno in (errno.ENOENT, errno.ENOTDIR):
        return PayloadUnavailable(f"{name}: no such file")
    if exc.errno in (errno.EACCES, errno.EPERM):
        return PayloadUnavailable(f"{name}: permission denied")
    return PayloadUnavailable(f"{name}: cannot open ({exc.strerror or exc})", transient=True)
