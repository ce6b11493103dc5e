"""The escalations of docs/design.md section 5, pure: the figures of ``contract list`` and the
``gis_contract_escalations`` gauge.

:func:`layer_lifecycles` measures every layer with an active version; :func:`escalations`
words the ones that fire (more than two active versions, an overlap older than two cadence
cycles).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from worker.core.lifecycle.policy import Published

__all__ = ["ESCALATION_KINDS", "LayerLifecycle", "escalations", "layer_lifecycles"]


@dataclass(frozen=True)
class LayerLifecycle:
    """The escalation figures of one layer at ``now`` (docs/design.md section 5).

    ``overlap_age_cycles`` is the age of an open major overlap (several active majors) in
    cadence cycles of the newest major, counted from its first publication; None without
    an overlap. ``escalations`` holds the kinds that fire: ``active_versions`` (more than
    two active versions, a stalled migration), ``overlap_age`` (overlap older than two
    cycles).
    """

    layer: str
    active: tuple[str, ...]
    majors: tuple[int, ...]
    overlap_age_cycles: float | None

    @property
    def escalations(self) -> tuple[str, ...]:
        kinds = []
        if len(self.active) > 2:
            kinds.append("active_versions")
        if self.overlap_age_cycles is not None and self.overlap_age_cycles > 2:
            kinds.append("overlap_age")
        return tuple(kinds)


#: The escalation kinds of :attr:`LayerLifecycle.escalations`.
ESCALATION_KINDS = ("active_versions", "overlap_age")


def layer_lifecycles(known: Sequence[Published], now: datetime) -> list[LayerLifecycle]:
    """:class:`LayerLifecycle` of every layer with an active version, sorted by layer."""
    out = []
    for layer in sorted({p.contract.layer for p in known}):
        active = [p for p in known if p.contract.layer == layer and p.state == "active"]
        if not active:
            continue
        majors = sorted({p.contract.major for p in active})
        age = None
        if len(majors) > 1:
            newest = [p for p in active if p.contract.major == majors[-1]]
            opened = min(p.published_at for p in newest)
            cadence_s = max(p.contract.cadence_s for p in newest)
            age = (now - opened).total_seconds() / cadence_s
        out.append(
            LayerLifecycle(layer, tuple(p.contract.version for p in active), tuple(majors), age)
        )
    return out


def escalations(known: Sequence[Published], now: datetime) -> list[str]:
    """Section 5 escalations: more than two active versions on a layer (a stalled
    migration); an overlap of majors older than two cadence cycles."""
    out = []
    for lc in layer_lifecycles(known, now):
        if "active_versions" in lc.escalations:
            names = ", ".join(lc.active)
            out.append(
                f"{lc.layer}: {len(lc.active)} active versions ({names}): a stalled migration"
            )
        if "overlap_age" in lc.escalations:
            out.append(
                f"{lc.layer}: overlap of v{', v'.join(map(str, lc.majors))} open for "
                f"{lc.overlap_age_cycles:.1f} cadence cycles (more than two)"
            )
    return out
