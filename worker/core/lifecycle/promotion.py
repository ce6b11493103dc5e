"""Promotion on evidence (docs/design.md section 5), a pure decision for ``contract promote``.

:func:`decide_promotion` writes an observing version enforcing once its evidence spans one
cadence cycle, the cycle of :func:`evidence_cycle`; the earlier revisions of its major are
written superseded.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from worker.core._util.durations import readable_duration as _hours
from worker.core.lifecycle.policy import (
    PolicyDecision,
    Published,
    supersede,
    supersession_keys,
)
from worker.core.model import Contract

__all__ = ["decide_promotion", "evidence_cycle"]


def decide_promotion(
    key: str,
    *,
    known: Sequence[Published],
    span_s: float,
    confirmed: bool,
) -> PolicyDecision:
    """Promote the observing version ``key`` to enforcing (section 5).

    Refused unless it is active and observing and its evidence ``span_s`` covers at least
    one cadence cycle; ``confirmed`` False returns ``refuse`` asking for ``--yes``. On
    promotion the version is written enforcing and the active earlier revisions of its
    major are written superseded.
    """
    target = next((p for p in known if p.contract.key == key), None)
    if target is None:
        return PolicyDecision(
            "refuse", f"{key} is not published", field="version", fix="give a published version"
        )
    c = target.contract
    if target.state != "active":
        return PolicyDecision(
            "refuse",
            f"{key} is {target.state}; only an active version can be promoted",
            field="version",
            fix="promote an active observing version",
        )
    if target.mode == "enforcing":
        return PolicyDecision("noop", f"{key} is already enforcing (no-op)")
    cycle = evidence_cycle(c, known)
    if span_s < cycle.cadence_s:
        missing = cycle.cadence_s - span_s
        whose = (
            ""
            if cycle is c
            else f", the cadence of {cycle.version}, which it would replace ({c.version}'s own "
            f"is {c.cadence})"
        )
        return PolicyDecision(
            "refuse",
            f"{key}: observing evidence spans {_hours(span_s)}, shorter than one cadence cycle "
            f"({cycle.cadence} = {_hours(cycle.cadence_s)}{whose}); {_hours(missing)} missing",
            field="version",
            fix=f"promote it once its evidence spans {_hours(missing)} more",
        )
    if not confirmed:
        return PolicyDecision(
            "refuse",
            f"{key}: promotion not confirmed (answer yes, or pass --yes)",
            field="--yes",
            fix="answer yes, or pass --yes",
        )
    layer = [p for p in known if p.contract.layer == c.layer]
    superseded = supersede(layer, c.major, c.minor, key)
    promoted = replace(target, mode="enforcing", supersedes=supersession_keys(layer, c))
    names = ", ".join(p.contract.version for p in superseded)
    return PolicyDecision(
        "write",
        f"{key} promoted to enforcing" + (f"; supersedes {names}" if names else ""),
        predecessor=target,
        writes=(promoted, *superseded),
    )


def evidence_cycle(new: Contract, known: Sequence[Published]) -> Contract:
    """The version whose cadence cycle the evidence for promoting ``new`` must span:
    ``new`` itself, or the active enforcing revision of its major with the longest cadence
    when that is longer.

    A tightening that also shortens its own ``cadence`` (a minor edit on its own) must not
    shorten the observation that justifies it: six hours of evidence are needed to tighten
    a layer that arrives every six hours, whatever the new version says
    (``cadence: PT20S`` in v1.1 promoted it after 26 s).
    """
    enforcing = [
        p.contract
        for p in known
        if p.contract.layer == new.layer
        and p.contract.major == new.major
        and p.contract.key != new.key
        and p.mode == "enforcing"
        and p.state == "active"
    ]
    longest = max(enforcing, key=lambda c: c.cadence_s, default=None)
    return longest if longest is not None and longest.cadence_s > new.cadence_s else new
