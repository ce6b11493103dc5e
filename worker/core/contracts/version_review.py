"""The review of one contract version that differs between BASE and HEAD (pure).

:func:`review_version` classifies a HEAD version against the version before it, derives the
number the class requires (:func:`required_version`), compares the declared ``change``, and
checks the evidence behind an enforcing tightening. :mod:`worker.core.contracts.review`
runs it for every version of a change and adds the layer warnings.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from worker.core._util.durations import readable_duration as _hours
from worker.core.contracts.classify import Classification, classify
from worker.core.model import Contract

__all__ = [
    "VersionReview",
    "required_version",
    "review_version",
    "version_key",
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


def version_key(version: str) -> tuple[int, int]:
    """``(major, minor)`` of a version number (``v7`` is ``(7, 0)``).

    Parameters
    ----------
    version : str
        ``vN`` or ``vN.M``.

    Returns
    -------
    tuple[int, int]
        ``(-1, -1)`` for anything else, which sorts first.
    """
    m = _VERSION.fullmatch(version)
    if m is None:
        return (-1, -1)
    return int(m.group(1)), int(m.group(2) or 0)


def _canonical(version: Any) -> str | None:
    if not isinstance(version, str) or _VERSION.fullmatch(version) is None:
        return None
    major, minor = version_key(version)
    return f"v{major}.{minor}"


def required_version(change_class: str, predecessor: Contract, known: list[Contract]) -> str:
    """The number a change of ``change_class`` after ``predecessor`` must carry.

    ``known`` holds the layer's other versions (BASE, and HEAD's below the new one).
    Major -> the next major after every known major (``v8.0``); tightening or minor (or
    ``none``) -> the predecessor's major, the minor after every known revision of that
    major (``v7.1``), the rule of ``contract publish`` (docs/design.md section 5).
    """
    if change_class == "major":
        top = max([c.major for c in known] + [predecessor.major])
        return f"v{top + 1}.0"
    top_minor = max([c.minor for c in known if c.major == predecessor.major] + [predecessor.minor])
    return f"v{predecessor.major}.{top_minor + 1}"


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


def review_version(
    path: str,
    new: Contract,
    before: tuple[str, Contract] | None,
    b_versions: dict[tuple[str, str], tuple[str, Contract]],
    h_versions: dict[tuple[str, str], tuple[str, Contract]],
    read_evidence: Callable[[str], str | None],
) -> VersionReview:
    """The review of one HEAD version that is new, or differs from BASE.

    Parameters
    ----------
    path : str
        The HEAD file of ``new``.
    new : Contract
        The version reviewed.
    before : tuple[str, Contract] or None
        ``(path, contract)`` of the same version at BASE, None when it is new.
    b_versions, h_versions : dict[tuple[str, str], tuple[str, Contract]]
        ``(layer, version) -> (path, contract)`` of every version at BASE and at HEAD.
    read_evidence : Callable[[str], str | None]
        Repository path -> the file's text at HEAD, or None when there is none.

    Returns
    -------
    VersionReview
        Its class, required number, agreement, failures and warnings.
    """
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
