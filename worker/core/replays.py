"""Which replayed batches were already admitted (pure): one admission per original.

``contract-gate quarantine replay`` refuses a batch already on the admitted topic, but two
replays of the same quarantined batch can be in flight together; both would pass. The
worker keeps a :class:`ReplayLedger` of the ``replay-of`` values (the original batch id, or
``@topic/partition/offset`` of an undecodable original) it admitted, filled at start from
the admitted topic, and quarantines a second admission as ``duplicate_replay``.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable

__all__ = ["DEFAULT_MAX_ENTRIES", "ReplayLedger"]

#: Replayed originals remembered (least recently admitted forgotten first).
DEFAULT_MAX_ENTRIES = 100_000


class ReplayLedger:
    """A bounded set of admitted ``replay-of`` values.

    Memory is bounded by ``max_entries`` (each a short string); the oldest admissions are
    forgotten first, so a replay of an original admitted more than ``max_entries``
    replays ago is no longer recognised (the CLI's own check still sees it).
    """

    def __init__(self, max_entries: int = DEFAULT_MAX_ENTRIES) -> None:
        if max_entries < 1:
            raise ValueError(f"max_entries must be at least 1, got {max_entries}")
        self.max_entries = max_entries
        self._seen: OrderedDict[str, None] = OrderedDict()

    def __contains__(self, original: str) -> bool:
        return original in self._seen

    def __len__(self) -> int:
        return len(self._seen)

    def add(self, originals: Iterable[str]) -> None:
        """Record originals whose replay was admitted (after the commit, never before)."""
        for original in originals:
            self._seen[original] = None
            self._seen.move_to_end(original)
        while len(self._seen) > self.max_entries:
            self._seen.popitem(last=False)
