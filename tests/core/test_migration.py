"""The migration view with plain values: declared, unattributed, stale, per major version."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from tests.catalogue import HOSTILE_NAMES, assert_one_line_each
from worker.core.lifecycle.migration import Declaration, build_view, render_view, view_to_json

NOW = datetime(2026, 11, 29, 12, tzinfo=timezone.utc)
WEEK = timedelta(days=7)


def _decl(consumer: str, version: str, layer: str = "roads", age: timedelta = timedelta(0)):
    return Declaration(consumer, layer, version, NOW - age)


def _view(active, decls=(), reading=(), existing=(), **kw):
    return build_view(active, decls, reading, existing, now=NOW, stale_after=WEEK, **kw)


def test_declared_consumers_count_on_their_major() -> None:
    view = _view(
        {"roads": ["v1.0", "v1.1", "v2.0"]},
        [_decl("a", "v1.0"), _decl("b", "v1.1"), _decl("c", "v2")],
    )
    v1, v2 = view.layers["roads"].versions
    assert (v1.version, v1.revisions, v1.oldest, v1.count) == ("v1", ("v1.0", "v1.1"), True, 2)
    assert [r.name for r in v1.declared] == ["a", "b"]
    assert (v2.version, v2.count, v2.oldest) == ("v2", 1, False)


def test_unattributed_groups_count_against_the_oldest_active_major() -> None:
    view = _view(
        {"roads": ["v2.0", "v3.0"], "rivers": ["v1.0"]},
        [_decl("declared-reader", "v3")],
        reading=["declared-reader", "silent", "gate", "gate-reader-host-1"],
        existing=["declared-reader", "silent", "gate"],
        excluded=["gate"],
        excluded_prefixes=["gate-reader-"],
    )
    roads = view.layers["roads"]
    v2 = roads.get("v2")
    assert v2 is not None
    assert [(r.name, r.kind, r.label) for r in v2.unattributed] == [
        ("silent", "unattributed", "unattributed:silent")
    ]
    assert v2.count == 1
    assert roads.get("v3").count == 1  # type: ignore[union-attr]
    # a group that declared for roads only is unattributed on every other layer
    rivers = view.layers["rivers"].get("v1")
    assert rivers is not None
    assert sorted(r.name for r in rivers.unattributed) == ["declared-reader", "silent"]


def test_stale_declarations_are_shown_not_counted() -> None:
    view = _view(
        {"roads": ["v1.0", "v2.0"]},
        [
            _decl("gone-old", "v1", age=WEEK * 2),  # group gone, old: stale
            _decl("gone-new", "v1", age=timedelta(hours=1)),  # group gone, recent: counts
            _decl("alive-old", "v1", age=WEEK * 2),  # group exists: counts
        ],
        existing=["alive-old"],
    )
    v1 = view.count("roads", "v1")
    assert v1 is not None
    assert [r.name for r in v1.stale] == ["gone-old"]
    assert sorted(r.name for r in v1.declared) == ["alive-old", "gone-new"]
    assert v1.count == 2


def test_declarations_on_an_inactive_version_keep_their_row() -> None:
    view = _view({"roads": ["v2.0"]}, [_decl("late", "v1.0")])
    v1, v2 = view.layers["roads"].versions
    assert (v1.version, v1.active, v1.count) == ("v1", False, 1)
    assert (v2.version, v2.active, v2.oldest) == ("v2", True, True)


def test_migration_one_at_a_time_counts_down() -> None:
    names = ["a", "b", "c"]
    counts = []
    for moved in range(4):
        decls = [_decl(n, "v2" if i < moved else "v1") for i, n in enumerate(names)]
        counts.append(_view({"roads": ["v1.0", "v2.0"]}, decls).count("roads", "v1").count)  # type: ignore[union-attr]
    assert counts == [3, 2, 1, 0]


def test_render_and_json_name_every_consumer() -> None:
    view = _view(
        {"roads": ["v1.0", "v2.0"]},
        [_decl("a", "v1"), _decl("gone", "v1", age=WEEK * 2)],
        reading=["silent"],
        existing=["a", "silent"],
    )
    text = render_view(view)
    assert "v1 (active v1.0, oldest): 2 consumer(s)" in text
    assert "declared: a" in text and "unattributed: silent" in text and "stale: gone" in text
    assert text.splitlines()[-1].startswith(
        "unattributed: a group with offsets on the shared admitted topic that never declared "
        "is counted against the oldest active version of every layer (the conservative rule"
    )
    rows = view_to_json(view)
    assert rows[0]["count"] == 2 and rows[0]["stale"][0]["name"] == "gone"  # type: ignore[index]


def test_a_group_reading_a_per_major_topic_is_a_declared_consumer_of_that_major() -> None:
    topic = "gis.batches.admitted.roads.v1"
    view = _view(
        {"roads": ["v1.0", "v2.0"]},
        decls=[_decl("tiler", "v2"), _decl("vendor", "v2")],
        reading=["vendor", "silent"],
        existing=["vendor", "silent", "tiler"],
        path_readers=[("vendor", "roads", 1, topic), ("gate", "roads", 1, topic)],
        excluded=["gate"],
    )
    v1, v2 = view.layers["roads"].versions
    # vendor declared v2 but still reads the v1 path: it counts on v1 too, by the path
    assert [(r.name, r.kind, r.via) for r in v1.declared] == [("vendor", "declared", topic)]
    assert [r.name for r in v1.unattributed] == ["silent"]
    assert v1.count == 2 and [r.name for r in v2.declared] == ["tiler", "vendor"]
    rows = {r["version"]: r for r in view_to_json(view)}
    assert rows["v1"]["declared"] == [
        {"name": "vendor", "kind": "declared", "declared_version": "v1", "via": topic}
    ]
    assert f"declared: vendor (reads {topic})" in render_view(view)


def test_layers_read_are_shown_on_unattributed_rows_and_never_change_the_count() -> None:
    active = {"roads": ["v1.0"], "parcels": ["v2.0"]}
    seen = {"g-roads": ("roads",), "g-blank": ()}
    view = build_view(
        active, [], ["g-roads", "g-blank", "g-unknown"], [], now=NOW,
        stale_after=timedelta(days=7), layers_read=seen,
    )  # fmt: skip
    for layer, version in (("roads", "v1"), ("parcels", "v2")):
        row = view.count(layer, version)
        assert row is not None and row.count == 3
    text = render_view(view)
    assert (
        "unattributed: g-blank (records before its offsets: no layer header), "
        "g-roads (records before its offsets: roads; none of parcels: counted by the "
        "conservative rule), g-unknown"
    ) in text
    assert "unattributed: g-blank (records before its offsets: no layer header), " in text
    assert "g-roads (records before its offsets: roads), g-unknown" in text
    rows = {r["layer"]: r for r in view_to_json(view)}
    assert rows["roads"]["unattributed"] == [
        {"name": "g-blank", "kind": "unattributed", "layers_read": []},
        {"name": "g-roads", "kind": "unattributed", "layers_read": ["roads"]},
        {"name": "g-unknown", "kind": "unattributed"},
    ]


@pytest.mark.parametrize("name", HOSTILE_NAMES)
@pytest.mark.parametrize("kind", ["declared", "unattributed", "stale", "layers read"])
def test_render_view_shows_each_name_on_one_line_escaped(kind: str, name: str) -> None:
    # found by a new-user session: `consumers status` printed a consumer group id (any
    # string Kafka accepts) or a declaration's name as it was: a newline forged a line, an
    # ANSI escape reached the terminal
    if kind == "declared":
        view = _view({"roads": ["v1.0"]}, [_decl(name, "v1")], existing=[name])
    elif kind == "stale":
        view = _view({"roads": ["v1.0"]}, [_decl(name, "v1", age=2 * WEEK)])
    elif kind == "unattributed":
        view = _view({"roads": ["v1.0"]}, reading=[name], existing=[name])
    else:
        view = _view({"roads": ["v1.0"]}, reading=["g"], existing=["g"], layers_read={"g": (name,)})
    text = render_view(view)
    assert text.split("\n")[:2] == [
        "roads",
        f"  v1 (active v1.0, oldest): {int(kind != 'stale')} consumer(s)",
    ]
    assert_one_line_each(text, name, 3 + (kind in ("unattributed", "layers read")))
