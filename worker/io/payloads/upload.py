"""``batch publish --upload``: a local batch file copied to S3 or a shared directory.

An announced payload is never replaced: the copy fails when the object or file exists.
"""

from __future__ import annotations

import contextlib
import errno
import os
from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow as pa

from worker.core.errors import (
    PayloadCorrupt,
    PayloadUnavailable,
)

if TYPE_CHECKING:
    pass
from worker.io.payloads.base import OpenedPayload, _scrub
from worker.io.payloads.open import open_payload
from worker.io.payloads.policy import MIB, PayloadPolicy, _bad_key, parse_root
from worker.io.payloads.s3 import s3_filesystem

__all__ = [
    "upload_payload",
]


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
