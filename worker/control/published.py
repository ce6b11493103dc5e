"""What a publication to the gate's topics wrote, for the command line's text and JSON, and
the warning for geometries that cannot travel inline."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from worker.core._util.text import clip
from worker.core.errors import ContractGateError
from worker.io.formats import FORMATS, formats_named, formats_read
from worker.io.payloads.open import open_payload
from worker.io.payloads.policy import PayloadPolicy

__all__ = ["BatchPublished", "read_by_reference", "unwritten_geometries"]


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


def read_by_reference(path: str, policy: PayloadPolicy, flag: str | None) -> bool:
    """Whether the workers read the batch file at ``path`` (a local path or URI, opened
    under ``policy``: only its first and last bytes are read) when an event names it as
    its ``payload_uri``: its format's reader is ``by_reference``
    (:data:`worker.io.formats.FORMATS`). ``flag`` (``--by-reference``, ``--upload``) is
    the request to send it so; None for an inline event.

    Raises
    ------
    ContractGateError
        ``flag`` given for a file in a format not read by reference (every worker would
        quarantine the batch), naming ``flag`` and the fix.
    PayloadError
        The file cannot be opened or is in no format read.
    """
    with open_payload(path, policy) as src:
        reader = FORMATS[src.format]
    if reader.by_reference or flag is None:
        return reader.by_reference
    named = formats_named(by_reference=True)
    raise ContractGateError(
        f"{path}: a {reader.title} file, which the workers do not read by reference: every "
        f"worker would quarantine the batch ({formats_read(by_reference=True)})",
        field=flag,
        fix=f"publish it inline (without {flag}), or write it as {named} first",
    )


def unwritten_geometries(
    errors: Mapping[int, str], shown: int = 3, *, by_reference: bool = True
) -> str:
    """The warning for features whose geometry the reader could not write as WKB
    (``Batch.geometry_errors``, index -> reason): inline, such a geometry travels as null,
    and the worker can only call it a missing geometry (a text geometry of
    ``"type": "Circle"`` was reported as "missing geometry", while ``check`` names it).
    ``by_reference``: the file's format is read by reference, so sending it so is a fix."""
    first = sorted(errors)[:shown]
    reasons = "; ".join(f"feature {i}: {clip(errors[i], 200)}" for i in first)
    more = f"; and {len(errors) - shown} more" if len(errors) > shown else ""
    n = len(errors)
    which = "1 feature's geometry" if n == 1 else f"{n} features' geometries"
    fix = (
        ", or publish with --by-reference or --upload so that the worker reads the file and "
        "reports these reasons"
        if by_reference
        else " (this format is not read by reference)"
    )
    return (
        f"warning: {which} cannot be written as WKB: inline they travel as null, and the "
        f"worker reports a missing geometry ({reasons}{more}); fix the file (`contract-gate "
        f"check` shows every reason){fix}"
    )
