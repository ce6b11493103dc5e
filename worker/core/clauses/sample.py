"""An evenly spaced sample of a batch's features, the same however the batch is chunked
(pure).

A batch of ``total`` features is sampled at every ``stride``-th feature, ``stride =
ceil(total / size)``: at most ``size`` features, spread over the whole batch, chosen by
index alone. A chunk (``count`` features from batch index ``offset``) holds the sampled
features whose index falls within it (:func:`sample_rows`), so a chunked batch is
sampled exactly as the whole (:mod:`worker.core.chunks`); :func:`take_features` makes
the sampled features a batch of their own.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pyarrow as pa

from worker.core.facts.wkb_arrow import values_at
from worker.core.model import Batch

__all__ = ["sample_rows", "sample_stride", "take_features"]


def sample_stride(total: int, size: int) -> int:
    """Features between two sampled ones in a batch of ``total`` features sampled to at
    most ``size`` (``size`` >= 1): 1 (every feature) when ``total`` <= ``size``.

    Raises
    ------
    ValueError
        ``size`` < 1.
    """
    if size < 1:
        raise ValueError(f"a sample needs at least one feature, not {size}")
    return max(1, -(-total // size))


def sample_rows(offset: int, count: int, total: int, size: int) -> np.ndarray:
    """int (M,), ascending: the rows (0-based within the chunk) of a chunk of ``count``
    features starting at batch index ``offset`` that are in the batch's sample: those
    whose batch index is a multiple of :func:`sample_stride` (``total``, ``size``).
    Every row when ``total`` <= ``size``."""
    stride = sample_stride(total, size)
    return np.arange((-offset) % stride, count, stride, dtype=np.intp)


def take_features(batch: Batch, rows: np.ndarray) -> Batch:
    """``batch`` holding only the features at ``rows`` (int (M,), ascending, 0-based),
    in that order: geometries, attribute rows, reader errors (re-indexed), bbox covering
    and feature ids; the metadata (CRS, axis order, edges, ...) is kept, less the
    envelope of every coordinate (``coordinate_bounds``), which the rows need not reach."""
    idx = [int(i) for i in rows]
    errors = batch.geometry_errors
    return dataclasses.replace(
        batch,
        geometries_wkb=values_at(batch.geometries_wkb, idx),
        attributes=batch.attributes.take(pa.array(idx, type=pa.int64())),  # numpy: imports np.ma
        geometry_errors={k: errors[i] for k, i in enumerate(idx) if i in errors},
        covering_bbox=(
            None if batch.covering_bbox is None else tuple(batch.covering_bbox[i] for i in idx)
        ),
        feature_ids=None if batch.feature_ids is None else tuple(batch.feature_ids[i] for i in idx),
        coordinate_bounds=None,
    )
