"""Read batch files (GeoJSON, GeoParquet) and by-reference payloads into batches.

One module per format (:mod:`.geojson`, :mod:`.geoparquet`), what they share in
:mod:`.base`, and file / URI entry points in :mod:`.payload` (whole) and :mod:`.chunks`
(GeoParquet in chunks, for evaluation in bounded memory). Every failure raises
:class:`worker.core.errors.PayloadError` naming the file and the problem.
"""

from worker.io.formats.base import FeatureData, derive_schema
from worker.io.payloads.chunks import load_payload_chunked, read_batch_file_chunked
from worker.io.payloads.load import load_payload, read_batch_file, read_features

__all__ = [
    "FeatureData",
    "derive_schema",
    "load_payload",
    "load_payload_chunked",
    "read_batch_file",
    "read_batch_file_chunked",
    "read_features",
]
