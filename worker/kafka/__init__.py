"""The confluent-kafka adapter and everything that talks to a broker.

Settings, the embedded broker, the transactional pipeline, the config topic, routing,
publishing, consumer declarations and attribution, lifecycle writes and retirement.
Imports :mod:`worker.io` and :mod:`worker.core` only.
"""
