"""The worker's data plane: one batch-arrival event from poll to commit."""
