"""The checks of ``contract-gate verify overlap`` on plain values (pure).

Three checks (docs/design.md section 5), each ``pass``, ``fail``, ``not_applicable`` (the situation
does not exist) or ``inconclusive`` (it exists but there is no evidence yet), with the reason
and the figures it rests on: identical twin, stricter observing, undeclared reader. This
module holds the results, the pairs of versions checked and the undeclared-reader check; the
checks on evaluation records are in :mod:`worker.core.lifecycle.overlap_checks`. See
:mod:`worker.ops.verify` for what each check means and how the topics are read.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

__all__ = [
    "EXIT_INCONCLUSIVE",
    "MAJOR",
    "CheckResult",
    "OverlapReport",
    "check_undeclared",
    "clause_digest",
    "find_stricter",
    "find_twins",
]

if TYPE_CHECKING:  # the command line imports this module: keep its start-up light
    from worker.core.lifecycle.migration import MigrationView
    from worker.core.model import ActiveVersion, Contract

Status = Literal["pass", "fail", "not_applicable", "inconclusive"]

TWIN, STRICTER, UNDECLARED = "identical_twin", "stricter_observing", "undeclared_reader"
MAJOR = "major_overlap"
_TITLES = {
    TWIN: "identical twin",
    STRICTER: "stricter observing",
    UNDECLARED: "undeclared reader",
    MAJOR: "major overlap",
}
#: Exit code of ``verify overlap`` when no check could be verified (all not applicable or
#: inconclusive): neither a pass nor a failure.
EXIT_INCONCLUSIVE = 3


@dataclass(frozen=True)
class CheckResult:
    """One check on one subject (a pair of versions, or the layer's undeclared readers)."""

    check: str
    status: Status
    subject: str
    reason: str
    figures: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class OverlapReport:
    """Every check of a layer; ``active`` is ``(version, mode)`` oldest first."""

    layer: str
    active: tuple[tuple[str, str], ...]
    checks: tuple[CheckResult, ...]

    @property
    def applicable(self) -> tuple[CheckResult, ...]:
        """Checks that passed or failed (not the not-applicable or inconclusive ones)."""
        return tuple(c for c in self.checks if c.status in ("pass", "fail"))

    @property
    def inconclusive(self) -> tuple[CheckResult, ...]:
        return tuple(c for c in self.checks if c.status == "inconclusive")

    @property
    def passed(self) -> bool:
        """True when every applicable check passes (no applicable check at all: True)."""
        return all(c.status == "pass" for c in self.applicable)

    @property
    def result(self) -> str:
        """``pass``, ``fail``, or ``inconclusive`` when nothing was verified (no check
        passed or failed: each was not applicable or had no evidence yet)."""
        if not self.applicable:
            return "inconclusive"
        return "pass" if self.passed else "fail"

    @property
    def exit_code(self) -> int:
        """0 pass, 1 fail, :data:`EXIT_INCONCLUSIVE` (3) when nothing was verified."""
        return {"pass": 0, "fail": 1}.get(self.result, EXIT_INCONCLUSIVE)


# -- pure checks ----------------------------------------------------------------------------


def clause_digest(contract: Contract) -> str:
    """sha256 (hex) of the canonical JSON of the clause list, in document order: name,
    kind, on_break and parameters of every clause (not descriptions)."""
    clauses = [
        {"name": c.name, "kind": c.kind, "on_break": c.on_break, "params": dict(c.params)}
        for c in contract.clauses
    ]
    text = json.dumps(clauses, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def find_twins(active: Sequence[ActiveVersion]) -> list[tuple[ActiveVersion, ActiveVersion]]:
    """``(original, twin)`` pairs among ``active`` (oldest first): equal clause content,
    another version or mode, at least one observing; the original is the older one."""
    from worker.core.contracts.classify import classify

    pairs = []
    for j, twin in enumerate(active):
        for original in active[:j]:
            if "observing" not in (original.mode, twin.mode):
                continue
            if (original.contract.version, original.mode) == (twin.contract.version, twin.mode):
                continue
            same = clause_digest(original.contract) == clause_digest(twin.contract)
            # differences of class none (an equivalent CRS spelled otherwise) or of the
            # document alone (owner, changelog, objective) evaluate nothing differently
            if same or all(
                d.class_ == "none" or d.clause == "(document)"
                for d in classify(original.contract, twin.contract).differences
            ):
                pairs.append((original, twin))
    return pairs


def find_stricter(active: Sequence[ActiveVersion]) -> list[tuple[ActiveVersion, ActiveVersion]]:
    """``(enforcing, stricter)`` pairs: an observing version classified as a tightening of
    an active enforcing version of the layer."""
    from worker.core.contracts.classify import classify

    return [
        (enforcing, observing)
        for observing in active
        if observing.mode == "observing"
        for enforcing in active
        if enforcing.mode == "enforcing"
        and classify(enforcing.contract, observing.contract).class_ == "tightening"
    ]


def check_undeclared(
    layer: str, oldest: str, undeclared: Iterable[str], view: MigrationView
) -> CheckResult:
    """Each undeclared group is an unattributed consumer of the oldest active version.

    ``undeclared``: groups with committed offsets on the admitted topic that never
    declared for ``layer`` (the gate's own excluded); ``oldest``: the layer's oldest
    active version (e.g. ``v1.0``).
    """
    groups = sorted(set(undeclared))
    if not groups:
        return CheckResult(
            UNDECLARED,
            "not_applicable",
            "groups with offsets on the admitted topic",
            "no undeclared consumer group has committed offsets on the admitted topic",
            {"oldest_active": oldest, "groups": {}},
        )
    found: dict[str, str | None] = dict.fromkeys(groups)
    lv = view.layers.get(layer)
    for row in lv.versions if lv is not None else ():
        for ref in row.unattributed:
            if ref.name in found:
                found[ref.name] = row.revisions[0] if row.revisions else row.version
    wrong = {g: v for g, v in found.items() if v != oldest}
    figures = {"oldest_active": oldest, "groups": found}
    if wrong:
        reason = (
            "; ".join(
                f"{g} counted against {v}" if v else f"{g} not counted" for g, v in wrong.items()
            )
            + f" (expected the oldest active version {oldest})"
        )
        return CheckResult(
            UNDECLARED, "fail", "groups with offsets on the admitted topic", reason, figures
        )
    return CheckResult(
        UNDECLARED,
        "pass",
        "groups with offsets on the admitted topic",
        f"{len(groups)} undeclared group(s) counted against {oldest}, the oldest active "
        f"version: {', '.join(groups)}",
        figures,
    )
