"""Evaluate a batch too large to hold, chunk by chunk, in bounded memory (pure).

A :class:`ChunkedBatch` is the batch's metadata plus a way to iterate its features in
chunks (the io layer gives one chunk per record batch of the file). Every clause of every
active version measures a mergeable tally of each chunk (its kind's ``measure``,
:data:`worker.core.clauses.KINDS`, :mod:`worker.core.clauses.tally`); the tallies are
merged in batch order and each clause's result is rendered from its merged tally (its
kind's ``render``), so only one chunk's geometries are held at a time. The verdicts are
those of :func:`worker.core.evaluate.evaluate` on the whole batch (its one-chunk case).
Feature indices (offenders, invalid reasons) count over the whole batch.

Passes over the chunks: one; plus a first one when an ``edges: spherical`` batch
declares no CRS (whether every coordinate is longitude/latitude decides how all chunks are
read), and a last one when an extent clause broke (its diagnoses reproject features from
candidate CRSs, which is only worth doing for a broken clause; they read the batch's
evenly spaced sample, :data:`~worker.core.clauses.diagnose_readings.DIAGNOSIS_SAMPLE`
features at most, whose indices the first pass's feature count decides): the kind's
:attr:`~worker.core.clauses.base.ClauseKind.second_pass`, for every kind that has one.
That last pass reads the batch again only when the batch's feature count was not known
before the first (:attr:`ChunkedBatch.rows`) or its sample is too large to keep
(:data:`~worker.core.chunk_sample.KEEP_SAMPLE_BYTES`): otherwise the first pass keeps the
sampled rows of each chunk (:attr:`~worker.core.clauses.base.SecondPass.rows`,
:mod:`worker.core.chunk_sample`) and the last pass measures those alone, with the same
tallies.

Both cores: given an executor (a pool of threads the caller owns), the chunks are
measured on its threads while the caller's thread reads the next ones (GEOS, Arrow and
numpy release the GIL), at most ``in_flight`` chunks at a time, so peak memory stays about
``in_flight`` chunks. The tallies are merged in batch order on the caller's thread; a
chunk's tally depends on that chunk and on how many offenders the chunks before it named,
so the decision is the one of one thread, value for value.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Executor
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypeGuard

from worker.core._util.gcpause import collector_paused
from worker.core._util.ordered import in_order
from worker.core.chunk_sample import Item, Keep, Kept, keep_for
from worker.core.clauses import KINDS
from worker.core.clauses.base import KeptOf
from worker.core.clauses.tally import Failed, Tally, merge, named_offenders
from worker.core.evaluate import decide, error_result, evaluate_clause, version_verdict
from worker.core.facts.batch import BatchFacts, edges_problem
from worker.core.model import ActiveVersion, Batch, Clause, ClauseResult, Decision
from worker.core.offenders import fewer_offenders

__all__ = ["ChunkHook", "ChunkedBatch", "evaluate_chunked", "in_order"]


@dataclass(frozen=True)
class ChunkedBatch:
    """A batch whose features come in chunks.

    ``batch`` carries the metadata of the whole batch (``declared_crs``, ``axis_order``,
    ``edges``, ``orientation``, ``feature_count``, ``id_column``, ``data_time``, ...) and
    ``schema_fields`` of the whole batch (``nullable`` when *some* chunk has a null);
    its ``geometries_wkb`` are empty and its ``attributes`` an empty table with the
    attribute schema. ``chunks()`` starts a new pass over the features: Batches with the
    same metadata, each holding consecutive features, in batch order (may raise the
    reader's errors, e.g. :class:`worker.core.errors.PayloadError`). ``rows``, when known
    before reading (a file's footer), is the number of features every pass yields (a
    reader whose pass yields another number raises): with it, the first pass keeps the
    rows a second pass reads (:func:`evaluate_chunked`).
    """

    batch: Batch
    chunks: Callable[[], Iterable[Batch]]
    rows: int | None = None


@dataclass(frozen=True)
class ChunkHook:
    """What a caller measures of every chunk beside the clauses: ``measure(facts)`` with
    the chunk's facts, on the thread that measures the chunk (any thread: it reads only
    those facts and keeps no reference to them), and ``take(result)`` with what it gave,
    once per chunk, in batch order on the caller's thread (e.g. merging
    :func:`worker.core.facts.claims.claims_tally`)."""

    measure: Callable[[BatchFacts], Any]
    take: Callable[[Any], None]


@dataclass(frozen=True)
class _Job:
    version: ActiveVersion
    clause: Clause


def _measure(
    job: _Job, facts: BatchFacts, now: datetime, first: Tally | None = None, of: int | None = None
) -> Any:
    """The job's tally of ``facts`` (its kind's ``measure``; an unknown kind's is empty),
    or :class:`Failed` when measuring raised; with ``first`` (the job's tally of the first
    pass), the tally of its kind's second pass instead (``of``: ``facts`` are the rows
    kept of a chunk of ``of`` features, :class:`Keep`)."""
    kind = KINDS.get(job.clause.kind)
    try:
        if kind is None:
            return {}  # rendered as the break of an unknown kind
        again, contract = kind.second_pass, job.version.contract
        if first is not None and again is not None:
            if of is not None and again.measure_rows is not None:
                return again.measure_rows(job.clause, contract, facts, now, KeptOf(of, first))
            return again.measure(job.clause, contract, facts, now, first)
        return kind.measure(job.clause, job.version.contract, facts, now)
    except Exception as exc:  # last resort, as evaluate_clause: one clause, not the batch
        return Failed.of(exc)


def _render(job: _Job, meta: BatchFacts, tally: Any, now: datetime) -> ClauseResult:
    clause, contract = job.clause, job.version.contract
    if isinstance(tally, Failed):
        return error_result(clause, tally.contract or tally.error)
    kind = KINDS.get(clause.kind)
    if kind is None:  # the break of an unknown kind
        return evaluate_clause(clause, contract, meta, now)
    try:
        return kind.render(clause, contract, meta, tally, now)
    except Exception as exc:  # last resort, as evaluate_clause
        return error_result(clause, exc)


def _wants_second_pass(tally: Tally | Failed, job: _Job) -> TypeGuard[Tally]:
    """The job's kind asks for a second pass after ``tally`` (not :class:`Failed`)."""
    kind = KINDS.get(job.clause.kind)
    if kind is None or kind.second_pass is None or isinstance(tally, Failed):
        return False
    return kind.second_pass.wanted(job.clause, tally)


def _edges_problem(source: ChunkedBatch) -> str | None:
    """The whole batch's :attr:`BatchFacts.edges_problem` (a pass over the chunks only for
    spherical edges without a declared CRS)."""
    meta = BatchFacts(source.batch)
    if source.batch.edges != "spherical" or meta.declared_crs is not None:
        return edges_problem(source.batch.edges, meta.declared_crs, True)
    count, fits = 0, True
    for chunk in source.chunks():
        facts = BatchFacts(chunk)
        count += facts.count
        fits = fits and facts.lonlat_fits
    return edges_problem(source.batch.edges, None, count > 0 and fits)


def _numbered(chunks: Iterable[Batch]) -> Iterator[Item]:
    """Each chunk with the index in the whole batch of its first feature."""
    offset = 0
    for chunk in chunks:
        count = len(chunk.geometries_wkb)
        yield chunk, offset, None
        del chunk  # not held while the next chunk is read: it is the pool's now
        offset += count


#: Kinds whose measure asks for every feature's GEOS validity (:class:`_Pass`).
_GEOS_FIRST = frozenset({"validity"})


@dataclass(frozen=True)
class _Pass:
    """One pass's measuring of one chunk (run on any thread: it reads only its chunk)."""

    jobs: Sequence[_Job]
    edges: tuple[str | None]
    now: datetime
    #: None in a first pass; in a second, each job's tally merged over the first
    firsts: Sequence[Tally] | None
    hook: Callable[[BatchFacts], Any] | None = None
    keep: Keep | None = None
    #: per job, the offenders its merged tally names (set as chunks merge): a chunk names
    #: only those the merge can still keep (:func:`fewer_offenders`), issue 27.
    named: list[int] | None = None

    def _measure(self, i: int, facts: BatchFacts, of: int | None) -> Any:
        with fewer_offenders(0 if self.named is None else self.named[i]):
            first = None if self.firsts is None else self.firsts[i]
            return _measure(self.jobs[i], facts, self.now, first, of)

    def __call__(self, item: Item) -> tuple[list[Any], Any, Item | None]:
        chunk, offset, of = item
        with collector_paused():  # the chunk's geometries are built and freed within
            facts = BatchFacts(chunk, offset, self.edges)
            if self.firsts is None and any(j.clause.kind in _GEOS_FIRST for j in self.jobs):
                # GEOS's validity first (a validity clause asks for it anyway): emptiness
                # and non-finite coordinates are then read from it, not from every
                # coordinate (GeometryFacts.is_empty, has_nonfinite; the same values)
                facts.geos_valid  # noqa: B018
            tallies = [self._measure(i, facts, of) for i in range(len(self.jobs))]
            extra = None if self.hook is None else self.hook(facts)
            # the chunk's geometries are freed here, on the measuring thread, not on the
            # caller's, which reads the next chunks meanwhile
            del facts
        kept = None if self.keep is None else self.keep(chunk, offset)
        return tallies, extra, kept


def _tallies(
    items: Iterable[Item],
    meta: Batch,
    measure: _Pass,
    take: Callable[[Any], None] | None = None,
    pool: tuple[Executor | None, int] = (None, 1),
    kept: Kept | None = None,
) -> list[Tally | Failed]:
    """One pass over ``items`` (:data:`Item`): every job's tally, merged (starting from
    the tally of no features, ``meta``, so an empty batch is judged as the whole-batch
    path judges it); with ``measure.firsts`` (the jobs' tallies of a first pass), the
    tallies of the jobs' second passes (the extent diagnoses, on the batch's evenly
    spaced sample). ``take`` is given what ``measure.hook`` gave of each
    chunk, and the rows ``measure.keep`` took are added to ``kept``, in batch order on the
    caller's thread. ``pool``: (executor, in_flight), as :func:`in_order`."""
    empty = BatchFacts(meta, 0, measure.edges)
    acc = [measure._measure(i, empty, None) for i in range(len(measure.jobs))]
    for tallies, extra, part in in_order(measure, items, *pool):
        acc = [merge(a, t) for a, t in zip(acc, tallies, strict=True)]
        if measure.named is not None:
            measure.named[:] = [named_offenders(a) for a in acc]  # one store
        if take is not None:
            take(extra)
        if kept is not None and part is not None:
            kept.add(part)
        del tallies, extra, part
    return acc


def _second_pass(
    source: ChunkedBatch,
    jobs: Sequence[tuple[_Job, Tally]],
    first: _Pass,
    kept: Kept | None,
    pool: tuple[Executor | None, int],
) -> list[Tally | Failed]:
    """The second-pass tallies of ``jobs``, each with its first tally (whose ``count`` is
    the batch's): on the rows the first pass ``kept`` for a batch of that count (few: on
    the caller's thread, :attr:`Kept.for_caller`), else over the batch read again."""
    total = int(jobs[0][1]["count"])
    measure = _Pass([j for j, _ in jobs], first.edges, first.now, [t for _, t in jobs])
    items: Iterable[Item] | None = None
    if kept is not None and first.keep is not None and first.keep.total == total:
        items, pool = kept.joined(), (None, 1) if kept.for_caller else pool
    if items is None:
        items = _numbered(source.chunks())
    return _tallies(items, source.batch, measure, pool=pool)


def evaluate_chunked(
    source: ChunkedBatch,
    versions: Sequence[ActiveVersion],
    *,
    now: datetime,
    on_chunk: ChunkHook | None = None,
    executor: Executor | None = None,
    in_flight: int = 2,
) -> Decision:
    """Evaluate a chunked batch against every active version and decide its route.

    Parameters and result as :func:`worker.core.evaluate.evaluate`, whose decision on the
    whole batch this equals (the coverage clause's covered area is the union of the
    chunks' covered parts: equal up to floating-point rounding of the union).
    ``on_chunk``, when given, measures what no clause measures of every chunk
    (:class:`ChunkHook`, e.g. :func:`worker.core.facts.claims.claims_tally`).
    ``executor``, when given (a thread pool the caller owns and shuts down), measures the
    chunks on its threads, at most ``in_flight`` chunks at a time (the pool's thread
    count; 1: one chunk at a time on the caller's thread): the same decision as
    without it, in about ``in_flight`` chunks of memory (:func:`in_order`).

    Raises
    ------
    Exception
        Whatever ``source.chunks()`` raises while reading (e.g. a PayloadError).
    """
    active = [v for v in versions if v.state == "active"]
    jobs = [_Job(v, c) for v in active for c in v.contract.clauses]
    edges = (_edges_problem(source),)
    meta = BatchFacts(source.batch, 0, edges)
    pool = (executor, in_flight)
    keep = keep_for([KINDS.get(j.clause.kind) for j in jobs], source.rows)
    hook, take = (on_chunk.measure, on_chunk.take) if on_chunk is not None else (None, None)
    first = _Pass(jobs, edges, now, None, hook, keep, [0] * len(jobs))
    kept = Kept() if keep is not None else None
    tallies: list[Tally | Failed] = []
    if jobs or on_chunk:
        tallies = _tallies(_numbered(source.chunks()), source.batch, first, take, pool, kept)
    again = [(i, t) for i, t in enumerate(tallies) if _wants_second_pass(t, jobs[i])]
    if again:
        extra = _second_pass(source, [(jobs[i], t) for i, t in again], first, kept, pool)
        for (i, t), e in zip(again, extra, strict=True):
            tallies[i] = e if isinstance(e, Failed) else {**t, **e}
    results = iter([_render(j, meta, t, now) for j, t in zip(jobs, tallies, strict=True)])
    verdicts = []
    for v in active:
        verdicts.append(version_verdict(v, tuple(next(results) for _ in v.contract.clauses)))
    return decide(tuple(verdicts))
