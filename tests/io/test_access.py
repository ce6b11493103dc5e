"""worker.io.payloads policy, base, open, upload: roots, sizes, sniffing, bounded retries."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pyarrow as pa
import pytest

from worker.core.errors import (
    PayloadCorrupt,
    PayloadNotAllowed,
    PayloadTooLarge,
    PayloadUnavailable,
)
from worker.io.payloads.base import sniff_format
from worker.io.payloads.open import open_payload, with_retries
from worker.io.payloads.policy import (
    UNRESTRICTED,
    PayloadPolicy,
    PayloadRoot,
    parse_limits,
    parse_root,
    parse_size,
)
from worker.io.payloads.upload import upload_payload

DEMO = Path(__file__).resolve().parents[2] / "worker" / "data"


def _open(uri: str, policy: PayloadPolicy) -> str:
    """Open and close ``uri``; its format."""
    with open_payload(uri, policy) as src:
        return src.format


def test_roots_are_normalised(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    link = tmp_path / "link"
    link.symlink_to(real, target_is_directory=True)
    # a symlinked root is resolved once, so a file under it is judged by its real path
    assert parse_root(link.as_uri() + "/") == PayloadRoot("file", str(real))
    assert parse_root(str(real)) == PayloadRoot("file", str(real))
    assert str(parse_root(str(real))) == real.as_uri() + "/"
    assert parse_root("s3://bucket/in/batches") == PayloadRoot("s3", "bucket/in/batches/")
    assert parse_root("s3://bucket") == PayloadRoot("s3", "bucket/")
    assert str(parse_root("s3://bucket/in/")) == "s3://bucket/in/"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("relative/dir", "is not absolute"),
        ("file:///data/../etc/", "'..' segment"),
        ("file://host/data/", "remote host"),
        ("http://example.org/data/", "scheme 'http'"),
        ("file:///", "cannot be payload roots"),
        ("file:///proc/self/", "cannot be payload roots"),
        ("/dev", "cannot be payload roots"),
        ("s3://", "has no bucket"),
        ("s3://AKIA:secret@bucket/in/", "carries credentials"),
        ("s3://bucket/a/../b/", "'..'"),
    ],
)
def test_bad_roots_are_refused_with_the_fix(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message) as info:
        parse_root(text)
    assert "secret" not in str(info.value)


def test_a_prefix_root_covers_only_its_own_keys() -> None:
    root = parse_root("s3://bucket/in")
    assert root.covers_key("bucket", "in/2026/b.parquet")
    assert not root.covers_key("bucket", "inbox/b.parquet")  # a prefix is a directory
    assert not root.covers_key("other", "in/b.parquet")
    home = parse_root("/srv/payloads")
    assert home.covers_path("/srv/payloads/a/b.parquet")
    assert not home.covers_path("/srv/payloads-old/b.parquet")
    assert not home.covers_path("/srv/payloads")  # the directory itself is no file


def test_sizes_and_limits() -> None:
    assert parse_size("123") == 123
    assert parse_size("256MiB") == 256 * 1024**2
    assert parse_size("2 GiB") == 2 * 1024**3
    assert parse_size("512k") == 512 * 1024
    for bad in ("", "1.5GiB", "-1", "0", "12 parsecs", "99999999999999999999999GiB", "9" * 5000):
        with pytest.raises(ValueError, match="bad size"):
            parse_size(bad)
    assert parse_size("1024TiB") == 1024**5  # the largest limit taken
    with pytest.raises(ValueError, match="at most 1 PiB"):
        parse_size("1025TiB")
    with pytest.raises(ValueError, match="geojson given twice"):
        parse_limits("geojson=100,geojson=1MiB")
    assert parse_limits("1GiB") == {"parquet": 1024**3, "geojson": 1024**3, "ogr": 1024**3}
    assert parse_limits("geojson=1MiB") == {
        "parquet": 2 * 1024**3,
        "geojson": 1024**2,
        "ogr": 2 * 1024**3,
    }
    assert (parse_limits("parquet=10, geojson=5")["parquet"], parse_limits("ogr=7")["ogr"]) == (
        10,
        7,
    )
    with pytest.raises(ValueError, match="expected parquet=SIZE or geojson=SIZE"):
        parse_limits("shapefile=1MiB")
    policy = PayloadPolicy.from_strings(["s3://b/p/"], "geojson=1MiB")
    assert policy.describe() == (
        "payload roots: s3://b/p/; max payload bytes: parquet=2147483648 geojson=1048576 "
        "ogr=2147483648"
    )
    assert PayloadPolicy().describe().startswith("payload roots: none (by reference refused)")


@pytest.mark.parametrize(
    ("head", "tail", "size", "name", "expected"),
    [
        (b"PAR1\x15\x04", b"PAR1", 1000, "x.bin", "parquet"),
        (b"PAR1\x15\x04", b"PAR1", 1000, "x.geojson", "parquet"),  # bytes beat the name
        (b'{"type"', b"]}", 1000, "x.parquet.txt", "geojson"),
        (b'\xef\xbb\xbf \n {"type"', b"]}", 1000, "x", "geojson"),  # BOM, whitespace
        (b"[1, 2]", b"2]", 6, "x.json", "geojson"),
    ],
)
def test_the_format_comes_from_the_magic_bytes(
    head: bytes, tail: bytes, size: int, name: str, expected: str
) -> None:
    assert sniff_format(head, tail, size, name) == expected


@pytest.mark.parametrize(
    ("head", "tail", "name", "message"),
    [
        (b"PAR1\x15\x04", b"\x00\x00\x00\x00", "x.parquet", "does not end with them"),
        (b'{"type"', b"]}", "x.parquet", "does not start with the PAR1 magic"),
        (b"\x89PNG\r\n", b"\x00\x00", "x.geojson", "not a JSON document nor any other format read"),
        (b"\x89PNG\r\n", b"\x00\x00", "x.bin", "PAR1 magic bytes; GeoJSON is a JSON object"),
    ],
)
def test_wrong_magic_is_corrupt(head: bytes, tail: bytes, name: str, message: str) -> None:
    with pytest.raises(PayloadCorrupt, match=message):
        sniff_format(head, tail, 1000, name)


def test_limits_are_checked_before_reading(tmp_path: Path) -> None:
    path = tmp_path / "b.parquet"
    path.write_bytes((DEMO / "nyc_boroughs.parquet").read_bytes())
    size = path.stat().st_size
    small = PayloadPolicy(None, {"parquet": size - 1})
    with pytest.raises(PayloadTooLarge, match=f"{size} bytes .* limit of {size - 1} bytes"):
        _open(str(path), small)
    with open_payload(path.as_uri(), PayloadPolicy(None, {"parquet": size})) as src:
        assert (src.format, src.size) == ("parquet", size)
        assert src.mtime is not None
        assert abs(src.mtime.timestamp() - path.stat().st_mtime) < 1e-3
    # GeoJSON has its own limit
    doc = tmp_path / "b.geojson"
    doc.write_text('{"type": "FeatureCollection", "features": []}')
    tight = PayloadPolicy(None, {"parquet": 10**6, "geojson": 10})
    with pytest.raises(PayloadTooLarge, match=r"limit of 10 bytes for GeoJSON"):
        _open(str(doc), tight)
    # above both limits, the message still names the format's own limit (a new-user
    # session got "limit of 1048576 bytes for any payload" for a Parquet file with
    # --max-payload-bytes parquet=10K,geojson=1M)
    both = PayloadPolicy(None, parse_limits(f"parquet={size // 4},geojson={size // 2},ogr=9"))
    with pytest.raises(PayloadTooLarge, match=rf"limit of {size // 4} bytes .* for Parquet"):
        _open(str(path), both)
    # no format and above every limit: too large, against the largest limit
    noise = tmp_path / "noise.bin"
    noise.write_bytes(b"\x00" * size)
    with pytest.raises(PayloadTooLarge, match=rf"limit of {size // 2} bytes .* any payload"):
        _open(str(noise), both)


def test_unrestricted_still_reads_regular_files_only(tmp_path: Path) -> None:
    with pytest.raises(PayloadNotAllowed, match=r"is a directory"):
        _open(str(tmp_path), UNRESTRICTED)
    with pytest.raises(PayloadNotAllowed, match=r"kernel or device"):
        _open("/dev/zero", UNRESTRICTED)
    with pytest.raises(PayloadUnavailable, match=r"no such file"):
        _open(str(tmp_path / "nope"), UNRESTRICTED)


def test_a_local_file_is_read_by_arrows_own_file_of_the_same_inode(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Arrow's own file reads without the GIL (a Python file object took it for every read,
    # issue 27); where /proc/self/fd cannot be opened, the Python file object as before
    src_path = DEMO / "admin_boundaries.parquet"
    data = src_path.read_bytes()
    with open_payload(str(src_path), UNRESTRICTED) as src:
        assert type(src.file) is pa.OSFile
        assert os.fstat(src.file.fileno()).st_ino == src_path.stat().st_ino
        assert src.file.size() == len(data)
        src.file.seek(0)
        assert src.file.read() == data
    real_osfile = pa.OSFile

    def no_proc(path: str, *args: object) -> pa.NativeFile:
        if path.startswith("/proc/self/fd/"):
            raise FileNotFoundError(path)
        return real_osfile(path, *args)

    monkeypatch.setattr(pa, "OSFile", no_proc)
    with open_payload(str(src_path), UNRESTRICTED) as src:
        assert type(src.file) is pa.PythonFile
        src.file.seek(0)
        assert src.file.read() == data


def test_transient_failures_are_retried_a_bounded_number_of_times() -> None:
    calls: list[int] = []

    def flaky() -> str:
        calls.append(1)
        if len(calls) < 3:
            raise PayloadUnavailable("s3://b/k: unreachable (connection reset)", transient=True)
        return "read"

    policy = PayloadPolicy(attempts=3, backoff_s=0.01)
    assert with_retries(flaky, policy) == "read" and len(calls) == 3
    calls.clear()
    with pytest.raises(PayloadUnavailable, match=r"connection reset\) \(after 2 attempts\)"):
        with_retries(flaky, PayloadPolicy(attempts=2, backoff_s=0.01))
    assert len(calls) == 2

    def missing() -> str:
        calls.append(1)
        raise PayloadUnavailable("s3://b/k: no such object")

    calls.clear()
    with pytest.raises(PayloadUnavailable, match=r"no such object$"):
        with_retries(missing, policy)
    assert len(calls) == 1  # a missing object is not retried


def test_upload_to_a_directory_root(tmp_path: Path) -> None:
    dest = tmp_path / "landing"
    dest.mkdir()
    src = DEMO / "nyc_boroughs.parquet"
    uri = upload_payload(src, dest.as_uri() + "/", "b-1/nyc.parquet", UNRESTRICTED)
    assert uri == (dest / "b-1" / "nyc.parquet").as_uri()
    assert (dest / "b-1" / "nyc.parquet").read_bytes() == src.read_bytes()
    with pytest.raises(ValueError, match="bad object name"):
        upload_payload(src, dest.as_uri(), "../escape.parquet", UNRESTRICTED)
    # found by a new-user session: a second upload under the same batch id replaced the
    # file an admitted batch had been judged on
    other = tmp_path / "other.geojson"
    other.write_text('{"type": "FeatureCollection", "features": []}')
    with pytest.raises(ValueError, match=r"exists already; an announced payload is never rep"):
        upload_payload(other, dest.as_uri() + "/", "b-1/nyc.parquet", UNRESTRICTED)
    assert (dest / "b-1" / "nyc.parquet").read_bytes() == src.read_bytes()
    assert sorted(p.name for p in (dest / "b-1").iterdir()) == ["nyc.parquet"]  # no .part


def test_sizes_in_messages_take_the_unit_they_reach(tmp_path: Path) -> None:
    # a 1 KiB limit read "(0.0 MiB)" (a fresh-user finding)
    doc = tmp_path / "b.geojson"
    doc.write_text('{"type": "FeatureCollection", "features": []}' + " " * 2000)
    tight = PayloadPolicy(None, {"parquet": 10**6, "geojson": 1024})
    with pytest.raises(
        PayloadTooLarge,
        match=r"2045 bytes \(2\.0 KiB\), above the limit of 1024 bytes \(1\.0 KiB\)",
    ):
        _open(str(doc), tight)
    tiny = PayloadPolicy(None, {"parquet": 10**6, "geojson": 10})
    with pytest.raises(
        PayloadTooLarge, match=r"\(2\.0 KiB\), above the limit of 10 bytes for GeoJSON"
    ):
        _open(str(doc), tiny)


def _hostile(tmp_path: Path, kind: str) -> Path:
    """A local path of ``kind`` that a batch file must not be, made in ``tmp_path``."""
    import socket

    path = tmp_path / f"{kind}.parquet"
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "socket":
        with socket.socket(socket.AF_UNIX) as s:
            s.bind(str(path))
    elif kind == "device":  # a device node outside /dev: refused by its type
        try:
            os.mknod(path, 0o600 | 0o020000, os.makedev(1, 5))  # S_IFCHR: /dev/zero's
        except PermissionError:
            pytest.skip("mknod needs CAP_MKNOD")
    elif kind == "loop":
        os.symlink(tmp_path / "other", path)
        os.symlink(path, tmp_path / "other")
    elif kind == "dangling":
        os.symlink(tmp_path / "nothing", path)
    elif kind == "to_dev":
        os.symlink("/dev/zero", path)
    elif kind == "directory":
        path.mkdir()
    elif kind == "empty":
        path.touch()
    elif kind == "sparse":
        with open(path, "wb") as f:
            f.truncate(3 * 2**30)
    return path


@pytest.mark.parametrize(
    ("kind", "error", "message"),
    [
        ("fifo", PayloadNotAllowed, r"is a FIFO; only regular files are read"),
        ("socket", PayloadNotAllowed, r"is a socket; only regular files are read"),
        ("device", PayloadNotAllowed, r"is a character device; only regular files are read"),
        ("loop", PayloadNotAllowed, r"a symbolic link that does not resolve \(a loop of links\)"),
        ("dangling", PayloadUnavailable, r"no such file"),
        ("to_dev", PayloadNotAllowed, r"kernel or device file system"),
        ("directory", PayloadNotAllowed, r"is a directory"),
        ("empty", PayloadCorrupt, r"an empty file \(0 bytes\)"),
        ("sparse", PayloadTooLarge, r"3221225472 bytes \(3.0 GiB\), above the limit"),
    ],
)
def test_a_local_file_that_is_no_batch_is_refused_by_name(
    tmp_path: Path, kind: str, error: type[Exception], message: str
) -> None:
    """Stop 38: every kind of local path that is not a readable batch file, opened by the
    path of ``check`` (no payload roots, Arrow's own file through /proc/self/fd), gives
    its own reason, before any read that could block (FIFO) or run long (device); a
    symbolic link loop said "is a symbolic link; only regular files are read", as if
    links were not followed."""
    with pytest.raises(error, match=message):
        _open(str(_hostile(tmp_path, kind)), UNRESTRICTED)


def test_a_file_that_grows_after_its_size_is_checked_is_read_to_that_size(tmp_path: Path) -> None:
    """The native file's size is the one checked: bytes appended after the check are not
    part of the payload (a reader takes the footer at the size checked)."""
    path = tmp_path / "batch.parquet"
    data = (DEMO / "admin_boundaries.parquet").read_bytes()
    path.write_bytes(data)
    with open_payload(str(path), UNRESTRICTED) as opened:
        with open(path, "ab") as f:
            f.write(b"\x00" * 4096)
        assert opened.size == opened.file.size() == len(data)
        opened.file.seek(0)
        assert opened.file.read() == data


def test_a_link_loop_under_a_root_is_named_a_loop(tmp_path: Path) -> None:
    path = _hostile(tmp_path, "loop")
    with pytest.raises(PayloadNotAllowed, match=r"a symbolic link that does not resolve"):
        _open(str(path), PayloadPolicy.from_strings([str(tmp_path)]))


@contextmanager
def _unprivileged() -> Iterator[None]:
    """Permission checks as an ordinary user: root's effective uid set to nobody's for
    the block (root reads every file whatever its mode)."""
    if os.geteuid() != 0:
        yield
        return
    os.seteuid(65534)
    try:
        yield
    finally:
        os.seteuid(0)


@pytest.mark.parametrize("openat2_usable", [None, False], ids=["openat2", "walk"])
@pytest.mark.parametrize("rooted", [False, True], ids=["check", "root"])
def test_a_file_without_read_permission_is_a_payload_error(
    monkeypatch: pytest.MonkeyPatch, rooted: bool, openat2_usable: bool | None
) -> None:
    """Stop 38: a payload under a root whose mode forbids reading escaped the opener as a
    bare ``PermissionError: [Errno 13] Permission denied: '/proc/self/fd/5'`` (the reopen
    of the descriptor opened O_PATH, which needs no permission): the worker quarantined
    the batch as a generic ``payload_error`` naming a /proc path, not the payload. Now
    ``payload_unavailable``, "permission denied", naming the URI, as ``check``'s path."""
    import tempfile

    from worker.io.payloads import openat2

    monkeypatch.setattr(openat2, "_openat2_usable", openat2_usable)
    with tempfile.TemporaryDirectory() as name:  # under /tmp: other users may search it
        base = Path(name)
        base.chmod(0o755)
        path = base / "closed.parquet"
        path.write_bytes((DEMO / "nyc_boroughs.parquet").read_bytes())
        path.chmod(0o000)
        policy = PayloadPolicy.from_strings([str(base)]) if rooted else UNRESTRICTED
        with _unprivileged(), pytest.raises(PayloadUnavailable, match=r": permission denied$"):
            _open(str(path), policy)
