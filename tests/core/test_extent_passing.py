"""Stop 39: an extent result of a batch wholly inside is made from an earlier pass of the
same clause, contract, count and facts' reads, with the batch's own bounds
(:func:`worker.core.clauses.extent_group.passing_result`). On real one-feature batches (the
shipped countries, as the benchmark sends them) and on variants of what the render reads
(the declared CRS's text, spherical edges, the metadata's name, two contracts, a clause
whose own CRS reprojects), every result reads as the full render's, grouped and alone."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

import pytest

from benchmarks.common import NOW, countries, world
from worker.cli.scenario import data_file
from worker.core.clauses import extent, extent_group
from worker.core.evaluate import evaluate
from worker.core.evaluate_group import evaluate_group
from worker.core.facts.batch import BatchFacts
from worker.core.facts.shared import group_key
from worker.core.model import ActiveVersion, Batch, ClauseResult, Contract, Decision
from worker.io.contract_files import load_contract

V1 = load_contract(data_file("contracts/admin_boundaries.v1.yaml"))
AT = NOW + timedelta(minutes=1)


def _extent_of(result: object) -> ClauseResult:
    return next(c for v in result.verdicts for c in v.clauses if c.kind == "extent")  # type: ignore[attr-defined]


def _forget(contract: Contract) -> None:
    for c in contract.clauses:
        c.__dict__.pop(extent_group.KEPT_PASSING, None)


def _batches() -> list[Batch]:
    base = world()
    out = [countries(base, 1, start=i, batch_id=f"e{i}") for i in range(40)]
    out += [
        replace(b, declared_crs="OGC:CRS84", batch_id=f"crs84-{n}") for n, b in enumerate(out[:4])
    ]
    out += [replace(b, edges="spherical", batch_id=f"sph-{n}") for n, b in enumerate(out[:3])]
    out += [
        replace(b, metadata_name="GeoParquet", batch_id=f"md-{n}") for n, b in enumerate(out[:3])
    ]
    out += [countries(base, 2, start=i, batch_id=f"two-{i}") for i in range(3)]
    return out


def _rendered(contract: Contract, batch: Batch) -> ClauseResult:
    """The full render of the batch's extent clause: a copy of the clause, nothing kept."""
    clause = replace(next(c for c in contract.clauses if c.kind == "extent"))
    facts = BatchFacts(batch)
    tally = extent.KIND.tally(clause, contract, facts, AT)
    return extent.render(clause, contract, facts, tally, AT)


@pytest.mark.parametrize("own_crs", [None, "EPSG:3857"])
def test_every_extent_result_reads_as_the_full_render(own_crs: str | None) -> None:
    contract = V1
    if own_crs is not None:  # a clause whose region is in its own CRS: reprojected
        clauses = tuple(
            replace(
                c, params={**c.params, "crs": own_crs, "region": [-2.0e7, -2.0e7, 2.0e7, 2.0e7]}
            )
            if c.kind == "extent"
            else c
            for c in V1.clauses
        )
        contract = replace(V1, clauses=clauses, version="v9.0", digest="d9")
    other = replace(contract, version="v1.9", digest="other")  # the same clause objects
    versions = [ActiveVersion(contract, "enforcing"), ActiveVersion(other, "observing")]
    batches = _batches()
    _forget(contract)
    by_key: dict[object, list[int]] = {}
    for i, b in enumerate(batches):
        by_key.setdefault(group_key(b), []).append(i)
    grouped: list[Decision] = [evaluate(b, versions, now=AT) for b in batches]
    for key, members in by_key.items():
        if key is not None and len(members) > 1:
            for i, d in zip(
                members,
                evaluate_group([batches[i] for i in members], versions, now=AT),
                strict=True,
            ):
                grouped[i] = d
    assert max(len(m) for k, m in by_key.items() if k is not None) >= 40  # a real group
    alone = [evaluate(b, versions, now=AT) for b in batches]
    for b, g, a in zip(batches, grouped, alone, strict=True):
        for n, v in enumerate(versions):
            want = _rendered(v.contract, b)
            got_g = next(c for c in g.verdicts[n].clauses if c.kind == "extent")
            got_a = next(c for c in a.verdicts[n].clauses if c.kind == "extent")
            assert repr(got_g) == repr(want), b.batch_id
            assert repr(got_a) == repr(want), b.batch_id
    passes = [_extent_of(d) for d in grouped]
    assert sum(r.result == "pass" for r in passes) >= 30  # real passes, mostly made from kept
    kept = next(c for c in contract.clauses if c.kind == "extent").__dict__.get(
        extent_group.KEPT_PASSING,
        {},
    )
    if own_crs is None:  # as stored: the passes made from kept results, per contract
        assert {k[0] for k in kept} == {id(contract), id(other)}
    else:  # reprojected: the envelope shown is not the one as declared, rendered in full
        assert kept == {}
    assert len({r.measured["bounds"][0] for r in passes if r.result == "pass"}) > 20


def test_a_kept_result_is_used_only_for_its_live_contract_and_crs() -> None:
    """An entry keyed by the id of a contract no longer alive is not reused by another
    contract that took its address: the kept contract must be the one asked about."""
    clause = next(c for c in V1.clauses if c.kind == "extent")
    _forget(V1)
    batch = countries(world(), 1, start=5, batch_id="x")
    facts = BatchFacts(batch)
    tally = extent.KIND.tally(clause, V1, facts, AT)
    first = extent.render(clause, V1, facts, tally, AT)
    kept = clause.__dict__[extent_group.KEPT_PASSING]
    (reads,) = kept
    forged = replace(V1, version="v1.8", digest="forged")
    kept[reads] = (forged, kept[reads][1], replace(first, message="not this one"))
    again = extent.render(clause, V1, BatchFacts(batch), tally, AT)
    assert again.message == first.message and repr(again) == repr(first)
