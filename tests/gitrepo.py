"""A temporary git repository with a history of contract changes, for review tests."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest


def git_available() -> bool:
    return shutil.which("git") is not None


class GitRepo:
    """``git`` in ``root`` with a fixed identity; :meth:`commit` writes files and commits
    them at a given committer date (ISO 8601)."""

    def __init__(self, root: Path) -> None:
        if not git_available():
            pytest.skip("git is not installed")
        self.root = root
        root.mkdir(parents=True, exist_ok=True)
        self.git("init", "-q", "-b", "main")

    def git(self, *args: str, date: str = "2026-11-01T00:00:00+00:00") -> str:
        env = {
            **os.environ,
            "GIT_AUTHOR_NAME": "t",
            "GIT_AUTHOR_EMAIL": "t@example.org",
            "GIT_COMMITTER_NAME": "t",
            "GIT_COMMITTER_EMAIL": "t@example.org",
            "GIT_AUTHOR_DATE": date,
            "GIT_COMMITTER_DATE": date,
            "GIT_CONFIG_NOSYSTEM": "1",
            "HOME": str(self.root),
        }
        done = subprocess.run(
            ["git", "-C", str(self.root), *args], capture_output=True, text=True, env=env
        )
        assert done.returncode == 0, done.stderr
        return done.stdout.strip()

    def commit(
        self, message: str, date: str, write: dict[str, str], remove: tuple[str, ...] = ()
    ) -> str:
        for path, text in write.items():
            p = self.root / path
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_text(text, encoding="utf-8")
        for path in remove:
            (self.root / path).unlink()
        self.git("add", "-A")
        self.git("commit", "-q", "-m", message, date=date)
        return self.git("rev-parse", "HEAD")
