"""``contract list``: every published version of the config topic with its mode, state,
change class, age in cadence cycles and provenance, then escalations and broken
histories, as text (:func:`list_versions`) or one JSON document (:func:`versions_to_json`)."""

from __future__ import annotations

from datetime import datetime

from worker.control.lifecycle import read_published
from worker.core._util.text import clip, one_line
from worker.kafka.settings import Settings

__all__ = ["list_versions", "versions_to_json"]


def list_versions(settings: Settings, layer: str | None, now: datetime) -> str:
    """Every version with mode, state, class, age in cadence cycles, then escalations."""
    from worker.core.lifecycle.config_events import BROKEN_FIX
    from worker.core.lifecycle.escalations import escalations

    registry = read_published(settings)
    known = registry.published(layer)
    broken = {
        name: lines
        for name, lines in sorted(registry.broken_layers().items())
        if layer is None or name == layer
    }
    if not known and not broken:
        return (
            f"no contract versions{f' of {layer}' if layer else ''} on {settings.topics.contracts}"
        )
    rows = [("version", "mode", "state", "class", "age (cycles)", "published by")]
    for p in known:
        cycles = (now - p.published_at).total_seconds() / p.contract.cadence_s
        rows.append(
            (
                p.contract.key,
                p.mode,
                p.state,
                one_line(p.change_class or "-"),  # a record's fields: anyone's text
                f"{cycles:.2f}",
                one_line(p.published_by),
            )
        )
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(v.ljust(w) for v, w in zip(r, widths, strict=True)).rstrip() for r in rows]
    lines += [f"ESCALATION: {w}" for w in escalations(known, now)]
    for name, breaks in list(broken.items())[:20]:  # forged layers are bounded too
        lines.append(
            f"BROKEN HISTORY: {name}: every batch is quarantined (contract_history_broken)"
        )
        lines += [f"  {clip(b, 300)}" for b in breaks[:10]]
        if len(breaks) > 10:
            lines.append(f"  ... and {len(breaks) - 10} more")
        lines.append(f"  fix: {BROKEN_FIX}")
    return "\n".join(lines)


def versions_to_json(settings: Settings, layer: str | None, now: datetime) -> dict[str, object]:
    """``contract list --format json``: what :func:`list_versions` prints, as one document.

    Returns
    -------
    dict
        ``{"topic", "versions": [{"layer", "version", "mode", "state", "change_class",
        "age_cycles", "published_by", "published_at"}], "escalations": [str],
        "broken": {layer: [str]}}`` (``age_cycles`` in cadence cycles, 2 decimals).
    """
    from worker.core.lifecycle.escalations import escalations

    registry = read_published(settings)
    known = registry.published(layer)
    broken = {
        name: [clip(b, 300) for b in lines[:10]]
        for name, lines in sorted(registry.broken_layers().items())
        if layer is None or name == layer
    }
    versions = [
        {
            "layer": p.contract.layer,
            "version": p.contract.version,
            "mode": p.mode,
            "state": p.state,
            "change_class": p.change_class,
            "age_cycles": round((now - p.published_at).total_seconds() / p.contract.cadence_s, 2),
            "published_by": p.published_by,
            "published_at": p.published_at.isoformat(),
        }
        for p in known
    ]
    return {
        "topic": settings.topics.contracts,
        "versions": versions,
        "escalations": list(escalations(known, now)),
        "broken": dict(list(broken.items())[:20]),
    }
