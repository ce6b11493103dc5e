"""Retirement of a major contract version: only when no consumer reads against it.

docs/design.md section 5: ``contract retire LAYER vN`` needs declared + unattributed consumers
on ``vN`` at zero; otherwise it is refused, naming the stragglers. There is no date-based
retirement. Retirement never leaves a layer without an active *enforcing* version (every
later batch would be admitted unchecked): promote the new major first. Retiring writes each
active revision's ContractRecord again with state ``retired`` and nothing else changed
(change class, differences and the original ``published_at``/``published_by`` are kept;
the record has no field for the retirement's own provenance): the record stays in the
config topic's history, and every worker stops evaluating the version as soon as it reads
the record.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import timedelta

from worker.control.attribution import DEFAULT_STALE_AFTER, migration_view
from worker.control.lifecycle import produce_records, read_published
from worker.control.results import RetireResult
from worker.core._util.text import one_line
from worker.core.errors import PolicyError
from worker.core.lifecycle.policy import Published
from worker.core.lifecycle.read_paths import opts_in
from worker.core.lifecycle.versions import major_label, parse_version
from worker.kafka.settings import Settings

__all__ = ["retire", "retirement_targets"]


def retirement_targets(active: Sequence[Published], layer: str, major: int) -> list[Published]:
    """The active revisions of ``major`` that ``contract retire`` would retire (pure).

    ``active`` are the layer's active versions, oldest first.

    Raises
    ------
    PolicyError
        The major is not active, it is the layer's only active major, or no active
        enforcing version would remain (the message names the version to promote first).
    """
    label = major_label(major)
    targets = [p for p in active if p.contract.major == major]
    if not targets:
        listed = ", ".join(p.contract.version for p in active) or "none"
        raise PolicyError(
            f"{layer} {label} is not active (active versions: {listed})",
            field="version",
            fix=f"give an active major of {layer} ({listed})",
        )
    rest = [p for p in active if p.contract.major != major]
    if not rest:
        raise PolicyError(
            f"{layer} {label} is the only active major of {layer}; publish its successor "
            "and migrate the consumers before retiring it",
            field="version",
            fix="publish its successor and migrate the consumers before retiring it",
        )
    if not any(p.mode == "enforcing" for p in rest):
        successor = max(rest, key=lambda p: (p.contract.major, p.contract.minor))
        left = ", ".join(f"{p.contract.version} ({p.mode})" for p in rest)
        raise PolicyError(
            f"retirement of {layer} {label} refused: it would leave {layer} without an "
            f"active enforcing version (left: {left}) and every later batch would be "
            "admitted unchecked; promote the new major first: "
            f"contract-gate contract promote {layer} {successor.contract.version}",
            field="version",
            fix="promote the new major first: contract-gate contract promote "
            f"{layer} {successor.contract.version}",
        )
    return targets


def retire(
    settings: Settings,
    layer: str,
    version: str,
    *,
    retired_by: str | None = None,
    stale_after: timedelta = DEFAULT_STALE_AFTER,
) -> RetireResult:
    """Retire every active revision of the major of ``version`` (``v1`` or ``v1.1``: major 1).

    Returns what it did (:class:`~worker.control.results.RetireResult`: the revisions
    retired, the retirement gate's state, the records). ``retired_by`` only appears in
    that result: the
    ContractRecord has no field for it, so the rewritten record keeps its original
    provenance (and its change class and differences); only ``state`` changes.

    Raises
    ------
    PolicyError
        The major is not active, it is the layer's only active major, no active enforcing
        version would remain, or consumers (declared or unattributed) still read against
        it; the message names them, every reason that applies at once.
    BrokerError
        The config topic, the consumers topic or the admin API cannot be read, or the
        record is not delivered.
    """
    major = parse_version(version)[0]
    label = major_label(major)
    registry = read_published(settings)
    active = [p for p in registry.published(layer) if p.state == "active"]
    refusals: list[str] = []
    fixes: list[str] = []
    try:
        targets = retirement_targets(active, layer, major)
    except PolicyError as exc:
        if not any(p.contract.major == major for p in active):
            raise  # not active: nothing else to say about it
        targets, refusals = [], [str(exc)]
        fixes += [exc.fix] if exc.fix else []
    view = migration_view(settings, registry=registry, stale_after=stale_after)
    row = view.count(layer, label)
    if row is not None and row.count:
        names = ", ".join(
            f"{one_line(r.name)} ({r.kind}{', reads ' + r.via if r.via else ''})"
            for r in row.stragglers
        )
        refusals.append(
            f"retirement of {layer} {label} refused: {row.count} consumer(s) still read "
            f"against it: {names}. Each must move to a newer version and declare it "
            "(contract-gate consumers declare CONSUMER LAYER VERSION); there is no "
            "date-based retirement"
        )
        fixes.append(
            "move each consumer to a newer version and declare it (contract-gate consumers "
            "declare CONSUMER LAYER VERSION)"
        )
    if refusals:  # every reason at once: fixing one must not reveal the next
        raise PolicyError("\nand: ".join(refusals), field="version", fix="; then ".join(fixes))
    written = produce_records(
        settings, tuple(replace(p, state="retired") for p in targets), head=registry.head(layer)
    )
    per_major = opts_in(p.contract for p in active)
    return RetireResult(
        layer,
        label,
        tuple(p.contract.version for p in targets),
        row.count if row is not None else 0,
        tuple(r.name for r in row.stale) if row is not None else (),
        settings.topics.admitted_for(layer, major) if per_major else None,
        retired_by,
        written,
    )
