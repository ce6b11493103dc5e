"""The extent and codes of the ``peers`` batches (:mod:`benchmarks.peers_data`), in a module
of their own: a tool process (:mod:`benchmarks.peers_tools`) imports only these, not the
generator's numpy, pyarrow and shapely, which DuckDB's process would otherwise pay for
(0.4-0.7 s of a 1.4 s run on the points)."""

from __future__ import annotations

#: The contract's extent: (xmin, ymin, xmax, ymax), degrees.
EXTENT = (-10.0, 35.0, 30.0, 70.0)
#: Allowed values of the ``code`` column.
CODES = ("residential", "commercial", "industrial", "agricultural", "forest", "water")
#: The worker's and ``check``'s payload size limit setting (``--max-payload-bytes``): the
#: ``peers`` group sets it to the batch's size when the batch is over the gate's default
#: (2 GiB, about 2.4 million of its polygons), as an operator would for such batches.
LIMIT_ENV = "CONTRACT_GATE_MAX_PAYLOAD_BYTES"
