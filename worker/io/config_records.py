"""Config-topic records (Avro ContractRecord bytes) applied to a registry.

The one place where the bytes of ``gis.contracts`` meet the pure
:class:`~worker.core.lifecycle.registry.Registry`. Everything a producer of the config
topic controls is bounded here before the registry sees it (issue 30: one producer of
bad records must not stall the bootstrap of every new worker):

* a record (key and value) larger than ``max_bytes`` (default :data:`MAX_CONFIG_RECORD_BYTES`,
  1 MiB) is an ``oversized_record`` rejection, before a byte of it is decoded;
* with a verify key (:class:`~worker.io.signing.VerifyKey`), a record without a valid
  signature header over its topic, key and value is an ``unsigned_record`` or
  ``bad_signature`` rejection, before it is decoded (:mod:`worker.io.signing`);
* a record that does not decode is an ``invalid_record`` rejection (never an exception);
* its document is parsed under a time budget (:func:`parse_budget`, default
  :data:`PARSE_BUDGET_S` seconds): a document that takes longer is an ``invalid_contract``
  rejection saying so. Independently of the budget, a document has at most 1 MiB and
  :data:`~worker.core.contracts.parse.MAX_CLAUSES` clauses, which bounds a parse to about
  10 s on one core (measured: 250 schema clauses of 150 fields, 1 MiB, 11 s).

A null value is a tombstone.
"""

from __future__ import annotations

import _weakrefset
import contextlib
import signal
import threading
import weakref
from collections.abc import Iterator
from types import FrameType

from worker.core.contracts.parse import parse_contract
from worker.core.errors import ContractError, ContractGateError
from worker.core.lifecycle.config_events import ConfigEvent
from worker.core.lifecycle.registry import Registry, split_config_key
from worker.io.codec import decode_contract_record
from worker.io.signing import Headers, VerifyKey

__all__ = ["MAX_CONFIG_RECORD_BYTES", "PARSE_BUDGET_S", "apply_config_value", "parse_budget"]

#: Largest config record (key plus value), in bytes, that is decoded at all.
MAX_CONFIG_RECORD_BYTES = 1 << 20
#: Seconds one config record's document may take to parse (the main thread only: see
#: :func:`parse_budget`).
PARSE_BUDGET_S = 2.0


#: Seconds between repeated alarms once a parse is over its budget (:func:`parse_budget`).
REALARM_S = 0.05


class _OverBudget(Exception):
    """Raised by the interval timer inside a parse that ran out of time."""


#: Files whose functions run as weak-reference callbacks (``WeakKeyDictionary``'s
#: ``remove``, ``WeakSet``'s ``_remove``): an exception raised in one is swallowed.
_FINALIZER_FILES = frozenset({weakref.__file__, _weakrefset.__file__})


def _in_finalizer(frame: FrameType | None) -> bool:
    """Whether ``frame`` (where a signal interrupted the main thread) runs inside a
    function Python calls without a caller to raise to: a weak-reference callback or a
    ``__del__`` method, anywhere in the frame's first 64 callers. An exception raised
    there is only reported as unraisable (seen in the suite: the budget's alarm inside
    ``WeakKeyDictionary``'s callback), so the alarm lets it finish and the next one,
    :data:`REALARM_S` later, raises in the parse."""
    for _ in range(64):
        if frame is None:
            return False
        code = frame.f_code
        if code.co_name == "__del__" or code.co_filename in _FINALIZER_FILES:
            return True
        frame = frame.f_back
    return False


@contextlib.contextmanager
def parse_budget(seconds: float, what: str = "document") -> Iterator[None]:
    """Raise :class:`ContractError` (naming ``what``) in the block when it runs longer
    than ``seconds``.

    An ``ITIMER_REAL`` interval timer (POSIX) interrupts the parse between two Python
    bytecodes; signals reach the main thread only, so in another thread (or without
    ``setitimer``) the block runs unbounded by time and bounded by size alone. The
    previous SIGALRM handler and timer are restored on exit.
    """
    if (
        seconds <= 0
        or not hasattr(signal, "setitimer")
        or threading.current_thread() is not threading.main_thread()
    ):
        yield
        return

    active = [True]

    def on_alarm(signum: int, frame: FrameType | None) -> None:
        if active[0] and not _in_finalizer(frame):
            raise _OverBudget

    previous = signal.signal(signal.SIGALRM, on_alarm)
    # Repeating every REALARM_S: a raise that lands where Python swallows exceptions (a
    # garbage-collector callback, a __del__ method) is only reported as unraisable, so
    # the next alarm raises again until one reaches the parse.
    signal.setitimer(signal.ITIMER_REAL, seconds, REALARM_S)
    try:
        yield
    except _OverBudget:
        active[0] = False
        raise ContractError(
            f"{what}: document not parsed within {seconds:g} s (the config record parse budget); "
            "a contract is a short YAML file"
        ) from None
    finally:
        active[0] = False
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def apply_config_value(
    registry: Registry,
    key: str | None,
    value: bytes | None,
    *,
    max_bytes: int = MAX_CONFIG_RECORD_BYTES,
    budget_s: float = PARSE_BUDGET_S,
    verifier: VerifyKey | None = None,
    topic: str = "",
    headers: Headers = None,
    raw_key: bytes | None = None,
) -> ConfigEvent:
    """Decode one config-topic value and apply it (``value`` None is a tombstone).

    Parameters
    ----------
    registry : Registry
        The registry to apply the record to.
    key : str or None
        The record key, decoded as UTF-8 (``layer/version/digest``).
    value : bytes or None
        The Avro ContractRecord bytes; None for a tombstone.
    max_bytes : int
        Largest ``len(key) + len(value)``, bytes; larger is ``oversized_record``.
    budget_s : float
        Seconds the document may take to parse (:func:`parse_budget`; 0: no time bound).
    verifier : VerifyKey, optional
        When given, the record (a tombstone too) must carry a valid signature
        (:meth:`VerifyKey.check` over ``topic``, ``raw_key`` and ``value``); None: signatures
        are not looked at.
    topic, headers, raw_key
        The record's topic, headers and key bytes as read (``raw_key`` None: ``key``
        encoded as UTF-8), for the signature check.

    Returns
    -------
    ConfigEvent
        The registry's event; an oversized, undecodable or unparseable value is
        ``outcome="rejected"`` with reason ``oversized_record``, ``unsigned_record``,
        ``bad_signature``, ``invalid_record`` or ``invalid_contract`` and a message naming
        the bound, the signature's fault or the decoder's reason.
    """
    if value is None and verifier is None:
        return registry.apply(key, None)
    size = len(value or b"") + len((key or "").encode("utf-8", "replace"))
    if size > max_bytes:
        return registry.reject(
            key,
            f"config record {split_config_key(key or '')[0] or '<no key>'}: {size} bytes, "
            f"more than the {max_bytes} a config record may have (not decoded)",
            "oversized_record",
        )
    if verifier is not None:
        what = key.encode("utf-8", "replace") if raw_key is None and key is not None else raw_key
        fault = verifier.check(topic, what, value, headers)
        if fault is not None:
            name = split_config_key(key or "")[0] or "<no key>"
            return registry.reject(key, f"config record {name}: {fault[1]}", fault[0])
    if value is None:
        return registry.apply(key, None)
    try:
        record = decode_contract_record(value)
    except ContractGateError as exc:
        return registry.reject(key, str(exc), "invalid_record")
    source = f"config record {split_config_key(key or '')[0] or '<no key>'}"
    document = record.get("document")
    parsed = None
    if document:
        try:
            with parse_budget(budget_s, source):
                parsed = parse_contract(document, source=source)
        except ContractGateError as exc:
            return registry.reject(key, str(exc), "invalid_contract", layer=record.get("layer"))
    return registry.apply(key, record, parsed=parsed)
