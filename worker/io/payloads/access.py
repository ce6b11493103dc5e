"""Where payloads may be read from, and how: the allow-list, size limits, bounded opening.

A producer names a batch's features by ``payload_uri``; the worker reads that URI only
when it lies under a configured payload root (:class:`PayloadPolicy`): ``file:///dir/``
(a local directory) or ``s3://bucket/prefix/`` (objects under a key prefix, read through
pyarrow's S3 filesystem). Local paths are normalised (``..`` and symlinks resolved with
``os.path.realpath``) before the check, kernel and device filesystems (``/proc``,
``/sys``, ``/dev``) are never read, and only regular files are opened: the type is taken
with ``lstat`` before ``open`` (a FIFO or a device is never opened, so no call can block
on it) and confirmed with ``fstat`` on the descriptor opened with ``O_NOFOLLOW`` and
``O_NONBLOCK``. The size is checked against the limit of the format before any content is
read, the format comes from the magic bytes (Parquet: ``PAR1`` at both ends; GeoJSON: a
JSON text starting with ``{`` or ``[``), and every read is bounded by the size checked.

Failures raise the :class:`worker.core.errors.PayloadError` subclasses whose ``reason`` is
the quarantine reason: ``payload_not_allowed``, ``payload_unavailable`` (transient ones
are retried a bounded number of times by :func:`with_retries`), ``payload_corrupt``,
``payload_too_large``. Messages carry the URI (credentials in it masked) and the reason,
never the payload's content nor the AWS credentials of the environment.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import stat
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Literal, TypeVar
from urllib.parse import unquote, urlparse

import pyarrow as pa

from worker.core._util.text import clip
from worker.core.errors import (
    PayloadCorrupt,
    PayloadError,
    PayloadNotAllowed,
    PayloadTooLarge,
    PayloadUnavailable,
)

if TYPE_CHECKING:
    from pyarrow.fs import S3FileSystem

__all__ = [
    "DEFAULT_MAX_GEOJSON_BYTES",
    "DEFAULT_MAX_PARQUET_BYTES",
    "UNRESTRICTED",
    "OpenedPayload",
    "PayloadPolicy",
    "PayloadRoot",
    "local_file_path",
    "open_payload",
    "parquet_read_error",
    "parse_limits",
    "parse_root",
    "parse_size",
    "s3_filesystem",
    "sniff_format",
    "upload_payload",
    "with_retries",
]

MIB = 1024**2
GIB = 1024**3

#: Default largest GeoParquet payload (bytes): 2 GiB.
DEFAULT_MAX_PARQUET_BYTES = 2 * GIB
#: Default largest GeoJSON payload (bytes): 256 MiB (parsed whole, several times its size
#: in memory).
DEFAULT_MAX_GEOJSON_BYTES = 256 * MIB

#: Filesystems whose files are not data: never read, whatever the roots say.
_KERNEL_DIRS = ("/proc", "/sys", "/dev")

#: Bytes read to recognise the format.
_HEAD_BYTES = 4096

Format = Literal["parquet", "geojson"]
T = TypeVar("T")


@dataclass(frozen=True)
class PayloadRoot:
    """One allowed location: a local directory or an S3 bucket and key prefix.

    ``scheme`` is ``file`` or ``s3``; ``location`` is the real absolute directory path
    (symlinks resolved, no trailing slash) for ``file``, ``bucket/prefix/`` (prefix empty
    or ending in ``/``) for ``s3``.
    """

    scheme: Literal["file", "s3"]
    location: str

    def __str__(self) -> str:
        if self.scheme == "file":
            return "file://" + self.location.rstrip("/") + "/"
        return "s3://" + self.location

    def covers_path(self, real: str) -> bool:
        """Whether the real local path ``real`` lies strictly inside this file root."""
        base = self.location.rstrip("/")
        return self.scheme == "file" and real.startswith(base + "/")

    def covers_key(self, bucket: str, key: str) -> bool:
        """Whether object ``bucket/key`` lies under this s3 root."""
        return self.scheme == "s3" and f"{bucket}/{key}".startswith(self.location)


def parse_root(text: str) -> PayloadRoot:
    """A payload root from ``file:///dir/``, an absolute directory path, or
    ``s3://bucket/prefix/``.

    Local roots are resolved (``os.path.realpath``) once, here. An S3 prefix is taken as
    a directory: ``s3://b/in`` means the keys under ``in/``.

    Raises
    ------
    ValueError
        A relative path, another scheme, a remote host, credentials in the URI, a ``..``
        segment, a kernel or device directory, or an s3 URI without a bucket.
    """
    text = text.strip()
    parsed = urlparse(text)
    if parsed.username or parsed.password:
        raise ValueError(
            f"payload root {_redact(text)!r} carries credentials: give them through the "
            "standard AWS environment (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY), not the URI"
        )
    if parsed.scheme == "s3":
        bucket, prefix = parsed.netloc, unquote(parsed.path).lstrip("/")
        if not bucket:
            raise ValueError(f"payload root {text!r} has no bucket: use s3://bucket/prefix/")
        if prefix and not prefix.endswith("/"):
            prefix += "/"
        if _bad_key(prefix.rstrip("/")) and prefix:
            raise ValueError(f"payload root {text!r}: '.', '..' or empty key segments")
        return PayloadRoot("s3", f"{bucket}/{prefix}")
    if parsed.scheme == "file":
        if parsed.netloc not in ("", "localhost"):
            raise ValueError(f"payload root {text!r} names a remote host {parsed.netloc!r}")
        path = unquote(parsed.path)
    elif parsed.scheme and len(parsed.scheme) > 1:
        raise ValueError(
            f"payload root {text!r} has scheme {parsed.scheme!r}: use file:///dir/ or "
            "s3://bucket/prefix/"
        )
    else:
        path = text
    if not os.path.isabs(path):
        raise ValueError(f"payload root {text!r} is not absolute: use file:///absolute/dir/")
    if ".." in path.split("/"):
        raise ValueError(f"payload root {text!r} has a '..' segment: name the directory itself")
    real = os.path.realpath(path)
    if real == "/" or _in_kernel_dir(real):
        raise ValueError(
            f"payload root {text!r} resolves to {real!r}: the file system root and "
            f"{', '.join(_KERNEL_DIRS)} cannot be payload roots"
        )
    return PayloadRoot("file", real)


_SIZE = re.compile(r"^\s*(\d{1,20})\s*([kmgt]i?b?|b)?\s*$", re.IGNORECASE)
_UNITS = {"": 1, "b": 1, "k": 1024, "m": MIB, "g": GIB, "t": 1024**4}

#: Largest size limit taken (bytes): 1 PiB. A larger one is a typo, not a limit
#: (``99999999999999999999999GiB`` was accepted: a fresh-user finding).
MAX_SIZE_LIMIT_BYTES = 1024**5


def parse_size(text: str) -> int:
    """Bytes from ``123``, ``256MiB``, ``2GiB``, ``512K`` (binary units: K = 1024).

    Raises
    ------
    ValueError
        Not a whole number with an optional unit (B, K/KiB, M/MiB, G/GiB, T/TiB), 0, or
        above :data:`MAX_SIZE_LIMIT_BYTES`.
    """
    m = _SIZE.match(text)
    if not m:
        raise ValueError(f"bad size {text!r}: a whole number of bytes, or with KiB/MiB/GiB")
    value = int(m.group(1)) * _UNITS[(m.group(2) or "")[:1].lower()]
    if value < 1:
        raise ValueError(f"bad size {text!r}: must be at least 1 byte")
    if value > MAX_SIZE_LIMIT_BYTES:
        raise ValueError(f"bad size {text!r}: at most 1 PiB (1024TiB)")
    return value


def parse_limits(text: str) -> tuple[int, int]:
    """``(max_parquet_bytes, max_geojson_bytes)`` from ``SIZE`` (both formats) or
    ``parquet=SIZE,geojson=SIZE`` (either may be left out: its default stays).

    Raises
    ------
    ValueError
        A bad size (:func:`parse_size`), a format other than ``parquet``/``geojson``, or
        one given twice.
    """
    if "=" not in text:
        size = parse_size(text)
        return size, size
    limits = {"parquet": DEFAULT_MAX_PARQUET_BYTES, "geojson": DEFAULT_MAX_GEOJSON_BYTES}
    given: set[str] = set()
    for part in text.split(","):
        name, _, value = part.partition("=")
        name = name.strip().lower()
        if name not in limits:
            raise ValueError(
                f"bad payload size limit {part!r}: expected parquet=SIZE or geojson=SIZE"
            )
        if name in given:  # the last one won without a word (a fresh-user finding)
            raise ValueError(f"bad payload size limit {text!r}: {name} given twice")
        given.add(name)
        limits[name] = parse_size(value)
    return limits["parquet"], limits["geojson"]


@dataclass(frozen=True)
class PayloadPolicy:
    """Where payloads may be read and how large they may be.

    ``roots`` None means any location (an operator's own command, e.g. ``check FILE``);
    an empty tuple means none (the worker's default: by-reference events are quarantined
    with ``payload_not_allowed``). Regular files only, sizes checked before reading, in
    both cases. ``attempts`` bounds the tries of a transient failure (network, throttling,
    I/O errors), ``backoff_s`` is the wait before the second try, doubled after each.
    """

    roots: tuple[PayloadRoot, ...] | None = ()
    max_parquet_bytes: int = DEFAULT_MAX_PARQUET_BYTES
    max_geojson_bytes: int = DEFAULT_MAX_GEOJSON_BYTES
    attempts: int = 3
    backoff_s: float = 0.25

    @classmethod
    def from_strings(
        cls, roots: Iterable[str] = (), max_payload_bytes: str | None = None
    ) -> PayloadPolicy:
        """A policy from root URIs (:func:`parse_root`) and a limit (:func:`parse_limits`).

        Raises
        ------
        ValueError
            A bad root or limit, with the value and the fix.
        """
        parsed = tuple(parse_root(r) for r in roots if r.strip())
        if max_payload_bytes:
            parquet, geojson = parse_limits(max_payload_bytes)
            return cls(parsed, parquet, geojson)
        return cls(parsed)

    def limit(self, fmt: Format) -> int:
        """The largest payload of format ``fmt`` (bytes)."""
        return self.max_parquet_bytes if fmt == "parquet" else self.max_geojson_bytes

    def describe(self) -> str:
        """One line: the roots (or none / any) and the limits, in bytes."""
        if self.roots is None:
            where = "any location"
        else:
            where = ", ".join(str(r) for r in self.roots) or "none (by reference refused)"
        return (
            f"payload roots: {where}; max payload bytes: parquet={self.max_parquet_bytes} "
            f"geojson={self.max_geojson_bytes}"
        )


#: Any location (regular files only, default size limits): an operator's own files.
UNRESTRICTED = PayloadPolicy(roots=None)


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
            "AWS environment's)"
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


# -- local files --------------------------------------------------------------------------


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
            f"{name}: unsupported payload URI scheme {parsed.scheme!r}: use file:// or s3://"
        )
    else:
        path = uri
    if "\x00" in path or not path:
        raise PayloadNotAllowed(f"{name}: an empty path or one with a NUL byte")
    if policy.roots is not None and not os.path.isabs(path):
        raise PayloadNotAllowed(
            f"{name}: a relative path; payload URIs must be absolute (file:///dir/file or "
            "s3://bucket/key) and under a payload root"
        )
    real = os.path.realpath(path)
    if _in_kernel_dir(real):
        raise PayloadNotAllowed(
            f"{name}: lies in a kernel or device file system ({', '.join(_KERNEL_DIRS)}), "
            "never read"
        )
    if policy.roots is not None and not any(r.covers_path(real) for r in policy.roots):
        raise PayloadNotAllowed(f"{name}: {_outside(policy)}")
    return real


def _open_local(name: str, real: str, policy: PayloadPolicy) -> OpenedPayload:
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
        handle = os.fdopen(fd, "rb", buffering=0)
    except BaseException:
        os.close(fd)
        raise
    file = pa.PythonFile(handle, mode="r")
    try:
        fmt = _check_size_and_format(name, st.st_size, file, policy)
    except BaseException:
        file.close()
        raise
    mtime = datetime.fromtimestamp(st.st_mtime, tz=timezone.utc)
    return OpenedPayload(name, fmt, st.st_size, mtime, file)


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


def _unavailable(name: str, exc: OSError) -> PayloadUnavailable:
    if exc.errno in (errno.ENOENT, errno.ENOTDIR):
        return PayloadUnavailable(f"{name}: no such file")
    if exc.errno in (errno.EACCES, errno.EPERM):
        return PayloadUnavailable(f"{name}: permission denied")
    return PayloadUnavailable(f"{name}: cannot open ({exc.strerror or exc})", transient=True)


# -- S3 -----------------------------------------------------------------------------------


def _bad_key(key: str) -> bool:
    return any(seg in ("", ".", "..") for seg in key.split("/"))


def _open_s3(name: str, bucket: str, key: str, policy: PayloadPolicy) -> OpenedPayload:
    if not bucket or not key:
        raise PayloadNotAllowed(f"{name}: an s3 URI needs a bucket and a key")
    if _bad_key(key) or "\x00" in key:
        raise PayloadNotAllowed(f"{name}: the key has '.', '..' or empty segments")
    if policy.roots is not None and not any(r.covers_key(bucket, key) for r in policy.roots):
        raise PayloadNotAllowed(f"{name}: {_outside(policy)}")
    from pyarrow import fs as pafs

    s3 = s3_filesystem()
    path = f"{bucket}/{key}"
    try:
        info = s3.get_file_info(path)
    except OSError as exc:
        raise _s3_unavailable(name, exc) from None
    if info.type == pafs.FileType.NotFound:
        raise PayloadUnavailable(f"{name}: no such object")
    if info.type != pafs.FileType.File:
        raise PayloadNotAllowed(f"{name}: is a prefix, not an object")
    size = int(info.size or 0)
    try:
        file = s3.open_input_file(path)
    except OSError as exc:
        raise _s3_unavailable(name, exc) from None
    try:
        fmt = _check_size_and_format(name, size, file, policy)
    except BaseException:
        file.close()
        raise
    mtime = info.mtime.astimezone(timezone.utc) if info.mtime is not None else None
    return OpenedPayload(name, fmt, size, mtime, file)


#: Seconds: connecting to S3, and one request.
S3_CONNECT_TIMEOUT_S = 5.0
S3_REQUEST_TIMEOUT_S = 30.0


def s3_filesystem(env: Mapping[str, str] | None = None) -> S3FileSystem:
    """pyarrow's S3 filesystem configured from the standard AWS environment.

    Credentials come from the AWS SDK's default chain (``AWS_ACCESS_KEY_ID``,
    ``AWS_SECRET_ACCESS_KEY``, ``AWS_SESSION_TOKEN``, ``AWS_PROFILE``, instance roles);
    the region from ``AWS_REGION`` or ``AWS_DEFAULT_REGION``; a non-AWS endpoint (MinIO,
    moto, Ceph) from ``AWS_ENDPOINT_URL_S3`` or ``AWS_ENDPOINT_URL`` (``http://host:port``).
    Requests time out (:data:`S3_CONNECT_TIMEOUT_S`, :data:`S3_REQUEST_TIMEOUT_S`) and are
    retried by the SDK's standard strategy (3 attempts). Buckets are never created or
    deleted.
    """
    from pyarrow import fs as pafs

    env = os.environ if env is None else env
    kwargs: dict[str, object] = {
        "connect_timeout": S3_CONNECT_TIMEOUT_S,
        "request_timeout": S3_REQUEST_TIMEOUT_S,
        "retry_strategy": pafs.AwsStandardS3RetryStrategy(max_attempts=3),
        "allow_bucket_creation": False,
        "allow_bucket_deletion": False,
    }
    region = env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION")
    if region:
        kwargs["region"] = region
    endpoint = env.get("AWS_ENDPOINT_URL_S3") or env.get("AWS_ENDPOINT_URL")
    if endpoint:
        parsed = urlparse(endpoint if "://" in endpoint else f"https://{endpoint}")
        kwargs["endpoint_override"] = parsed.netloc
        kwargs["scheme"] = parsed.scheme or "https"
        if parsed.scheme == "http" or parsed.hostname in ("127.0.0.1", "localhost"):
            kwargs["force_virtual_addressing"] = False
    return pafs.S3FileSystem(**kwargs)


def _s3_unavailable(name: str, exc: OSError) -> PayloadUnavailable:
    lowered = str(exc).lower().replace("_", "")
    denied = ("accessdenied", "forbidden", "invalidaccesskeyid", "signaturedoesnotmatch")
    if any(word in lowered for word in denied):
        return PayloadUnavailable(f"{name}: access denied ({_scrub(exc)})")
    if "nosuchbucket" in lowered or "nosuchkey" in lowered or "resourcenotfound" in lowered:
        return PayloadUnavailable(f"{name}: no such bucket or object")
    return PayloadUnavailable(f"{name}: unreachable ({_scrub(exc)})", transient=True)


# -- shared -------------------------------------------------------------------------------


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


def _outside(policy: PayloadPolicy) -> str:
    if not policy.roots:
        return (
            "no payload root is configured, so by-reference payloads are refused; set "
            "--payload-root (CONTRACT_GATE_PAYLOAD_ROOTS), e.g. file:///data/batches/ or "
            "s3://bucket/prefix/"
        )
    roots = ", ".join(str(r) for r in policy.roots)
    return f"outside every payload root ({roots})"


def _in_kernel_dir(real: str) -> bool:
    return any(real == d or real.startswith(d + "/") for d in _KERNEL_DIRS)


def _redact(uri: str) -> str:
    """``uri`` with any user:password@ part replaced by ``***@``."""
    return re.sub(r"^([a-zA-Z][\w+.-]*://)[^/@]*@", r"\1***@", uri)


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


#: Bytes copied per chunk by :func:`upload_payload`.
_COPY_CHUNK = 8 * MIB


def upload_payload(path: str | Path, destination: str, name: str, policy: PayloadPolicy) -> str:
    """Copy the batch file ``path`` to ``destination`` + ``name`` and return its URI.

    Parameters
    ----------
    path : str or Path
        The local batch file (checked as by :func:`open_payload` under ``policy``: regular
        file, size limit, format).
    destination : str
        ``s3://bucket/prefix/`` (written through :func:`s3_filesystem`) or ``file:///dir/``
        (a directory the workers read, e.g. a shared volume); a missing trailing ``/`` is
        added.
    name : str
        Object name under the prefix, e.g. ``<batch id>/<file name>``; no ``..`` segments.
    policy : PayloadPolicy
        Limits of the source file.

    Returns
    -------
    str
        ``s3://bucket/prefix/name`` or ``file:///dir/name``: the ``payload_uri`` to announce.

    Raises
    ------
    PayloadError
        The source cannot be read (see :func:`open_payload`), or the upload failed
        (``PayloadUnavailable``: the destination, not credentials, named).
    ValueError
        A destination that is neither ``s3://bucket/...`` nor ``file:///dir/``, a bad
        ``name``, or an object of that name that exists already (an announced payload is
        never replaced).
    """
    if _bad_key(name):
        raise ValueError(f"bad object name {name!r}: no empty, '.' or '..' segments")
    root = parse_root(destination)
    with open_payload(str(path), policy) as src:
        if root.scheme == "s3":
            from pyarrow import fs as pafs

            target = f"{root.location}{name}"
            uri = f"s3://{target}"
            try:
                s3 = s3_filesystem()
                # checked, then written: S3 has no create-if-absent in pyarrow, so two
                # uploads racing for one name can still both write (the later one wins)
                if s3.get_file_info(target).type != pafs.FileType.NotFound:
                    raise ValueError(_exists(uri))
                with s3.open_output_stream(target) as out:
                    _copy(src, out)
            except OSError as exc:
                raise PayloadUnavailable(f"{uri}: upload failed ({_scrub(exc)})") from None
            return uri
        local = Path(root.location, *name.split("/"))
        part = local.with_name(f".{local.name}.{os.getpid()}.part")
        try:
            local.parent.mkdir(parents=True, exist_ok=True)
            with pa.OSFile(str(part), "wb") as out:
                _copy(src, out)
            _publish_file(part, local)
        except FileExistsError:
            raise ValueError(_exists(local.as_uri())) from None
        except OSError as exc:
            raise PayloadUnavailable(f"{local}: copy failed ({exc})") from None
        finally:
            with contextlib.suppress(OSError):
                part.unlink()
        return local.as_uri()


def _publish_file(part: Path, final: Path) -> None:
    """Give the written file ``part`` its name ``final``, never replacing an existing one
    (``FileExistsError``): a hard link, atomic; where the file system has no hard links,
    a rename after a check (racy between two uploads of one name)."""
    try:
        os.link(part, final)
    except FileExistsError:
        raise
    except OSError as exc:
        if exc.errno not in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EXDEV):
            raise
        if final.exists():
            raise FileExistsError(errno.EEXIST, "exists", str(final)) from None
        os.replace(part, final)


def _exists(uri: str) -> str:
    return (
        f"{uri} exists already; an announced payload is never replaced (a batch admitted "
        "from it would change under its verdict): give the batch a new --batch-id"
    )


def _copy(src: OpenedPayload, out: pa.NativeFile) -> None:
    src.file.seek(0)
    left = src.size
    while left > 0:
        chunk = src.file.read(min(_COPY_CHUNK, left))
        if not chunk:
            raise PayloadCorrupt(f"{src.uri}: truncated while being copied")
        out.write(chunk)
        left -= len(chunk)
