"""Spatial contract gate: guards spatial data layers with versioned data contracts.

The pure core (``model``, ``contracts``, ``spatial``, ``facts``, ``clauses``, ``evaluate``)
imports no Kafka client and no OpenTelemetry SDK; the Kafka adapter, pipeline and CLI are
thin layers around it.
"""

__version__ = "0.1.0"
__all__ = ["__version__"]
