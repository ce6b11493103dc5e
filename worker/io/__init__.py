"""Bytes and files to and from the core's model: Avro records, batch files (formats), renderings.

Imports only :mod:`worker.core`.
"""
