"""Per-major read paths (pure): which majors a batch is written for, and which layers opt in.

A layer opts in with ``read_paths: per_major`` in the document of any of its active
versions (usually the new major's, so the old one needs no edit). Then, besides the shared
admitted topic (admitted only when *every* enforcing version passes, unchanged), each batch
goes to the admitted topic of every enforcing major whose verdict passed: a consumer pinned
to v7 keeps receiving what v7 admits after v8 becomes the enforcing major. A major "passes"
when every enforcing revision of it passed (normally it has one).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from worker.core.model import ActiveVersion, Contract, VersionVerdict

__all__ = ["opts_in", "passing_majors", "per_major_majors"]


def _major(version: str) -> int:
    return int(version[1:].partition(".")[0])


def opts_in(contracts: Iterable[Contract]) -> bool:
    """True when any of ``contracts`` (a layer's active versions) has ``read_paths:
    per_major``."""
    return any(c.read_paths == "per_major" for c in contracts)


def passing_majors(verdicts: Sequence[VersionVerdict]) -> tuple[int, ...]:
    """The enforcing majors whose enforcing verdicts all passed, ascending.

    Observing verdicts never open a path (they only measure). E.g. v7.0 enforcing passed
    and v8.0 enforcing broke -> ``(7,)``.
    """
    ok: dict[int, bool] = {}
    for v in verdicts:
        if v.mode == "enforcing":
            m = _major(v.version)
            ok[m] = ok.get(m, True) and v.passed
    return tuple(m for m in sorted(ok) if ok[m])


def per_major_majors(versions: Sequence[ActiveVersion]) -> tuple[int, ...]:
    """The majors of a layer that get a per-major topic: every active major when the layer
    opts in (observing majors too, so the topic exists when one is promoted), else none."""
    if not opts_in(v.contract for v in versions):
        return ()
    return tuple(sorted({v.contract.major for v in versions}))
