"""Registry of contract versions per layer, fed by config-topic records (pure, no Kafka).

The worker re-checks the lifecycle policy of docs/design.md section 5 on every record, and
what it holds is a function of the *latest record under each key* alone
(:func:`worker.core.lifecycle.history.layer_view`): exactly what log compaction keeps, so a
worker that followed the whole history and a fresh one started on the compacted topic
hold the same versions and refuse the same records (issue 30).

* document records (``layer/version/<digest>``, written once) carry the document; state
  records (``layer/version/<digest>/<mode>-<state>``) promote, supersede and retire it;
  legacy records (document and state in one) are still read;
* a version is in the furthest state its records say (active < superseded < retired);
  an enforcing record's ``supersedes`` turns the earlier revisions it names superseded;
* a tombstone, a record that does not decode, is too large, whose document is invalid,
  whose digest or key does not match, a state record without its document, a record
  building on a key that holds no valid record, and a second document for one version
  (an *edit in place*) each **break** the layer's history: :meth:`Registry.active` then
  returns a :class:`~worker.core.lifecycle.config_events.BrokenLayer` (no version, the
  reason), and the worker quarantines every batch of the layer
  (``contract_history_broken``) until the genuine record is written again
  (``contract-gate contract publish FILE`` restores a document).

Rejections never raise: :meth:`Registry.apply` returns a
:class:`~worker.core.lifecycle.config_events.ConfigEvent` saying why.
"""

from __future__ import annotations

import bisect
from collections.abc import Mapping
from dataclasses import replace
from datetime import datetime
from typing import Any

from worker.core._util.text import clip
from worker.core.lifecycle.config_events import ConfigEvent, broken_layer, installed_event
from worker.core.lifecycle.history import (
    Entry,
    LayerView,
    active_version_from_record,
    entry_of,
    layer_view,
    parse_history_key,
)
from worker.core.lifecycle.policy import Published
from worker.core.model import ActiveVersion, Contract

__all__ = [
    "RecordingRegistry",
    "Registry",
    "active_version_from_record",
    "config_key",
    "split_config_key",
]


def config_key(contract: Contract) -> str:
    """The config-topic key of a version's document record: ``layer/version/digest``."""
    return f"{contract.key}/{contract.digest}"


def split_config_key(key: str) -> tuple[str, str | None]:
    """``layer/version/digest[/...]`` -> ``("layer/version", digest)``; a key without a
    digest keeps None; a key of another shape is returned whole."""
    hk = parse_history_key(key)
    if hk is None:
        return key, None
    return hk.vkey, hk.digest


def _layer_of(key: str) -> str | None:
    return key.split("/", 1)[0] if "/" in key else None


#: Layers without active versions whose (empty) answer is kept: event keys come from
#: producers, so the cache must not grow with every name they send.
_ACTIVE_CACHE_LAYERS = 1024
#: Entry kinds that carry a document (a layer with one is listed by :meth:`Registry.layers`).
_DOCS = ("document", "legacy")


def _effective(view: LayerView) -> dict[str, ActiveVersion]:
    """The layer's versions with supersession applied."""
    by = {t for targets in view.supersedes.values() for t in targets}
    return {
        k: replace(v, state="superseded") if v.state == "active" and k in by else v
        for k, v in view.versions.items()
    }


class Registry:
    """Contract versions known to this worker, keyed ``layer/version``.

    Readers in other threads (HTTP /status) see whole states: every mapping is replaced,
    never mutated.
    """

    def __init__(self) -> None:
        self._entries: dict[str, dict[str, Entry]] = {}  # layer -> key -> latest entry
        self._views: dict[str, LayerView] = {}
        self._versions: dict[str, ActiveVersion] = {}  # layer/version -> in force
        self._breaks: dict[str, tuple[str, ...]] = {}  # broken layers only
        # the same versions by layer, and the sorted layers(): a record changes one layer,
        # so applying it costs that layer's size, not the registry's (1,000 layers: O(n^2))
        self._by_layer: dict[str, dict[str, ActiveVersion]] = {}
        self._layers: tuple[str, ...] = ()
        self._layer_set: set[str] = set()
        self._heads: dict[str, str] = {}  # layer -> key of its last valid record
        self._times: dict[str, datetime] = {}  # key -> its record's timestamp (see stamp)
        self._active_cache: (
            tuple[dict[str, dict[str, ActiveVersion]], dict[str, tuple[ActiveVersion, ...]]] | None
        ) = None

    # -- applying records ---------------------------------------------------------------
    def reject(
        self,
        key: str | None,
        message: str,
        reason: str = "invalid_record",
        *,
        layer: str | None = None,
    ) -> ConfigEvent:
        """A record refused before :meth:`apply` (too large, undecodable, unparseable);
        under a contract key it breaks that layer's history (it replaced what was there)."""
        key = key or ""
        hk = parse_history_key(key)
        if hk is None:
            return ConfigEvent("rejected", key, layer or _layer_of(key), message, reason)
        bad = Entry(key, "bad", hk.vkey, problem=f"a refused record ({reason}: {clip(message)})")
        return self._install(hk.layer, bad, "rejected", message, reason)

    def apply(
        self,
        key: str | None,
        record: Mapping[str, Any] | None,
        *,
        parsed: Contract | None = None,
    ) -> ConfigEvent:
        """Apply one decoded ContractRecord (``record`` None is a tombstone).

        ``record`` has the fields of the Avro ContractRecord; it is untrusted: anything
        wrong with it is a rejection (and a break of its layer), never an error.
        ``parsed`` is its document already parsed (:func:`active_version_from_record`).
        """
        key = key or ""
        hk = parse_history_key(key)
        source = f"config record {clip(key or '<no key>', 240)}"
        if hk is None:
            if record is None:
                return ConfigEvent(
                    "unchanged", key, None, f"tombstone for {clip(key, 240)}", tombstone=True
                )
            return ConfigEvent(
                "rejected",
                key,
                _layer_of(key),
                f"{source}: the key is not layer/version/digest[/mode-state]",
                "key_mismatch",
            )
        if record is None:
            gone = self._versions.get(hk.vkey)
            enforced = gone is not None and (gone.mode, gone.state) == ("enforcing", "active")
            reason = "unretired_tombstone" if enforced else "tombstone"
            bad = Entry(key, "bad", hk.vkey, problem="a tombstone where a contract record was")
            message = f"tombstone for {key} refused: a contract record is never deleted" + (
                f" ({hk.vkey} is enforcing and active: retire it with `contract-gate contract "
                "retire`, the zero-consumer gate)"
                if enforced
                else ""
            )
            return self._install(hk.layer, bad, "rejected", message, reason, tombstone=True)
        entry, refused = entry_of(key, hk, record, parsed, source)
        known = self._entries.get(hk.layer, {}).get(key)
        if (
            entry.kind in ("document", "legacy")
            and known is not None
            and known.kind in ("document", "legacy")
            and known.digest != entry.digest
        ):  # a key without the digest (written before it was in keys) holding an edit
            entry = Entry(key, "bad", hk.vkey, problem="an edit in place replaced its document")
            return self._install(
                hk.layer,
                entry,
                "rejected",
                f"{source}: edit in place refused: {hk.vkey} is published with digest "
                f"{(known.digest or '')[:12]}, this record has another document",
                "edit_in_place",
            )
        return self._install(hk.layer, entry, "", entry.problem or "", refused)

    def _install(
        self,
        layer: str,
        entry: Entry,
        outcome: str,
        message: str,
        reason: str | None,
        *,
        tombstone: bool = False,
    ) -> ConfigEvent:
        """Put ``entry`` under its key, rebuild the layer's view, say what changed."""
        entries = {**self._entries.get(layer, {}), entry.key: entry}
        view = layer_view(entries.values())
        before = self._by_layer.get(layer, {})
        after = _effective(view)
        self._entries = {**self._entries, layer: entries}
        self._views = {**self._views, layer: view}
        versions = dict(self._versions)  # copied, then replaced whole (readers' threads)
        for k in before:
            del versions[k]
        versions.update(after)
        self._versions = versions
        self._by_layer = {**self._by_layer, layer: after}
        self._list_layer(layer, bool(after) or any(e.kind in _DOCS for e in entries.values()))
        self._breaks = {k: v for k, v in self._breaks.items() if k != layer}
        if view.breaks:
            self._breaks[layer] = view.breaks
        if entry.kind != "bad":
            self._heads = {**self._heads, layer: entry.key}
        return installed_event(layer, entry, message, reason, tombstone, before, after, view)

    def _list_layer(self, layer: str, listed: bool) -> None:
        """Keep :meth:`layers` sorted with ``layer`` in it when ``listed``, else out."""
        if listed == (layer in self._layer_set):
            return
        names = list(self._layers)
        if listed:
            bisect.insort(names, layer)
            self._layer_set.add(layer)  # the writer's own: readers see the tuple only
        else:
            names.remove(layer)
            self._layer_set.discard(layer)
        self._layers = tuple(names)

    # -- reading ------------------------------------------------------------------------
    def active(self, layer: str) -> tuple[ActiveVersion, ...]:
        """Active versions of ``layer``, oldest first (by major, then minor); a
        :class:`~worker.core.lifecycle.config_events.BrokenLayer` (no version) when the
        layer's history is broken.

        Asked for every event: each layer's answer is kept until the versions change."""
        breaks = self._breaks.get(layer)
        if breaks:
            return broken_layer(layer, breaks)
        by_layer = self._by_layer  # read once: the answer and its cache key agree
        cache = self._active_cache
        if cache is None or cache[0] is not by_layer:
            cache = (by_layer, {})
            self._active_cache = cache  # one assignment: other threads see old or new
        hit = cache[1].get(layer)
        if hit is None:
            hit = tuple(
                sorted(
                    (v for v in by_layer.get(layer, {}).values() if v.state == "active"),
                    key=lambda v: (v.contract.major, v.contract.minor),
                )
            )
            if hit or len(cache[1]) < _ACTIVE_CACHE_LAYERS:  # unknown layers: bounded
                cache[1][layer] = hit
        return hit

    def versions(self, layer: str | None = None) -> tuple[ActiveVersion, ...]:
        """Every known version (any state), optionally of one layer, oldest first."""
        versions = self._versions if layer is None else self._by_layer.get(layer, {})
        return tuple(
            sorted(
                versions.values(),
                key=lambda v: (v.contract.layer, v.contract.major, v.contract.minor),
            )
        )

    def snapshot(self) -> Mapping[str, ActiveVersion]:
        """``layer/version`` -> version: a whole state, replaced by later records, never mutated."""
        return self._versions

    def get(self, key: str) -> ActiveVersion | None:
        return self._versions.get(key)

    def layers(self) -> tuple[str, ...]:
        """Layers with a version, or with a valid document whose history is broken."""
        return self._layers

    def breaks(self, layer: str) -> tuple[str, ...]:
        """The breaks of ``layer``'s history, one line each (empty: whole)."""
        return self._breaks.get(layer, ())

    def broken_layers(self) -> Mapping[str, tuple[str, ...]]:
        """Layer -> breaks, for every layer whose history is broken."""
        return self._breaks

    def missing(self, layer: str) -> tuple[str, ...]:
        """The keys of ``layer`` that need a valid record again (see ``contract publish``)."""
        view = self._views.get(layer)
        return view.missing if view else ()

    def entries(self, layer: str) -> Mapping[str, Entry]:
        """The latest entry under each key of ``layer``."""
        return self._entries.get(layer, {})

    def stamp(self, key: str, at: datetime) -> None:
        """Keep ``at`` (the Kafka timestamp of the record applied under ``key``) as the time
        of the change that record made: publication, promotion, supersession, retirement.
        Only keys the registry holds a valid entry under are kept (bounded as the entries
        are); the latest stamp under a key wins, as the latest record does."""
        hk = parse_history_key(key)
        entry = self._entries.get(hk.layer, {}).get(key) if hk is not None else None
        if entry is not None and entry.kind != "bad":
            self._times = {**self._times, key: at}

    def stamps(self, layer: str) -> Mapping[str, datetime]:
        """Key -> record timestamp of the valid records of ``layer`` (see :meth:`stamp`)."""
        prefix = f"{layer}/"
        return {k: t for k, t in self._times.items() if k.startswith(prefix)}

    def head(self, layer: str) -> str | None:
        """The key of the layer's last valid record (what a new record builds on)."""
        return self._heads.get(layer)

    def published(self, layer: str | None = None) -> list[Published]:
        """Every known version (any state) with its document record's provenance, oldest
        first, optionally of one layer; mode and state as in force."""
        out = []
        for v in self.versions(layer):
            doc = self._views[v.contract.layer].documents.get(v.contract.key)
            if doc is not None and doc.record is not None:
                p = Published.from_record(v.contract, doc.record)
                out.append(replace(p, mode=v.mode, state=v.state))
        return out


class RecordingRegistry(Registry):
    """A :class:`Registry` (every registry now keeps the records' provenance)."""
