"""The operator page's view model (pure): frozen values built from the registry state.

:func:`build_overview` turns what the worker holds (its registry's published versions and
the Kafka timestamps of their records, the migration view, the SLO windows, the recent
quarantined batches, its own state) into one :class:`Overview` that the HTML renderer
(:mod:`worker.io.reports.operator_page`) draws and ``/overview.json`` serves.

Every string in it comes from records a producer or a layer owner wrote (layer names,
consumer names, reasons): each is clipped here (:func:`worker.core._util.text.clip`) and
lists are capped, so the page has a known maximum size; escaping is the renderer's job.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from datetime import datetime

from worker.core._util.text import clip
from worker.core.lifecycle.escalations import escalations
from worker.core.lifecycle.migration import MigrationView, VersionCount
from worker.core.lifecycle.policy import Published
from worker.core.lifecycle.slo import SloStatus
from worker.core.lifecycle.transitions import Mark, supersessions, transition_marks
from worker.core.lifecycle.versions import major_label, parse_version

__all__ = [
    "MAX_LAYERS",
    "MAX_NAME_CHARS",
    "MAX_READERS_SHOWN",
    "Gate",
    "LayerOverview",
    "Mark",
    "Overview",
    "Sources",
    "VersionRow",
    "build_overview",
    "layer_overview",
    "overview_to_json",
    "transition_marks",
]

#: Longest layer, version, consumer or clause name shown, characters (then clipped).
MAX_NAME_CHARS = 120
#: Readers named per version in the retirement gate's line (the rest are counted).
MAX_READERS_SHOWN = 12
#: Colours the renderer has: version colours repeat after this many versions of a layer.
PALETTE_SIZE = 8
#: Count changes kept per version for the timeline's step line.
MAX_HISTORY = 64
#: Layers on the page (the registry holds only layers a config record named).
MAX_LAYERS = 200


def name(text: object) -> str:
    """``text`` as a string of at most :data:`MAX_NAME_CHARS` (+ the clip marker)."""
    return clip(str(text), MAX_NAME_CHARS)


@dataclass(frozen=True)
class VersionRow:
    """One known version of a layer as the page shows it.

    ``age_cycles`` is its age since publication in its own cadence cycles; ``attainment``
    and ``budget_left`` are fractions 0..1 over the SLO window (None: nothing evaluated).
    ``colour`` is its palette index: one colour per version of the layer, the same wherever
    the page names the version (its ``version`` label in the metrics).
    """

    version: str
    major: int
    mode: str
    state: str
    change_class: str | None
    published_at: datetime
    age_cycles: float
    objective: float
    attainment: float | None
    budget_left: float | None
    evaluated: int
    marks: tuple[Mark, ...]
    #: palette index: the version's rank in its layer, oldest first (a colour per version)
    colour: int = 0


@dataclass(frozen=True)
class Gate:
    """The retirement gate of one active major: the readers still on it (declared and
    unattributed, names clipped, at most :data:`MAX_READERS_SHOWN`), and whether
    ``contract retire`` would pass (no reader left, another active major exists)."""

    version: str
    major: int
    declared: int
    unattributed: int
    stale: int
    readers: tuple[str, ...]
    oldest: bool
    retirable: bool
    #: (time, declared, unattributed) each time the counts changed, oldest first
    history: tuple[tuple[datetime, int, int], ...] = ()

    @property
    def count(self) -> int:
        """Declared + unattributed readers: zero opens the gate."""
        return self.declared + self.unattributed

    @property
    def open(self) -> bool:
        """True when ``contract retire`` of this major would pass."""
        return self.retirable and self.count == 0

    @property
    def line(self) -> str:
        """ "v1: 2 readers left: team-a, group unattributed:etl-7" or the gate's state."""
        if self.count:
            more = self.count - len(self.readers)
            tail = f" and {more} more" if more > 0 else ""
            noun = "reader" if self.count == 1 else "readers"
            where = (
                "left" if self.retirable else "on it (no other enforcing major to retire it for)"
            )
            return f"{self.version}: {self.count} {noun} {where}: {', '.join(self.readers)}{tail}"
        if self.retirable:
            return f"{self.version}: no reader left: the retirement gate is open"
        return f"{self.version}: no reader left (no other enforcing major to retire it for)"


@dataclass(frozen=True)
class LayerOverview:
    """One layer: its versions (oldest first), gates per active major, escalations and
    the breaks of its contract history (empty: whole)."""

    layer: str
    versions: tuple[VersionRow, ...]
    gates: tuple[Gate, ...]
    escalations: tuple[str, ...]
    breaks: tuple[str, ...]


@dataclass(frozen=True)
class Overview:
    """Everything the operator page shows, at ``now``; ``quarantined`` and ``worker`` are
    passed through from the worker's own (already bounded) values."""

    now: datetime
    layers: tuple[LayerOverview, ...]
    quarantined: tuple[Mapping[str, object], ...]
    worker: Mapping[str, object]


def _row(
    p: Published, slo: Mapping[tuple[str, str], SloStatus], marks: tuple[Mark, ...], now: datetime
) -> VersionRow:
    c = p.contract
    s = slo.get((c.version, p.mode))
    return VersionRow(
        version=name(c.version),
        major=c.major,
        mode=p.mode,
        state=p.state,
        change_class=p.change_class,
        published_at=p.published_at,
        age_cycles=max(0.0, (now - p.published_at).total_seconds() / c.cadence_s),
        objective=c.objective,
        attainment=None if s is None else s.attainment,
        budget_left=None if s is None else s.error_budget_remaining,
        evaluated=0 if s is None else s.evaluated,
        marks=marks,
    )


def _gate(
    v: VersionCount, active: Sequence[Published], history: Sequence[tuple[datetime, int, int]]
) -> Gate:
    others = [p for p in active if major_label(p.contract.major) != v.version]
    refs = v.stragglers[:MAX_READERS_SHOWN]
    return Gate(
        version=name(v.version),
        major=parse_version(v.version)[0],
        declared=len(v.declared),
        unattributed=len(v.unattributed),
        stale=len(v.stale),
        readers=tuple(
            name(r.name) if r.kind == "declared" else f"group {name(r.label)}" for r in refs
        ),
        oldest=v.oldest,
        retirable=bool(others) and any(p.mode == "enforcing" for p in others),
        history=tuple(history[-MAX_HISTORY:]),
    )


@dataclass(frozen=True)
class Sources:
    """What the worker holds, read at one moment.

    ``published``: every version its registry knows (any state) with its record's
    provenance; ``stamps``: config key -> Kafka timestamp of its record; ``migration``: the
    migration view; ``slo``: the SLO window of every series; ``breaks``: layer -> the
    breaks of its contract history; ``counts``: (layer, major label) -> the migration
    counts (time, declared, unattributed) each time they changed, oldest first.
    """

    published: Sequence[Published]
    stamps: Mapping[str, datetime]
    migration: MigrationView
    slo: Sequence[SloStatus] = ()
    breaks: Mapping[str, Sequence[str]] = field(default_factory=dict)
    counts: Mapping[tuple[str, str], Sequence[tuple[datetime, int, int]]] = field(
        default_factory=dict
    )


def layer_overview(layer: str, src: Sources, now: datetime) -> LayerOverview:
    """The :class:`LayerOverview` of ``layer`` at ``now``."""
    known = [p for p in src.published if p.contract.layer == layer]
    stamps = {k: t for k, t in src.stamps.items() if k.startswith(f"{layer}/")}
    series = {(s.key.version, s.key.mode): s for s in src.slo if s.key.layer == layer}
    superseded = supersessions(known, stamps)
    rows = tuple(
        replace(
            _row(p, series, transition_marks(p, stamps, superseded.get(p.contract.key)), now),
            colour=i % PALETTE_SIZE,
        )
        for i, p in enumerate(known)
    )
    active = [p for p in known if p.state == "active"]
    migration = src.migration.layers.get(layer)
    gates = tuple(
        _gate(v, active, src.counts.get((layer, v.version), ()))
        for v in (migration.versions if migration else ())
        if v.active
    )
    return LayerOverview(
        layer=name(layer),
        versions=rows,
        gates=gates,
        escalations=tuple(name(e) for e in escalations(known, now)),
        breaks=tuple(clip(b, 400) for b in src.breaks.get(layer, ())),
    )


def build_overview(
    src: Sources,
    *,
    quarantined: Sequence[Mapping[str, object]] = (),
    worker: Mapping[str, object] | None = None,
    now: datetime,
) -> Overview:
    """The whole page's :class:`Overview` at ``now`` (an aware UTC datetime): at most
    :data:`MAX_LAYERS` layers, by name; ``quarantined`` and ``worker`` as given."""
    names = sorted({p.contract.layer for p in src.published} | set(src.breaks))[:MAX_LAYERS]
    layers = tuple(layer_overview(layer, src, now) for layer in names)
    return Overview(now, layers, tuple(quarantined), dict(worker or {}))


def overview_to_json(o: Overview) -> dict[str, object]:
    """The overview as JSON-ready values (times as ISO 8601 strings, each gate's line)."""

    def version(v: VersionRow) -> dict[str, object]:
        d = asdict(v)
        d["published_at"] = v.published_at.isoformat()
        d["marks"] = [{"event": m.event, "at": m.at and m.at.isoformat()} for m in v.marks]
        return d

    def gate(g: Gate) -> dict[str, object]:
        d = asdict(g) | {"count": g.count, "open": g.open, "line": g.line}
        d["history"] = [[t.isoformat(), a, b] for t, a, b in g.history]
        return d

    return {
        "now": o.now.isoformat(),
        "layers": [
            {
                "layer": lo.layer,
                "versions": [version(v) for v in lo.versions],
                "gates": [gate(g) for g in lo.gates],
                "escalations": list(lo.escalations),
                "breaks": list(lo.breaks),
            }
            for lo in o.layers
        ],
        "quarantined": [dict(q) for q in o.quarantined],
        "worker": dict(o.worker),
    }
