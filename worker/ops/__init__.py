"""Operator tools and telemetry: metrics, the HTTP endpoints, quarantine tools, verify.

Imports :mod:`worker.kafka`, :mod:`worker.io` and :mod:`worker.core` only.
"""
