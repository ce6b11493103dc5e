"""The migration view: who still reads against which contract version (pure, no Kafka).

docs/design.md sections 2 and 5. A consumer is its Kafka consumer group id; a declaration under
that id covers the group. Per layer and active *major* version the view holds:

* ``declared``: consumers whose latest declaration for the layer names that major, and
  consumer groups with committed offsets on the layer's per-major admitted topic of that
  major (``read_paths: per_major``): reading ``gis.batches.admitted.<layer>.v7`` is a
  declaration on v7, no declaration record needed (``via`` names the topic);
* ``unattributed``: consumer groups with committed offsets on the admitted topic that never
  declared for the layer, each counted against the layer's **oldest** active major;
* ``stale``: declarations whose group no longer exists and that are older than the horizon.
  They are shown, not counted, and never silently dropped.

The count that gates retirement is ``declared + unattributed``. Versions are compared by
major (a declaration of ``v1.1`` is one on ``v1``: :mod:`worker.core.lifecycle.versions`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Literal

from worker.core._util.text import one_line
from worker.core.lifecycle.versions import major_label, parse_version

__all__ = [
    "UNATTRIBUTED_PREFIX",
    "ConsumerRef",
    "Declaration",
    "LayerView",
    "MigrationView",
    "VersionCount",
    "build_view",
    "render_view",
    "view_to_json",
]

Kind = Literal["declared", "unattributed", "stale"]

#: Prefix of the ``consumer`` label of unattributed groups in ``gis_consumer_contract_version``.
UNATTRIBUTED_PREFIX = "unattributed:"


@dataclass(frozen=True)
class Declaration:
    """The latest ConsumerDeclaration of ``consumer`` for ``layer``."""

    consumer: str
    layer: str
    version: str
    declared_at: datetime


@dataclass(frozen=True)
class ConsumerRef:
    """One consumer in a version's row: its name, kind and (declared only) declaration."""

    name: str
    kind: Kind
    declared_version: str | None = None
    declared_at: datetime | None = None
    #: the per-major topic a group reads, when that is what attributes it to the major
    via: str | None = None
    #: unattributed only: the layers of the records before its committed offsets on the
    #: admitted topic (a bounded sample), None when not looked at
    layers_read: tuple[str, ...] | None = None

    @property
    def label(self) -> str:
        """The ``consumer`` label of ``gis_consumer_contract_version``."""
        return UNATTRIBUTED_PREFIX + self.name if self.kind == "unattributed" else self.name


@dataclass(frozen=True)
class VersionCount:
    """Consumers of one major version of one layer.

    ``revisions`` are the active revisions of the major (e.g. ``("v1.0", "v1.1")``); empty
    when the major is not active (consumers still declared on a retired or unknown version).
    """

    layer: str
    version: str
    revisions: tuple[str, ...]
    oldest: bool
    declared: tuple[ConsumerRef, ...] = ()
    unattributed: tuple[ConsumerRef, ...] = ()
    stale: tuple[ConsumerRef, ...] = ()

    @property
    def active(self) -> bool:
        return bool(self.revisions)

    @property
    def count(self) -> int:
        """Declared + unattributed consumers: zero is the retirement condition."""
        return len(self.declared) + len(self.unattributed)

    @property
    def stragglers(self) -> tuple[ConsumerRef, ...]:
        return self.declared + self.unattributed


@dataclass(frozen=True)
class LayerView:
    layer: str
    versions: tuple[VersionCount, ...]

    def get(self, version: str) -> VersionCount | None:
        label = major_label(version)
        return next((v for v in self.versions if v.version == label), None)


@dataclass(frozen=True)
class MigrationView:
    """Every layer's :class:`LayerView`, by layer name."""

    layers: Mapping[str, LayerView] = field(default_factory=dict)

    def count(self, layer: str, version: str) -> VersionCount | None:
        view = self.layers.get(layer)
        return None if view is None else view.get(version)


def build_view(
    active: Mapping[str, Iterable[str]],
    declarations: Iterable[Declaration],
    reading_groups: Iterable[str],
    existing_groups: Iterable[str],
    *,
    now: datetime,
    stale_after: timedelta,
    excluded: Iterable[str] = (),
    excluded_prefixes: Iterable[str] = (),
    path_readers: Iterable[tuple[str, str, int, str]] = (),
    layers_read: Mapping[str, tuple[str, ...]] | None = None,
) -> MigrationView:
    """Count consumers per layer and major version.

    Parameters
    ----------
    active : mapping of layer to versions
        The active revisions of every layer (any order), e.g. ``{"roads": ["v1.0", "v2.0"]}``.
    declarations : iterable of Declaration
        The latest declaration per (consumer, layer), as read from the consumers topic.
    reading_groups : iterable of str
        Consumer groups with committed offsets on the admitted topic.
    existing_groups : iterable of str
        Every consumer group the broker knows (for staleness).
    now, stale_after : datetime, timedelta
        A declaration whose group does not exist and that is older than ``now -
        stale_after`` is stale.
    excluded, excluded_prefixes : iterable of str
        Group ids (and prefixes) that are never consumers: the gate's own groups.
    path_readers : iterable of (group, layer, major, topic)
        Groups with committed offsets on a per-major admitted topic: each counts as a
        declared consumer of that major (also when it declared another one: it still reads
        this path), and is not unattributed.
    layers_read : mapping of group to layer names, optional
        The layers seen in the records before an undeclared group's committed offsets:
        carried on its unattributed rows (:attr:`ConsumerRef.layers_read`), shown, never
        used to count it less (the conservative rule stands).
    """
    excluded = set(excluded)
    prefixes = tuple(excluded_prefixes)

    def ignored(group: str) -> bool:
        return group in excluded or group.startswith(prefixes)

    existing = set(existing_groups)
    reading = sorted({g for g in reading_groups if not ignored(g)})
    by_layer: dict[str, list[Declaration]] = {}
    for d in declarations:
        by_layer.setdefault(d.layer, []).append(d)
    paths: dict[str, list[tuple[str, int, str]]] = {}
    for group, lay, major, topic in path_readers:
        if not ignored(group):
            paths.setdefault(lay, []).append((group, major, topic))

    layers: dict[str, LayerView] = {}
    for layer in sorted(set(active) | set(by_layer) | set(paths)):
        revisions: dict[str, list[tuple[int, int]]] = {}
        for v in active.get(layer, ()):
            revisions.setdefault(major_label(v), []).append(parse_version(v))
        majors = sorted(revisions, key=lambda m: parse_version(m))
        oldest = majors[0] if majors else None
        rows: dict[str, dict[str, list[ConsumerRef]]] = {
            m: {"declared": [], "unattributed": [], "stale": []} for m in majors
        }
        declared_names = set()
        for d in sorted(by_layer.get(layer, []), key=lambda d: d.consumer):
            declared_names.add(d.consumer)
            label = major_label(d.version)
            is_stale = d.consumer not in existing and now - d.declared_at > stale_after
            kind: Kind = "stale" if is_stale else "declared"
            rows.setdefault(label, {"declared": [], "unattributed": [], "stale": []})
            rows[label][kind].append(ConsumerRef(d.consumer, kind, d.version, d.declared_at))
        for group, major, topic in sorted(paths.get(layer, [])):
            label = major_label(major)
            row = rows.setdefault(label, {"declared": [], "unattributed": [], "stale": []})
            declared_names.add(group)
            if not any(r.name == group and r.kind == "declared" for r in row["declared"]):
                row["declared"].append(ConsumerRef(group, "declared", label, None, via=topic))
        if oldest is not None:
            for group in reading:
                if group not in declared_names:
                    seen = (layers_read or {}).get(group)
                    rows[oldest]["unattributed"].append(
                        ConsumerRef(group, "unattributed", layers_read=seen)
                    )
        counts = tuple(
            VersionCount(
                layer=layer,
                version=m,
                revisions=tuple(f"v{a}.{b}" for a, b in sorted(revisions.get(m, ()))),
                oldest=m == oldest,
                declared=tuple(r["declared"]),
                unattributed=tuple(r["unattributed"]),
                stale=tuple(r["stale"]),
            )
            for m, r in sorted(rows.items(), key=lambda kv: parse_version(kv[0]))
        )
        layers[layer] = LayerView(layer, counts)
    return MigrationView(layers)


def view_to_json(view: MigrationView) -> list[dict[str, object]]:
    """The view as JSON-compatible rows, one per (layer, version)."""

    def ref(r: ConsumerRef) -> dict[str, object]:
        out: dict[str, object] = {"name": r.name, "kind": r.kind}
        if r.declared_version is not None:
            out["declared_version"] = r.declared_version
        if r.declared_at is not None:
            out["declared_at"] = r.declared_at.isoformat()
        if r.via is not None:
            out["via"] = r.via
        if r.layers_read is not None:
            out["layers_read"] = list(r.layers_read)
        return out

    return [
        {
            "layer": v.layer,
            "version": v.version,
            "revisions": list(v.revisions),
            "active": v.active,
            "oldest_active": v.oldest,
            "count": v.count,
            "declared": [ref(r) for r in v.declared],
            "unattributed": [ref(r) for r in v.unattributed],
            "stale": [ref(r) for r in v.stale],
        }
        for lv in view.layers.values()
        for v in lv.versions
    ]


def _ref_text(r: ConsumerRef, layer: str) -> str:
    name = one_line(r.name)  # a group id or a declaration's: anyone's text, one line
    if r.via or r.layers_read is None:  # via: a topic name, of Kafka's legal characters
        return f"{name} (reads {r.via})" if r.via else name
    if not r.layers_read:
        return f"{name} (records before its offsets: no layer header)"
    tail = "" if layer in r.layers_read else f"; none of {layer}: counted by the conservative rule"
    return f"{name} (records before its offsets: {', '.join(map(one_line, r.layers_read))}{tail})"


def render_view(view: MigrationView) -> str:
    """The view as text: per layer and version, the count and the consumers by name."""
    lines: list[str] = []
    for lv in view.layers.values():
        lines.append(f"{lv.layer}")
        for v in lv.versions:
            state = (
                f"active {'/'.join(v.revisions)}" + (", oldest" if v.oldest else "")
                if v.active
                else "not active"
            )
            lines.append(f"  {v.version} ({state}): {v.count} consumer(s)")
            for kind, refs in (
                ("declared", v.declared),
                ("unattributed", v.unattributed),
                ("stale", v.stale),
            ):
                if refs:
                    lines.append(f"    {kind}: " + ", ".join(_ref_text(r, lv.layer) for r in refs))
    if any(v.unattributed for lv in view.layers.values() for v in lv.versions):
        lines.append(
            "unattributed: a group with offsets on the shared admitted topic that never "
            "declared is counted against the oldest active version of every layer (the "
            "conservative rule: the offsets do not say which layers it read); declare it "
            "with `contract-gate consumers declare` to count it where it belongs; "
            '"records before its offsets" lists the layers of the last records it read '
            "(a bounded sample), evidence only"
        )
    return "\n".join(lines) if lines else "no layers and no declarations"
