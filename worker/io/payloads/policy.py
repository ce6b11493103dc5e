"""Where payloads may be read from and how large they may be: roots, sizes, limits.

A producer names a batch's features by ``payload_uri``; the worker reads that URI only
when it lies under a configured payload root (:class:`PayloadPolicy`): ``file:///dir/``
(a local directory) or ``s3://bucket/prefix/`` (objects under a key prefix). Kernel and
device filesystems (``/proc``, ``/sys``, ``/dev``) are never roots nor read. Opening is
:mod:`worker.io.payloads.open`.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Literal
from urllib.parse import unquote, urlparse

from worker.io.formats import FORMATS

__all__ = [
    "MAX_SIZE_LIMIT_BYTES",
    "UNRESTRICTED",
    "PayloadPolicy",
    "PayloadRoot",
    "default_limits",
    "limits_syntax",
    "limits_text",
    "parse_limits",
    "parse_root",
    "parse_size",
]


MIB = 1024**2
GIB = 1024**3


def default_limits() -> dict[str, int]:
    """Default largest payload of each format (bytes), by reader name, in registry order
    (read from :data:`~worker.io.formats.FORMATS` at each call)."""
    return {name: reader.default_limit_bytes for name, reader in FORMATS.items()}


#: Filesystems whose files are not data: never read, whatever the roots say.
_KERNEL_DIRS = ("/proc", "/sys", "/dev")


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
#: (``99999999999999999999999GiB`` was accepted).
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


def limits_syntax() -> str:
    """``NAME=SIZE,NAME=SIZE,...``: one per reader of :data:`~worker.io.formats.FORMATS`,
    in registry order."""
    return ",".join(f"{name}=SIZE" for name in FORMATS)


def limits_text(limits: Mapping[str, int], sep: str = ",") -> str:
    """``NAME=2GiB,NAME=256MiB,...`` (whole binary units where they divide)."""
    return sep.join(f"{name}={_size_text(size)}" for name, size in limits.items())


def _size_text(size: int) -> str:
    for unit, scale in (("TiB", 1024**4), ("GiB", GIB), ("MiB", MIB), ("KiB", 1024)):
        if size % scale == 0:
            return f"{size // scale}{unit}"
    return str(size)


def parse_limits(text: str) -> dict[str, int]:
    """The limit of every format (a reader ``name`` of :data:`worker.io.formats.FORMATS`)
    from ``SIZE`` (every format) or ``NAME=SIZE,...`` (one left out keeps its default).

    Raises
    ------
    ValueError
        A bad size (:func:`parse_size`), a name that is no reader's, or one given twice.
    """
    if "=" not in text:
        size = parse_size(text)
        return dict.fromkeys(FORMATS, size)
    limits = default_limits()
    given: set[str] = set()
    for part in text.split(","):
        name, _, value = part.partition("=")
        name = name.strip().lower()
        if name not in limits:
            raise ValueError(
                f"bad payload size limit {part!r}: expected "
                + " or ".join(f"{n}=SIZE" for n in FORMATS)
            )
        if name in given:  # the last one won without a word
            raise ValueError(f"bad payload size limit {text!r}: {name} given twice")
        given.add(name)
        limits[name] = parse_size(value)
    return limits


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
    #: largest payload of each format (bytes), by reader name; a format left out has its
    #: reader's default
    limits: Mapping[str, int] = field(default_factory=default_limits)
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
            return cls(parsed, MappingProxyType(parse_limits(max_payload_bytes)))
        return cls(parsed)

    def __post_init__(self) -> None:
        full = {**default_limits(), **self.limits}
        object.__setattr__(self, "limits", MappingProxyType(full))

    def limit(self, fmt: str) -> int:
        """The largest payload of format ``fmt`` (a reader name; bytes): its reader's
        default when the policy, built before the reader was registered, has none."""
        return self.limits.get(fmt) or FORMATS[fmt].default_limit_bytes

    def describe(self) -> str:
        """One line: the roots (or none / any) and the limits, in bytes."""
        if self.roots is None:
            where = "any location"
        else:
            where = ", ".join(str(r) for r in self.roots) or "none (by reference refused)"
        sizes = " ".join(f"{name}={size}" for name, size in self.limits.items())
        return f"payload roots: {where}; max payload bytes: {sizes}"


#: Any location (regular files only, default size limits): an operator's own files.
UNRESTRICTED = PayloadPolicy(roots=None)


def _bad_key(key: str) -> bool:
    return any(seg in ("", ".", "..") for seg in key.split("/"))


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
