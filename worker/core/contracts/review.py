"""Review of a proposed contract change, as a CI job runs it on a pull request (pure).

:func:`review` compares the contract files of two trees (BASE and HEAD, given as plain
``path -> YAML text`` mappings by :mod:`worker.io.contract_tree`) version by version and
returns, for every version added, changed or removed, the computed class and differences
(:func:`worker.core.contracts.classify.classify` against the version before it), the version number
the class requires, whether the declared class (the document's ``change`` field) agrees,
and the failures and warnings of the lifecycle policy (DESIGN.md section 5):

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

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from worker.core._util.durations import readable_duration as _hours
from worker.core.contracts.classify import Classification, classification_to_json, classify
from worker.core.contracts.parse import parse_contract
from worker.core.errors import ContractError
from worker.core.model import Contract

__all__ = [
    "Review",
    "VersionReview",
    "is_retired_path",
    "required_version",
    "review",
    "review_to_json",
]

_VERSION = re.compile(r"v(\d+)(?:\.(\d+))?")


@dataclass(frozen=True)
class VersionReview:
    """The review of one contract version (one file) that differs between BASE and HEAD.

    ``status`` is ``added``, ``changed`` (same version, other text), ``moved`` (same
    document under another path), ``removed`` or ``invalid`` (not a contract at HEAD).
    ``classification`` is the change from ``predecessor`` (the newest version of the layer
    below this one; for an edit in place, the BASE document of the same version) and
    ``required`` the number that class requires (None for a layer's first version).
    ``agrees`` says whether ``declared`` (the ``change`` field) equals the computed class
    (None when nothing was to be declared).
    """

    path: str
    layer: str | None
    version: str | None
    status: str
    predecessor: str | None = None
    classification: Classification | None = None
    required: str | None = None
    declared: str | None = None
    agrees: bool | None = None
    mode: str | None = None
    evidence: str | None = None
    failures: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()

    def with_meta(self, c: Contract) -> VersionReview:
        """This review with the declared ``change``, ``mode`` and ``evidence`` of ``c``."""
        return replace(self, declared=c.change, mode=c.declared_mode, evidence=c.evidence)


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


def _num(version: str) -> tuple[int, int]:
    m = _VERSION.fullmatch(version)
    if m is None:
        return (-1, -1)
    return int(m.group(1)), int(m.group(2) or 0)


def _canonical(version: Any) -> str | None:
    if not isinstance(version, str) or _VERSION.fullmatch(version) is None:
        return None
    major, minor = _num(version)
    return f"v{major}.{minor}"


def required_version(change_class: str, predecessor: Contract, known: list[Contract]) -> str:
    """The number a change of ``change_class`` after ``predecessor`` must carry.

    ``known`` holds the layer's other versions (BASE, and HEAD's below the new one).
    Major -> the next major after every known major (``v8.0``); tightening or minor (or
    ``none``) -> the predecessor's major, the minor after every known revision of that
    major (``v7.1``), the rule of ``contract publish`` (DESIGN.md section 5).
    """
    if change_class == "major":
        top = max([c.major for c in known] + [predecessor.major])
        return f"v{top + 1}.0"
    top_minor = max([c.minor for c in known if c.major == predecessor.major] + [predecessor.minor])
    return f"v{predecessor.major}.{top_minor + 1}"


def is_retired_path(path: str) -> bool:
    """A contract file path under a ``retired`` directory (a retired version)."""
    return "retired" in path.split("/")[:-1]


def _check_evidence(
    new: Contract, pred: Contract, read_evidence: Callable[[str], str | None]
) -> tuple[list[str], list[str]]:
    """Failures and warnings of the evidence behind an enforcing tightening of ``pred``.

    The span is taken from the evaluation times the file records (``first_evaluated_at``,
    ``last_evaluated_at``) when it has them, never from its ``span_s`` alone, and must
    cover one cadence cycle of the longer of the two versions' cadences (a tightening that
    also shortens its cadence must not shorten its own observation).
    """
    ref = new.evidence
    how = (
        f"`contract-gate contract evidence {new.layer} {new.version} --format json -o FILE`, "
        "committed, or a URL"
    )
    if ref is None:
        return [
            f"a tightening declared `mode: enforcing` without `evidence:`: link the observing "
            f"evidence ({how})"
        ], []
    if ref.startswith(("http://", "https://")):
        return [], [f"evidence {ref} is a URL: its layer, version and span are not checked"]
    text = read_evidence(ref)
    if text is None:
        return [
            f"evidence {ref} not found at HEAD (a path from the repository root; write it with "
            f"{how})"
        ], []
    try:
        doc = json.loads(text)
    except ValueError as exc:
        doc = None
        why = f"not JSON ({exc})"
    else:
        why = "not a JSON object"
    if not isinstance(doc, dict):
        return [f"evidence {ref} is {why}; expected {how}"], []
    missing = [k for k in ("layer", "version", "span_s") if k not in doc]
    span = doc.get("span_s")
    if missing or not isinstance(span, (int, float)) or isinstance(span, bool):
        return [
            f"evidence {ref} is not `contract evidence --format json` output (missing or bad "
            f"{', '.join(missing) or 'span_s'}); expected {how}"
        ], []
    failures = []
    timed = _timestamps_span_s(doc)
    if timed is not None and abs(timed - span) > 1.0:
        failures.append(
            f"evidence {ref} says span_s {span:g} but its evaluations run from "
            f"{doc['first_evaluated_at']} to {doc['last_evaluated_at']} ({timed:g} s): the "
            f"file was edited; write it again with {how}"
        )
        span = timed
    if doc["layer"] != new.layer or _canonical(doc["version"]) != new.version:
        failures.append(
            f"evidence {ref} is of {doc['layer']} {doc['version']}, not {new.layer} "
            f"{new.version}: link this version's own observing evidence"
        )
    cycle = pred if pred.cadence_s > new.cadence_s else new
    if span < cycle.cadence_s:
        whose = "" if cycle is new else f" of {pred.version}, which it tightens"
        failures.append(
            f"evidence {ref} spans {_hours(span)} (first to last evaluation), less than one "
            f"cadence cycle{whose} ({cycle.cadence} = {_hours(cycle.cadence_s)}); "
            f"{_hours(cycle.cadence_s - span)} missing"
        )
    return failures, []


def _timestamps_span_s(doc: Mapping[str, Any]) -> float | None:
    """Seconds from ``first_evaluated_at`` to ``last_evaluated_at`` of an evidence
    document, or None when either is missing or not an ISO 8601 time with offset."""

    try:
        first = datetime.fromisoformat(str(doc["first_evaluated_at"]))
        last = datetime.fromisoformat(str(doc["last_evaluated_at"]))
        return max(0.0, (last - first).total_seconds())
    except (KeyError, ValueError, TypeError):
        return None


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
    for key, (path, c) in sorted(b_versions.items(), key=lambda kv: (kv[0][0], _num(kv[0][1]))):
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
        out.append(_review_version(path, new, before, b_versions, h_versions, read_evidence))
    out.sort(key=lambda v: (v.layer or "", _num(v.version or ""), v.path))
    layers = sorted({v.layer for v in out if v.layer is not None})
    warnings = [w for layer in layers for w in _layer_warnings(layer, h_versions, dates, now)]
    return Review(tuple(out), tuple(warnings))


def _review_version(
    path: str,
    new: Contract,
    before: tuple[str, Contract] | None,
    b_versions: dict[tuple[str, str], tuple[str, Contract]],
    h_versions: dict[tuple[str, str], tuple[str, Contract]],
    read_evidence: Callable[[str], str | None],
) -> VersionReview:
    """The review of one HEAD version that is new, or differs from BASE."""
    failures: list[str] = []
    warnings: list[str] = []
    lower = sorted(
        (
            c
            for (lay, _), (_, c) in h_versions.items()
            if lay == new.layer and (c.major, c.minor) < (new.major, new.minor)
        ),
        key=lambda c: (c.major, c.minor),
    )
    known = [c for (lay, _), (_, c) in b_versions.items() if lay == new.layer and c is not new]
    known = [c for c in known if c.version != new.version] + lower
    if before is not None and before[1].digest != new.digest:
        # an edit in place: show what changed against the BASE document of this version
        old = before[1]
        result = classify(old, new)
        numbering = "minor" if result.class_ == "none" else result.class_
        want = required_version(numbering, old, known)
        failures.append(
            f"edit in place: {new.layer} {new.version} exists at BASE with another document "
            f"(digest {old.digest[:12]}, HEAD {new.digest[:12]}); a published version is "
            f"immutable: keep it and give the {numbering} change a new version ({want})"
        )
        return VersionReview(
            path,
            new.layer,
            new.version,
            "changed",
            predecessor=f"{old.version} (BASE)",
            classification=result,
            required=want,
            failures=tuple(failures),
        ).with_meta(new)
    status = "added" if before is None else ("moved" if before[0] != path else "changed")
    if not lower:
        if new.change is not None:
            warnings.append(
                f"declares change: {new.change}, but it is the first version of {new.layer} "
                "(nothing to compare with; the field is optional here)"
            )
        return VersionReview(
            path, new.layer, new.version, status, warnings=tuple(warnings)
        ).with_meta(new)
    pred = lower[-1]
    result = classify(pred, new)
    numbering = "minor" if result.class_ == "none" else result.class_
    want = required_version(numbering, pred, [c for c in known if c is not pred])
    agrees: bool | None = None
    top = [d for d in result.differences if d.class_ == numbering]
    why = f"; {top[0].clause}: {top[0].reason}" if top else ""
    if new.change is not None or status == "added":
        # a new version must declare its class; a declaration added later must be right
        agrees = new.change == numbering
        if new.change is None:
            failures.append(
                f"no declared change class: add `change: {numbering}` (computed for "
                f"{pred.version} -> {new.version}{why})"
            )
        elif not agrees:
            failures.append(
                f"declares change: {new.change}, but the change {pred.version} -> "
                f"{new.version} is {numbering} ({numbering} differences{why})"
            )
    if status == "added" and new.version != want:
        failures.append(
            f"a {numbering} change must be {want}, not {new.version} (after "
            f"{pred.version}; docs/contracts.md, lifecycle policy)"
        )
    if numbering == "tightening" and new.declared_mode == "enforcing":
        f, w = _check_evidence(new, pred, read_evidence)
        failures += f
        warnings += w
    return VersionReview(
        path,
        new.layer,
        new.version,
        status,
        predecessor=pred.version,
        classification=result,
        required=want,
        agrees=agrees,
        failures=tuple(failures),
        warnings=tuple(warnings),
    ).with_meta(new)


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
