"""The ``contract-gate contract`` actions, one module per action."""
