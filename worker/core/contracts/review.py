"""Review of a proposed contract change, as a CI job runs it on a pull request (pure).

:func:`review` compares the contract files of two trees (BASE and HEAD, given as plain
``path -> YAML text`` mappings by :mod:`worker.io.contract_tree`) version by version and
returns, for every version added, changed or removed, the computed class and differences
(:func:`worker.core.contracts.classify.classify` against the version before it), the version number
the class requires, whether the declared class (the document's ``change`` field) agrees,
and the failures and warnings of the lifecycle policy (docs/design.md section 5):

Failures (each one line):

* a new version without a declared ``change``, or declaring another class than the
  computed one (a layer's first version needs none);
* a number that does not follow the class (major -> next major, tightening or minor ->
  next minor of the predecessor's major, after every revision of that major already
  present);
* an edit in place: a version present at BASE whose document (digest) differs at HEAD;
* a tightening declared ``mode: enforcing`` without ``evidence:``, or whose evidence file
  (``contract evidence --format json`` output, a repository path) is missing, unreadable,
  of another layer or version, or spans less than one cadence cycle;
* a removed version (retirement goes through ``contract retire``; keep the file, e.g.
  under ``retired/``);
* a HEAD file that is not a valid contract, or a second file of the same version.

Warnings (per layer with a reviewed change): more than two active versions, a major
overlap older than two cadence cycles of the newest major (from ``now`` and the date of
that major's first file). Files record no lifecycle state, so "active" is what the files
imply: files under a ``retired/`` directory are retired; in each other major the newest
revision declared enforcing (``mode`` absent counts as enforcing, publish's default) and
every later revision are active. An evidence URL is not fetched: a warning says so.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from worker.core.contracts.classify import classification_to_json
from worker.core.contracts.parse import parse_contract
from worker.core.contracts.version_review import (
    VersionReview,
    review_version,
    version_key,
)
from worker.core.errors import ContractError
from worker.core.model import Contract

__all__ = ["Review", "is_retired_path", "review", "review_to_json"]


@dataclass(frozen=True)
class Review:
    """Every reviewed version (sorted by layer, version, path) and the layer warnings."""

    versions: tuple[VersionReview, ...]
    warnings: tuple[str, ...]

    @property
    def failures(self) -> tuple[str, ...]:
        """Every failure, prefixed with its file."""
        return tuple(f"{v.path}: {f}" for v in self.versions for f in v.failures)

    @property
    def all_warnings(self) -> tuple[str, ...]:
        """Every warning: per version (prefixed with its file), then per layer."""
        return tuple(f"{v.path}: {w}" for v in self.versions for w in v.warnings) + self.warnings

    @property
    def failed(self) -> bool:
        """True when any failure was found (the CI job exits 1)."""
        return any(v.failures for v in self.versions)


def is_retired_path(path: str) -> bool:
    """A contract file path under a ``retired`` directory (a retired version)."""
    return "retired" in path.split("/")[:-1]


def _parse_side(
    files: Mapping[str, str],
) -> tuple[dict[tuple[str, str], tuple[str, Contract]], dict[str, str], list[tuple[str, str]]]:
    """(version key -> (path, contract), path -> parse error, (duplicate path, first path))."""
    versions: dict[tuple[str, str], tuple[str, Contract]] = {}
    errors: dict[str, str] = {}
    duplicates: list[tuple[str, str]] = []
    for path in sorted(files):
        try:
            c = parse_contract(files[path], source=path)
        except ContractError as exc:
            errors[path] = str(exc)
            continue
        key = (c.layer, c.version)
        if key in versions:
            duplicates.append((path, versions[key][0]))
            continue
        versions[key] = (path, c)
    return versions, errors, duplicates


def _active(contracts: list[tuple[str, Contract]]) -> list[Contract]:
    """The versions of one layer the files imply are active (see the module docstring)."""
    live = sorted(
        (c for path, c in contracts if not is_retired_path(path)), key=lambda c: (c.major, c.minor)
    )
    out: list[Contract] = []
    for major in sorted({c.major for c in live}):
        revs = [c for c in live if c.major == major]
        enforcing = [i for i, c in enumerate(revs) if c.declared_mode != "observing"]
        out += revs[enforcing[-1] :] if enforcing else revs
    return out


def _layer_warnings(
    layer: str,
    head: dict[tuple[str, str], tuple[str, Contract]],
    dates: Mapping[str, datetime],
    now: datetime,
) -> list[str]:
    mine = [(p, c) for (lay, _), (p, c) in head.items() if lay == layer]
    active = _active(mine)
    out = []
    if len(active) > 2:
        names = ", ".join(c.version for c in active)
        out.append(
            f"{layer}: {len(active)} active versions ({names}): a stalled migration; retire the "
            "old major with `contract-gate contract retire` once its consumers moved, and move "
            "its files under retired/"
        )
    majors = sorted({c.major for c in active})
    if len(majors) > 1:
        newest = [c for c in active if c.major == majors[-1]]
        paths = {c.version: p for p, c in mine}
        first = min(
            (c for p, c in mine if c.major == majors[-1] and not is_retired_path(p)),
            key=lambda c: c.minor,
        )
        opened = dates.get(paths[first.version])
        if opened is not None:
            cadence_s = max(c.cadence_s for c in newest)
            age = (now - opened).total_seconds() / cadence_s
            if age > 2:
                out.append(
                    f"{layer}: overlap of v{', v'.join(map(str, majors))} open for {age:.1f} "
                    f"cadence cycles (since {opened.isoformat()}, the date of "
                    f"{paths[first.version]}): more than two; move the consumers of "
                    f"v{majors[0]} and retire it"
                )
    return out


def review(
    base: Mapping[str, str],
    head: Mapping[str, str],
    *,
    now: datetime,
    dates: Mapping[str, datetime] | None = None,
    read_evidence: Callable[[str], str | None] = lambda ref: None,
) -> Review:
    """Review the contract change BASE -> HEAD.

    Parameters
    ----------
    base, head : Mapping[str, str]
        Contract files of each tree: path (any prefix, ``/``-separated; a ``retired``
        directory marks retired versions) -> YAML text.
    now : datetime
        Time the overlap age is judged at (timezone-aware).
    dates : Mapping[str, datetime], optional
        HEAD path -> the date the file was added (git commit date, or file time); files
        without a date give no overlap warning.
    read_evidence : Callable[[str], str | None]
        Repository path (as written in ``evidence:``) -> the file's text at HEAD, or None
        when there is no such file. The I/O stays with the caller.

    Returns
    -------
    Review
        One :class:`VersionReview` per version added, changed, moved or removed (files
        identical at BASE and HEAD are not reviewed), and the layer warnings.
    """
    dates = dates or {}
    b_versions, _b_errors, _ = _parse_side(base)
    h_versions, h_errors, h_dups = _parse_side(head)
    out: list[VersionReview] = []
    for path, error in h_errors.items():
        if base.get(path) != head[path]:
            out.append(
                VersionReview(
                    path, None, None, "invalid", failures=(f"not a valid contract: {error}",)
                )
            )
    for path, first in h_dups:
        if base.get(path) != head[path]:
            out.append(
                VersionReview(
                    path,
                    None,
                    None,
                    "invalid",
                    failures=(f"the same layer and version as {first}: one file per version",),
                )
            )
    for key, (path, c) in sorted(
        b_versions.items(), key=lambda kv: (kv[0][0], version_key(kv[0][1]))
    ):
        if key not in h_versions:
            out.append(
                VersionReview(
                    path,
                    c.layer,
                    c.version,
                    "removed",
                    failures=(
                        f"{c.layer} {c.version} removed: a version file is never deleted; retire "
                        f"the major with `contract-gate contract retire {c.layer} v{c.major}` and "
                        "keep the file (move it under retired/)",
                    ),
                )
            )
    for key, (path, new) in h_versions.items():
        before = b_versions.get(key)
        if before is not None and before[0] == path and base[path] == head[path]:
            continue
        out.append(review_version(path, new, before, b_versions, h_versions, read_evidence))
    out.sort(key=lambda v: (v.layer or "", version_key(v.version or ""), v.path))
    layers = sorted({v.layer for v in out if v.layer is not None})
    warnings = [w for layer in layers for w in _layer_warnings(layer, h_versions, dates, now)]
    return Review(tuple(out), tuple(warnings))


def review_to_json(r: Review) -> dict[str, Any]:
    """JSON-ready dict: ``failed``, ``versions`` (each with its classification as
    ``contract classify --format json`` gives it), ``warnings`` (layer warnings)."""
    return {
        "failed": r.failed,
        "failures": len(r.failures),
        "versions": [
            {
                "path": v.path,
                "layer": v.layer,
                "version": v.version,
                "status": v.status,
                "predecessor": v.predecessor,
                "classification": (
                    classification_to_json(v.classification) if v.classification else None
                ),
                "required_version": v.required,
                "declared": v.declared,
                "agrees": v.agrees,
                "mode": v.mode,
                "evidence": v.evidence,
                "failures": list(v.failures),
                "warnings": list(v.warnings),
            }
            for v in r.versions
        ],
        "warnings": list(r.warnings),
    }
