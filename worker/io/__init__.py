"""Bytes and files to and from the core's model: Avro records, GeoJSON / GeoParquet, renderings.

Imports only :mod:`worker.core`.
"""
