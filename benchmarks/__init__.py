"""Benchmarks of the gate against the physical limits of the same work on the same input.

Each benchmark measures the gate and a *floor* (the least work the same input needs: Avro
decode and GEOS parse/validity/bounds, or a transactional copy on the same broker) side by
side in one run, and prints the figures, the ratio and PASS/FAIL against the targets of
issue 12. ``python -m benchmarks`` runs them all; ``--quick`` runs tiny sizes (the test
suite's smoke run, whose figures mean nothing); ``--only NAME`` runs one group. The
``peers`` group (:mod:`benchmarks.peers`, issue 27) measures the gate against DuckDB spatial,
geopandas and a shapely loop instead of a floor (the peers are the ``bench`` extra).
"""
