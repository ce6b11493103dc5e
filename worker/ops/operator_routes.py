"""The operator page's routes on the worker's HTTP port (GET only, read-only).

* ``/``: the page (:func:`worker.io.reports.operator_page.render_operator_page`);
* ``/overview.json``: the view model and the page's live fragments, polled by the page;
* ``/batch/<topic>/<partition>/<offset>``: the batch page of a quarantined batch this
  worker keeps (:class:`~worker.ops.operator.RecentQuarantines`), its map drawn from the
  original event read again from its source topic at those coordinates (the renderer of
  ``quarantine show --html``). Only kept coordinates are served: the route never reads an
  arbitrary topic or offset.
"""

from __future__ import annotations

import html
import re
import threading
from typing import Any
from urllib.parse import unquote

from worker.core._util.jsonsafe import dumps_json
from worker.core.errors import ContractGateError
from worker.core.lifecycle.overview import overview_to_json
from worker.io.reports.operator_page import render_fragments, render_operator_page
from worker.io.reports.page import render_record_page
from worker.ops.http_handlers import Response, _json
from worker.ops.operator import OverviewSource
from worker.ops.quarantine import QuarantineEntry, entry_batch

__all__ = ["OPERATOR_ENDPOINTS", "operator_response", "read_event"]

HTML_TYPE = "text/html; charset=utf-8"
OPERATOR_ENDPOINTS = ["/", "/overview.json", "/batch/<topic>/<partition>/<offset>"]
_BATCH = re.compile(r"^/batch/([^/]{1,400})/(\d{1,6})/(\d{1,19})$")
#: Seconds a batch page waits for its original event.
READ_TIMEOUT_S = 10.0
#: Batch pages read from Kafka at once (each opens a reader); more get a 503 at once.
MAX_CONCURRENT_READS = 2
_READS = threading.BoundedSemaphore(MAX_CONCURRENT_READS)


def _html(status: int, text: str) -> Response:
    return Response(status, HTML_TYPE, text.encode("utf-8"))


def read_event(settings: Any, topic: str, partition: int, offset: int) -> bytes:
    """The value of the record at ``topic[partition]@offset`` (a group-less reader).

    Raises
    ------
    ContractGateError
        No such record within :data:`READ_TIMEOUT_S` (deleted by retention, or the broker
        does not answer).
    """
    import time

    from worker.kafka.clients import make_consumer
    from worker.kafka.protocols import TopicPartition

    consumer = make_consumer(settings, reader=True)
    try:
        consumer.assign([TopicPartition(topic, partition, offset)])
        deadline = time.monotonic() + READ_TIMEOUT_S
        while time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is None or msg.error() is not None:
                continue
            if msg.offset() == offset:
                return bytes(msg.value() or b"")
            if (msg.offset() or 0) > offset:
                break
    finally:
        consumer.close()
    raise ContractGateError(
        f"the original event {topic}[{partition}]@{offset} was not read within "
        f"{READ_TIMEOUT_S:.0f} s (deleted by the topic's retention, or the broker is away); "
        "`contract-gate quarantine show --html` draws it from the quarantine record",
        fix="draw it from the quarantine record: `contract-gate quarantine show --html`",
    )


def _batch_page(source: OverviewSource, m: re.Match[str]) -> Response:
    topic, partition, offset = unquote(m[1]), int(m[2]), int(m[3])
    kept = source.recent.find(topic, partition, offset)
    if kept is None:
        return _html(
            404,
            "<!doctype html><title>not kept</title><p>This worker keeps no quarantined batch "
            f"consumed at {html.escape(topic)}[{partition}]@{offset} (it keeps the last few). "
            'Use <code>contract-gate quarantine show</code>. <a href="/">back</a></p>',
        )
    if not _READS.acquire(blocking=False):
        return _html(503, "<!doctype html><title>busy</title><p>Other batch pages are being "
                     'read: try again in a few seconds. <a href="/">back</a></p>')  # fmt: skip
    try:
        original = read_event(source.state.settings, topic, partition, offset)
        entry = QuarantineEntry(
            topic, partition, offset, None, {}, kept.record | {"original": original}
        )
        batch = entry_batch(entry, source.state.settings)  # framed or plain, by reference
    except ContractGateError as exc:
        return _html(
            200,
            "<!doctype html><title>no map</title><p>No map for this batch: "
            f'{html.escape(str(exc)[:2000])}</p><p><a href="/">back</a></p>',
        )
    finally:
        _READS.release()
    page = render_record_page(batch, kept.record)
    return _html(
        200, page.replace("<body>", '<body><p><a href="/">&larr; operator page</a></p>', 1)
    )


def operator_response(route: str, source: OverviewSource | None) -> Response | None:
    """The response of an operator route, None when ``route`` is none of them."""
    if source is None:
        return None
    if route == "/":
        return _html(200, render_operator_page(source.overview()))
    if route == "/overview.json":
        o = source.overview()
        doc = {"model": overview_to_json(o), "html": render_fragments(o)}
        return Response(200, "application/json", (dumps_json(doc, default=str) + "\n").encode())
    m = _BATCH.match(route)
    if m is not None:
        return _batch_page(source, m)
    if route.startswith("/batch/"):
        return _json(404, {"error": "a batch page is /batch/<topic>/<partition>/<offset>"})
    return None
