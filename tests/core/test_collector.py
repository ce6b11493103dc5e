"""The cyclic collector is paused only for the block, and left as it was found."""

from __future__ import annotations

import gc

import pytest

from tests.catalogue import BOWTIE, NOW, VALID_POLYGON, active, batch_of, clause, contract_of
from worker.core._util.gcpause import collector_paused
from worker.core.evaluate import evaluate
from worker.core.facts import parse as facts_module


def test_paused_in_the_block_and_enabled_after_it_also_on_error() -> None:
    assert gc.isenabled()
    with collector_paused():
        assert not gc.isenabled()
    assert gc.isenabled()
    with pytest.raises(RuntimeError), collector_paused():
        raise RuntimeError("boom")
    assert gc.isenabled()


def test_a_nested_block_and_a_disabled_collector_are_left_alone() -> None:
    with collector_paused():
        with collector_paused():
            pass
        assert not gc.isenabled()  # the inner block did not enable it
    gc.disable()
    try:
        with collector_paused():
            pass
        assert not gc.isenabled()  # an application's choice is kept
    finally:
        gc.enable()


def test_evaluate_builds_geometries_with_the_collector_paused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    seen: list[bool] = []
    from_wkb = facts_module.shapely.from_wkb

    def spy(*args, **kwargs):  # type: ignore[no-untyped-def]
        seen.append(gc.isenabled())
        return from_wkb(*args, **kwargs)

    monkeypatch.setattr(facts_module.shapely, "from_wkb", spy)
    d = evaluate(
        batch_of([VALID_POLYGON, BOWTIE]), [active(contract_of(clause("v", "validity")))], now=NOW
    )
    assert d.decision == "quarantined"  # the bowtie, judged as without the pause
    assert seen and not any(seen)
    assert gc.isenabled()


def test_blocks_of_two_threads_keep_the_collector_paused_until_the_last_ends() -> None:
    """Routing threads overlap their blocks: the first to end must not enable the
    collector under the other, and the last to end enables it."""
    import threading

    first_in, second_in, first_out = threading.Event(), threading.Event(), threading.Event()
    seen: dict[str, bool] = {}

    def first() -> None:
        with collector_paused():
            first_in.set()
            second_in.wait(5)
        first_out.set()

    def second() -> None:
        first_in.wait(5)
        with collector_paused():
            second_in.set()
            first_out.wait(5)
            seen["after the first block ended"] = gc.isenabled()
        seen["after both"] = gc.isenabled()

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert seen == {"after the first block ended": False, "after both": True}
