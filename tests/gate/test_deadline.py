"""Where each partition is sought back to after a poll batch's deadline or an aborted
transaction (kafka.deadline); which prefix is decided is in test_runs.py."""

from __future__ import annotations

from worker.gate.offsets import rewind_offsets
from worker.kafka.memory import MemoryMessage


def test_rewind_offsets_are_the_first_undecided_offset_per_partition() -> None:
    rest = [
        MemoryMessage.of("in", 0, 7),
        MemoryMessage.of("in", 1, 3),
        MemoryMessage.of("in", 0, 8),
        MemoryMessage.of("in", 1, 4),
        MemoryMessage.of("x", 0, 9),
    ]
    assert rewind_offsets(rest) == {("in", 0): 7, ("in", 1): 3, ("x", 0): 9}
    assert rewind_offsets([]) == {}
