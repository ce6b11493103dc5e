"""GateConfig: every tuning value and timeout of the worker loop, in one frozen value.

The defaults are the measured ones (the reasons are in the modules that use them:
:mod:`worker.gate.housekeeping`, :mod:`worker.gate.schedule`,
:mod:`worker.gate.checkpoint`, :mod:`worker.gate.startup`); ``contract-gate run`` reads its
flag defaults from ``GateConfig()`` (the idea of quix-streams' ``ApplicationConfig``).
Units are in the names: ``_s`` seconds, ``_ms`` milliseconds, ``_bytes`` bytes.
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["MAX_BATCH_WAIT_MS", "GateConfig"]

#: Highest ``--max-batch-wait-ms``: contract changes from the config topic are applied
#: between poll batches, so at most this late.
MAX_BATCH_WAIT_MS = 60_000


@dataclass(frozen=True)
class GateConfig:
    """Tuning values and timeouts of one worker (:class:`worker.gate.processor.Processor`).

    Attributes
    ----------
    max_batch_events : int
        Most events of one poll batch (hence of one transaction), >= 1.
    max_batch_wait_ms : int
        Longest wait for a small poll batch to fill, milliseconds, >= 0.
    ready_bytes : int
        Bytes of event values at which a poll batch is taken without waiting for more.
    batch_deadline_s : float
        Processing deadline of one poll batch, seconds (> 0): past it, the events decided
        are committed and the rest consumed again.
    routing_threads : int
        Events routed at once, >= 1 (1: every event on the loop's thread).
    min_ahead_bytes : int
        Least bytes of an event for it to be routed ahead on a routing thread. Measured
        with one worker on the embedded broker, one routing thread against two (shipped
        countries, admin_boundaries v1): events of 100 features (120 kB) 0.95x the
        events/s, 300 features (325 kB) 1.06x and 1.21x, 1,000 features (1 MB) 1.17x and
        1.18x; offline, events of 30 features (24 kB) took 1.16x as long.
    group_events : int
        Most small events (under ``min_ahead_bytes``) of a poll batch routed together, >= 1:
        their facts computed once over all their features, each decided as alone
        (:mod:`worker.gate.route_group`); 1: one event at a time. Default 128: one-feature
        events took 0.94x the loop CPU of 64 (stop 40, docs/performance.md).
    group_bytes : int
        Most bytes of event values in one such window, >= 1 (a window holds at least one
        event): 128 events of 100 features would hold 15 MiB of WKB, and their facts more.
    eval_threads : int
        Threads measuring the chunks of a by-reference payload read in chunks, >= 1, also the
        most chunks held at once (:func:`worker.core.chunks.evaluate_chunked`; 1: one
        chunk at a time on the routing thread). The same decision whatever the value.
        Default 3 on 2 cores: one chunk is read and parsed (``from_wkb`` holds the GIL)
        while two are validated (GEOS releases it); 1M polygons took 9.3-9.8 s with 3
        against 10.4-12.2 s with 2 and 10.4-10.6 s with 4, 20-35 MiB more (stop 35).
    min_run_bytes, min_run_route_s : int, float
        Least bytes of events, and least routing seconds, of a run before it gets a
        transaction of its own (committed while the next run is routed).
    chained_batches : int
        Most poll batches routed in one loop step, >= 1: once a full batch is routed (the
        consumer is behind), the events librdkafka has fetched already are taken as the
        next batch (no wait), and the batch's last transaction commits while that one is
        routed (:mod:`worker.gate.schedule`); 1: each batch's last transaction is committed
        before the next poll. Contract changes still apply between poll batches.
    config_timeout_s : float
        Deadline of the config topic's bootstrap at start, seconds.
    stop_grace_s : float
        After a stop signal, seconds before ``contract-gate run`` exits anyway (143).
    init_transactions_timeout_s, send_offsets_timeout_s, commit_timeout_s, abort_timeout_s
        Timeouts of the transactional producer calls, seconds.
    queue_full_timeout_s : float
        Longest wait for room in the producer's local queue, seconds.
    max_batch_attempts : int
        Failed transactions of the same run before it is committed one event per
        transaction (a record refused as too large is then quarantined).
    lag_interval_s : float
        Seconds between two consumer-lag refreshes (``inf``: never).
    per_major_recheck_s : float
        Seconds before a missing per-major topic is looked up again.
    slo_restore_max_per_partition, replay_restore_per_partition : int
        Records read per partition at start to rebuild the SLO windows (evaluations
        topic) and the replay ledger (admitted topic).
    restore_timeout_s : float
        Deadline of each of those two reads at start, seconds.
    close_flush_timeout_s : float
        Producer flush at close, seconds.
    max_batch_wait_s : float
        :attr:`max_batch_wait_ms` in seconds: computed once at construction (a plain field,
        read per poll batch), not a constructor argument.
    config_check_interval_s : float
        Seconds between two checks that the config topic still holds what was read from
        it (:mod:`worker.kafka.config_integrity`).

    Raises
    ------
    ValueError
        A count below its least value (``max_batch_events``, ``routing_threads``,
        ``group_events``, ``eval_threads``, ``chained_batches``, ``max_batch_attempts`` below 1,
        ``max_batch_wait_ms`` below 0).
    """

    max_batch_events: int = 500
    max_batch_wait_ms: int = 100
    ready_bytes: int = 4 * 1024 * 1024
    batch_deadline_s: float = 60.0
    routing_threads: int = 2
    min_ahead_bytes: int = 256 * 1024
    group_events: int = 128
    group_bytes: int = 8 * 1024 * 1024
    eval_threads: int = 3
    min_run_bytes: int = 1024 * 1024
    min_run_route_s: float = 0.05
    chained_batches: int = 8
    config_timeout_s: float = 60.0
    stop_grace_s: float = 30.0
    init_transactions_timeout_s: float = 30.0
    send_offsets_timeout_s: float = 30.0
    commit_timeout_s: float = 60.0
    abort_timeout_s: float = 30.0
    queue_full_timeout_s: float = 60.0
    max_batch_attempts: int = 3
    lag_interval_s: float = 1.0
    per_major_recheck_s: float = 30.0
    slo_restore_max_per_partition: int = 20_000
    replay_restore_per_partition: int = 20_000
    restore_timeout_s: float = 30.0
    close_flush_timeout_s: float = 10.0
    config_check_interval_s: float = 5.0
    max_batch_wait_s: float = field(init=False)

    def __post_init__(self) -> None:
        if self.routing_threads < 1:
            raise ValueError(f"routing_threads must be 1 or more, got {self.routing_threads}")
        if self.group_events < 1:
            raise ValueError(f"group_events must be 1 or more, got {self.group_events}")
        if self.group_bytes < 1:
            raise ValueError(f"group_bytes must be 1 or more, got {self.group_bytes}")
        if self.eval_threads < 1:
            raise ValueError(f"eval_threads must be 1 or more, got {self.eval_threads}")
        if self.chained_batches < 1:
            raise ValueError(f"chained_batches must be 1 or more, got {self.chained_batches}")
        if self.max_batch_events < 1:
            raise ValueError(f"max_batch_events must be 1 or more, got {self.max_batch_events}")
        if self.max_batch_attempts < 1:
            raise ValueError(f"max_batch_attempts must be 1 or more, got {self.max_batch_attempts}")
        if self.max_batch_wait_ms < 0:
            raise ValueError(f"max_batch_wait_ms must be 0 or more, got {self.max_batch_wait_ms}")
        object.__setattr__(self, "max_batch_wait_s", self.max_batch_wait_ms / 1000.0)
