"""The pure core: contract model, clause evaluation, classification, lifecycle policy.

No Kafka, no OpenTelemetry SDK, no sockets and no file I/O: every function here takes and
returns plain values, so it is tested without a broker. Layers above: :mod:`worker.io`,
:mod:`worker.kafka`, :mod:`worker.ops`, :mod:`worker.cli`
(each imports only the ones below).
"""
