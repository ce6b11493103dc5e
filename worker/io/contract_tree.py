"""Contract files of a tree: a git revision (read with ``git``, no checkout) or a directory.

``contract review BASE HEAD`` reads both sides through :func:`read_tree`: the YAML files
(``*.yaml``, ``*.yml``, subdirectories included) under the contracts directory, the date
each was added (git: the committer date of the newest commit that added the path, from
``git log --diff-filter=A``; a directory: the file's modification time) and a reader for
other files of the same tree (evidence files named by ``evidence:``, from the tree's root).

A git revision is anything ``git rev-parse`` resolves to a tree: a commit, a branch, a tag,
``HEAD~1``, or git's empty tree ``4b825dc642cb6eb9a060e54bf8d69288fbee4904`` (every file
then reviews as added). A revision that is a tree, not a commit, has no dates. In a shallow
clone, files older than the shallow boundary date from the boundary commit.
"""

from __future__ import annotations

import posixpath
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from worker.core.errors import ContractGateError

__all__ = ["EMPTY_TREE", "ContractTree", "read_tree"]

#: git's empty tree (present in every repository): a BASE with no files.
EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"
_SUFFIXES = (".yaml", ".yml")


@dataclass(frozen=True)
class ContractTree:
    """One side of a review.

    ``files`` maps a path from the tree's root (``/``-separated) to the file's text;
    ``dates`` the same paths to the date each was added (aware, UTC); ``read`` reads any
    file of the tree by such a path (None when absent or outside the tree); ``label`` names
    the side in reports (the revision and its short commit id, or the directory).
    """

    label: str
    files: dict[str, str]
    dates: dict[str, datetime] = field(default_factory=dict)
    read: Callable[[str], str | None] = lambda path: None


def _clean(path: str) -> str | None:
    """``path`` normalised inside the tree (``a/./b`` -> ``a/b``); None when it escapes."""
    norm = posixpath.normpath(path.replace("\\", "/"))
    if norm.startswith("../") or norm == ".." or norm.startswith("/"):
        return None
    return norm


def _git(repo: str, *args: str, check: bool = True) -> subprocess.CompletedProcess[bytes]:
    try:
        done = subprocess.run(["git", "-C", repo, *args], capture_output=True, timeout=120)
    except FileNotFoundError:
        raise ContractGateError(
            "git is not installed: give BASE and HEAD as two directories instead"
        ) from None
    if check and done.returncode != 0:
        err = done.stderr.decode("utf-8", "replace").strip()
        raise ContractGateError(f"git {' '.join(args[:2])} failed in {repo}: {err}")
    return done


def _read_dir(root: Path, contracts_dir: str) -> ContractTree:
    """The contract files under ``root/contracts_dir`` and a reader of any file of ``root``.

    Both keep to the tree: a path or symlink that resolves out of ``root`` is never read
    (a pull request checked out as HEAD could link a contract file to any file of the CI
    machine). The reader answers None for one; a contract file that links out is an error.

    Raises
    ------
    ContractGateError
        A contract file (``*.yaml``, ``*.yml``) resolves to a file out of the tree.
    """
    base = root / contracts_dir
    top = root.resolve()
    files: dict[str, str] = {}
    dates: dict[str, datetime] = {}
    if base.is_dir():
        for p in sorted(base.rglob("*")):
            if p.suffix in _SUFFIXES and p.is_file():
                target = p.resolve()
                if not target.is_relative_to(top):
                    raise ContractGateError(
                        f"{p} links to {target}, outside the tree {root}: a reviewed tree "
                        "holds its own contract files; replace the link by the file"
                    )
                rel = p.relative_to(root).as_posix()
                files[rel] = target.read_bytes().decode("utf-8", "replace")
                dates[rel] = datetime.fromtimestamp(p.stat().st_mtime, timezone.utc)

    def read(path: str) -> str | None:
        clean = _clean(path)
        if clean is None:
            return None
        target = (root / clean).resolve()
        if not target.is_relative_to(top) or not target.is_file():
            return None
        return target.read_bytes().decode("utf-8", "replace")

    return ContractTree(str(root), files, dates, read)


def _read_git(repo: str, rev: str, contracts_dir: str) -> ContractTree:
    tree = _git(repo, "rev-parse", "--verify", "--quiet", f"{rev}^{{tree}}", check=False)
    if tree.returncode != 0:
        raise ContractGateError(
            f"{rev!r} is neither a directory nor a git revision of {repo} (in a shallow "
            "clone, fetch the base first, e.g. `git fetch --depth=50 origin main`)"
        )
    commit = _git(repo, "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}", check=False)
    sha = commit.stdout.decode().strip() if commit.returncode == 0 else None
    label = f"{rev} ({sha[:12]})" if sha and sha[:12] not in rev else rev
    prefix = _clean(contracts_dir) or "."
    listing = _git(repo, "ls-tree", "-r", "-z", "--name-only", rev, "--", prefix)
    names = [n.decode() for n in listing.stdout.split(b"\0") if n]

    def read(path: str) -> str | None:
        clean = _clean(path)
        if clean is None:
            return None
        done = _git(repo, "cat-file", "blob", f"{rev}:{clean}", check=False)
        return done.stdout.decode("utf-8", "replace") if done.returncode == 0 else None

    files = {}
    for name in names:
        if name.endswith(_SUFFIXES):
            text = read(name)
            if text is not None:
                files[name] = text
    dates: dict[str, datetime] = {}
    if sha is not None and files:
        log = _git(
            repo, "log", "--diff-filter=A", "--format=%x00%cI", "--name-only", sha, "--", prefix
        )
        for chunk in log.stdout.decode("utf-8", "replace").split("\0"):
            head, _, rest = chunk.strip().partition("\n")
            if not head:
                continue
            when = datetime.fromisoformat(head.strip()).astimezone(timezone.utc)
            for name in rest.split("\n"):
                name = name.strip()
                if name in files and name not in dates:
                    dates[name] = when  # newest add first
    return ContractTree(label, files, dates, read)


def read_tree(source: str, contracts_dir: str, *, repo: str = ".") -> ContractTree:
    """The contract files of ``source`` (a directory, else a git revision of ``repo``).

    Parameters
    ----------
    source : str
        A directory (its ``contracts_dir`` is read from the file system) or a git revision.
    contracts_dir : str
        The contracts directory, relative to the tree's root (``.`` for the whole tree).
    repo : str
        The git repository revisions are read from (default: the current directory).

    Raises
    ------
    ContractGateError
        ``source`` is neither a directory nor a revision of ``repo``, or git is missing
        or fails.
    """
    if Path(source).is_dir():
        return _read_dir(Path(source), contracts_dir)
    return _read_git(repo, source, contracts_dir)
