"""Private helpers of the core (caches, bounded text, JSON safety, durations, the collector
pause)."""
