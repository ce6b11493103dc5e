"""Build and run ``deploy/Dockerfile`` without a Docker engine: mmdebstrap, podman, buildah.

The recipe (measured on the development machines, issue 13):

1. a local base image: ``mmdebstrap --variant=minbase --include=python3,python3-venv,
   ca-certificates bookworm`` (Debian's CPython 3.11) imported with ``podman import``;
2. ``buildah bud --isolation chroot --network host --build-arg BASE_IMAGE=<that base>``,
   with the host's CA bundle mounted so that pip reaches the package registry through
   this machine's TLS-inspecting proxy (and ``PIP_CERT`` passed when the environment has
   one);
3. ``buildah from`` + ``buildah run --isolation chroot --network host`` to run the entry
   point (``podman run`` fails here: the sandbox refuses setrlimit).

Everything is cached between runs: the base tarball under :data:`CACHE` keyed by a hash
of its recipe, the imported base and the built image in the local container storage,
tagged by a hash of their inputs, so an unchanged tree costs no rebuild. Every
subprocess has a timeout.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOCKERFILE = ROOT / "deploy" / "Dockerfile"
CACHE = Path(os.environ.get("CONTRACT_GATE_IMAGE_CACHE", "/var/tmp/contract-gate-image-cache"))
CA_BUNDLE = Path("/etc/ssl/certs/ca-certificates.crt")
BASE_RECIPE = (
    "mmdebstrap",
    "--variant=minbase",
    "--include=python3,python3-venv,ca-certificates",
    "bookworm",
)
BASE_REPO = "localhost/contract-gate-test-base"
IMAGE_REPO = "localhost/contract-gate-test"
TOOLS = ("buildah", "mmdebstrap", "podman")


def missing_tools() -> list[str]:
    """The container tools of the recipe that are not on PATH."""
    return [t for t in TOOLS if shutil.which(t) is None]


def _run(cmd: list[str], timeout_s: float) -> str:
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s, check=False)
    if done.returncode != 0:
        raise RuntimeError(
            f"{' '.join(cmd[:3])} ... exited {done.returncode}:\n{done.stdout[-3000:]}\n"
            f"{done.stderr[-3000:]}"
        )
    return done.stdout


def image_exists(ref: str) -> bool:
    done = subprocess.run(
        ["buildah", "inspect", "--type", "image", ref],
        capture_output=True,
        timeout=60,
        check=False,
    )
    return done.returncode == 0


def _digest(parts: Iterable[bytes]) -> str:
    h = hashlib.sha256()
    for p in parts:
        h.update(hashlib.sha256(p).digest())
    return h.hexdigest()[:16]


def base_image() -> str:
    """The local Debian base with CPython 3.11, built once per recipe (cached)."""
    key = _digest(a.encode() for a in BASE_RECIPE)
    ref = f"{BASE_REPO}:{key}"
    if image_exists(ref):
        return ref
    CACHE.mkdir(parents=True, exist_ok=True)
    tarball = CACHE / f"rootfs-{key}.tar"
    if not tarball.exists():
        partial = tarball.with_suffix(".partial.tar")
        _run([*BASE_RECIPE, str(partial)], timeout_s=900)
        partial.rename(tarball)
    _run(["podman", "import", str(tarball), ref], timeout_s=600)
    return ref


def _context_files() -> list[Path]:
    """The files of the build context (.dockerignore keeps pyproject, README, worker/)."""
    files = [ROOT / "pyproject.toml", ROOT / "README.md", DOCKERFILE, ROOT / ".dockerignore"]
    files += sorted(
        p
        for p in (ROOT / "worker").rglob("*")
        if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc"
    )
    return files


@dataclass(frozen=True)
class BuiltImage:
    ref: str
    base: str
    build_seconds: float  # 0.0 when an image of the same inputs was already there
    size_bytes: int


def build_image() -> BuiltImage:
    """Build ``deploy/Dockerfile`` on the local base; reuse an image of identical inputs."""
    base = base_image()
    key = _digest(
        [base.encode()]
        + [str(p.relative_to(ROOT)).encode() + b"\0" + p.read_bytes() for p in _context_files()]
    )
    ref = f"{IMAGE_REPO}:{key}"
    seconds = 0.0
    if not image_exists(ref):
        started = time.monotonic()
        cmd = [
            "buildah",
            "bud",
            "--isolation",
            "chroot",
            "--network",
            "host",
            "--build-arg",
            f"BASE_IMAGE={base}",
            "--build-arg",
            f"REVISION={key}",
            "-f",
            str(DOCKERFILE),
            "-t",
            ref,
        ]
        if CA_BUNDLE.exists():
            cmd += ["-v", f"{CA_BUNDLE}:{CA_BUNDLE}:ro"]
        if os.environ.get("PIP_CERT"):
            cmd += ["--build-arg", f"PIP_CERT={os.environ['PIP_CERT']}"]
            if os.environ["PIP_CERT"] != str(CA_BUNDLE):
                cmd += ["-v", f"{os.environ['PIP_CERT']}:{os.environ['PIP_CERT']}:ro"]
        _run([*cmd, str(ROOT)], timeout_s=1200)
        seconds = time.monotonic() - started
        _remove_older_images(keep=ref)
    size = _run(["podman", "image", "inspect", "--format", "{{.Size}}", ref], timeout_s=60)
    return BuiltImage(ref, base, seconds, int(size.strip()))


def _remove_older_images(keep: str) -> None:
    """Remove the test images of earlier trees (tagged by this module; never other images)."""
    listing = json.loads(_run(["buildah", "images", "--json"], timeout_s=60) or "[]")
    for image in listing:
        names = image.get("names") or []
        if any(n.startswith(IMAGE_REPO + ":") for n in names) and keep not in names:
            subprocess.run(
                ["buildah", "rmi", image["id"]], capture_output=True, timeout=120, check=False
            )


def image_config(ref: str) -> dict[str, object]:
    """The OCI image configuration (``config`` of the image's config blob)."""
    out = _run(["buildah", "inspect", "--type", "image", ref], timeout_s=60)
    return dict(json.loads(out)["OCIv1"]["config"])


class Container:
    """A working container of an image (``buildah from``), removed by its own id."""

    def __init__(self, ref: str) -> None:
        self.id = _run(["buildah", "from", "--pull=never", ref], timeout_s=120).strip()

    def command(self, argv: list[str], env: dict[str, str] | None = None) -> list[str]:
        cmd = ["buildah", "run", "--isolation", "chroot", "--network", "host"]
        for k, v in (env or {}).items():
            cmd += ["-e", f"{k}={v}"]
        return [*cmd, self.id, "--", *argv]

    def run(self, argv: list[str], timeout_s: float = 120) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            self.command(argv), capture_output=True, text=True, timeout=timeout_s, check=False
        )

    def remove(self) -> None:
        subprocess.run(["buildah", "rm", self.id], capture_output=True, timeout=120, check=False)


def descendants(pid: int) -> list[int]:
    """Process ids below ``pid`` (``/proc/PID/task/*/children``), depth first."""
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            children = (task / "children").read_text().split()
        except OSError:
            continue
        for child in map(int, children):
            found.append(child)
            found += descendants(child)
    return found
