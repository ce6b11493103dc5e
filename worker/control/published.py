"""What a publication to the gate's topics wrote, for the command line's text and JSON, and
the warning for geometries that cannot travel inline."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from worker.core._util.text import clip

__all__ = ["BatchPublished", "unwritten_geometries"]


@dataclass(frozen=True)
class BatchPublished:
    """A batch-arrival event written: its batch id, layer, feature count, the topic,
    partition and offset it went to, and its ``payload_uri`` (None: features inline)."""

    batch_id: str
    layer: str
    features: int
    topic: str
    partition: int
    offset: int
    payload_uri: str | None

    @property
    def summary(self) -> str:
        """``published batch B (N features, layer L) to T[P]@O [with payload_uri U]``."""
        return (
            f"published batch {self.batch_id} ({self.features} features, layer {self.layer}) "
            f"to {self.topic}[{self.partition}]@{self.offset}"
            + (f" with payload_uri {self.payload_uri}" if self.payload_uri else "")
        )


def unwritten_geometries(errors: Mapping[int, str], shown: int = 3) -> str:
    """The warning for features whose geometry the reader could not write as WKB
    (``Batch.geometry_errors``, index -> reason): inline, such a geometry travels as null,
    and the worker can only call it a missing geometry (a text geometry of
    ``"type": "Circle"`` was reported as "missing geometry", while ``check`` names it)."""
    first = sorted(errors)[:shown]
    reasons = "; ".join(f"feature {i}: {clip(errors[i], 200)}" for i in first)
    more = f"; and {len(errors) - shown} more" if len(errors) > shown else ""
    n = len(errors)
    which = "1 feature's geometry" if n == 1 else f"{n} features' geometries"
    return (
        f"warning: {which} cannot be written as WKB: inline they travel as null, and the "
        f"worker reports a missing geometry ({reasons}{more}); fix the file (`contract-gate "
        "check` shows every reason), or publish with --by-reference or --upload so that the "
        "worker reads the file and reports these reasons"
    )
