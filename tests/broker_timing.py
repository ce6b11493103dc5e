"""The consumer-group timing every test worker uses, chosen by the broker the tests run on.

Tansu completes a group join about half a ``session.timeout.ms`` after the member asks
(measured on Tansu 0.6: 3.0 s at 6,000 ms, 1.0 s at 2,000 ms), and every test worker pays
that wait once per start, so the embedded broker gets a short session. A real Kafka broker
refuses a session shorter than its ``group.min.session.timeout.ms`` (6,000 ms by default,
KIP-26's broker setting), so a broker named by ``KAFKA_BOOTSTRAP_SERVERS`` or started by
testcontainers (a Docker engine answers) gets 6,000 ms, as docs/design.md section 8 says.
"""

from __future__ import annotations

import os

from worker.kafka.broker_route import _docker_engine_answers


def _real_kafka() -> bool:
    return bool(os.environ.get("KAFKA_BOOTSTRAP_SERVERS")) or _docker_engine_answers(
        dict(os.environ)
    )


#: ``session.timeout.ms`` of every worker a test starts (in-process, subprocess or fault lab).
SESSION_TIMEOUT_MS = 6000 if _real_kafka() else 3000
