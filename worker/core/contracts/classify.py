"""Change classification between two versions of a layer's contract (pure; docs/design.md §4).

Clauses are compared by name, each pair by its kind's ``compare``
(:data:`worker.core.clauses.KINDS`). Every difference gets a class and a one-line reason;
the overall class is the most severe one (``major`` > ``tightening`` > ``minor`` > ``none``):

* **major**: the CRS is not equivalent (by pyproj), the crs clause is removed, added to a
  contract that had none, or turned from ``halt`` to ``warn``; the same for axis order;
  an extent (or coverage) region is redrawn (by
  shapely geometry equality, not by text); a domain code's meaning or the domain column
  changes; a schema field is removed, renamed or retyped; a clause changes kind.
* **tightening**: domain codes or geometry types removed (the coordinate dimension is part
  of the type: ``Point`` -> ``Point Z`` removes ``Point`` and adds ``Point Z``); ``allow_*``
  true -> false; any bound made stricter; a new required schema field; a new clause;
  ``on_break`` warn -> halt.
* **minor**: the reverse of each tightening; a new nullable field; a clause removed (other
  than crs/axis_order); owner, description, changelog, objective, cadence, read_paths
  edits. The declared ``change`` and the review metadata ``mode`` and ``evidence`` are
  not differences.
* **none**: identical content (same digest). A difference that changes nothing evaluated,
  e.g. the spelling of an equivalent CRS (``EPSG:3857`` -> ``ESRI:102100``) or a region
  rewritten as the same geometry, is listed with class ``none``; the document still
  changed, so the overall class of two documents with different digests is at least
  ``minor``.

Both documents must be versions of one layer: other layers are refused.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from worker.core.clauses import KINDS
from worker.core.clauses.diff import Diff, Difference
from worker.core.errors import ContractGateError
from worker.core.model import Clause, Contract

__all__ = [
    "CLASSES",
    "Classification",
    "Difference",
    "classification_to_json",
    "classify",
    "most_severe",
    "render_classification",
]

#: Change classes, least severe first.
CLASSES: tuple[str, ...] = ("none", "minor", "tightening", "major")
_RANK = {c: i for i, c in enumerate(CLASSES)}
_DOC = "(document)"


@dataclass(frozen=True)
class Classification:
    """The overall class of a change (the most severe difference) and every difference."""

    class_: str
    differences: tuple[Difference, ...]


def most_severe(classes: list[str] | tuple[str, ...]) -> str:
    """The most severe of ``classes`` (``none`` for an empty list)."""
    return max(classes, key=_RANK.__getitem__, default="none")


def _compare_clause(old: Clause, new: Clause, old_c: Contract, new_c: Contract) -> list[Difference]:
    """The differences of one clause pair: its kind's ``compare`` of their Params, then
    ``on_break`` and ``description``; another kind under the same name is major."""
    d = Diff(new.name, new.kind, old_c, new_c)
    if old.kind != new.kind:
        d.add("major", f"kind changed under the same name ({old.kind} -> {new.kind})")
        return d.out
    kind = KINDS.get(new.kind)
    if kind is None:  # parse refuses unknown kinds: a contract built by hand
        raise ContractGateError(f"unknown clause kind {new.kind!r}: cannot classify its change")
    kind.compare(kind.params(old), kind.params(new), d)
    if old.on_break != new.on_break:
        if new.on_break == "halt":
            change = "tightening"
        elif kind.essential:  # drops the guarantee, as removing the clause
            change = "major"
        else:
            change = "minor"
        d.add(change, f"on_break {old.on_break} -> {new.on_break}")
    if old.description != new.description:
        d.add("minor", "description edited")
    return d.out


def _essential(kind: str) -> bool:
    """Removing a clause of ``kind``, or adding the first, is major (the CRS, the axis
    order: :attr:`worker.core.clauses.base.ClauseKind.essential`)."""
    return kind in KINDS and KINDS[kind].essential


def classify(old: Contract, new: Contract) -> Classification:
    """Classify the change ``old`` -> ``new`` of one layer's contract (docs/design.md §4).

    Parameters
    ----------
    old, new : Contract
        Two versions of the same layer (the version numbers themselves are not compared).

    Returns
    -------
    Classification
        The most severe class and every difference, document-level first, then clauses in
        the order of ``new`` (removed clauses last, in the order of ``old``). ``none`` only
        for the same digest; otherwise at least ``minor``, even when every difference is
        of class ``none`` (docs/design.md section 4: none = identical content).

    Raises
    ------
    ContractGateError
        ``old`` and ``new`` are versions of different layers.
    """
    if old.layer != new.layer:
        raise ContractGateError(
            f"different layers: {old.layer} vs {new.layer}; classification compares "
            "versions of one layer",
            field="layer",
            fix="compare two versions of one layer",
        )
    if old.digest == new.digest:
        return Classification("none", ())
    diffs: list[Difference] = []
    for field in ("owner", "changelog", "id_column"):
        if getattr(old, field) != getattr(new, field):
            diffs.append(Difference(_DOC, field, "minor", f"{field} edited"))
    if old.objective != new.objective:
        diffs.append(
            Difference(_DOC, "objective", "minor", f"objective {old.objective} -> {new.objective}")
        )
    if old.cadence_s != new.cadence_s:
        diffs.append(
            Difference(_DOC, "cadence", "minor", f"cadence {old.cadence} -> {new.cadence}")
        )
    if old.read_paths != new.read_paths:
        diffs.append(
            Difference(
                _DOC,
                "read_paths",
                "minor",
                f"read_paths {old.read_paths} -> {new.read_paths} (where admitted batches are "
                "written, not what is admitted)",
            )
        )
    # the review metadata (declared ``change``, ``mode``, ``evidence``) are statements
    # about the change, not content, and outside the digest: never a difference
    for clause in new.clauses:
        before = old.clause(clause.name)
        if before is None:
            # a CRS or axis-order expectation where there was none is a CRS change (the
            # regions of clauses without their own CRS move to it): major, as its removal
            first = _essential(clause.kind) and not any(c.kind == clause.kind for c in old.clauses)
            diffs.append(
                Difference(
                    clause.name,
                    clause.kind,
                    "major" if first else "tightening",
                    f"new {clause.kind} clause",
                )
            )
        else:
            diffs += _compare_clause(before, clause, old, new)
    for clause in old.clauses:
        if new.clause(clause.name) is None:
            if _essential(clause.kind):
                diffs.append(
                    Difference(clause.name, clause.kind, "major", f"{clause.kind} clause removed")
                )
            else:
                diffs.append(
                    Difference(clause.name, clause.kind, "minor", f"{clause.kind} clause removed")
                )
    if not diffs:
        same_number = old.version == new.version
        diffs.append(
            Difference(
                _DOC,
                "document",
                "none",
                # a file of the same version number written differently (1 for 1.0, a
                # list reordered) was called "renumbered"
                "no clause or metadata change: the same content written differently (a "
                "number such as 1 for 1.0, a list in another order); still another "
                "document (digest): publish the published text, or give it a new version"
                if same_number
                else "no clause or metadata change (renumbered)",
            )
        )
    # another digest is another document: never "none" overall (section 4)
    overall = most_severe([d.class_ for d in diffs] + ["minor"])
    return Classification(overall, tuple(diffs))


def classification_to_json(c: Classification) -> dict[str, Any]:
    """``{"class": ..., "differences": [{"clause", "kind", "class", "reason"}]}``."""
    return {
        "class": c.class_,
        "differences": [
            {"clause": d.clause, "kind": d.kind, "class": d.class_, "reason": d.reason}
            for d in c.differences
        ],
    }


def render_classification(c: Classification, title: str = "") -> str:
    """Readable text: the class, then one line per difference."""
    lines = [f"{title}{': ' if title else ''}change class {c.class_}"]
    if not c.differences:
        lines.append("  no differences (identical content)")
    width = max((len(d.clause) for d in c.differences), default=0)
    for d in c.differences:
        lines.append(f"  {d.class_:<10} {d.clause:<{width}}  {d.kind:<13} {d.reason}")
    return "\n".join(lines)
