"""Payloads in S3: the object checked against the roots, opened through pyarrow's S3 filesystem."""

from __future__ import annotations

import os
from collections.abc import Mapping
from datetime import timezone
from typing import TYPE_CHECKING
from urllib.parse import urlparse

from worker.core.errors import (
    PayloadNotAllowed,
    PayloadUnavailable,
)

if TYPE_CHECKING:
    from pyarrow.fs import S3FileSystem
from worker.io.payloads.base import OpenedPayload, _check_size_and_format, _scrub
from worker.io.payloads.policy import PayloadPolicy, _bad_key, _outside

__all__ = [
    "S3_CONNECT_TIMEOUT_S",
    "S3_REQUEST_TIMEOUT_S",
    "s3_filesystem",
]


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
