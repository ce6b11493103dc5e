"""The confluent-kafka adapter: the only package that imports ``confluent_kafka``.

Settings, the protocols the gate and the control plane are typed against
(:mod:`~worker.kafka.protocols`), the clients and the translation of their errors
(:mod:`~worker.kafka.clients`), an in-memory broker (:mod:`~worker.kafka.memory`), topic
administration and group-less reads, the config topic, the Schema Registry wire format,
broker health and the embedded broker. Imports :mod:`worker.io` and :mod:`worker.core` only.
"""
