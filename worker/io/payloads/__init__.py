"""Read batch files and by-reference payloads into batches.

The formats are the readers of :data:`worker.io.formats.FORMATS`; here are where a
payload may be read from and how large (:mod:`.policy`), its opening (:mod:`.open`,
:mod:`.s3`, :mod:`.base`) and the file / URI entry points in :mod:`.load` (whole) and
:mod:`.chunks` (in chunks, for evaluation in bounded memory). Every failure raises
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
