"""The differences between two versions of one clause, as each kind's ``compare`` records
them (pure; the classes and their order are :mod:`worker.core.contracts.classify`'s).

Every difference has a class (``none``, ``minor``, ``tightening``, ``major``) and a
one-line reason. :class:`Diff` collects those of one clause pair and offers the shapes
most parameters share: a numeric bound (:meth:`Diff.bound`) and an ``allow_*`` flag
(:meth:`Diff.flag`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from worker.core.model import Contract

__all__ = ["Diff", "Difference"]


@dataclass(frozen=True)
class Difference:
    """One difference between two versions: the clause (or ``(document)``), its kind, the
    class of the change and a one-line reason."""

    clause: str
    kind: str
    class_: str
    reason: str


@dataclass
class Diff:
    """Collects the differences of one clause pair (same name, same kind).

    ``old_contract`` and ``new_contract`` are the two versions the clauses belong to (a
    region is read in its contract's CRS); ``out`` the differences in the order recorded.
    """

    name: str
    kind: str
    old_contract: Contract
    new_contract: Contract
    out: list[Difference] = field(default_factory=list)

    def add(self, class_: str, reason: str) -> None:
        """Record a difference of class ``class_`` with its one-line ``reason``."""
        self.out.append(Difference(self.name, self.kind, class_, reason))

    def bound(
        self,
        field: str,
        old: Any,
        new: Any,
        *,
        stricter_when: str,
        convert: Callable[[Any], float] = float,
    ) -> None:
        """A numeric bound; ``stricter_when`` is ``lower`` or ``higher`` (new vs old).

        None is no bound: adding one tightens, removing one loosens (``minor``). The
        values are shown as written; ``convert`` turns them into comparable numbers (e.g.
        ISO 8601 durations into seconds, raising ValueError for a malformed one).
        """
        if old == new:
            return
        if old is None or new is None:
            what = "added" if old is None else "removed"
            cls = "tightening" if old is None else "minor"
            self.add(cls, f"{field} bound {what} ({old} -> {new})")
            return
        lower = convert(new) < convert(old)
        if convert(new) == convert(old):
            self.add("minor", f"{field} rewritten with the same value ({old} -> {new})")
            return
        stricter = lower if stricter_when == "lower" else not lower
        self.add(
            "tightening" if stricter else "minor",
            f"{field} {old} -> {new} ({'stricter' if stricter else 'looser'})",
        )

    def flag(self, field: str, old: bool, new: bool) -> None:
        """An ``allow_*`` flag: true -> false tightens, false -> true loosens."""
        if bool(old) != bool(new):
            self.add(
                "minor" if new else "tightening",
                f"{field} {str(bool(old)).lower()} -> {str(bool(new)).lower()}",
            )
