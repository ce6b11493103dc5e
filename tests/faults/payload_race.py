"""Payload roots while the file system changes (issue 31): a real worker reads batches by
reference under its ``--payload-root`` while a process that can write inside the root
swaps what the named paths resolve to between a benign file and one outside the root
holding :data:`tests.swaps.SECRET`, as fast as it can.

Three kinds, each ``batches`` events naming files under the root:

- ``geojson``: a directory of the path exchanged with a link to a directory outside
  (``renameat2(RENAME_EXCHANGE)``: the swap that made the check-then-open worker read the
  outside file), and a link at the path pointed in and out (the issue's description),
  half the events each;
- ``shapefile``: a ``.shp`` whose ``.dbf`` is pointed at the ``.dbf`` of a shapefile
  outside and back, and its directory exchanged the same way;
- ``geopackage``: a ``.gpkg`` whose directory is exchanged the same way.

The worker reads GeoJSON and GeoParquet by reference only (a shapefile or a GeoPackage is
``payload_corrupt`` before any sidecar is opened: GDAL never reads a producer's file),
so the last two kinds check that no race brings the outside file's values in either.
The row passes when every batch is decided exactly once, the worker stays up, and no
record (admitted, quarantine, evaluation: values and headers) nor a line of the worker's
log holds the outside value. ``note`` gives the outcomes per kind.
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import replace
from pathlib import Path

import pyarrow as pa

from tests.faults.suite import Lab, Row, _judge, _world, lab, wait_decided
from tests.swaps import SECRET, Swapper, feature_collection
from worker.io import codec
from worker.kafka.admin import read_topic
from worker.kafka.settings import Settings

__all__ = ["KINDS", "RaceResult", "payload_race", "race_kind"]

KINDS = ("geojson", "shapefile", "geopackage")
#: Seconds the worker may take to decide every event of one race.
DECIDE_TIMEOUT_S = 150.0


class RaceResult:
    """What one race produced: the row, the outcomes (``admitted`` or a quarantine
    reason code, per event) and where the outside value was found (empty: nowhere)."""

    def __init__(self, row: Row) -> None:
        self.row = row
        self.outcomes: Counter[str] = Counter()
        #: one entry per record (its topic) or log holding the outside value
        self.leaks: list[str] = []


def _ogr(path: Path, driver: str, continent: str) -> Path:
    import pyogrio
    import shapely

    data = pa.table(
        {
            "continent": pa.array([continent]),
            "geometry": pa.array([shapely.to_wkb(shapely.Point(1, 2))], pa.binary()),
        }
    )
    pyogrio.write_arrow(
        data, path, driver=driver, geometry_name="geometry", geometry_type="Point",
        crs="EPSG:4326",
    )  # fmt: skip
    return path


def _layout(kind: str, work: Path) -> tuple[Path, list[str], list[tuple[str, ...]]]:
    """``(root, uris the events name, the swapper's plan)`` for ``kind``."""
    root, outside = work / "root", work / "outside"
    (root / "sub").mkdir(parents=True)
    outside.mkdir()
    (root / "out").symlink_to(outside, target_is_directory=True)
    exchange = ("exchange", str(root / "sub"), str(root / "out"))
    if kind == "geojson":
        (root / "sub" / "batch.geojson").write_text(feature_collection("Europe"))
        (root / "benign.geojson").write_text(feature_collection("Europe"))
        (outside / "batch.geojson").write_text(feature_collection(SECRET))
        link = root / "batch.geojson"
        link.symlink_to("benign.geojson")
        relink = ("relink", str(link), "benign.geojson", str(outside / "batch.geojson"))
        uris = [(root / "sub" / "batch.geojson").as_uri(), link.as_uri()]
        return root, uris, [exchange, relink]
    if kind == "shapefile":
        _ogr(root / "sub" / "x.shp", "ESRI Shapefile", "Europe")
        _ogr(outside / "x.shp", "ESRI Shapefile", SECRET)
        (root / "sub" / "x.dbf").rename(root / "sub" / "benign.dbf")
        (root / "sub" / "x.dbf").symlink_to("benign.dbf")
        relink = ("relink", str(root / "sub" / "x.dbf"), "benign.dbf", str(outside / "x.dbf"))
        return root, [(root / "sub" / "x.shp").as_uri()], [exchange, relink]
    _ogr(root / "sub" / "x.gpkg", "GPKG", "Europe")
    _ogr(outside / "x.gpkg", "GPKG", SECRET)
    return root, [(root / "sub" / "x.gpkg").as_uri()], [exchange]


def _produce_all(s: Settings, topic: str, key: str, values: list[bytes]) -> list[tuple[int, int]]:
    """Produce ``values`` through one producer; their ``(partition, offset)`` in order."""
    from confluent_kafka import Producer

    placed: dict[int, tuple[int, int]] = {}
    producer = Producer(s.producer())
    for i, value in enumerate(values):
        producer.produce(
            topic,
            value=value,
            key=key,
            on_delivery=lambda err, msg, i=i: placed.__setitem__(
                i, (-1, -1) if err else (msg.partition(), msg.offset())
            ),
        )
        producer.poll(0)
    if producer.flush(60) or len(placed) != len(values) or (-1, -1) in placed.values():
        raise RuntimeError(f"{len(values) - len(placed)} events not delivered")
    return [placed[i] for i in range(len(values))]


def race_kind(running: Lab, kind: str, batches: int) -> RaceResult:
    """``batches`` events of ``kind`` through a worker of ``running`` racing a swapper."""
    result = RaceResult(Row(f"payload root race: {kind}, {batches} batches"))
    row = result.row
    s, t = running.settings, running.settings.topics
    root, uris, plan = _layout(kind, running.workdir / kind)
    world = _world(f"{kind}-0")
    values = []
    for i in range(batches):
        uri = uris[i % len(uris)]
        event = replace(world, batch_id=f"{kind}-{i}", payload_uri=uri)
        values.append(codec.encode_batch(event, inline=False, payload_uri=uri))
    placed = _produce_all(s, t.batches, "admin_boundaries", values)
    started = time.monotonic()
    with Swapper(plan):
        worker = running.start_worker(f"race-{kind}", "--payload-root", root.as_uri())
        got, _ = wait_decided(running, placed, DECIDE_TIMEOUT_S)
        row.decide_s = time.monotonic() - started
        row.peak_rss_mib = running.peak_rss_mib()
        row.stayed_up = worker.alive()
    worker.stop()
    _judge(row, placed, got)
    wanted = set(placed)
    secret = SECRET.encode()
    for topic in (t.admitted, t.quarantine, t.evaluations):
        for msg in read_topic(s, topic, timeout_s=30):
            blobs = [msg.value() or b"", *(v or b"" for _, v in msg.headers() or ())]
            if any(secret in b for b in blobs):
                result.leaks.append(topic)
            headers = {k: (v or b"").decode() for k, v in msg.headers() or ()}
            at = (int(headers.get("source-partition", -1)), int(headers.get("source-offset", -1)))
            if topic == t.evaluations or at not in wanted:
                continue
            if topic == t.admitted:
                result.outcomes["admitted"] += 1
            else:
                result.outcomes[codec.decode_quarantine(msg.value())["reason_code"]] += 1
    if SECRET in worker.log.read_text(errors="replace"):
        result.leaks.append("worker log")
    row.ok = (
        not result.leaks
        and row.lost == 0
        and row.duplicated == 0
        and row.stayed_up
        and sum(result.outcomes.values()) == batches
    )
    shown = ", ".join(f"{k} {n}" for k, n in result.outcomes.most_common())
    where = Counter(result.leaks)
    leaked = ", ".join(f"{n} {topic}" for topic, n in where.items()) or "nothing"
    row.note = f"{shown}; outside value in: {leaked}"
    return result


def payload_race(bootstrap: str, kinds: tuple[str, ...] = KINDS, batches: int = 300) -> Row:
    """The fault-suite row: every kind of :data:`KINDS` raced, ``batches`` events each."""
    row = Row(f"payload root race ({batches} batches x {len(kinds)})", runs=len(kinds))
    notes: list[str] = []
    oks: list[bool] = []
    with lab(bootstrap) as running:
        for kind in kinds:
            part = race_kind(running, kind, batches).row
            row.inputs += part.inputs
            row.outputs += part.outputs
            row.lost += part.lost
            row.duplicated += part.duplicated
            row.stayed_up = row.stayed_up and part.stayed_up
            row.peak_rss_mib = max(row.peak_rss_mib, part.peak_rss_mib)
            row.decide_s += part.decide_s
            oks.append(part.ok)
            notes.append(f"{kind}: {part.note}")
    row.ok = all(oks)
    row.note = " | ".join(notes)
    return row
